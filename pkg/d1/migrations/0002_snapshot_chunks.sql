-- The snapshot in chunks, so that a commit writes only the part of it that
-- changed (see `D1Store`, idem/stores/d1). The full chunks of 16 Ki characters, from
-- the start of the snapshot, are rows of `snapshot_chunks`; the process row's
-- `snapshot` holds the rest (shorter than a chunk) and `chunks` how many chunk
-- rows come before it. A row written before this migration (chunks = 0, the
-- whole snapshot in `snapshot`) reads the same; its next commit cuts it.

ALTER TABLE processes ADD COLUMN chunks INTEGER NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS snapshot_chunks (
  process_id TEXT    NOT NULL,
  idx        INTEGER NOT NULL,
  text       TEXT    NOT NULL,
  -- the revision whose commit last wrote this chunk (an unchanged chunk keeps an older one)
  revision   INTEGER NOT NULL,
  PRIMARY KEY (process_id, idx)
);
