-- Analysts' notes on investigations (DESIGN.md section 1: investigation-user-notes).
-- Append-only, like every migration. Their words also go into the investigation's
-- free-text search document (investigation_search), which needs no schema change.
CREATE TABLE investigation_notes (
    id INTEGER PRIMARY KEY,
    investigation_id INTEGER NOT NULL REFERENCES investigations(id),
    -- The author: only they, or an admin, may change or delete the note.
    user_id INTEGER NOT NULL REFERENCES users(id),
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX investigation_notes_by_investigation ON investigation_notes (investigation_id, id);
