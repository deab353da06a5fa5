-- ticketd: the schema of one ticket server.
--
-- Load the same file into BOTH servers of the pair, as an administrator:
--
--     mariadb --defaults-file=my.cnf --defaults-group-suffix=.1 -uroot < schema.sql
--
-- Loading it again is safe: every statement is IF NOT EXISTS or otherwise idempotent,
-- and no row a running deployment wrote is touched. The file holds no password; the
-- account's password is set separately (see "Accounts" at the end, and docs/dba.md).
--
-- What makes the pair unique is NOT in this file but in my.cnf: server 1 runs with
-- auto_increment_increment=2, auto_increment_offset=1 (odd tickets), server 2 with
-- offset 2 (even tickets). ticketd checks both at connect time and on every ticket.

CREATE DATABASE IF NOT EXISTS tickets CHARACTER SET ascii COLLATE ascii_bin;
USE tickets;

-- ---------------------------------------------------------------------------
-- Flickr's ticket tables. One row each ever exists (stub 'a'); every
--   REPLACE INTO Tickets64 (stub) VALUES ('a')
-- deletes it and inserts it again, which advances AUTO_INCREMENT, and the new id
-- comes back in the OK packet (LAST_INSERT_ID). The id is the ticket.
--
-- Written by: ticketd (REPLACE only). Tickets64 also feeds worker-ID leases and
-- the /v1/id fallback, so it is the table whose counter must never go backwards.
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS Tickets64 (
  id   BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  stub CHAR(1)         NOT NULL DEFAULT '',
  PRIMARY KEY (id),
  UNIQUE KEY stub (stub)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS Tickets32 (
  id   INT UNSIGNED NOT NULL AUTO_INCREMENT,
  stub CHAR(1)      NOT NULL DEFAULT '',
  PRIMARY KEY (id),
  UNIQUE KEY stub (stub)
) ENGINE=InnoDB;

-- ---------------------------------------------------------------------------
-- Named sequences (Flickr's "more sequences"): the catalog, one row per sequence.
--
--   name        what applications ask for: GET /v1/tickets/{name}
--   table_name  NULL: its counter is a row of table counters (below), which is
--               how every sequence is made now (`ticketd sequence create`).
--               Tickets64, Tickets32, or seq_*: its counter is a table of its own,
--               shaped like Tickets64 (bits = 64) or Tickets32 (bits = 32), as
--               sequences were made before; those keep working.
--   bits        32 or 64: no value above 2^32-1, resp. 2^63-1, is ever handed out
--   block_size  B: one ticket t stands for the values [t*B, t*B + B), handed out
--               from ticketd's memory. B = 1 is pure Flickr, one round trip per value.
--   version     set by the trigger sequences_version from catalog_version: ticketd
--               reads only the rows whose version is above the last it has seen, so
--               a new sequence costs it one small read, whatever the catalog's size.
--
-- Written by: `ticketd sequence create` (or the DBA: INSERT). Read by: ticketd, which
-- looks names up here and never builds SQL from request text. A sequence's bits,
-- table and block size can never change once created, and a sequence cannot be
-- deleted (the triggers below refuse both): a smaller block size would make new
-- blocks overlap values that were already handed out. TRUNCATE skips triggers;
-- ticketd's pins (sequence_pins) catch a sequence redefined that way.
--
-- Adding a sequence "orders" (no restart of ticketd needed): one command,
--   ticketd sequence create orders -block 1000
-- or, by hand, the same on BOTH servers (S: the server's auto_increment_offset):
--   START TRANSACTION;
--   INSERT INTO tickets.counters (name, value, start, step) VALUES ('orders', S, S, 2);
--   INSERT INTO tickets.sequences (name, bits, block_size) VALUES ('orders', 64, 1000);
--   COMMIT;
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS sequences (
  name        VARCHAR(48)     NOT NULL,
  table_name  VARCHAR(64)     NULL,
  bits        TINYINT UNSIGNED NOT NULL DEFAULT 64,
  block_size  BIGINT UNSIGNED NOT NULL DEFAULT 1,
  created_at  DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  version     BIGINT UNSIGNED NOT NULL DEFAULT 0,
  PRIMARY KEY (name),
  UNIQUE KEY table_name (table_name),
  KEY version (version),
  CONSTRAINT sequence_name_ok  CHECK (name REGEXP '^[a-z][a-z0-9_]{0,47}$'),
  CONSTRAINT sequence_table_ok CHECK (table_name REGEXP '^(Tickets64|Tickets32|seq_[a-z0-9_]{1,60})$'),
  CONSTRAINT sequence_bits_ok  CHECK (bits IN (32, 64)),
  CONSTRAINT sequence_block_ok CHECK (block_size BETWEEN 1 AND 1000000000)
) ENGINE=InnoDB;
-- A catalog made by an older schema.sql: table_name becomes optional, rows get a
-- version (0 for the old ones). Cheap to repeat: nothing changes the second time.
ALTER TABLE sequences MODIFY table_name VARCHAR(64) NULL,
  ADD COLUMN IF NOT EXISTS version BIGINT UNSIGNED NOT NULL DEFAULT 0,
  ADD INDEX IF NOT EXISTS version (version);

-- The catalog's change counter: one row, bumped by every INSERT into sequences (the
-- trigger below). Its row lock is held until the inserting transaction commits, so
-- versions are taken in commit order and a reader that has seen version v has seen
-- every row up to v. A counter found lower than before (the table was emptied or
-- restored) makes ticketd read the whole catalog again.
CREATE TABLE IF NOT EXISTS catalog_version (
  id      TINYINT UNSIGNED NOT NULL DEFAULT 1,
  version BIGINT UNSIGNED  NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  CONSTRAINT catalog_version_single_row CHECK (id = 1)
) ENGINE=InnoDB;
INSERT IGNORE INTO catalog_version (id, version) VALUES (1, 0);

DROP TRIGGER IF EXISTS sequences_immutable;
DELIMITER //
CREATE TRIGGER sequences_immutable BEFORE UPDATE ON sequences FOR EACH ROW
BEGIN
  IF NOT (NEW.name <=> OLD.name AND NEW.table_name <=> OLD.table_name
          AND NEW.bits <=> OLD.bits AND NEW.block_size <=> OLD.block_size
          AND NEW.version <=> OLD.version) THEN
    SIGNAL SQLSTATE '45000'
      SET MESSAGE_TEXT = 'a sequence cannot change once created: create a new one instead';
  END IF;
END//
-- Deleting a row and inserting it again would be a redefinition too.
DROP TRIGGER IF EXISTS sequences_undeletable//
CREATE TRIGGER sequences_undeletable BEFORE DELETE ON sequences FOR EACH ROW
BEGIN
  SIGNAL SQLSTATE '45000'
    SET MESSAGE_TEXT = 'a sequence cannot be removed: redefining it could reissue its values';
END//
-- Every new row takes the next catalog version (see catalog_version).
DROP TRIGGER IF EXISTS sequences_version//
CREATE TRIGGER sequences_version BEFORE INSERT ON sequences FOR EACH ROW
BEGIN
  INSERT INTO catalog_version (id, version) VALUES (1, 1)
    ON DUPLICATE KEY UPDATE version = version + 1;
  SET NEW.version = (SELECT version FROM catalog_version WHERE id = 1);
END//
DELIMITER ;

-- The two Flickr tables are sequences too, so applications can use them directly.
INSERT IGNORE INTO sequences (name, table_name, bits, block_size) VALUES
  ('tickets64', 'Tickets64', 64, 1),
  ('tickets32', 'Tickets32', 32, 1);

-- ---------------------------------------------------------------------------
-- The counters of named sequences: one row per sequence on each server.
--
--   value  the last ticket this server handed out for the sequence (a new row
--          holds start, which is never handed out)
--   start  this server's auto_increment_offset (1 or 2)
--   step   the number of servers (2)
--
-- ticketd takes a ticket with one statement, the new value coming back in its OK
-- packet (LAST_INSERT_ID), MySQL's documented way to make a sequence:
--   UPDATE counters SET value = LAST_INSERT_ID(value + step)
--    WHERE name = 'orders' AND start = 1 AND step = 2
-- The step is the row's own, so a session's auto_increment_* cannot change it, and
-- the CHECK keeps every value of the row's parity: server 1's rows stay odd and
-- server 2's even whatever a session does. One table for every sequence: no table
-- (82 KB of disk and a table-cache slot) and no GRANT per sequence, and no
-- information_schema scan that opens every table to read the counters.
--
-- Written by: `ticketd sequence create` (INSERT), ticketd (the UPDATE above),
-- `ticketd repair` (moving a rewound value forward).
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS counters (
  name   VARCHAR(48)      NOT NULL,
  value  BIGINT UNSIGNED  NOT NULL,
  start  TINYINT UNSIGNED NOT NULL,
  step   TINYINT UNSIGNED NOT NULL,
  PRIMARY KEY (name),
  CONSTRAINT counter_name_ok   CHECK (name REGEXP '^[a-z][a-z0-9_]{0,47}$'),
  CONSTRAINT counter_step_ok   CHECK (step BETWEEN 1 AND 16 AND start BETWEEN 1 AND step),
  CONSTRAINT counter_parity_ok CHECK (value % step = start % step)
) ENGINE=InnoDB;

-- ---------------------------------------------------------------------------
-- The definitions ticketd has served: written before a sequence's first value is
-- handed out (and by `ticketd sequence create`), never changed. A catalog row that
-- no longer matches its pin (bits, block size, table) is refused, after a restart
-- too: the guard against a sequence redefined behind the triggers' back
-- (TRUNCATE sequences, then INSERT with a smaller block size).
--
-- Written by: ticketd and `ticketd sequence create` (INSERT IGNORE).
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS sequence_pins (
  name        VARCHAR(48)      NOT NULL,
  table_name  VARCHAR(64)      NULL,
  bits        TINYINT UNSIGNED NOT NULL,
  block_size  BIGINT UNSIGNED  NOT NULL,
  pinned_by   VARCHAR(255)     NOT NULL DEFAULT '',
  pinned_at   DATETIME(3)      NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (name)
) ENGINE=InnoDB;

-- ---------------------------------------------------------------------------
-- Worker-ID leases. A snowflake worker ID w is owned by exactly one server of the
-- pair: the one whose tickets are congruent to w modulo 2 (server 1: odd w,
-- server 2: even w). Its lease row lives only there, so no cross-server
-- coordination is ever needed.
--
--   holder            who holds it: host/pid/random, '' when never held
--   version           bumped on every claim; claims are compare-and-set on it
--   expires_at        liveness, in THIS SERVER's clock (UTC); renewed every few s
--   reserved_until_ms uniqueness, in ID time (Unix ms): the holder never issues an
--                     ID with a timestamp >= this, and the next holder never
--                     issues one below it
--   last_issued_ms    the last timestamp the holder issued, written on release
--
-- Written by: ticketd only.
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS worker_leases (
  datacenter        INT UNSIGNED    NOT NULL,
  worker            INT UNSIGNED    NOT NULL,
  holder            VARCHAR(255)    NOT NULL DEFAULT '',
  version           BIGINT UNSIGNED NOT NULL DEFAULT 0,
  expires_at        DATETIME(3)     NOT NULL DEFAULT '1970-01-01 00:00:01.000',
  reserved_until_ms BIGINT          NOT NULL DEFAULT 0,
  last_issued_ms    BIGINT          NOT NULL DEFAULT 0,
  acquired_at       DATETIME(3)     NULL,
  renewed_at        DATETIME(3)     NULL,
  released_at       DATETIME(3)     NULL,
  PRIMARY KEY (datacenter, worker)
) ENGINE=InnoDB;

-- Copies of the OTHER server's lease reservations. If the owning server is lost
-- or restored from a backup, its lease rows rewind; the copy kept here lets the
-- next holder honour the larger of the two reservations.
--
-- Written by: ticketd only.
CREATE TABLE IF NOT EXISTS reservation_copies (
  datacenter        INT UNSIGNED NOT NULL,
  worker            INT UNSIGNED NOT NULL,
  holder            VARCHAR(255) NOT NULL DEFAULT '',
  reserved_until_ms BIGINT       NOT NULL DEFAULT 0,
  updated_at        DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (datacenter, worker)
) ENGINE=InnoDB;

-- ---------------------------------------------------------------------------
-- The deployment's ID settings. Every ticketd of one deployment must use the same
-- bit layout and epoch, or two of them can compose the same ID. The first ticketd
-- to start writes this row; every later one compares and refuses to start on a
-- mismatch. first_start_ms is the smallest timestamp any ID can carry, which is
-- what keeps fallback tickets (far below it) disjoint from snowflake IDs.
--
-- Written by: ticketd, once (INSERT IGNORE). Never changed afterwards.
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS deployment (
  id             TINYINT UNSIGNED NOT NULL DEFAULT 1,
  layout         VARCHAR(32)      NOT NULL,
  epoch_ms       BIGINT           NOT NULL,
  first_start_ms BIGINT           NOT NULL,
  created_by     VARCHAR(255)     NOT NULL DEFAULT '',
  created_at     DATETIME(3)      NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  CONSTRAINT deployment_single_row CHECK (id = 1)
) ENGINE=InnoDB;

-- ---------------------------------------------------------------------------
-- High-water marks: the highest ticket ticketd has seen from the OTHER server,
-- per counter (peer_offset 1 or 2 names the server the tickets came from). The
-- counter is a ticket table (table_name Tickets64, Tickets32, seq_*) or a row of
-- counters (table_name 'counters.' and the sequence's name). A server restored
-- from a backup has a counter below the mark its peer holds for it; ticketd then
-- refuses its tickets and prints the statement that fixes it (ticketd repair).
--
-- Written by: ticketd only (the marks that grew, every second and on shutdown, not
-- per ticket). ticketd reads back only the rows others raised lately (index updated_writer).
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS high_water (
  table_name  VARCHAR(64)      NOT NULL,
  peer_offset TINYINT UNSIGNED NOT NULL,
  mark        BIGINT UNSIGNED  NOT NULL DEFAULT 0,
  updated_at  DATETIME(3)      NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  writer      VARCHAR(64)      NOT NULL DEFAULT '',
  PRIMARY KEY (table_name, peer_offset),
  KEY updated_writer (updated_at, writer)
) ENGINE=InnoDB;
-- updated_at and writer (the ticketd process that last raised the mark) change only
-- when the mark grows: a ticketd reads back the marks others raised lately, not its own.
ALTER TABLE high_water ADD COLUMN IF NOT EXISTS writer VARCHAR(64) NOT NULL DEFAULT '',
  ADD INDEX IF NOT EXISTS updated_writer (updated_at, writer);

-- ---------------------------------------------------------------------------
-- Commit probes: one row, changed by ticketd to see that this server COMMITS.
-- MariaDB on a full disk (or behind a global read lock, or with a binary log it
-- cannot write) keeps answering reads while every commit waits; ticketd counts
-- a server as up only once a write of its own has committed there, and keeps it
-- out of rotation until one does. Every ticketd changes the same row, so a
-- server that cannot commit holds at most one probe waiting in its commit (the
-- others wait for the row and stop at their bound).
--
-- Written by: ticketd only (INSERT … ON DUPLICATE KEY UPDATE). Read by nobody.
-- A ticketd of an earlier release ignores it; ticketd on a schema without it
-- probes with a REPLACE INTO Tickets64 instead.
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS commit_probes (
  id        TINYINT UNSIGNED NOT NULL DEFAULT 1,
  probes    BIGINT UNSIGNED  NOT NULL DEFAULT 0,
  probed_at DATETIME(3)      NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  CONSTRAINT commit_probes_single_row CHECK (id = 1)
) ENGINE=InnoDB;

-- ---------------------------------------------------------------------------
-- Accounts. Privileges go to roles; accounts get a role and a password.
--
--   ticketd_app    what the ticketd daemon needs, no more: REPLACE on the ticket
--                  tables (INSERT + DELETE), its own rows in the lease, copy,
--                  deployment, high-water and commit-probe tables. No DDL, no
--                  SUPER, no PROCESS (it sees its own statements only).
--   ticketd_admin  what `ticketd repair` needs on top: ALTER on the ticket tables,
--                  to move a rewound AUTO_INCREMENT forward (a rewound row of
--                  counters it moves with UPDATE, which ticketd_app has).
--   ticketd_sequences  what `ticketd sequence create|list|check` needs: read the
--                  schema (SELECT: the catalog, the counters and marks it lists and
--                  compares), and INSERT into the catalog, counters and pins, so it
--                  can add sequences and never change or remove one. No UPDATE, no
--                  DELETE, no DDL, no GRANT: a new sequence needs none (one table
--                  holds every counter).
--
-- The account 'ticketd'@'127.0.0.1' is created LOCKED and without a password;
-- `make db-up` (or the DBA) unlocks it with the password's hash, never the password
-- itself (account statements go to the binary log, which replicas receive):
--   ALTER USER 'ticketd'@'127.0.0.1' IDENTIFIED BY PASSWORD '*…' ACCOUNT UNLOCK;
-- (the hash: scripts/db.sh hash < password-file). For ticketd on other hosts:
--   CREATE USER 'ticketd'@'10.%' IDENTIFIED BY PASSWORD '*…' REQUIRE SSL;
--   GRANT ticketd_app TO 'ticketd'@'10.%'; SET DEFAULT ROLE ticketd_app FOR 'ticketd'@'10.%';
-- ---------------------------------------------------------------------------
CREATE ROLE IF NOT EXISTS ticketd_app;
GRANT SELECT, INSERT, DELETE ON tickets.Tickets64          TO ticketd_app;
GRANT SELECT, INSERT, DELETE ON tickets.Tickets32          TO ticketd_app;
GRANT SELECT                 ON tickets.sequences          TO ticketd_app;
GRANT SELECT, INSERT, UPDATE ON tickets.worker_leases      TO ticketd_app;
GRANT SELECT, INSERT, UPDATE ON tickets.reservation_copies TO ticketd_app;
GRANT SELECT, INSERT         ON tickets.deployment         TO ticketd_app;
GRANT SELECT, INSERT, UPDATE ON tickets.high_water         TO ticketd_app;
GRANT SELECT                 ON tickets.catalog_version    TO ticketd_app;
GRANT SELECT, UPDATE         ON tickets.counters           TO ticketd_app;
GRANT SELECT, INSERT         ON tickets.sequence_pins      TO ticketd_app;
GRANT SELECT, INSERT, UPDATE ON tickets.commit_probes      TO ticketd_app;

CREATE ROLE IF NOT EXISTS ticketd_admin;
GRANT ticketd_app TO ticketd_admin;
GRANT ALTER ON tickets.Tickets64 TO ticketd_admin;
GRANT ALTER ON tickets.Tickets32 TO ticketd_admin;

CREATE ROLE IF NOT EXISTS ticketd_sequences;
GRANT SELECT ON tickets.*               TO ticketd_sequences;
GRANT INSERT ON tickets.sequences       TO ticketd_sequences;
GRANT INSERT ON tickets.counters        TO ticketd_sequences;
GRANT INSERT ON tickets.sequence_pins   TO ticketd_sequences;

CREATE USER IF NOT EXISTS 'ticketd'@'127.0.0.1' ACCOUNT LOCK;
GRANT ticketd_app TO 'ticketd'@'127.0.0.1';
SET DEFAULT ROLE ticketd_app FOR 'ticketd'@'127.0.0.1';
