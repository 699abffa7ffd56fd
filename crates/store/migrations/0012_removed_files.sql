-- A command can delete a file: `removed` 1 says the answer's last change of the path
-- removed it (`after` is then empty), so that Restore puts back what it held, and only
-- where nothing has made the file again since.
ALTER TABLE checkpoints ADD COLUMN removed INTEGER NOT NULL DEFAULT 0;
