-- Agent profiles: the profile a thread answers as (NULL: the default), whether it
-- routes (its first turn ran with the router, so switch_agent stays offered), and
-- the user messages Cairn wrote itself when the router handed the thread over.
ALTER TABLE threads ADD COLUMN agent TEXT;
ALTER TABLE threads ADD COLUMN routes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN synthetic INTEGER NOT NULL DEFAULT 0;
-- JSON {from, to, reason}: the hand-over a synthetic message continues.
ALTER TABLE messages ADD COLUMN handover TEXT;
