-- The kept counts' rows are keyed (group_key, their primary key, so the order of their
-- rows) by the JSON array of their columns. A concluded job takes one from its
-- combination in the queued state and adds one in the concluded state: with the state
-- first in the key, those two rows sat in far-apart pages, and every fold wrote both.
-- The store now keys the state last (sleuth_store_sql's kept_counts, KEY_ORDER); this
-- rewrites the keys of the rows kept so far. Two steps, so that no new key meets an old
-- one while the rows move: a JSON array never starts with 'rekey:'.
UPDATE investigation_counts SET group_key = 'rekey:' || group_key;
UPDATE investigation_counts SET group_key = json_array(alert_type, direct_source_label,
    tenant_union_id, tenant_id, tenant_label, tenant_integration_key, priority, canceled,
    status);

UPDATE investigation_facet_counts SET group_key = 'rekey:' || group_key;
UPDATE investigation_facet_counts SET group_key = json_array(facet, alert_type,
    direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
    priority, canceled, status);

UPDATE investigation_tag_counts SET group_key = 'rekey:' || group_key;
UPDATE investigation_tag_counts SET group_key = json_array(name, alert_type,
    direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
    priority, canceled, status);

UPDATE investigation_tag_facet_counts SET group_key = 'rekey:' || group_key;
UPDATE investigation_tag_facet_counts SET group_key = json_array(name, facet, alert_type,
    direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
    priority, canceled, status);
