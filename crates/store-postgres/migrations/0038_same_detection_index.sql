-- The latest verdicts on the same detection (history's "same detection" read: the alert's
-- type and source, within its tenant union, concluded and not coalesced into another
-- investigation), newest alert first. The type's own index holds every investigation of
-- the type: after a storm of one rule, thousands coalesced into a few stories lay between
-- the newest verdicts, and each was read and passed over. Partial, so that only what
-- concludes on its own enters it (once, when it concludes): a claim never touches it.
CREATE INDEX investigations_same_detection
    ON investigations (alert_type, direct_source_label, tenant_union_id, alert_create_time, id)
    WHERE status = 'success' AND ignored_for IS NULL;
