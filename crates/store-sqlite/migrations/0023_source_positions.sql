-- Each alert's position among its source's alerts in its tenant union, for the burst
-- guard. Append-only, like every migration.
--
-- The guard asks, for every job, whether more than its threshold of alerts came from the
-- alert's source within the window before it. Counting them read up to a threshold's
-- worth of index entries per job, so the cost grew with the threshold. With positions the
-- count is the alert's position less the position of the first alert of the window, plus
-- one: two index seeks whatever the threshold (store-sql's queue.rs, `load_job`). SQLite
-- has one writer at a time, so the counter per source is exact; an alert's position is
-- written by the trigger below in the transaction that stores it.
CREATE TABLE alert_source_counters (
    direct_source_label TEXT NOT NULL,
    tenant_union_id INTEGER NOT NULL,
    last_position INTEGER NOT NULL,
    PRIMARY KEY (direct_source_label, tenant_union_id)
) WITHOUT ROWID;

CREATE TABLE alert_source_positions (
    alert_id INTEGER PRIMARY KEY,
    direct_source_label TEXT NOT NULL,
    tenant_union_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    position INTEGER NOT NULL
);
-- The first alert of a window, with its position, from the index alone.
CREATE INDEX alert_source_positions_by_time
    ON alert_source_positions (direct_source_label, tenant_union_id, created_at, position);

INSERT INTO alert_source_positions (alert_id, direct_source_label, tenant_union_id,
    created_at, position)
SELECT id, direct_source_label, tenant_union_id, created_at,
       ROW_NUMBER() OVER (PARTITION BY direct_source_label, tenant_union_id ORDER BY id)
FROM alerts;
INSERT INTO alert_source_counters (direct_source_label, tenant_union_id, last_position)
SELECT direct_source_label, tenant_union_id, MAX(position)
FROM alert_source_positions GROUP BY direct_source_label, tenant_union_id;

CREATE TRIGGER alert_source_positions_on_insert AFTER INSERT ON alerts
BEGIN
    INSERT INTO alert_source_counters (direct_source_label, tenant_union_id, last_position)
    VALUES (NEW.direct_source_label, NEW.tenant_union_id, 1)
    ON CONFLICT (direct_source_label, tenant_union_id)
    DO UPDATE SET last_position = last_position + 1;
    INSERT INTO alert_source_positions (alert_id, direct_source_label, tenant_union_id,
        created_at, position)
    SELECT NEW.id, NEW.direct_source_label, NEW.tenant_union_id, NEW.created_at,
           last_position
    FROM alert_source_counters
    WHERE direct_source_label = NEW.direct_source_label
        AND tenant_union_id = NEW.tenant_union_id;
END;
