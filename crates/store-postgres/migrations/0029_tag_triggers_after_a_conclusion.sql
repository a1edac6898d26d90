-- The triggers that carry a change of an investigation over to its insight tags (their
-- counts, 0008 and 0026, and their copies of the state and alert time, 0011) run only for
-- an investigation that has concluded before. Append-only, like every migration.
--
-- Tags are written only with a conclusion, after its `generated_time` is set in the same
-- transaction, and nothing sets it back to NULL: an investigation whose old row has no
-- `generated_time` has no tags, and these triggers had nothing to do for it. They still
-- ran for every claim and every result, each a PL/pgSQL call that looked the tags up; and
-- PL/pgSQL keeps a call's plans for the life of the connection, so a worker that started
-- while `investigation_tags` was empty went on reading the whole table, for every state
-- change, as it grew (on a server where nothing analyses the tables).
DROP TRIGGER investigation_tag_counts_on_investigation_update ON investigations;
CREATE TRIGGER investigation_tag_counts_on_investigation_update AFTER UPDATE ON investigations
    FOR EACH ROW
    WHEN (OLD.generated_time IS NOT NULL AND (
        OLD.status IS DISTINCT FROM NEW.status OR OLD.canceled IS DISTINCT FROM NEW.canceled
        OR OLD.priority IS DISTINCT FROM NEW.priority
        OR OLD.alert_type IS DISTINCT FROM NEW.alert_type
        OR OLD.direct_source_label IS DISTINCT FROM NEW.direct_source_label
        OR OLD.tenant_union_id IS DISTINCT FROM NEW.tenant_union_id
        OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
        OR OLD.tenant_label IS DISTINCT FROM NEW.tenant_label
        OR OLD.tenant_integration_key IS DISTINCT FROM NEW.tenant_integration_key))
    EXECUTE FUNCTION investigation_tag_counts_on_investigation_update();

DROP TRIGGER investigation_tag_facet_counts_on_investigation_update ON investigations;
CREATE TRIGGER investigation_tag_facet_counts_on_investigation_update
    AFTER UPDATE ON investigations
    FOR EACH ROW
    WHEN (OLD.generated_time IS NOT NULL AND (
        OLD.status IS DISTINCT FROM NEW.status OR OLD.canceled IS DISTINCT FROM NEW.canceled
        OR OLD.priority IS DISTINCT FROM NEW.priority
        OR OLD.alert_type IS DISTINCT FROM NEW.alert_type
        OR OLD.direct_source_label IS DISTINCT FROM NEW.direct_source_label
        OR OLD.tenant_union_id IS DISTINCT FROM NEW.tenant_union_id
        OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
        OR OLD.tenant_label IS DISTINCT FROM NEW.tenant_label
        OR OLD.tenant_integration_key IS DISTINCT FROM NEW.tenant_integration_key))
    EXECUTE FUNCTION investigation_tag_facet_counts_on_investigation_update();

DROP TRIGGER investigation_tags_follow_investigation ON investigations;
CREATE TRIGGER investigation_tags_follow_investigation AFTER UPDATE ON investigations
    FOR EACH ROW
    WHEN (OLD.generated_time IS NOT NULL AND (
        OLD.status IS DISTINCT FROM NEW.status
        OR OLD.alert_create_time IS DISTINCT FROM NEW.alert_create_time))
    EXECUTE FUNCTION investigation_tags_follow_investigation();
