-- What each model server said about a model (its context window, whether its chat
-- template takes tools), so that a run finding a fresh answer here asks the server
-- nothing before its first model call. `tokens` NULL: the server said nothing of the
-- window (a hosted API), which is worth remembering too.
CREATE TABLE context_windows (
    server TEXT NOT NULL,
    model TEXT NOT NULL,
    tokens INTEGER,
    source TEXT,
    tools_in_text INTEGER NOT NULL DEFAULT 0,
    asked_at INTEGER NOT NULL,
    PRIMARY KEY (server, model)
);
