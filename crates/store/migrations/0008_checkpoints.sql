-- What the files an answer wrote held before its first write of each, and what it left
-- in them, so that the answer's changes can be taken back (and a file changed since is
-- never overwritten). `existed` 0: the answer made the file (taking it back removes
-- it). `before` NULL where it existed: too large to keep.
CREATE TABLE checkpoints (
    message_id   TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    path         TEXT NOT NULL,
    workspace    TEXT NOT NULL,
    existed      INTEGER NOT NULL,
    before       BLOB,
    after        BLOB NOT NULL,
    restored_at  INTEGER,
    PRIMARY KEY (message_id, path)
);
