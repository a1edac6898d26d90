-- An investigation's result (the engine's conclusion as JSON, a few KB) in a table of its
-- own. In the investigations row it pushed the columns after it onto overflow pages on
-- SQLite: every read of an earlier investigation's title, type or time for history (tens
-- per new investigation), and every rewrite of a row to change its status or feedback,
-- walked the result's pages. Append-only, like every migration.
CREATE TABLE investigation_results (
    investigation_id INTEGER PRIMARY KEY REFERENCES investigations(id),
    result TEXT NOT NULL
);
INSERT INTO investigation_results (investigation_id, result)
    SELECT id, result FROM investigations WHERE result IS NOT NULL;
ALTER TABLE investigations DROP COLUMN result;
