-- Which tenant union each audit entry concerns (sleuth_store::NewAuditEntry's
-- tenant_union_id), so that an admin bound to tenant unions lists the entries about what
-- lies in them: investigations, notes on them, context memory items of a union. Kept beside
-- the chain, not in it: audit_log is never changed, and its hashes cover only what an entry
-- says was done. Entries about what every tenant shares have no row.
CREATE TABLE audit_entry_unions (
    seq bigint PRIMARY KEY REFERENCES audit_log(seq),
    tenant_union_id bigint NOT NULL
);
CREATE INDEX audit_entry_unions_by_union ON audit_entry_unions (tenant_union_id, seq);

-- The entries written before: found from what each names, where that still exists.
-- Investigations, and notes created on them (the route names the investigation).
INSERT INTO audit_entry_unions (seq, tenant_union_id)
SELECT a.seq, i.tenant_union_id FROM audit_log a
JOIN investigations i ON CAST(i.id AS TEXT) = a.resource_id
WHERE a.resource_type = 'investigation'
   OR (a.resource_type = 'investigation-user-notes' AND a.action LIKE '%/create');
-- A note changed or deleted (the route names the note).
INSERT INTO audit_entry_unions (seq, tenant_union_id)
SELECT a.seq, i.tenant_union_id FROM audit_log a
JOIN investigation_notes n ON CAST(n.id AS TEXT) = a.resource_id
JOIN investigations i ON i.id = n.investigation_id
WHERE a.resource_type = 'investigation-user-notes' AND a.action NOT LIKE '%/create';
-- Context memory items of one union.
INSERT INTO audit_entry_unions (seq, tenant_union_id)
SELECT a.seq, m.tenant_union_id FROM audit_log a
JOIN context_memory_items m ON CAST(m.id AS TEXT) = a.resource_id
WHERE a.resource_type = 'context-memory' AND m.tenant_union_id IS NOT NULL;
