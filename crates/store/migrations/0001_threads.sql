-- Threads, their messages (with what the model needs to replay them), full-text
-- search, the model-call log, memory, settings, permission rules, pending approvals.

CREATE TABLE threads (
    id          TEXT PRIMARY KEY NOT NULL,
    title       TEXT NOT NULL,
    mode        TEXT NOT NULL DEFAULT 'default' CHECK (mode IN ('plan', 'default', 'auto')),
    workspace   TEXT,
    dialect     TEXT,
    base_url    TEXT,
    model       TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX threads_by_update ON threads (updated_at DESC, id DESC);

CREATE TABLE messages (
    id              TEXT PRIMARY KEY NOT NULL,
    thread_id       TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content         TEXT NOT NULL DEFAULT '',
    reasoning       TEXT,
    -- JSON array of the model-facing messages this turn added (assistant text, tool
    -- calls, tool results), exactly as the next turn replays them.
    replay          TEXT,
    execution_tree  TEXT,
    usage           TEXT,
    status          TEXT NOT NULL CHECK (status IN ('complete', 'partial', 'cancelled', 'failed')),
    error           TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    UNIQUE (thread_id, seq)
);

CREATE VIRTUAL TABLE messages_fts USING fts5 (
    content,
    content = 'messages',
    content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO messages_fts (rowid, content) VALUES (new.rowid, new.content);
END;

CREATE TABLE model_calls (
    id                 INTEGER PRIMARY KEY,
    thread_id          TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    message_id         TEXT REFERENCES messages (id) ON DELETE CASCADE,
    operation          TEXT NOT NULL,
    model              TEXT NOT NULL,
    depth              INTEGER NOT NULL,
    prompt_tokens      INTEGER NOT NULL,
    completion_tokens  INTEGER NOT NULL,
    estimated          INTEGER NOT NULL,
    latency_ms         INTEGER NOT NULL,
    first_token_ms     INTEGER,
    error              TEXT,
    created_at         INTEGER NOT NULL
);
CREATE INDEX model_calls_by_thread ON model_calls (thread_id);

CREATE TABLE memory (
    key         TEXT PRIMARY KEY NOT NULL,
    value       TEXT NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE settings (
    key    TEXT PRIMARY KEY NOT NULL,
    value  TEXT NOT NULL
);

CREATE TABLE permission_rules (
    id          INTEGER PRIMARY KEY,
    list        TEXT NOT NULL CHECK (list IN ('allow', 'ask', 'deny')),
    rule        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    UNIQUE (list, rule)
);

CREATE TABLE pending_approvals (
    approval_id  TEXT PRIMARY KEY NOT NULL,
    thread_id    TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    message_id   TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    tool_call_id TEXT NOT NULL,
    request      TEXT NOT NULL,
    created_at   INTEGER NOT NULL
);
