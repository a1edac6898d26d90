-- Console sign-in (sleuth_store::SignInStore): a user's password, kept only as its
-- argon2id hash (PHC string); null until an admin sets one. `password_must_change` makes
-- the console ask for a new password before anything else (a reset, the first admin).
ALTER TABLE users ADD COLUMN password_hash TEXT;
ALTER TABLE users ADD COLUMN password_must_change BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN password_changed_at BIGINT;

-- The console's sessions: only the SHA-256 of the cookie's token is stored. A session
-- ends at `expires_at` (absolute), or when unused for longer than the idle limit the
-- settings name (measured from `last_seen_at`), or at sign-out (deleted).
CREATE TABLE console_sessions (
    id BIGSERIAL PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf_secret TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX console_sessions_by_user ON console_sessions (user_id);
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);
