-- A call's whole result where its card shows only the start: the stored execution tree
-- keeps a preview and the size, and "Show all" after a reload reads the whole from here.
CREATE TABLE tool_results (
    message_id    TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    tool_call_id  TEXT NOT NULL,
    content       TEXT NOT NULL,
    PRIMARY KEY (message_id, tool_call_id)
);

-- What the window shows for a question Cairn wrote on the user's behalf ("Run plan
-- p1"), where `content` is what the model read; NULL for a question the user typed.
ALTER TABLE messages ADD COLUMN shown TEXT;
