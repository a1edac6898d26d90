-- Which alerts name an entity, for correlation, as a full-text index in place of the
-- alert_entities table of 0001. Append-only, like every migration.
--
-- alert_entities was a B-tree keyed (kind, value, alert_id): each new alert added one
-- entry per entity at that entity's own place in the tree, so a batch of creates changed
-- one leaf page per entity it named, and a commit writes every changed page to the WAL
-- whole. With the benchmark's alerts (four entities each), that was about 128 of the 260
-- pages a batch of 31 creates wrote. FTS5 keeps each transaction's new entries in memory
-- and writes them as one new segment (about 10 pages for the same batch), merging
-- segments later in the background of other writes.
--
-- One row per alert, its rowid the alert's id, holding one token per distinct entity:
-- 'e' and the hex of the UTF-8 text 'kind:value' (a kind holds no ':'), which the
-- tokenizer keeps whole and compares exactly; store-sql's entity_index.rs writes the same.
-- No positions or columns are kept (detail = none): only which alerts hold a token.
CREATE VIRTUAL TABLE alert_entity_index USING fts5(
    tokens,
    content = '',
    contentless_delete = 1,
    detail = none
);

INSERT INTO alert_entity_index (rowid, tokens)
SELECT alert_id, group_concat('e' || lower(hex(kind || ':' || value)), ' ')
FROM alert_entities GROUP BY alert_id;

DROP TABLE alert_entities;
