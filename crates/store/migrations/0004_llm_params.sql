-- A thread's own model parameters (JSON LlmParams), over the defaults: /llm,
-- cairn llm --thread, and the agent's set_llm_params.
ALTER TABLE threads ADD COLUMN llm_params TEXT;
