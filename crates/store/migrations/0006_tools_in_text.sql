-- Whether the server said the model's chat template takes no tools, so that they are
-- described in its prompt (kept beside the window it said, and as long).
ALTER TABLE context_windows ADD COLUMN tools_in_text INTEGER NOT NULL DEFAULT 0;
