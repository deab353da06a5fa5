-- ticketd: the schema of one ticket server.
--
-- Load the same file into BOTH servers of the pair, as an administrator:
--
--     mariadb --defaults-file=my.cnf --defaults-group-suffix=.1 -uroot < schema.sql
--
-- Loading it again is safe: every statement is IF NOT EXISTS or otherwise idempotent,
-- and no row a running deployment wrote is touched. The file holds no password; the
-- account's password is set separately (see "Accounts" at the end, and the README).
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
-- Named sequences (Flickr's "more sequences"). Each row names a counter table of
-- its own, shaped like Tickets64 (bits = 64) or Tickets32 (bits = 32).
--
-- block_size B: one ticket t stands for the values [t*B, t*B + B), handed out
-- from ticketd's memory. B = 1 is pure Flickr, one round trip per value.
--
-- Written by: the DBA (INSERT). Read by: ticketd, which looks names up here and
-- never builds SQL from request text. A sequence's bits, table and block size can
-- never change once created, and a sequence cannot be deleted (the triggers below
-- refuse both): a smaller block size would make new blocks overlap values that
-- were already handed out.
--
-- Adding a sequence "orders" (no restart of ticketd needed), on BOTH servers:
--   CREATE TABLE tickets.seq_orders LIKE tickets.Tickets64;
--   INSERT INTO tickets.sequences (name, table_name, bits, block_size)
--          VALUES ('orders', 'seq_orders', 64, 1000);
--   GRANT SELECT, INSERT, DELETE ON tickets.seq_orders TO ticketd_app;
--   GRANT ALTER ON tickets.seq_orders TO ticketd_admin;  -- lets `ticketd repair` fix it after a restore
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS sequences (
  name        VARCHAR(48)     NOT NULL,
  table_name  VARCHAR(64)     NOT NULL,
  bits        TINYINT UNSIGNED NOT NULL DEFAULT 64,
  block_size  BIGINT UNSIGNED NOT NULL DEFAULT 1,
  created_at  DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (name),
  UNIQUE KEY table_name (table_name),
  CONSTRAINT sequence_name_ok  CHECK (name REGEXP '^[a-z][a-z0-9_]{0,47}$'),
  CONSTRAINT sequence_table_ok CHECK (table_name REGEXP '^(Tickets64|Tickets32|seq_[a-z0-9_]{1,60})$'),
  CONSTRAINT sequence_bits_ok  CHECK (bits IN (32, 64)),
  CONSTRAINT sequence_block_ok CHECK (block_size BETWEEN 1 AND 1000000000)
) ENGINE=InnoDB;

DROP TRIGGER IF EXISTS sequences_immutable;
DELIMITER //
CREATE TRIGGER sequences_immutable BEFORE UPDATE ON sequences FOR EACH ROW
BEGIN
  IF NOT (NEW.name <=> OLD.name AND NEW.table_name <=> OLD.table_name
          AND NEW.bits <=> OLD.bits AND NEW.block_size <=> OLD.block_size) THEN
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
DELIMITER ;

-- The two Flickr tables are sequences too, so applications can use them directly.
INSERT IGNORE INTO sequences (name, table_name, bits, block_size) VALUES
  ('tickets64', 'Tickets64', 64, 1),
  ('tickets32', 'Tickets32', 32, 1);

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
-- per ticket table (peer_offset 1 or 2 names the server the tickets came from).
-- A server restored from a backup has a counter below the mark its peer holds
-- for it; ticketd then refuses its tickets and prints the ALTER TABLE that fixes it.
--
-- Written by: ticketd only (periodically and on shutdown, not per ticket).
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS high_water (
  table_name  VARCHAR(64)      NOT NULL,
  peer_offset TINYINT UNSIGNED NOT NULL,
  mark        BIGINT UNSIGNED  NOT NULL DEFAULT 0,
  updated_at  DATETIME(3)      NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (table_name, peer_offset)
) ENGINE=InnoDB;

-- ---------------------------------------------------------------------------
-- Accounts. Privileges go to roles; accounts get a role and a password.
--
--   ticketd_app    what the ticketd daemon needs, no more: REPLACE on the ticket
--                  tables (INSERT + DELETE), its own rows in the lease, copy,
--                  deployment and high-water tables. No DDL, no SUPER.
--   ticketd_admin  what `ticketd repair` needs on top: ALTER on the ticket tables,
--                  to move a rewound AUTO_INCREMENT forward.
--
-- The account 'ticketd'@'127.0.0.1' is created LOCKED and without a password;
-- `make db-up` (or the DBA) unlocks it with a password:
--   ALTER USER 'ticketd'@'127.0.0.1' IDENTIFIED BY '…' ACCOUNT UNLOCK;
-- For ticketd on other hosts: CREATE USER 'ticketd'@'10.%' IDENTIFIED BY '…';
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

CREATE ROLE IF NOT EXISTS ticketd_admin;
GRANT ticketd_app TO ticketd_admin;
GRANT ALTER ON tickets.Tickets64 TO ticketd_admin;
GRANT ALTER ON tickets.Tickets32 TO ticketd_admin;

CREATE USER IF NOT EXISTS 'ticketd'@'127.0.0.1' ACCOUNT LOCK;
GRANT ticketd_app TO 'ticketd'@'127.0.0.1';
SET DEFAULT ROLE ticketd_app FOR 'ticketd'@'127.0.0.1';
