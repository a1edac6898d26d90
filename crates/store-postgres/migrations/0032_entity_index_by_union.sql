-- Which alerts name an entity, keyed by tenant union first. Append-only, like every
-- migration.
--
-- History reads, for each entity of a new alert, the newest alerts of the alert's own
-- tenant union naming it. Keyed (kind, value, alert_id), the table could only give the
-- newest alerts of ANY union: each read took the newest 200 and looked every one of them
-- up in `alerts` for its union, and an entity everywhere in other unions still took its
-- 200 lookups to find none of this one's. Keyed (tenant_union_id, kind, value, alert_id),
-- the newest alerts of the union are the first ones read, and nothing else is looked up.
--
-- No foreign key to `alerts`: the rows are an index of the alerts, written with them and
-- removed with them by retention (store-sql's entity_index.rs), like SQLite's full-text
-- index. A foreign key checked `alerts` for every row written, and every alert deleted
-- looked for rows naming it by `alert_id`, which this key does not lead with.
CREATE TABLE alert_entities_by_union (
    tenant_union_id BIGINT NOT NULL,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    alert_id BIGINT NOT NULL,
    PRIMARY KEY (tenant_union_id, kind, value, alert_id)
);

INSERT INTO alert_entities_by_union (tenant_union_id, kind, value, alert_id)
SELECT a.tenant_union_id, e.kind, e.value, e.alert_id
FROM alert_entities e JOIN alerts a ON a.id = e.alert_id;

DROP TABLE alert_entities;
