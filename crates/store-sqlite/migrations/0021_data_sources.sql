-- Data sources that investigations query (sleuth_store::DataSourceStore). The definition
-- and limits are JSON checked by sleuth-sources before they are stored; secrets are only
-- named there and kept in the secret store. `revision` moves with every change, so that
-- answers cached under an older definition are never used.
CREATE TABLE data_sources (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    definition TEXT NOT NULL,
    limits TEXT NOT NULL,
    tenant_union_id INTEGER REFERENCES tenant_unions(id),
    enabled INTEGER NOT NULL DEFAULT 1,
    revision INTEGER NOT NULL DEFAULT 1,
    created_by INTEGER REFERENCES users(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
