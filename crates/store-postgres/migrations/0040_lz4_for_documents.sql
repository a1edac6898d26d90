-- The columns that hold whole documents (alert bodies, parsed alerts, results, search
-- vectors, events) are compressed with LZ4 instead of PostgreSQL's default pglz.
-- Append-only, like every migration.
--
-- PostgreSQL compresses any value over about 2 KB before storing it. With pglz, that was a
-- quarter of the database server's CPU during a drain (`perf`: `pglz_compress` under the
-- insert of each investigation's result, about 9 KB of JSON), and the creates pay it for
-- every alert body. LZ4 compresses several times faster for a little less saving. Values
-- already stored keep the method they were written with; both read the same.
--
-- LZ4 needs PostgreSQL 14 or newer built with it (every PGDG and Debian build is). Where
-- it is missing, the columns keep pglz and the migration still applies.
DO $$
BEGIN
    IF current_setting('server_version_num')::INT < 140000 THEN
        RETURN;
    END IF;
    EXECUTE 'ALTER TABLE alerts ALTER COLUMN raw_alert_content SET COMPRESSION lz4, '
        'ALTER COLUMN parsed SET COMPRESSION lz4, '
        'ALTER COLUMN enrich_result SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE alert_revisions ALTER COLUMN raw_alert_content SET COMPRESSION lz4, '
        'ALTER COLUMN changes SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE investigation_results ALTER COLUMN result SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE investigations ALTER COLUMN search_vector SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE system_events ALTER COLUMN trigger_args SET COMPRESSION lz4, '
        'ALTER COLUMN search_text SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE trigger_runs ALTER COLUMN trigger_args SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE notification_deliveries ALTER COLUMN event SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported THEN
    -- A server built without LZ4: every ALTER above is undone together, pglz stays.
    RAISE NOTICE 'LZ4 is not supported by this server; documents stay compressed with pglz';
END $$;
