-- idem on Cloudflare D1: one row per process, and an event log that doubles as
-- the audit trail. The log's two UNIQUE constraints are what make a commit a
-- compare-and-set: a writer that loaded an old revision, or that applies an
-- event id already applied, fails its whole batch (see `D1Store`, idem/stores/d1).

CREATE TABLE IF NOT EXISTS processes (
  process_id    TEXT    PRIMARY KEY,
  revision      INTEGER NOT NULL,
  snapshot      TEXT    NOT NULL,
  updated_at    INTEGER NOT NULL,
  -- earliest time some effect or timer is due (ms), for the scheduled dispatcher
  next_due_at   INTEGER,
  -- the event that produced this revision (a stale writer cannot claim it)
  last_event_id TEXT    NOT NULL
);

CREATE INDEX IF NOT EXISTS processes_next_due_at ON processes (next_due_at) WHERE next_due_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS events (
  process_id  TEXT    NOT NULL,
  event_id    TEXT    NOT NULL,
  revision    INTEGER NOT NULL,
  type        TEXT    NOT NULL,
  status      TEXT    NOT NULL,
  response    TEXT,
  received_at INTEGER NOT NULL,
  UNIQUE (process_id, event_id),
  UNIQUE (process_id, revision)
);
