-- What Cairn learned of a model by trying it (its check-up): how it writes tool calls,
-- how the results of its calls must be shown to it for it to answer from them, and
-- whether any way got an answer. Kept until the model is checked again.
CREATE TABLE model_habits (
    server TEXT NOT NULL,
    model TEXT NOT NULL,
    -- native | text | none
    calls TEXT NOT NULL,
    -- native | restated | restated_answer
    results TEXT NOT NULL,
    answered INTEGER NOT NULL,
    checked_at INTEGER NOT NULL,
    PRIMARY KEY (server, model)
);

-- The model's parameter count, where its server says (beside its window, and as long):
-- a small model is checked before its first turn.
ALTER TABLE context_windows ADD COLUMN params INTEGER;

-- Whether the server says how far it has read a prompt (llama.cpp's progress), kept
-- with the rest of what it said of the model.
ALTER TABLE context_windows ADD COLUMN reads_progress INTEGER NOT NULL DEFAULT 0;
