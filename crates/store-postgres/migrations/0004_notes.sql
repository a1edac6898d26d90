-- Analysts' notes on investigations (DESIGN.md section 1: investigation-user-notes).
-- Append-only, like every migration. Their words also go into the investigation's
-- free-text search document (investigations.search_vector), which needs no schema change.
CREATE TABLE investigation_notes (
    id BIGSERIAL PRIMARY KEY,
    investigation_id BIGINT NOT NULL REFERENCES investigations(id),
    -- The author: only they, or an admin, may change or delete the note.
    user_id BIGINT NOT NULL REFERENCES users(id),
    text TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX investigation_notes_by_investigation ON investigation_notes (investigation_id, id);
