-- The operator's context document kept through the API (docs/context.md), merged with the
-- context file. One row: the document is replaced whole. Append-only, like every migration.
CREATE TABLE context_documents (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    -- The document as TOML text, exactly as validated on the way in.
    document TEXT NOT NULL,
    updated_by INTEGER REFERENCES users(id),
    updated_at INTEGER NOT NULL
);
