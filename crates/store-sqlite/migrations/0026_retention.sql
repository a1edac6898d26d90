-- Retention deletes investigations and alerts in batches by id; these let it find what
-- still points at them without reading whole tables. Both are partial: most rows hold NULL.
CREATE INDEX investigations_by_ignored_for ON investigations (ignored_for)
    WHERE ignored_for IS NOT NULL;
CREATE INDEX alert_revisions_by_investigation ON alert_revisions (investigation_id)
    WHERE investigation_id IS NOT NULL;
