-- What each model server said about a model's context window, so that a run finding
-- a fresh answer here asks the server nothing before its first model call. `tokens`
-- NULL: the server said nothing (a hosted API), which is worth remembering too.
CREATE TABLE context_windows (
    server TEXT NOT NULL,
    model TEXT NOT NULL,
    tokens INTEGER,
    source TEXT,
    asked_at INTEGER NOT NULL,
    PRIMARY KEY (server, model)
);
