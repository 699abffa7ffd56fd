-- Which process is answering in a thread, so that another process sharing the file
-- (the app and a CLI) refuses to delete it, rename it or answer in it meanwhile. A
-- row whose process has ended (a crash, kill -9) holds nothing.
CREATE TABLE answering (
    thread_id TEXT PRIMARY KEY REFERENCES threads (id) ON DELETE CASCADE,
    pid INTEGER NOT NULL,
    since INTEGER NOT NULL
);
