-- Each alert's position among its source's alerts in its tenant union, for the burst
-- guard, as SQLite keeps them (its migration 0023). Append-only, like every migration.
--
-- The guard asks, for every job, whether more than its threshold of alerts came from the
-- alert's source within the window before it. Counting them read up to a threshold's
-- worth of index entries per job, so the cost grew with the threshold. With positions the
-- count is the alert's position less the position of the first alert of the window, plus
-- one: two index seeks whatever the threshold (store-sql's queue.rs, `load_job`).
--
-- Unlike the list's counts (0007, 0021), positions must be exact and gapless, so they come
-- from one counter per source and tenant union. Writers that store alerts of the same
-- source at once queue on that counter's row until the first commits; that keeps the
-- positions in commit order, so the first alert of a window is never one that commits
-- later. The trigger is per statement and takes the counters in key order, so two
-- statements never wait on each other's counters in a circle.
CREATE TABLE alert_source_counters (
    direct_source_label TEXT NOT NULL,
    tenant_union_id BIGINT NOT NULL,
    last_position BIGINT NOT NULL,
    PRIMARY KEY (direct_source_label, tenant_union_id)
);

CREATE TABLE alert_source_positions (
    alert_id BIGINT PRIMARY KEY,
    direct_source_label TEXT NOT NULL,
    tenant_union_id BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    position BIGINT NOT NULL
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

-- A statement's alerts take the next positions of their source, in id order.
CREATE FUNCTION alert_source_positions_on_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    WITH added AS (
        SELECT direct_source_label, tenant_union_id, COUNT(*) AS n
        FROM added_alerts
        GROUP BY direct_source_label, tenant_union_id
        ORDER BY direct_source_label, tenant_union_id
    ), counted AS (
        INSERT INTO alert_source_counters AS counter (direct_source_label, tenant_union_id,
            last_position)
        SELECT direct_source_label, tenant_union_id, n FROM added
        ORDER BY direct_source_label, tenant_union_id
        ON CONFLICT (direct_source_label, tenant_union_id)
        DO UPDATE SET last_position = counter.last_position + excluded.last_position
        RETURNING direct_source_label, tenant_union_id, last_position
    )
    INSERT INTO alert_source_positions (alert_id, direct_source_label, tenant_union_id,
        created_at, position)
    SELECT a.id, a.direct_source_label, a.tenant_union_id, a.created_at,
           counted.last_position - added.n + ROW_NUMBER() OVER (
               PARTITION BY a.direct_source_label, a.tenant_union_id ORDER BY a.id)
    FROM added_alerts a
    JOIN added USING (direct_source_label, tenant_union_id)
    JOIN counted USING (direct_source_label, tenant_union_id);
    RETURN NULL;
END $$;
CREATE TRIGGER alert_source_positions_on_insert AFTER INSERT ON alerts
    REFERENCING NEW TABLE AS added_alerts
    FOR EACH STATEMENT EXECUTE FUNCTION alert_source_positions_on_insert();
