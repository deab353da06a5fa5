-- ticketd: the schema of one ticket server.
--
-- Load the same file into EVERY ticket server (both of a pair, all four of four), as an
-- administrator:
--
--     mariadb --defaults-file=my.cnf --defaults-group-suffix=.1 -uroot < schema.sql
--
-- Loading it again is safe: every statement is IF NOT EXISTS or otherwise idempotent,
-- and no row a running deployment wrote is touched. The file holds no password; the
-- account's password is set separately (see "Accounts" at the end, and docs/dba.md).
--
-- Another schema name (an existing pair's own database, say ticketserver): the name
-- appears only in the CREATE DATABASE and USE below; load the file with both changed,
-- and give every ticketd command -database ticketserver:
--
--     sed -E 's/^(CREATE DATABASE IF NOT EXISTS|USE) tickets\b/\1 ticketserver/' schema.sql |
--       mariadb --defaults-file=my.cnf --defaults-group-suffix=.1 -uroot
--
-- In a database that already exists, CREATE DATABASE IF NOT EXISTS changes nothing
-- (its default character set stays what it was): every table below states its own
-- (ascii, binary collation), so the name checks hold whatever the database's default.
-- Tables that exist already keep theirs (ticketd pair check names any that differ).
--
-- What makes the servers unique is NOT in this file but in my.cnf: with N servers (a
-- power of two: 2 for a pair, or 4), server k runs with auto_increment_increment=N,
-- auto_increment_offset=k. On a pair, server 1 issues odd tickets and server 2 even
-- ones; with four, server k issues k, k+4, k+8, … . ticketd checks both variables at
-- connect time and every ticket's residue. This file is the same for any N.

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
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

CREATE TABLE IF NOT EXISTS Tickets32 (
  id   INT UNSIGNED NOT NULL AUTO_INCREMENT,
  stub CHAR(1)      NOT NULL DEFAULT '',
  PRIMARY KEY (id),
  UNIQUE KEY stub (stub)
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- ---------------------------------------------------------------------------
-- Named sequences (Flickr's "more sequences"): the catalog, one row per sequence.
--
--   name        what applications ask for: GET /v1/tickets/{name}
--   table_name  NULL: its counter is a row of table counters (below), which is
--               how every sequence is made now (`ticketd sequence create`).
--               Otherwise its counter is a table of its own, shaped like Tickets64
--               (an AUTO_INCREMENT id, a unique stub): Tickets64, Tickets32, seq_*
--               tables as sequences were made before, or any table of that shape
--               an existing pair has (`ticketd sequence adopt NAME -table T`, which
--               also grants what ticketd needs on it). Releases 1 and 2 read only
--               Tickets64, Tickets32 and seq_* (they ignore other rows): adopt
--               writes another name only once the upgrade is finalized.
--   bits        32 or 64: no value above 2^32-1, resp. 2^63-1, is ever handed out
--   block_size  B: one ticket t stands for the values [t*B, t*B + B), handed out
--               from ticketd's memory. B = 1 is pure Flickr, one round trip per value.
--   version     set by the trigger sequences_version from catalog_version: ticketd
--               reads only the rows whose version is above the last it has seen, so
--               a new sequence costs it one small read, whatever the catalog's size.
--   key_check   '' for a plain sequence. Otherwise the sequence is public: ticketd
--               hands out a keyed permutation of each counter value over the
--               sequence's range (`ticketd sequence create NAME -public`), under the
--               operator's key whose check value this is (a keyed digest of the key
--               that names it, never the key: the key stays with ticketd). A ticketd
--               without that key refuses the sequence. Releases 1 and 2 ignore the
--               column and would hand out the raw counter values, which can equal
--               public values already handed out: public sequences are created only
--               once the upgrade is finalized.
--               Or the check value, '>' and N ('…0f>1000000', release 4): a public
--               sequence created with -start N, whose permutation covers only the
--               values above N (release 3's covered the whole range whatever the
--               start). Release 3 cannot read this form and ignores the row: it
--               never serves such a sequence.
--
-- Written by: `ticketd sequence create` (or the DBA: INSERT). Read by: ticketd, which
-- looks names up here and never builds SQL from request text. A sequence's bits,
-- table, block size and key check can never change once created, and a sequence cannot be
-- deleted (the triggers below refuse both): a smaller block size would make new
-- blocks overlap values that were already handed out. TRUNCATE skips triggers;
-- ticketd's pins (sequence_pins) catch a sequence redefined that way.
--
-- Adding a sequence "orders" (no restart of ticketd needed): one command,
--   ticketd sequence create orders -block 1000
-- or, by hand, the same on EVERY server (S: the server's auto_increment_offset, 1 to N;
-- N: the number of servers, 2 for a pair, 4 for four):
--   START TRANSACTION;
--   INSERT INTO tickets.counters (name, value, start, step) VALUES ('orders', S, S, N);
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
  key_check   VARCHAR(64)     NOT NULL DEFAULT '' CHECK (key_check REGEXP '^([0-9a-f]{32}(>[1-9][0-9]{0,19})?)?$'),
  PRIMARY KEY (name),
  UNIQUE KEY table_name (table_name),
  KEY version (version),
  CONSTRAINT sequence_name_ok  CHECK (name REGEXP '^[a-z][a-z0-9_]{0,47}$'),
  CONSTRAINT sequence_table_ok CHECK (table_name REGEXP '^[A-Za-z][A-Za-z0-9_]{0,63}$'),
  CONSTRAINT sequence_bits_ok  CHECK (bits IN (32, 64)),
  CONSTRAINT sequence_block_ok CHECK (block_size BETWEEN 1 AND 1000000000)
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;
-- A catalog made by an older schema.sql: table_name becomes optional, rows get a
-- version (0 for the old ones). Cheap to repeat: nothing changes the second time.
ALTER TABLE sequences MODIFY table_name VARCHAR(64) NULL,
  ADD COLUMN IF NOT EXISTS version BIGINT UNSIGNED NOT NULL DEFAULT 0,
  ADD INDEX IF NOT EXISTS version (version);
-- Public sequences (release 3): every row made before is plain ('').
ALTER TABLE sequences
  ADD COLUMN IF NOT EXISTS key_check VARCHAR(64) NOT NULL DEFAULT '' CHECK (key_check REGEXP '^([0-9a-f]{32}(>[1-9][0-9]{0,19})?)?$');
-- Public sequences above a start (release 4): release 3's column, 32 characters
-- of hexadecimal, takes the start too, once. Every row it holds passes the new check.
SET @public_above = (SELECT IF(COUNT(*) = 0, 'DO 0',
    'ALTER TABLE sequences MODIFY key_check VARCHAR(64) NOT NULL DEFAULT '''' CHECK (key_check REGEXP ''^([0-9a-f]{32}(>[1-9][0-9]{0,19})?)?$'')')
  FROM information_schema.COLUMNS
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'sequences' AND COLUMN_NAME = 'key_check'
    AND CHARACTER_MAXIMUM_LENGTH < 64);
PREPARE public_above FROM @public_above;
EXECUTE public_above;
DEALLOCATE PREPARE public_above;
-- A catalog made by an older schema.sql names only Tickets64, Tickets32 and seq_*
-- tables: its check becomes the one above (which every such name passes), once.
SET @relax_table_ok = (SELECT IF(COUNT(*) = 0, 'DO 0',
    'ALTER TABLE sequences DROP CONSTRAINT sequence_table_ok, ADD CONSTRAINT sequence_table_ok CHECK (table_name REGEXP ''^[A-Za-z][A-Za-z0-9_]{0,63}$'')')
  FROM information_schema.CHECK_CONSTRAINTS
  WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = 'sequences' AND CONSTRAINT_NAME = 'sequence_table_ok'
    AND CHECK_CLAUSE LIKE '%seq\\_%');
PREPARE relax_table_ok FROM @relax_table_ok;
EXECUTE relax_table_ok;
DEALLOCATE PREPARE relax_table_ok;

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
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;
INSERT IGNORE INTO catalog_version (id, version) VALUES (1, 0);

DROP TRIGGER IF EXISTS sequences_immutable;
DELIMITER //
CREATE TRIGGER sequences_immutable BEFORE UPDATE ON sequences FOR EACH ROW
BEGIN
  IF NOT (NEW.name <=> OLD.name AND NEW.table_name <=> OLD.table_name
          AND NEW.bits <=> OLD.bits AND NEW.block_size <=> OLD.block_size
          AND NEW.version <=> OLD.version AND NEW.key_check <=> OLD.key_check) THEN
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
--   start  this server's auto_increment_offset (1 to N)
--   step   the number of servers, N (2 for a pair, 4 for four): ticketd uses only the
--          row whose start and step are its server's place (WHERE start = S AND step = N)
--
-- ticketd takes a ticket with one statement, the new value coming back in its OK
-- packet (LAST_INSERT_ID), MySQL's documented way to make a sequence:
--   UPDATE counters SET value = LAST_INSERT_ID(value + step)
--    WHERE name = 'orders' AND start = 1 AND step = 2
-- (on server 1 of a pair; start = 3 AND step = 4 on server 3 of four). The step is the
-- row's own, so a session's auto_increment_* cannot change it, and the CHECKs keep every
-- value of the row's residue (start between 1 and step, value ≡ start modulo step, a
-- step of at most 16): on a pair server 1's rows stay odd and server 2's even, with four
-- server k's stay k modulo 4, whatever a session does. One table for every sequence: no table
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
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- ---------------------------------------------------------------------------
-- The definitions ticketd has served: written before a sequence's first value is
-- handed out (and by `ticketd sequence create`), never changed. A catalog row that
-- no longer matches its pin (bits, block size, table, key check) is refused, after a
-- restart too: the guard against a sequence redefined behind the triggers' back
-- (TRUNCATE sequences, then INSERT with a smaller block size, or as plain).
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
  key_check   VARCHAR(64)      NOT NULL DEFAULT '',
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;
-- Public sequences (release 3): the pins made before are of plain ones ('').
ALTER TABLE sequence_pins ADD COLUMN IF NOT EXISTS key_check VARCHAR(64) NOT NULL DEFAULT '';
-- Public sequences above a start (release 4): a pin holds the key check as the
-- catalog row does, the start included (release 3's column was 32 characters).
ALTER TABLE sequence_pins MODIFY key_check VARCHAR(64) NOT NULL DEFAULT '';

-- ---------------------------------------------------------------------------
-- Where sequences begin. `ticketd sequence create NAME -start N` makes the rows of
-- counters of NAME so that every value it ever hands out, on every server, is above
-- N (each server's first ticket is the smallest t of its parity with
-- t × block_size > N), and records N here: the same create may then be repeated
-- (completing a server it missed, at the same place), and one asking for another
-- start is refused. Moving from Leaf, tinyid or a table's own AUTO_INCREMENT,
-- N is where the old numbers ended (docs/dba.md gives the queries).
--
-- Written by: `ticketd sequence create -start` (INSERT). Never changed.
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS sequence_starts (
  name        VARCHAR(48)      NOT NULL,
  start_after BIGINT UNSIGNED  NOT NULL,
  created_at  DATETIME(3)      NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (name),
  CONSTRAINT sequence_start_name_ok CHECK (name REGEXP '^[a-z][a-z0-9_]{0,47}$')
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- ---------------------------------------------------------------------------
-- Worker-ID leases. A snowflake worker ID w is owned by exactly one server: the one
-- whose tickets are congruent to w modulo N, the number of servers (on a pair, server 1:
-- odd w, server 2: even w). Its lease row lives only there, so no cross-server
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
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- Copies of the OTHER servers' lease reservations. If the owning server is lost
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
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- ---------------------------------------------------------------------------
-- The deployment's ID settings. Every ticketd of one deployment must use the same
-- bit layout and epoch, or two of them can compose the same ID. The first ticketd
-- to start writes this row; every later one compares and refuses to start on a
-- mismatch. first_start_ms is the smallest timestamp any ID can carry, which is
-- what keeps fallback tickets (far below it) disjoint from snowflake IDs.
--
-- key_check is the check value of the encoding key of the public forms of IDs
-- (ticketd serve -id-key-file; a keyed digest that names the key, never the key):
-- recorded by the first ticketd started with a key file; from then on a ticketd
-- whose key file does not hold that key refuses to start (one without a key file
-- starts: it serves no public form). '' until then. It changes only by `ticketd
-- deployment set -id-key-file F` (a key change, docs/operations.md).
--
-- balanced_bits is the deployment's -balanced-bits, recorded by the first ticketd
-- of release 3: a ticketd not given the flag adopts it, one given another refuses
-- to start. NULL until then. It changes only by `ticketd deployment set
-- -balanced-bits N`. Neither column bears on uniqueness: releases 1 and 2 ignore
-- them.
--
-- finalized_release is the release whose upgrade the operator has finalized
-- (`ticketd upgrade finalize`): what older releases cannot read is used only once
-- it is at least the release that added it, and a ticketd older than it refuses
-- to start (releases 3 and later can tell). A deployment first started by
-- release 3 or later records its release at once; one started by release 1 or 2
-- holds 0 until finalized.
--
-- Written by: ticketd, once (INSERT IGNORE; key_check and balanced_bits by UPDATE
-- while they are unset); finalized_release by `ticketd upgrade finalize` (raised,
-- never lowered); key_check and balanced_bits by `ticketd deployment set`. Nothing
-- else changes afterwards.
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS deployment (
  id                TINYINT UNSIGNED NOT NULL DEFAULT 1,
  layout            VARCHAR(32)      NOT NULL,
  epoch_ms          BIGINT           NOT NULL,
  first_start_ms    BIGINT           NOT NULL,
  created_by        VARCHAR(255)     NOT NULL DEFAULT '',
  created_at        DATETIME(3)      NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  finalized_release INT UNSIGNED     NOT NULL DEFAULT 0,
  key_check         VARCHAR(32)      NOT NULL DEFAULT '' CHECK (key_check REGEXP '^([0-9a-f]{32})?$'),
  balanced_bits     TINYINT UNSIGNED NULL DEFAULT NULL,
  PRIMARY KEY (id),
  CONSTRAINT deployment_single_row CHECK (id = 1)
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;
-- A deployment made by an older schema.sql: not finalized (0) until the operator
-- says so; no key and no balanced bits recorded until a ticketd of release 3 starts.
ALTER TABLE deployment ADD COLUMN IF NOT EXISTS finalized_release INT UNSIGNED NOT NULL DEFAULT 0;
ALTER TABLE deployment
  ADD COLUMN IF NOT EXISTS key_check VARCHAR(32) NOT NULL DEFAULT '' CHECK (key_check REGEXP '^([0-9a-f]{32})?$'),
  ADD COLUMN IF NOT EXISTS balanced_bits TINYINT UNSIGNED NULL DEFAULT NULL;

-- ---------------------------------------------------------------------------
-- High-water marks: the highest ticket ticketd has seen from each OTHER server,
-- per counter (peer_offset, 1 to N, names the server the tickets came from). The
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
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;
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
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin;

-- ---------------------------------------------------------------------------
-- Accounts. Privileges go to roles; accounts get a role and a password. The
-- GRANTs name no database: they apply to the one of the USE at the top.
--
--   ticketd_app    what the ticketd daemon needs, no more: REPLACE on the ticket
--                  tables (INSERT + DELETE), its own rows in the lease, copy,
--                  deployment, high-water and commit-probe tables (of deployment,
--                  it may UPDATE key_check and balanced_bits alone: it records
--                  them when they are unset). No DDL, no SUPER, no PROCESS (it
--                  sees its own statements only).
--   ticketd_admin  what `ticketd repair` needs on top: ALTER on the ticket tables,
--                  to move a rewound AUTO_INCREMENT forward (a rewound row of
--                  counters it moves with UPDATE, which ticketd_app has); and
--                  what `ticketd upgrade finalize` needs: UPDATE of
--                  deployment.finalized_release alone (and `ticketd deployment
--                  set`, ticketd_app's UPDATE of key_check and balanced_bits).
--   ticketd_sequences  what `ticketd sequence create|list|check` needs: read the
--                  schema (SELECT: the catalog, the counters and marks it lists and
--                  compares), and INSERT into the catalog, counters, pins and starts, so it
--                  can add sequences and never change or remove one. No UPDATE, no
--                  DELETE, no DDL, no GRANT: a new sequence needs none (one table
--                  holds every counter).
--
-- The account 'ticketd'@'127.0.0.1' is created LOCKED and without a password;
-- `make db-up` (or the DBA, on every server) unlocks it with the password's hash, never the password
-- itself (account statements go to the binary log, which replicas receive):
--   ALTER USER 'ticketd'@'127.0.0.1' IDENTIFIED BY PASSWORD '*…' ACCOUNT UNLOCK;
-- (the hash: scripts/db.sh hash < password-file). For ticketd on other hosts:
--   CREATE USER 'ticketd'@'10.%' IDENTIFIED BY PASSWORD '*…' REQUIRE SSL;
--   GRANT ticketd_app TO 'ticketd'@'10.%'; SET DEFAULT ROLE ticketd_app FOR 'ticketd'@'10.%';
-- ---------------------------------------------------------------------------
CREATE ROLE IF NOT EXISTS ticketd_app;
GRANT SELECT, INSERT, DELETE ON Tickets64          TO ticketd_app;
GRANT SELECT, INSERT, DELETE ON Tickets32          TO ticketd_app;
GRANT SELECT                 ON sequences          TO ticketd_app;
GRANT SELECT, INSERT, UPDATE ON worker_leases      TO ticketd_app;
GRANT SELECT, INSERT, UPDATE ON reservation_copies TO ticketd_app;
GRANT SELECT, INSERT         ON deployment         TO ticketd_app;
GRANT UPDATE (key_check, balanced_bits) ON deployment TO ticketd_app;
GRANT SELECT, INSERT, UPDATE ON high_water         TO ticketd_app;
GRANT SELECT                 ON catalog_version    TO ticketd_app;
GRANT SELECT, UPDATE         ON counters           TO ticketd_app;
GRANT SELECT, INSERT         ON sequence_pins      TO ticketd_app;
GRANT SELECT, INSERT, UPDATE ON commit_probes      TO ticketd_app;
-- Not used by the daemon, but what an account cannot see, information_schema does
-- not show: ticketd tells which release's schema a server holds from it.
GRANT SELECT                 ON sequence_starts    TO ticketd_app;

CREATE ROLE IF NOT EXISTS ticketd_admin;
GRANT ticketd_app TO ticketd_admin;
GRANT ALTER ON Tickets64 TO ticketd_admin;
GRANT ALTER ON Tickets32 TO ticketd_admin;
GRANT UPDATE (finalized_release) ON deployment TO ticketd_admin;

CREATE ROLE IF NOT EXISTS ticketd_sequences;
GRANT SELECT ON *                       TO ticketd_sequences;
GRANT INSERT ON sequences       TO ticketd_sequences;
GRANT INSERT ON counters        TO ticketd_sequences;
GRANT INSERT ON sequence_pins   TO ticketd_sequences;
GRANT INSERT ON sequence_starts TO ticketd_sequences;

CREATE USER IF NOT EXISTS 'ticketd'@'127.0.0.1' ACCOUNT LOCK;
GRANT ticketd_app TO 'ticketd'@'127.0.0.1';
SET DEFAULT ROLE ticketd_app FOR 'ticketd'@'127.0.0.1';
