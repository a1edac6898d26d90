-- The coalesce guard asks for the first alert of a story in the window, in the order
-- (created_at, id). With the key's index ordered by created_at alone, PostgreSQL sorted
-- the rows of each created_at on id and, to close the first group, read on to the next
-- alert of the key that qualified: when none did (a backlog drained in order, where the
-- story's later alerts are not yet investigated), every alert of the key in the window.
-- Ordered by (created_at, id), the walk stops at the first alert that qualifies.
-- (SQLite's index ends with the rowid, the id, already.)
CREATE INDEX alerts_by_coalesce_key_and_id
    ON alerts (coalesce_key, created_at, id) WHERE coalesce_key IS NOT NULL;
DROP INDEX alerts_by_coalesce_key;
