-- Secrets at rest and per action, on SQLite. Append-only, like every migration.
--
-- A secret's value is sealed by the server with a key kept outside the database
-- (XChaCha20-Poly1305; the server's secret_keys.rs): `value` holds the nonce and the
-- ciphertext as base64 and `key_id` names the key that sealed it. A row whose key_id is
-- NULL is a plaintext value stored before this migration; the first start with a key
-- seals it.
ALTER TABLE script_secrets ADD COLUMN key_id TEXT;

-- The secrets a response action's runs get, as a JSON array of names: a run is handed
-- these and no others.
ALTER TABLE response_scripts ADD COLUMN secret_names TEXT NOT NULL DEFAULT '[]';

-- Until now every run got every secret. The actions that exist keep the secrets stored
-- today, so that an upgrade breaks no script; an admin narrows them with PATCH
-- secret_names.
UPDATE response_scripts SET secret_names = COALESCE(
    (SELECT json_group_array(name) FROM (SELECT name FROM script_secrets ORDER BY name)),
    '[]');
