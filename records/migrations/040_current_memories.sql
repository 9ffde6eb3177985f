-- A run's context holds its subject's newest current memories (records/memories.ts `currentMemories`): read from this
-- index in order, as many as are shown, rather than sorted from all of the subject's memories on every run.
CREATE INDEX memories_current ON memories (project_id, subject_id, learned_at DESC, id) WHERE status = 'current';
