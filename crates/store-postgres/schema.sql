-- The whole PostgreSQL schema after every migration, written by the schema test of this crate
-- (never by hand): `SLEUTH_WRITE_SCHEMA=1 cargo test --test schema` rewrites it. Read it
-- to know the database; the migrations say how it came to be.

CREATE TABLE alert_entities_by_union (
  tenant_union_id bigint NOT NULL,
  kind text NOT NULL,
  value text NOT NULL,
  alert_id bigint NOT NULL
);

CREATE TABLE alert_revisions (
  id bigint NOT NULL DEFAULT nextval('alert_revisions_id_seq'::regclass),
  identity text NOT NULL,
  revision bigint NOT NULL,
  content_hash text NOT NULL,
  raw_alert_content text COMPRESSION lz4 NOT NULL,
  severity text,
  changes text COMPRESSION lz4 NOT NULL,
  received_at bigint NOT NULL,
  investigation_id bigint
);

CREATE TABLE alert_sightings (
  identity text NOT NULL,
  seen_count bigint NOT NULL,
  last_seen_at bigint NOT NULL,
  latest_revision bigint NOT NULL,
  latest_content_hash text NOT NULL
);

CREATE TABLE alert_source_counters (
  direct_source_label text NOT NULL,
  tenant_union_id bigint NOT NULL,
  last_position bigint NOT NULL
);

CREATE TABLE alert_source_positions (
  alert_id bigint NOT NULL,
  direct_source_label text NOT NULL,
  tenant_union_id bigint NOT NULL,
  created_at bigint NOT NULL,
  "position" bigint NOT NULL
);

CREATE TABLE alerts (
  id bigint NOT NULL DEFAULT nextval('alerts_id_seq'::regclass),
  identity text NOT NULL,
  tenant_union_id bigint NOT NULL,
  tenant_integration_key text,
  parsed text COMPRESSION lz4 NOT NULL,
  raw_alert_content text COMPRESSION lz4 NOT NULL,
  enrich_result text COMPRESSION lz4,
  direct_source_label text NOT NULL,
  coalesce_key text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  content_hash text,
  revision bigint NOT NULL DEFAULT 1
);

CREATE TABLE api_keys (
  id bigint NOT NULL DEFAULT nextval('api_keys_id_seq'::regclass),
  user_id bigint NOT NULL,
  name text NOT NULL,
  key_hash text NOT NULL,
  key_prefix text NOT NULL,
  created_at bigint NOT NULL,
  last_used_at bigint,
  revoked_at bigint,
  tenant_union_ids text
);

CREATE TABLE audit_chain_head (
  id bigint NOT NULL,
  seq bigint NOT NULL,
  hash text NOT NULL
);

CREATE TABLE audit_entry_unions (
  seq bigint NOT NULL,
  tenant_union_id bigint NOT NULL
);

CREATE TABLE audit_log (
  seq bigint NOT NULL,
  at bigint NOT NULL,
  actor_user_id bigint,
  actor_email text,
  action text NOT NULL,
  resource_type text NOT NULL,
  resource_id text,
  request_id text,
  detail text NOT NULL,
  prev_hash text NOT NULL,
  hash text NOT NULL
);

CREATE TABLE connector_writebacks (
  id bigint NOT NULL DEFAULT nextval('connector_writebacks_id_seq'::regclass),
  connector_id bigint NOT NULL,
  investigation_id bigint NOT NULL,
  vendor_alert_id text NOT NULL,
  attempts bigint NOT NULL DEFAULT 0,
  next_attempt_at bigint NOT NULL,
  last_error text,
  sent_at bigint,
  created_at bigint NOT NULL
);

CREATE TABLE connectors (
  id bigint NOT NULL DEFAULT nextval('connectors_id_seq'::regclass),
  name text NOT NULL,
  kind text NOT NULL,
  settings text NOT NULL,
  tenant_union_id bigint,
  enabled bigint NOT NULL DEFAULT 1,
  interval_seconds bigint NOT NULL,
  cursor text,
  next_poll_at bigint NOT NULL,
  lease_token text,
  lease_expires_at bigint,
  last_poll_at bigint,
  caught_up_at bigint,
  last_error text,
  last_error_at bigint,
  failures bigint NOT NULL DEFAULT 0,
  polls bigint NOT NULL DEFAULT 0,
  pages bigint NOT NULL DEFAULT 0,
  alerts_taken bigint NOT NULL DEFAULT 0,
  alerts_known bigint NOT NULL DEFAULT 0,
  alerts_refused bigint NOT NULL DEFAULT 0,
  created_by bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  writebacks_sent bigint NOT NULL DEFAULT 0,
  last_writeback_error text,
  last_writeback_error_at bigint
);

CREATE TABLE console_sessions (
  id bigint NOT NULL DEFAULT nextval('console_sessions_id_seq'::regclass),
  token_hash text NOT NULL,
  user_id bigint NOT NULL,
  csrf_secret text NOT NULL,
  created_at bigint NOT NULL,
  last_seen_at bigint NOT NULL,
  expires_at bigint NOT NULL
);

CREATE TABLE context_documents (
  id bigint NOT NULL,
  document text NOT NULL,
  updated_by bigint,
  updated_at bigint NOT NULL
);

CREATE TABLE context_memory_entities (
  item_id bigint NOT NULL,
  match_key text NOT NULL,
  kind text NOT NULL,
  value text NOT NULL,
  verdict text,
  note text
);

CREATE TABLE context_memory_items (
  id bigint NOT NULL DEFAULT nextval('context_memory_items_id_seq'::regclass),
  text text NOT NULL,
  tenant_union_id bigint,
  tenant_id text,
  tenant_label text,
  hints text NOT NULL,
  entities text NOT NULL,
  search_text text NOT NULL,
  created_by bigint,
  updated_by bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE count_folds (
  table_name text NOT NULL,
  rows_inserted bigint NOT NULL,
  inserted_before bigint NOT NULL
);

CREATE TABLE custom_strategies (
  id bigint NOT NULL DEFAULT nextval('custom_strategies_id_seq'::regclass),
  internal_origin_uuid text NOT NULL,
  is_enabled bigint NOT NULL,
  is_archived bigint NOT NULL DEFAULT 0,
  is_protected bigint NOT NULL DEFAULT 0,
  total_conclusions_affected bigint NOT NULL DEFAULT 0,
  total_instructions_used bigint NOT NULL DEFAULT 0,
  total_priorities_affected bigint NOT NULL DEFAULT 0,
  created_by bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE data_sources (
  id bigint NOT NULL DEFAULT nextval('data_sources_id_seq'::regclass),
  name text NOT NULL,
  definition text NOT NULL,
  limits text NOT NULL,
  tenant_union_id bigint,
  enabled bigint NOT NULL DEFAULT 1,
  revision bigint NOT NULL DEFAULT 1,
  created_by bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE investigation_counts (
  status text NOT NULL,
  canceled text,
  priority text,
  alert_type text NOT NULL,
  direct_source_label text NOT NULL,
  tenant_union_id bigint NOT NULL,
  tenant_id text,
  tenant_label text,
  tenant_integration_key text,
  n bigint NOT NULL,
  folded boolean NOT NULL DEFAULT false
);

CREATE TABLE investigation_facet_counts (
  facet text NOT NULL,
  status text NOT NULL,
  canceled text,
  priority text,
  alert_type text,
  direct_source_label text,
  tenant_union_id bigint,
  tenant_id text,
  tenant_label text,
  tenant_integration_key text,
  n bigint NOT NULL,
  folded boolean NOT NULL DEFAULT false
);

CREATE TABLE investigation_hour_counts (
  status text NOT NULL,
  hour bigint NOT NULL,
  n bigint NOT NULL,
  folded boolean NOT NULL DEFAULT false
);

CREATE TABLE investigation_notes (
  id bigint NOT NULL DEFAULT nextval('investigation_notes_id_seq'::regclass),
  investigation_id bigint NOT NULL,
  user_id bigint NOT NULL,
  text text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE investigation_results (
  investigation_id bigint NOT NULL,
  result text COMPRESSION lz4 NOT NULL
);

CREATE TABLE investigation_tag_counts (
  name text NOT NULL,
  status text NOT NULL,
  canceled text,
  priority text,
  alert_type text NOT NULL,
  direct_source_label text NOT NULL,
  tenant_union_id bigint NOT NULL,
  tenant_id text,
  tenant_label text,
  tenant_integration_key text,
  n bigint NOT NULL,
  folded boolean NOT NULL DEFAULT false
);

CREATE TABLE investigation_tag_facet_counts (
  name text NOT NULL,
  facet text NOT NULL,
  status text NOT NULL,
  canceled text,
  priority text,
  alert_type text,
  direct_source_label text,
  tenant_union_id bigint,
  tenant_id text,
  tenant_label text,
  tenant_integration_key text,
  n bigint NOT NULL,
  folded boolean NOT NULL DEFAULT false
);

CREATE TABLE investigation_tags (
  name text NOT NULL,
  investigation_id bigint NOT NULL,
  status text,
  alert_create_time bigint
);

CREATE TABLE investigations (
  id bigint NOT NULL DEFAULT nextval('investigations_id_seq'::regclass),
  alert_id bigint NOT NULL,
  status text NOT NULL,
  canceled text,
  outcome text,
  priority text,
  priority_rank bigint NOT NULL DEFAULT 0,
  error_msg text,
  ignored_for bigint,
  is_retried bigint NOT NULL DEFAULT 0,
  start_time bigint,
  generated_time bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  alert_create_time bigint NOT NULL,
  alert_start_time bigint,
  alert_type text NOT NULL,
  direct_source_label text NOT NULL,
  tenant_union_id bigint NOT NULL,
  tenant_id text,
  tenant_label text,
  tenant_integration_key text,
  feedback_status text NOT NULL DEFAULT 'in_review'::text,
  feedback_outcome text,
  feedback_priority text,
  feedback_outcome_note text,
  feedback_remediations_done text NOT NULL DEFAULT '{}'::text,
  feedback_updated_by bigint,
  feedback_created_at bigint NOT NULL,
  feedback_updated_at bigint NOT NULL,
  search_vector tsvector COMPRESSION lz4,
  alert_title text
);

CREATE TABLE jobs (
  investigation_id bigint NOT NULL DEFAULT nextval('jobs_investigation_id_seq'::regclass),
  ready_at bigint NOT NULL,
  attempts bigint NOT NULL DEFAULT 0,
  lease_owner text,
  lease_token text,
  lease_expires_at bigint
);

CREATE TABLE notification_deliveries (
  id bigint NOT NULL DEFAULT nextval('notification_deliveries_id_seq'::regclass),
  destination_id bigint NOT NULL,
  system_event_id bigint,
  event_id text NOT NULL,
  event text COMPRESSION lz4 NOT NULL,
  state text NOT NULL,
  attempts bigint NOT NULL DEFAULT 0,
  next_attempt_at bigint NOT NULL,
  last_error text,
  delivered_detail text,
  delivered_at bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE notification_destinations (
  id bigint NOT NULL DEFAULT nextval('notification_destinations_id_seq'::regclass),
  name text NOT NULL,
  kind text NOT NULL,
  settings text NOT NULL,
  rule text NOT NULL,
  template text,
  enabled bigint NOT NULL DEFAULT 1,
  rate_limit_per_minute bigint,
  cursor bigint NOT NULL,
  paused_until bigint,
  lease_token text,
  lease_expires_at bigint,
  last_error text,
  last_error_at bigint,
  last_delivered_at bigint,
  created_by bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE push_sources (
  id bigint NOT NULL DEFAULT nextval('push_sources_id_seq'::regclass),
  name text NOT NULL,
  kind text NOT NULL,
  token_hash text NOT NULL,
  signing_secret text,
  tenant_union_id bigint,
  enabled bigint NOT NULL DEFAULT 1,
  deliveries bigint NOT NULL DEFAULT 0,
  alerts_received bigint NOT NULL DEFAULT 0,
  last_delivery_at bigint,
  created_by bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE response_script_versions (
  id bigint NOT NULL DEFAULT nextval('response_script_versions_id_seq'::regclass),
  script_id bigint NOT NULL,
  v_num bigint NOT NULL,
  code text NOT NULL,
  author_id bigint NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE response_scripts (
  id bigint NOT NULL DEFAULT nextval('response_scripts_id_seq'::regclass),
  display_name text NOT NULL,
  trigger_uuid text NOT NULL,
  is_enabled bigint NOT NULL DEFAULT 1,
  is_archived bigint NOT NULL DEFAULT 0,
  allow_network bigint NOT NULL DEFAULT 0,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  secret_names text NOT NULL DEFAULT '[]'::text
);

CREATE TABLE schema_migrations (
  version bigint NOT NULL,
  name text NOT NULL,
  checksum text NOT NULL,
  applied_at bigint NOT NULL
);

CREATE TABLE script_runs (
  id bigint NOT NULL DEFAULT nextval('script_runs_id_seq'::regclass),
  script_id bigint NOT NULL,
  script_version_id bigint NOT NULL,
  trigger_run_id bigint NOT NULL,
  status text NOT NULL,
  stdout text,
  stderr text,
  syserr text,
  isolation text,
  duration_ms bigint,
  runner text NOT NULL,
  deadline_at bigint NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE script_secrets (
  name text NOT NULL,
  value text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  key_id text
);

CREATE TABLE strategy_generation (
  id bigint NOT NULL,
  generation bigint NOT NULL
);

CREATE TABLE strategy_instructions (
  id bigint NOT NULL DEFAULT nextval('strategy_instructions_id_seq'::regclass),
  strategy_id bigint NOT NULL,
  content text NOT NULL,
  internal_origin_uuid text,
  usage_count bigint NOT NULL DEFAULT 0,
  created_at bigint NOT NULL
);

CREATE TABLE strategy_outcome_rules (
  id bigint NOT NULL DEFAULT nextval('strategy_outcome_rules_id_seq'::regclass),
  strategy_id bigint NOT NULL,
  condition_json text NOT NULL,
  outcome text NOT NULL,
  internal_origin_uuid text,
  conclusions_affected bigint NOT NULL DEFAULT 0,
  created_at bigint NOT NULL
);

CREATE TABLE strategy_priority_rules (
  id bigint NOT NULL DEFAULT nextval('strategy_priority_rules_id_seq'::regclass),
  strategy_id bigint NOT NULL,
  priority text NOT NULL,
  ranking bigint NOT NULL,
  outcomes text NOT NULL,
  insight_tag_rule text,
  internal_origin_uuid text,
  priorities_affected bigint NOT NULL DEFAULT 0,
  created_at bigint NOT NULL
);

CREATE TABLE strategy_version_rules (
  version_id bigint NOT NULL,
  kind text NOT NULL,
  rule_id bigint NOT NULL,
  "position" bigint NOT NULL
);

CREATE TABLE strategy_versions (
  id bigint NOT NULL DEFAULT nextval('strategy_versions_id_seq'::regclass),
  strategy_id bigint NOT NULL,
  title text NOT NULL,
  scenario text,
  alert_sources text NOT NULL,
  attack_surfaces text NOT NULL,
  mitre_tactics text NOT NULL,
  is_latest bigint NOT NULL,
  author_id bigint,
  created_at bigint NOT NULL
);

CREATE TABLE system_events (
  id bigint NOT NULL DEFAULT nextval('system_events_id_seq'::regclass),
  trigger_name text NOT NULL,
  trigger_args text COMPRESSION lz4 NOT NULL,
  search_text text COMPRESSION lz4 NOT NULL,
  investigation_id bigint,
  entity text,
  created_at bigint NOT NULL
);

CREATE TABLE tenant_unions (
  id bigint NOT NULL DEFAULT nextval('tenant_unions_id_seq'::regclass),
  display_name text NOT NULL,
  lookup_dict text NOT NULL DEFAULT '{}'::text,
  last_modified_by bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE trigger_definitions (
  uuid text NOT NULL,
  fn_name text NOT NULL,
  display_name text NOT NULL,
  parent_uuid text,
  tree_labels text NOT NULL,
  display_index bigint NOT NULL,
  is_archived bigint NOT NULL DEFAULT 0,
  is_runnable bigint NOT NULL,
  is_scriptable bigint NOT NULL,
  trigger_arg_names text NOT NULL,
  script_var_names text NOT NULL,
  definition text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE trigger_runs (
  id bigint NOT NULL DEFAULT nextval('trigger_runs_id_seq'::regclass),
  trigger_uuid text NOT NULL,
  batch bigint,
  trigger_args text COMPRESSION lz4 NOT NULL,
  investigation_id bigint,
  entity text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE users (
  id bigint NOT NULL DEFAULT nextval('users_id_seq'::regclass),
  email text NOT NULL,
  first_name text NOT NULL DEFAULT ''::text,
  last_name text NOT NULL DEFAULT ''::text,
  role text NOT NULL,
  oidc_user_id text,
  is_active bigint NOT NULL DEFAULT 1,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  tenant_union_ids text,
  password_hash text,
  password_must_change bigint NOT NULL DEFAULT 0,
  password_changed_at bigint
);

-- constraints

ALTER TABLE alert_entities_by_union ADD CONSTRAINT alert_entities_by_union_pkey PRIMARY KEY (tenant_union_id, kind, value, alert_id);

ALTER TABLE alert_revisions ADD CONSTRAINT alert_revisions_identity_revision_key UNIQUE (identity, revision);

ALTER TABLE alert_revisions ADD CONSTRAINT alert_revisions_investigation_id_fkey FOREIGN KEY (investigation_id) REFERENCES investigations(id);

ALTER TABLE alert_revisions ADD CONSTRAINT alert_revisions_pkey PRIMARY KEY (id);

ALTER TABLE alert_sightings ADD CONSTRAINT alert_sightings_pkey PRIMARY KEY (identity);

ALTER TABLE alert_source_counters ADD CONSTRAINT alert_source_counters_pkey PRIMARY KEY (direct_source_label, tenant_union_id);

ALTER TABLE alert_source_positions ADD CONSTRAINT alert_source_positions_pkey PRIMARY KEY (alert_id);

ALTER TABLE alerts ADD CONSTRAINT alerts_identity_key UNIQUE (identity);

ALTER TABLE alerts ADD CONSTRAINT alerts_pkey PRIMARY KEY (id);

ALTER TABLE alerts ADD CONSTRAINT alerts_tenant_union_id_fkey FOREIGN KEY (tenant_union_id) REFERENCES tenant_unions(id);

ALTER TABLE api_keys ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);

ALTER TABLE api_keys ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

ALTER TABLE api_keys ADD CONSTRAINT api_keys_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id);

ALTER TABLE audit_chain_head ADD CONSTRAINT audit_chain_head_id_check CHECK ((id = 1));

ALTER TABLE audit_chain_head ADD CONSTRAINT audit_chain_head_pkey PRIMARY KEY (id);

ALTER TABLE audit_entry_unions ADD CONSTRAINT audit_entry_unions_pkey PRIMARY KEY (seq);

ALTER TABLE audit_entry_unions ADD CONSTRAINT audit_entry_unions_seq_fkey FOREIGN KEY (seq) REFERENCES audit_log(seq);

ALTER TABLE audit_log ADD CONSTRAINT audit_log_pkey PRIMARY KEY (seq);

ALTER TABLE connector_writebacks ADD CONSTRAINT connector_writebacks_connector_id_fkey FOREIGN KEY (connector_id) REFERENCES connectors(id) ON DELETE CASCADE;

ALTER TABLE connector_writebacks ADD CONSTRAINT connector_writebacks_investigation_id_fkey FOREIGN KEY (investigation_id) REFERENCES investigations(id) ON DELETE CASCADE;

ALTER TABLE connector_writebacks ADD CONSTRAINT connector_writebacks_pkey PRIMARY KEY (id);

ALTER TABLE connectors ADD CONSTRAINT connectors_created_by_fkey FOREIGN KEY (created_by) REFERENCES users(id);

ALTER TABLE connectors ADD CONSTRAINT connectors_name_key UNIQUE (name);

ALTER TABLE connectors ADD CONSTRAINT connectors_pkey PRIMARY KEY (id);

ALTER TABLE connectors ADD CONSTRAINT connectors_tenant_union_id_fkey FOREIGN KEY (tenant_union_id) REFERENCES tenant_unions(id);

ALTER TABLE console_sessions ADD CONSTRAINT console_sessions_pkey PRIMARY KEY (id);

ALTER TABLE console_sessions ADD CONSTRAINT console_sessions_token_hash_key UNIQUE (token_hash);

ALTER TABLE console_sessions ADD CONSTRAINT console_sessions_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE context_documents ADD CONSTRAINT context_documents_id_check CHECK ((id = 1));

ALTER TABLE context_documents ADD CONSTRAINT context_documents_pkey PRIMARY KEY (id);

ALTER TABLE context_documents ADD CONSTRAINT context_documents_updated_by_fkey FOREIGN KEY (updated_by) REFERENCES users(id);

ALTER TABLE context_memory_entities ADD CONSTRAINT context_memory_entities_item_id_fkey FOREIGN KEY (item_id) REFERENCES context_memory_items(id) ON DELETE CASCADE;

ALTER TABLE context_memory_items ADD CONSTRAINT context_memory_items_created_by_fkey FOREIGN KEY (created_by) REFERENCES users(id);

ALTER TABLE context_memory_items ADD CONSTRAINT context_memory_items_pkey PRIMARY KEY (id);

ALTER TABLE context_memory_items ADD CONSTRAINT context_memory_items_tenant_union_id_fkey FOREIGN KEY (tenant_union_id) REFERENCES tenant_unions(id);

ALTER TABLE context_memory_items ADD CONSTRAINT context_memory_items_updated_by_fkey FOREIGN KEY (updated_by) REFERENCES users(id);

ALTER TABLE count_folds ADD CONSTRAINT count_folds_pkey PRIMARY KEY (table_name);

ALTER TABLE custom_strategies ADD CONSTRAINT custom_strategies_created_by_fkey FOREIGN KEY (created_by) REFERENCES users(id);

ALTER TABLE custom_strategies ADD CONSTRAINT custom_strategies_internal_origin_uuid_key UNIQUE (internal_origin_uuid);

ALTER TABLE custom_strategies ADD CONSTRAINT custom_strategies_pkey PRIMARY KEY (id);

ALTER TABLE data_sources ADD CONSTRAINT data_sources_created_by_fkey FOREIGN KEY (created_by) REFERENCES users(id);

ALTER TABLE data_sources ADD CONSTRAINT data_sources_name_key UNIQUE (name);

ALTER TABLE data_sources ADD CONSTRAINT data_sources_pkey PRIMARY KEY (id);

ALTER TABLE data_sources ADD CONSTRAINT data_sources_tenant_union_id_fkey FOREIGN KEY (tenant_union_id) REFERENCES tenant_unions(id);

ALTER TABLE investigation_notes ADD CONSTRAINT investigation_notes_investigation_id_fkey FOREIGN KEY (investigation_id) REFERENCES investigations(id);

ALTER TABLE investigation_notes ADD CONSTRAINT investigation_notes_pkey PRIMARY KEY (id);

ALTER TABLE investigation_notes ADD CONSTRAINT investigation_notes_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id);

ALTER TABLE investigation_results ADD CONSTRAINT investigation_results_investigation_id_fkey FOREIGN KEY (investigation_id) REFERENCES investigations(id);

ALTER TABLE investigation_results ADD CONSTRAINT investigation_results_pkey PRIMARY KEY (investigation_id);

ALTER TABLE investigation_tags ADD CONSTRAINT investigation_tags_investigation_id_fkey FOREIGN KEY (investigation_id) REFERENCES investigations(id);

ALTER TABLE investigation_tags ADD CONSTRAINT investigation_tags_pkey PRIMARY KEY (name, investigation_id);

ALTER TABLE investigations ADD CONSTRAINT investigations_alert_id_fkey FOREIGN KEY (alert_id) REFERENCES alerts(id);

ALTER TABLE investigations ADD CONSTRAINT investigations_feedback_updated_by_fkey FOREIGN KEY (feedback_updated_by) REFERENCES users(id);

ALTER TABLE investigations ADD CONSTRAINT investigations_ignored_for_fkey FOREIGN KEY (ignored_for) REFERENCES investigations(id);

ALTER TABLE investigations ADD CONSTRAINT investigations_pkey PRIMARY KEY (id);

ALTER TABLE jobs ADD CONSTRAINT jobs_investigation_id_fkey FOREIGN KEY (investigation_id) REFERENCES investigations(id);

ALTER TABLE jobs ADD CONSTRAINT jobs_pkey PRIMARY KEY (investigation_id);

ALTER TABLE notification_deliveries ADD CONSTRAINT notification_deliveries_destination_id_fkey FOREIGN KEY (destination_id) REFERENCES notification_destinations(id) ON DELETE CASCADE;

ALTER TABLE notification_deliveries ADD CONSTRAINT notification_deliveries_pkey PRIMARY KEY (id);

ALTER TABLE notification_destinations ADD CONSTRAINT notification_destinations_created_by_fkey FOREIGN KEY (created_by) REFERENCES users(id);

ALTER TABLE notification_destinations ADD CONSTRAINT notification_destinations_name_key UNIQUE (name);

ALTER TABLE notification_destinations ADD CONSTRAINT notification_destinations_pkey PRIMARY KEY (id);

ALTER TABLE push_sources ADD CONSTRAINT push_sources_created_by_fkey FOREIGN KEY (created_by) REFERENCES users(id);

ALTER TABLE push_sources ADD CONSTRAINT push_sources_name_key UNIQUE (name);

ALTER TABLE push_sources ADD CONSTRAINT push_sources_pkey PRIMARY KEY (id);

ALTER TABLE push_sources ADD CONSTRAINT push_sources_tenant_union_id_fkey FOREIGN KEY (tenant_union_id) REFERENCES tenant_unions(id);

ALTER TABLE response_script_versions ADD CONSTRAINT response_script_versions_author_id_fkey FOREIGN KEY (author_id) REFERENCES users(id);

ALTER TABLE response_script_versions ADD CONSTRAINT response_script_versions_pkey PRIMARY KEY (id);

ALTER TABLE response_script_versions ADD CONSTRAINT response_script_versions_script_id_fkey FOREIGN KEY (script_id) REFERENCES response_scripts(id);

ALTER TABLE response_script_versions ADD CONSTRAINT response_script_versions_script_id_v_num_key UNIQUE (script_id, v_num);

ALTER TABLE response_scripts ADD CONSTRAINT response_scripts_pkey PRIMARY KEY (id);

ALTER TABLE response_scripts ADD CONSTRAINT response_scripts_trigger_uuid_fkey FOREIGN KEY (trigger_uuid) REFERENCES trigger_definitions(uuid);

ALTER TABLE schema_migrations ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

ALTER TABLE script_runs ADD CONSTRAINT script_runs_pkey PRIMARY KEY (id);

ALTER TABLE script_runs ADD CONSTRAINT script_runs_script_id_fkey FOREIGN KEY (script_id) REFERENCES response_scripts(id);

ALTER TABLE script_runs ADD CONSTRAINT script_runs_script_version_id_fkey FOREIGN KEY (script_version_id) REFERENCES response_script_versions(id);

ALTER TABLE script_runs ADD CONSTRAINT script_runs_trigger_run_id_fkey FOREIGN KEY (trigger_run_id) REFERENCES trigger_runs(id);

ALTER TABLE script_secrets ADD CONSTRAINT script_secrets_pkey PRIMARY KEY (name);

ALTER TABLE strategy_generation ADD CONSTRAINT strategy_generation_id_check CHECK ((id = 1));

ALTER TABLE strategy_generation ADD CONSTRAINT strategy_generation_pkey PRIMARY KEY (id);

ALTER TABLE strategy_instructions ADD CONSTRAINT strategy_instructions_pkey PRIMARY KEY (id);

ALTER TABLE strategy_instructions ADD CONSTRAINT strategy_instructions_strategy_id_fkey FOREIGN KEY (strategy_id) REFERENCES custom_strategies(id);

ALTER TABLE strategy_outcome_rules ADD CONSTRAINT strategy_outcome_rules_pkey PRIMARY KEY (id);

ALTER TABLE strategy_outcome_rules ADD CONSTRAINT strategy_outcome_rules_strategy_id_fkey FOREIGN KEY (strategy_id) REFERENCES custom_strategies(id);

ALTER TABLE strategy_priority_rules ADD CONSTRAINT strategy_priority_rules_pkey PRIMARY KEY (id);

ALTER TABLE strategy_priority_rules ADD CONSTRAINT strategy_priority_rules_ranking_check CHECK (((ranking >= 1) AND (ranking <= 2147483647)));

ALTER TABLE strategy_priority_rules ADD CONSTRAINT strategy_priority_rules_strategy_id_fkey FOREIGN KEY (strategy_id) REFERENCES custom_strategies(id);

ALTER TABLE strategy_version_rules ADD CONSTRAINT strategy_version_rules_kind_check CHECK ((kind = ANY (ARRAY['instruction'::text, 'outcome'::text, 'priority'::text])));

ALTER TABLE strategy_version_rules ADD CONSTRAINT strategy_version_rules_pkey PRIMARY KEY (version_id, kind, rule_id);

ALTER TABLE strategy_version_rules ADD CONSTRAINT strategy_version_rules_version_id_fkey FOREIGN KEY (version_id) REFERENCES strategy_versions(id);

ALTER TABLE strategy_versions ADD CONSTRAINT strategy_versions_author_id_fkey FOREIGN KEY (author_id) REFERENCES users(id);

ALTER TABLE strategy_versions ADD CONSTRAINT strategy_versions_pkey PRIMARY KEY (id);

ALTER TABLE strategy_versions ADD CONSTRAINT strategy_versions_strategy_id_fkey FOREIGN KEY (strategy_id) REFERENCES custom_strategies(id);

ALTER TABLE system_events ADD CONSTRAINT system_events_pkey PRIMARY KEY (id);

ALTER TABLE tenant_unions ADD CONSTRAINT tenant_unions_display_name_key UNIQUE (display_name);

ALTER TABLE tenant_unions ADD CONSTRAINT tenant_unions_last_modified_by_fkey FOREIGN KEY (last_modified_by) REFERENCES users(id);

ALTER TABLE tenant_unions ADD CONSTRAINT tenant_unions_pkey PRIMARY KEY (id);

ALTER TABLE trigger_definitions ADD CONSTRAINT trigger_definitions_fn_name_key UNIQUE (fn_name);

ALTER TABLE trigger_definitions ADD CONSTRAINT trigger_definitions_pkey PRIMARY KEY (uuid);

ALTER TABLE trigger_runs ADD CONSTRAINT trigger_runs_investigation_id_fkey FOREIGN KEY (investigation_id) REFERENCES investigations(id);

ALTER TABLE trigger_runs ADD CONSTRAINT trigger_runs_pkey PRIMARY KEY (id);

ALTER TABLE trigger_runs ADD CONSTRAINT trigger_runs_trigger_uuid_fkey FOREIGN KEY (trigger_uuid) REFERENCES trigger_definitions(uuid);

ALTER TABLE users ADD CONSTRAINT users_email_key UNIQUE (email);

ALTER TABLE users ADD CONSTRAINT users_pkey PRIMARY KEY (id);

-- indexes

CREATE INDEX alert_revisions_by_investigation ON public.alert_revisions USING btree (investigation_id) WHERE (investigation_id IS NOT NULL);

CREATE INDEX alert_source_positions_by_time ON public.alert_source_positions USING btree (direct_source_label, tenant_union_id, created_at, "position");

CREATE INDEX alerts_by_coalesce_key_and_id ON public.alerts USING btree (coalesce_key, created_at, id) WHERE (coalesce_key IS NOT NULL);

CREATE INDEX alerts_by_source ON public.alerts USING btree (direct_source_label, tenant_union_id, created_at);

CREATE INDEX audit_entry_unions_by_union ON public.audit_entry_unions USING btree (tenant_union_id, seq);

CREATE INDEX audit_log_by_actor ON public.audit_log USING btree (actor_user_id);

CREATE INDEX audit_log_by_time ON public.audit_log USING btree (at);

CREATE INDEX connector_writebacks_by_connector ON public.connector_writebacks USING btree (connector_id);

CREATE INDEX connector_writebacks_by_investigation ON public.connector_writebacks USING btree (investigation_id);

CREATE INDEX connector_writebacks_due ON public.connector_writebacks USING btree (next_attempt_at) WHERE (sent_at IS NULL);

CREATE INDEX console_sessions_by_expiry ON public.console_sessions USING btree (expires_at);

CREATE INDEX console_sessions_by_user ON public.console_sessions USING btree (user_id);

CREATE INDEX context_memory_entities_by_item ON public.context_memory_entities USING btree (item_id);

CREATE INDEX context_memory_entities_by_key ON public.context_memory_entities USING btree (match_key, item_id);

CREATE INDEX context_memory_items_by_tenant ON public.context_memory_items USING btree (tenant_id);

CREATE INDEX context_memory_items_by_union ON public.context_memory_items USING btree (tenant_union_id);

CREATE UNIQUE INDEX investigation_counts_folded ON public.investigation_counts USING btree (status, canceled, priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key) NULLS NOT DISTINCT WHERE folded;

CREATE INDEX investigation_counts_folded_to_zero ON public.investigation_counts USING btree (folded) WHERE (folded AND (n = 0));

CREATE INDEX investigation_counts_unfolded ON public.investigation_counts USING btree (folded) WHERE (NOT folded);

CREATE INDEX investigation_facet_counts_by_tenant_id ON public.investigation_facet_counts USING btree (tenant_id, status) WHERE (facet = 'tenant'::text);

CREATE INDEX investigation_facet_counts_by_tenant_label ON public.investigation_facet_counts USING btree (tenant_label, status) WHERE (facet = 'tenant'::text);

CREATE INDEX investigation_facet_counts_by_value ON public.investigation_facet_counts USING btree (facet, status, alert_type, direct_source_label);

CREATE UNIQUE INDEX investigation_facet_counts_folded ON public.investigation_facet_counts USING btree (facet, status, canceled, priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key) NULLS NOT DISTINCT WHERE folded;

CREATE INDEX investigation_facet_counts_folded_to_zero ON public.investigation_facet_counts USING btree (folded) WHERE (folded AND (n = 0));

CREATE INDEX investigation_facet_counts_unfolded ON public.investigation_facet_counts USING btree (folded) WHERE (NOT folded);

CREATE INDEX investigation_hour_counts_by_hour ON public.investigation_hour_counts USING btree (status, hour);

CREATE UNIQUE INDEX investigation_hour_counts_folded ON public.investigation_hour_counts USING btree (status, hour) NULLS NOT DISTINCT WHERE folded;

CREATE INDEX investigation_hour_counts_folded_to_zero ON public.investigation_hour_counts USING btree (folded) WHERE (folded AND (n = 0));

CREATE INDEX investigation_hour_counts_unfolded ON public.investigation_hour_counts USING btree (folded) WHERE (NOT folded);

CREATE INDEX investigation_notes_by_investigation ON public.investigation_notes USING btree (investigation_id, id);

CREATE INDEX investigation_tag_counts_by_name ON public.investigation_tag_counts USING btree (name, status);

CREATE UNIQUE INDEX investigation_tag_counts_folded ON public.investigation_tag_counts USING btree (name, status, canceled, priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key) NULLS NOT DISTINCT WHERE folded;

CREATE INDEX investigation_tag_counts_folded_to_zero ON public.investigation_tag_counts USING btree (folded) WHERE (folded AND (n = 0));

CREATE INDEX investigation_tag_counts_unfolded ON public.investigation_tag_counts USING btree (folded) WHERE (NOT folded);

CREATE INDEX investigation_tag_facet_counts_by_name ON public.investigation_tag_facet_counts USING btree (name, facet, status);

CREATE UNIQUE INDEX investigation_tag_facet_counts_folded ON public.investigation_tag_facet_counts USING btree (name, facet, status, canceled, priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key) NULLS NOT DISTINCT WHERE folded;

CREATE INDEX investigation_tag_facet_counts_folded_to_zero ON public.investigation_tag_facet_counts USING btree (folded) WHERE (folded AND (n = 0));

CREATE INDEX investigation_tag_facet_counts_unfolded ON public.investigation_tag_facet_counts USING btree (folded) WHERE (NOT folded);

CREATE INDEX investigation_tags_by_investigation ON public.investigation_tags USING btree (investigation_id);

CREATE INDEX investigation_tags_by_time ON public.investigation_tags USING btree (name, status, alert_create_time, investigation_id);

CREATE INDEX investigations_by_alert ON public.investigations USING btree (alert_id, id);

CREATE INDEX investigations_by_alert_create ON public.investigations USING btree (status, alert_create_time, id);

CREATE INDEX investigations_by_alert_start ON public.investigations USING btree (status, alert_start_time NULLS FIRST, id);

CREATE INDEX investigations_by_completed ON public.investigations USING btree (status, generated_time NULLS FIRST, id);

CREATE INDEX investigations_by_created ON public.investigations USING btree (status, created_at, id);

CREATE INDEX investigations_by_day_alert_start ON public.investigations USING btree (((alert_create_time / '86400000000'::bigint)), alert_start_time NULLS FIRST, id, alert_create_time) WHERE (status = 'success'::text);

CREATE INDEX investigations_by_day_completed ON public.investigations USING btree (((alert_create_time / '86400000000'::bigint)), generated_time NULLS FIRST, id, alert_create_time) WHERE (status = 'success'::text);

CREATE INDEX investigations_by_day_created ON public.investigations USING btree (((alert_create_time / '86400000000'::bigint)), created_at, id, alert_create_time) WHERE (status = 'success'::text);

CREATE INDEX investigations_by_day_updated ON public.investigations USING btree (((alert_create_time / '86400000000'::bigint)), updated_at, id, alert_create_time) WHERE (status = 'success'::text);

CREATE INDEX investigations_by_feedback ON public.investigations USING btree (status, feedback_updated_at, id);

CREATE INDEX investigations_by_ignored_for ON public.investigations USING btree (ignored_for) WHERE (ignored_for IS NOT NULL);

CREATE INDEX investigations_by_priority ON public.investigations USING btree (status, priority_rank, alert_create_time, id);

CREATE INDEX investigations_by_source ON public.investigations USING btree (direct_source_label, status, alert_create_time, id);

CREATE INDEX investigations_by_tenant ON public.investigations USING btree (tenant_id, status, alert_create_time, id);

CREATE INDEX investigations_by_type ON public.investigations USING btree (alert_type, status, alert_create_time, id);

CREATE INDEX investigations_by_updated ON public.investigations USING btree (status, updated_at, id);

CREATE INDEX investigations_same_detection ON public.investigations USING btree (alert_type, direct_source_label, tenant_union_id, alert_create_time, id) WHERE ((status = 'success'::text) AND (ignored_for IS NULL));

CREATE INDEX investigations_search ON public.investigations USING gin (search_vector);

CREATE INDEX jobs_by_lease ON public.jobs USING btree (lease_expires_at, ready_at);

CREATE INDEX jobs_by_token ON public.jobs USING btree (lease_token);

CREATE INDEX notification_deliveries_by_state ON public.notification_deliveries USING btree (destination_id, state, id);

CREATE INDEX notification_deliveries_delivered ON public.notification_deliveries USING btree (delivered_at) WHERE (state = 'delivered'::text);

CREATE INDEX notification_deliveries_due ON public.notification_deliveries USING btree (destination_id, next_attempt_at) WHERE (state = 'pending'::text);

CREATE UNIQUE INDEX notification_deliveries_once ON public.notification_deliveries USING btree (destination_id, system_event_id);

CREATE INDEX response_scripts_by_trigger ON public.response_scripts USING btree (trigger_uuid, is_archived, is_enabled);

CREATE INDEX script_runs_by_script ON public.script_runs USING btree (script_id, id);

CREATE INDEX script_runs_by_trigger_run ON public.script_runs USING btree (trigger_run_id);

CREATE INDEX script_runs_by_version ON public.script_runs USING btree (script_version_id);

CREATE INDEX script_runs_running ON public.script_runs USING btree (deadline_at) WHERE (status = 'running'::text);

CREATE INDEX strategy_instructions_by_strategy ON public.strategy_instructions USING btree (strategy_id);

CREATE INDEX strategy_outcome_rules_by_strategy ON public.strategy_outcome_rules USING btree (strategy_id);

CREATE INDEX strategy_priority_rules_by_strategy ON public.strategy_priority_rules USING btree (strategy_id);

CREATE INDEX strategy_version_rules_by_rule ON public.strategy_version_rules USING btree (kind, rule_id);

CREATE INDEX strategy_versions_by_strategy ON public.strategy_versions USING btree (strategy_id, id);

CREATE UNIQUE INDEX strategy_versions_one_latest ON public.strategy_versions USING btree (strategy_id) WHERE (is_latest = 1);

CREATE INDEX system_events_by_time ON public.system_events USING btree (created_at, id);

CREATE INDEX system_events_by_trigger ON public.system_events USING btree (trigger_name, created_at);

CREATE INDEX trigger_runs_by_investigation ON public.trigger_runs USING btree (investigation_id) WHERE (investigation_id IS NOT NULL);

-- functions

CREATE OR REPLACE FUNCTION public.alert_hour(alert_create_time bigint)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT (alert_create_time - ((alert_create_time % 3600000000) + 3600000000) % 3600000000)
        / 3600000000
$function$
;

CREATE OR REPLACE FUNCTION public.alert_source_positions_on_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    WITH added AS (
        SELECT direct_source_label, tenant_union_id, COUNT(*) AS n
        FROM added_alerts
        GROUP BY direct_source_label, tenant_union_id
        ORDER BY direct_source_label, tenant_union_id
    ), counted AS (
        INSERT INTO alert_source_counters AS counter (direct_source_label, tenant_union_id,
            last_position)
        SELECT direct_source_label, tenant_union_id, n FROM added
        ORDER BY direct_source_label, tenant_union_id
        ON CONFLICT (direct_source_label, tenant_union_id)
        DO UPDATE SET last_position = counter.last_position + excluded.last_position
        RETURNING direct_source_label, tenant_union_id, last_position
    )
    INSERT INTO alert_source_positions (alert_id, direct_source_label, tenant_union_id,
        created_at, position)
    SELECT a.id, a.direct_source_label, a.tenant_union_id, a.created_at,
           counted.last_position - added.n + ROW_NUMBER() OVER (
               PARTITION BY a.direct_source_label, a.tenant_union_id ORDER BY a.id)
    FROM added_alerts a
    JOIN added USING (direct_source_label, tenant_union_id)
    JOIN counted USING (direct_source_label, tenant_union_id);
    RETURN NULL;
END $function$
;

CREATE OR REPLACE FUNCTION public.audit_log_is_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only';
END;
$function$
;

CREATE OR REPLACE FUNCTION public.investigation_counts_on_insert_or_delete()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO investigation_counts (status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
    SELECT status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
           tenant_id, tenant_label, tenant_integration_key,
           CASE TG_OP WHEN 'DELETE' THEN -COUNT(*) ELSE COUNT(*) END
    FROM changed
    GROUP BY status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
        tenant_id, tenant_label, tenant_integration_key;
    RETURN NULL;
END $function$
;

CREATE OR REPLACE FUNCTION public.investigation_counts_on_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    WITH pairs AS (
        SELECT o.status, o.canceled, o.priority, o.alert_type, o.direct_source_label,
               o.tenant_union_id, o.tenant_id, o.tenant_label, o.tenant_integration_key,
               o.alert_create_time,
               a.status AS new_status, a.canceled AS new_canceled,
               a.priority AS new_priority, a.alert_type AS new_alert_type,
               a.direct_source_label AS new_direct_source_label,
               a.tenant_union_id AS new_tenant_union_id, a.tenant_id AS new_tenant_id,
               a.tenant_label AS new_tenant_label,
               a.tenant_integration_key AS new_tenant_integration_key,
               a.alert_create_time AS new_alert_create_time,
               -- The columns of the list's counts, and those of the hour counts.
               (o.status, o.canceled, o.priority, o.alert_type, o.direct_source_label,
                o.tenant_union_id, o.tenant_id, o.tenant_label, o.tenant_integration_key)
                   IS DISTINCT FROM
               (a.status, a.canceled, a.priority, a.alert_type, a.direct_source_label,
                a.tenant_union_id, a.tenant_id, a.tenant_label, a.tenant_integration_key)
                   AS counted,
               (o.status, o.alert_create_time) IS DISTINCT FROM (a.status, a.alert_create_time)
                   AS timed
        FROM old_rows o JOIN new_rows a ON a.id = o.id
    ),
    moves AS (
        SELECT -1 AS n, status, canceled, priority, alert_type, direct_source_label,
               tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
               alert_create_time, counted, timed
        FROM pairs WHERE counted OR timed
        UNION ALL
        SELECT 1, new_status, new_canceled, new_priority, new_alert_type,
               new_direct_source_label, new_tenant_union_id, new_tenant_id, new_tenant_label,
               new_tenant_integration_key, new_alert_create_time, counted, timed
        FROM pairs WHERE counted OR timed
    ),
    combinations AS (
        INSERT INTO investigation_counts (status, canceled, priority, alert_type,
            direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
               tenant_id, tenant_label, tenant_integration_key, SUM(n)
        FROM moves WHERE counted
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
        HAVING SUM(n) <> 0
    ),
    facets AS (
        INSERT INTO investigation_facet_counts (facet, status, canceled, priority, alert_type,
            direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT f.facet, f.status, f.canceled, f.priority, f.alert_type, f.direct_source_label,
               f.tenant_union_id, f.tenant_id, f.tenant_label, f.tenant_integration_key,
               SUM(m.n)
        FROM moves m
        CROSS JOIN LATERAL investigation_facets(m.status, m.canceled, m.priority,
            m.alert_type, m.direct_source_label, m.tenant_union_id, m.tenant_id,
            m.tenant_label, m.tenant_integration_key) f
        WHERE m.counted
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
        HAVING SUM(m.n) <> 0
    )
    INSERT INTO investigation_hour_counts (status, hour, n)
    SELECT status, alert_hour(alert_create_time), SUM(n)
    FROM moves WHERE timed
    GROUP BY 1, 2
    HAVING SUM(n) <> 0;
    RETURN NULL;
END $function$
;

CREATE OR REPLACE FUNCTION public.investigation_facet_counts_on_insert_or_delete()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO investigation_facet_counts (facet, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    SELECT f.facet, f.status, f.canceled, f.priority, f.alert_type, f.direct_source_label,
           f.tenant_union_id, f.tenant_id, f.tenant_label, f.tenant_integration_key,
           CASE TG_OP WHEN 'DELETE' THEN -COUNT(*) ELSE COUNT(*) END
    FROM changed c
    CROSS JOIN LATERAL investigation_facets(c.status, c.canceled, c.priority, c.alert_type,
        c.direct_source_label, c.tenant_union_id, c.tenant_id, c.tenant_label,
        c.tenant_integration_key) f
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10;
    RETURN NULL;
END $function$
;

CREATE OR REPLACE FUNCTION public.investigation_facets(changed_status text, changed_canceled text, changed_priority text, changed_alert_type text, changed_source text, changed_union bigint, changed_tenant_id text, changed_tenant_label text, changed_integration_key text)
 RETURNS TABLE(facet text, status text, canceled text, priority text, alert_type text, direct_source_label text, tenant_union_id bigint, tenant_id text, tenant_label text, tenant_integration_key text)
 LANGUAGE sql
 IMMUTABLE
AS $function$
    VALUES ('all', changed_status, changed_canceled, changed_priority, NULL::TEXT, NULL::TEXT,
            NULL::BIGINT, NULL::TEXT, NULL::TEXT, NULL::TEXT),
           ('type', changed_status, changed_canceled, changed_priority, changed_alert_type,
            NULL, NULL, NULL, NULL, NULL),
           ('source', changed_status, changed_canceled, changed_priority, NULL,
            changed_source, NULL, NULL, NULL, NULL),
           ('tenant', changed_status, changed_canceled, changed_priority, NULL, NULL,
            changed_union, changed_tenant_id, changed_tenant_label, changed_integration_key),
           ('union', changed_status, changed_canceled, changed_priority, NULL, NULL,
            changed_union, NULL, NULL, NULL),
           ('type_source', changed_status, changed_canceled, changed_priority,
            changed_alert_type, changed_source, NULL, NULL, NULL, NULL)
$function$
;

CREATE OR REPLACE FUNCTION public.investigation_hour_counts_on_insert_or_delete()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO investigation_hour_counts (status, hour, n)
    SELECT status, alert_hour(alert_create_time),
           CASE TG_OP WHEN 'DELETE' THEN -COUNT(*) ELSE COUNT(*) END
    FROM changed GROUP BY 1, 2;
    RETURN NULL;
END $function$
;

CREATE OR REPLACE FUNCTION public.investigation_tag_counts_on_investigation_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO investigation_tag_counts (name, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
    SELECT t.name, OLD.status, OLD.canceled, OLD.priority, OLD.alert_type,
           OLD.direct_source_label, OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label,
           OLD.tenant_integration_key, -1
    FROM investigation_tags t WHERE t.investigation_id = OLD.id
    UNION ALL
    SELECT t.name, NEW.status, NEW.canceled, NEW.priority, NEW.alert_type,
           NEW.direct_source_label, NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label,
           NEW.tenant_integration_key, 1
    FROM investigation_tags t WHERE t.investigation_id = NEW.id;
    RETURN NULL;
END $function$
;

CREATE OR REPLACE FUNCTION public.investigation_tag_counts_on_tag_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO investigation_tag_counts (name, status, canceled, priority, alert_type,
            direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT t.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
               i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key,
               -COUNT(*)
        FROM removed t JOIN investigations i ON i.id = t.investigation_id
        GROUP BY t.name, i.status, i.canceled, i.priority, i.alert_type,
            i.direct_source_label, i.tenant_union_id, i.tenant_id, i.tenant_label,
            i.tenant_integration_key;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO investigation_tag_counts (name, status, canceled, priority, alert_type,
            direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT t.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
               i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key,
               COUNT(*)
        FROM added t JOIN investigations i ON i.id = t.investigation_id
        GROUP BY t.name, i.status, i.canceled, i.priority, i.alert_type,
            i.direct_source_label, i.tenant_union_id, i.tenant_id, i.tenant_label,
            i.tenant_integration_key;
    END IF;
    RETURN NULL;
END $function$
;

CREATE OR REPLACE FUNCTION public.investigation_tag_facet_counts_on_investigation_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO investigation_tag_facet_counts (name, facet, status, canceled, priority,
        alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
        tenant_integration_key, n)
    SELECT t.name, f.facet, f.status, f.canceled, f.priority, f.alert_type,
           f.direct_source_label, f.tenant_union_id, f.tenant_id, f.tenant_label,
           f.tenant_integration_key, -1
    FROM investigation_tags t
    CROSS JOIN LATERAL investigation_facets(OLD.status, OLD.canceled, OLD.priority,
        OLD.alert_type, OLD.direct_source_label, OLD.tenant_union_id, OLD.tenant_id,
        OLD.tenant_label, OLD.tenant_integration_key) f
    WHERE t.investigation_id = OLD.id
    UNION ALL
    SELECT t.name, f.facet, f.status, f.canceled, f.priority, f.alert_type,
           f.direct_source_label, f.tenant_union_id, f.tenant_id, f.tenant_label,
           f.tenant_integration_key, 1
    FROM investigation_tags t
    CROSS JOIN LATERAL investigation_facets(NEW.status, NEW.canceled, NEW.priority,
        NEW.alert_type, NEW.direct_source_label, NEW.tenant_union_id, NEW.tenant_id,
        NEW.tenant_label, NEW.tenant_integration_key) f
    WHERE t.investigation_id = NEW.id;
    RETURN NULL;
END $function$
;

CREATE OR REPLACE FUNCTION public.investigation_tag_facet_counts_on_tag_change()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO investigation_tag_facet_counts (name, facet, status, canceled, priority,
            alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT t.name, f.facet, f.status, f.canceled, f.priority, f.alert_type,
               f.direct_source_label, f.tenant_union_id, f.tenant_id, f.tenant_label,
               f.tenant_integration_key, -COUNT(*)
        FROM removed t JOIN investigations i ON i.id = t.investigation_id
        CROSS JOIN LATERAL investigation_facets(i.status, i.canceled, i.priority,
            i.alert_type, i.direct_source_label, i.tenant_union_id, i.tenant_id,
            i.tenant_label, i.tenant_integration_key) f
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO investigation_tag_facet_counts (name, facet, status, canceled, priority,
            alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT t.name, f.facet, f.status, f.canceled, f.priority, f.alert_type,
               f.direct_source_label, f.tenant_union_id, f.tenant_id, f.tenant_label,
               f.tenant_integration_key, COUNT(*)
        FROM added t JOIN investigations i ON i.id = t.investigation_id
        CROSS JOIN LATERAL investigation_facets(i.status, i.canceled, i.priority,
            i.alert_type, i.direct_source_label, i.tenant_union_id, i.tenant_id,
            i.tenant_label, i.tenant_integration_key) f
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11;
    END IF;
    RETURN NULL;
END $function$
;

CREATE OR REPLACE FUNCTION public.investigation_tags_copy()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    SELECT i.status, i.alert_create_time INTO NEW.status, NEW.alert_create_time
    FROM investigations i WHERE i.id = NEW.investigation_id;
    RETURN NEW;
END $function$
;

CREATE OR REPLACE FUNCTION public.investigation_tags_follow_investigation()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF EXISTS (SELECT 1 FROM investigation_tags t WHERE t.investigation_id = NEW.id) THEN
        UPDATE investigation_tags
        SET status = NEW.status, alert_create_time = NEW.alert_create_time
        WHERE investigation_id = NEW.id;
    END IF;
    RETURN NULL;
END $function$
;

-- triggers

CREATE TRIGGER alert_source_positions_on_insert AFTER INSERT ON public.alerts REFERENCING NEW TABLE AS added_alerts FOR EACH STATEMENT EXECUTE FUNCTION alert_source_positions_on_insert();

CREATE TRIGGER audit_log_no_change BEFORE DELETE OR UPDATE ON public.audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_is_append_only();

CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON public.audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_is_append_only();

CREATE TRIGGER investigation_tag_counts_on_delete AFTER DELETE ON public.investigation_tags REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_counts_on_tag_change();

CREATE TRIGGER investigation_tag_counts_on_insert AFTER INSERT ON public.investigation_tags REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_counts_on_tag_change();

CREATE TRIGGER investigation_tag_counts_on_update AFTER UPDATE ON public.investigation_tags REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_counts_on_tag_change();

CREATE TRIGGER investigation_tag_facet_counts_on_delete AFTER DELETE ON public.investigation_tags REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_facet_counts_on_tag_change();

CREATE TRIGGER investigation_tag_facet_counts_on_insert AFTER INSERT ON public.investigation_tags REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_facet_counts_on_tag_change();

CREATE TRIGGER investigation_tag_facet_counts_on_update AFTER UPDATE ON public.investigation_tags REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_facet_counts_on_tag_change();

CREATE TRIGGER investigation_tags_copy BEFORE INSERT OR UPDATE ON public.investigation_tags FOR EACH ROW EXECUTE FUNCTION investigation_tags_copy();

CREATE TRIGGER investigation_counts_on_delete AFTER DELETE ON public.investigations REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION investigation_counts_on_insert_or_delete();

CREATE TRIGGER investigation_counts_on_insert AFTER INSERT ON public.investigations REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION investigation_counts_on_insert_or_delete();

CREATE TRIGGER investigation_counts_on_update AFTER UPDATE ON public.investigations REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION investigation_counts_on_update();

CREATE TRIGGER investigation_facet_counts_on_delete AFTER DELETE ON public.investigations REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION investigation_facet_counts_on_insert_or_delete();

CREATE TRIGGER investigation_facet_counts_on_insert AFTER INSERT ON public.investigations REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION investigation_facet_counts_on_insert_or_delete();

CREATE TRIGGER investigation_hour_counts_on_delete AFTER DELETE ON public.investigations REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION investigation_hour_counts_on_insert_or_delete();

CREATE TRIGGER investigation_hour_counts_on_insert AFTER INSERT ON public.investigations REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION investigation_hour_counts_on_insert_or_delete();

CREATE TRIGGER investigation_tag_counts_on_investigation_update AFTER UPDATE ON public.investigations FOR EACH ROW WHEN (((old.generated_time IS NOT NULL) AND ((old.status IS DISTINCT FROM new.status) OR (old.canceled IS DISTINCT FROM new.canceled) OR (old.priority IS DISTINCT FROM new.priority) OR (old.alert_type IS DISTINCT FROM new.alert_type) OR (old.direct_source_label IS DISTINCT FROM new.direct_source_label) OR (old.tenant_union_id IS DISTINCT FROM new.tenant_union_id) OR (old.tenant_id IS DISTINCT FROM new.tenant_id) OR (old.tenant_label IS DISTINCT FROM new.tenant_label) OR (old.tenant_integration_key IS DISTINCT FROM new.tenant_integration_key)))) EXECUTE FUNCTION investigation_tag_counts_on_investigation_update();

CREATE TRIGGER investigation_tag_facet_counts_on_investigation_update AFTER UPDATE ON public.investigations FOR EACH ROW WHEN (((old.generated_time IS NOT NULL) AND ((old.status IS DISTINCT FROM new.status) OR (old.canceled IS DISTINCT FROM new.canceled) OR (old.priority IS DISTINCT FROM new.priority) OR (old.alert_type IS DISTINCT FROM new.alert_type) OR (old.direct_source_label IS DISTINCT FROM new.direct_source_label) OR (old.tenant_union_id IS DISTINCT FROM new.tenant_union_id) OR (old.tenant_id IS DISTINCT FROM new.tenant_id) OR (old.tenant_label IS DISTINCT FROM new.tenant_label) OR (old.tenant_integration_key IS DISTINCT FROM new.tenant_integration_key)))) EXECUTE FUNCTION investigation_tag_facet_counts_on_investigation_update();

CREATE TRIGGER investigation_tags_follow_investigation AFTER UPDATE ON public.investigations FOR EACH ROW WHEN (((old.generated_time IS NOT NULL) AND ((old.status IS DISTINCT FROM new.status) OR (old.alert_create_time IS DISTINCT FROM new.alert_create_time)))) EXECUTE FUNCTION investigation_tags_follow_investigation();

