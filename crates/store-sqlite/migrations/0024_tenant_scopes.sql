-- Users and API keys bound to tenant unions (sleuth_store::TenantScope): NULL reaches
-- every union, as users and keys made before this migration do; otherwise a JSON array of
-- tenant union ids. A key reaches what both it and its user allow.
ALTER TABLE users ADD COLUMN tenant_union_ids TEXT;
ALTER TABLE api_keys ADD COLUMN tenant_union_ids TEXT;
