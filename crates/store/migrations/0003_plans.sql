-- Plans the model made with create_plan, kept on their thread as p1, p2, … so a draft
-- can be run later by its id.
CREATE TABLE plans (
    thread_id   TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    plan_id     TEXT NOT NULL,
    -- JSON {plan_id, objective, steps, requested_outputs}
    plan        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (thread_id, plan_id)
);
