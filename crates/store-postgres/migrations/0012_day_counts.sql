-- Exact counts per state and day of alert creation, for a list filtered by states and an
-- alert-creation range only (DESIGN.md section 1: `count` is the exact total). Append-only,
-- like every migration.
--
-- Such a list counted every investigation in the range: 170,000 index entries for two days
-- of a million took 30 ms, growing with the range. Now the whole days inside the range are
-- summed from this table, and only the investigations of the partial days at its two ends
-- are counted. A day is the UTC day, as whole days since 1970 (floor division, so that
-- times before 1970 fall on the right day too).
--
-- As in 0007, the rows are deltas that the triggers only ever insert, so that concurrent
-- writers never wait on a shared counter; the store folds them in the background
-- (`fold_counts` in store-sql), which changes no sum.
CREATE TABLE investigation_day_counts (
    status TEXT NOT NULL,
    day BIGINT NOT NULL,
    n BIGINT NOT NULL
);
CREATE INDEX investigation_day_counts_by_day ON investigation_day_counts (status, day);

CREATE FUNCTION alert_day(alert_create_time BIGINT) RETURNS BIGINT
LANGUAGE sql IMMUTABLE AS $$
    SELECT (alert_create_time - ((alert_create_time % 86400000000) + 86400000000) % 86400000000)
        / 86400000000
$$;

INSERT INTO investigation_day_counts (status, day, n)
SELECT status, alert_day(alert_create_time), COUNT(*)
FROM investigations GROUP BY 1, 2;

-- Inserts and deletes come in batches: one statement-level trigger writes one delta per
-- state and day in the batch. Both name their transition table `changed`.
CREATE FUNCTION investigation_day_counts_on_insert_or_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO investigation_day_counts (status, day, n)
    SELECT status, alert_day(alert_create_time),
           CASE TG_OP WHEN 'DELETE' THEN -COUNT(*) ELSE COUNT(*) END
    FROM changed GROUP BY 1, 2;
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_day_counts_on_insert AFTER INSERT ON investigations
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_day_counts_on_insert_or_delete();
CREATE TRIGGER investigation_day_counts_on_delete AFTER DELETE ON investigations
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_day_counts_on_insert_or_delete();

-- Updates are row by row with a WHEN condition, so that updates which change neither the
-- state nor the alert time cost nothing here.
CREATE FUNCTION investigation_day_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO investigation_day_counts (status, day, n)
    VALUES (OLD.status, alert_day(OLD.alert_create_time), -1),
           (NEW.status, alert_day(NEW.alert_create_time), 1);
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_day_counts_on_update AFTER UPDATE ON investigations
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
        OR OLD.alert_create_time IS DISTINCT FROM NEW.alert_create_time)
    EXECUTE FUNCTION investigation_day_counts_on_update();
