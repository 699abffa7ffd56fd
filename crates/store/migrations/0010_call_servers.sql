-- The model server of each call, by the name the user gave it (`cairn servers`),
-- so usage can be split by machine. Calls logged before servers were named have none.
ALTER TABLE model_calls ADD COLUMN server TEXT;
