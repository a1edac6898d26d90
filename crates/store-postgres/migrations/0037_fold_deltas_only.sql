-- Folding reads and writes only the deltas since the last fold (store-sql's
-- count_folding.rs): each table's folded rows, one per combination, are marked `folded`
-- and kept unique by an index, and a fold deletes the unfolded deltas and adds their sums
-- into those rows. Folding every row of a table each time cost, at a million stored,
-- about 10 s for the facet counts, twice in a 40 s drain. The column's default keeps the
-- triggers as they are: what they insert is a delta. The deltas are found by an index of
-- their own (a fold that scanned the table for them read every folded row each time), and
-- so are the folded rows whose sum fell to zero, which the fold deletes.

ALTER TABLE investigation_counts ADD COLUMN folded BOOLEAN NOT NULL DEFAULT false;
CREATE UNIQUE INDEX investigation_counts_folded ON investigation_counts
    (status, canceled, priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key) NULLS NOT DISTINCT WHERE folded;
CREATE INDEX investigation_counts_folded_to_zero ON investigation_counts (folded) WHERE folded AND n = 0;
CREATE INDEX investigation_counts_unfolded ON investigation_counts (folded) WHERE NOT folded;

ALTER TABLE investigation_facet_counts ADD COLUMN folded BOOLEAN NOT NULL DEFAULT false;
CREATE UNIQUE INDEX investigation_facet_counts_folded ON investigation_facet_counts
    (facet, status, canceled, priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key) NULLS NOT DISTINCT WHERE folded;
CREATE INDEX investigation_facet_counts_folded_to_zero ON investigation_facet_counts (folded) WHERE folded AND n = 0;
CREATE INDEX investigation_facet_counts_unfolded ON investigation_facet_counts (folded) WHERE NOT folded;

ALTER TABLE investigation_tag_counts ADD COLUMN folded BOOLEAN NOT NULL DEFAULT false;
CREATE UNIQUE INDEX investigation_tag_counts_folded ON investigation_tag_counts
    (name, status, canceled, priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key) NULLS NOT DISTINCT WHERE folded;
CREATE INDEX investigation_tag_counts_folded_to_zero ON investigation_tag_counts (folded) WHERE folded AND n = 0;
CREATE INDEX investigation_tag_counts_unfolded ON investigation_tag_counts (folded) WHERE NOT folded;

ALTER TABLE investigation_tag_facet_counts ADD COLUMN folded BOOLEAN NOT NULL DEFAULT false;
CREATE UNIQUE INDEX investigation_tag_facet_counts_folded ON investigation_tag_facet_counts
    (name, facet, status, canceled, priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key) NULLS NOT DISTINCT WHERE folded;
CREATE INDEX investigation_tag_facet_counts_folded_to_zero ON investigation_tag_facet_counts (folded) WHERE folded AND n = 0;
CREATE INDEX investigation_tag_facet_counts_unfolded ON investigation_tag_facet_counts (folded) WHERE NOT folded;

ALTER TABLE investigation_hour_counts ADD COLUMN folded BOOLEAN NOT NULL DEFAULT false;
CREATE UNIQUE INDEX investigation_hour_counts_folded ON investigation_hour_counts
    (status, hour) NULLS NOT DISTINCT WHERE folded;
CREATE INDEX investigation_hour_counts_folded_to_zero ON investigation_hour_counts (folded) WHERE folded AND n = 0;
CREATE INDEX investigation_hour_counts_unfolded ON investigation_hour_counts (folded) WHERE NOT folded;

-- What a fold inserts is now only the combinations new since the last; the folders
-- start again from their next look.
ALTER TABLE count_folds RENAME COLUMN rows_left TO rows_inserted;
DELETE FROM count_folds;
