//! Response actions over the shared SQL: the trigger catalog, scripts and their versions,
//! trigger runs and script runs, secrets for scripts, and the runs an investigation's list
//! item shows. Triggers are few (a catalog of a few dozen), so queries that return scripts
//! or runs read the catalog once and attach each trigger from it instead of joining it twice.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use serde_json::{Map, Value};
use sleuth_domain::{ScriptRunStatus, Timestamp};
use sleuth_store::*;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyPool};
use uuid::Uuid;

use crate::builder::SqlBuilder;
use crate::rows::{self, micros};
use crate::users::{read_user, user_columns};
use crate::{DbResultExt, Dialect, SqlStore};

macro_rules! select_triggers {
    () => {
        "SELECT uuid, fn_name, display_name, parent_uuid, tree_labels, display_index, \
         is_archived, is_runnable, is_scriptable, trigger_arg_names, script_var_names, \
         created_at, updated_at FROM trigger_definitions"
    };
}

macro_rules! script_columns {
    () => {
        "s.id AS script_id, s.display_name AS script_display_name, \
         s.trigger_uuid AS script_trigger_uuid, s.is_enabled AS script_is_enabled, \
         s.is_archived AS script_is_archived, s.allow_network AS script_allow_network, \
         s.secret_names AS script_secret_names, s.created_at AS script_created_at, s.updated_at AS script_updated_at"
    };
}

/// A version's columns and its author's (table aliases `v` and `u`).
macro_rules! version_columns {
    () => {
        concat!(
            "v.id AS version_id, v.script_id AS version_script_id, v.v_num AS version_v_num, \
             v.code AS version_code, v.created_at AS version_created_at, \
             v.updated_at AS version_updated_at, ",
            user_columns!()
        )
    };
}

macro_rules! select_versions {
    () => {
        concat!(
            "SELECT ",
            version_columns!(),
            " FROM response_script_versions v JOIN users u ON u.id = v.author_id"
        )
    };
}

macro_rules! trigger_run_columns {
    () => {
        "tr.id AS trigger_run_id, tr.trigger_uuid AS trigger_run_trigger_uuid, \
         tr.batch AS trigger_run_batch, tr.trigger_args AS trigger_run_args, \
         tr.investigation_id AS trigger_run_investigation_id, tr.entity AS trigger_run_entity, \
         tr.created_at AS trigger_run_created_at, tr.updated_at AS trigger_run_updated_at"
    };
}

/// A script run with everything the run shape shows: the script, the version and its
/// author, and the trigger run.
macro_rules! select_script_runs {
    () => {
        concat!(
            "SELECT sr.id AS run_id, sr.status AS run_status, sr.stdout AS run_stdout, \
             sr.stderr AS run_stderr, sr.syserr AS run_syserr, sr.isolation AS run_isolation, \
             sr.duration_ms AS run_duration_ms, sr.runner AS run_runner, \
             sr.deadline_at AS run_deadline_at, sr.created_at AS run_created_at, \
             sr.updated_at AS run_updated_at, ",
            script_columns!(),
            ", ",
            version_columns!(),
            ", ",
            trigger_run_columns!(),
            " FROM script_runs sr JOIN response_scripts s ON s.id = sr.script_id \
             JOIN response_script_versions v ON v.id = sr.script_version_id \
             JOIN users u ON u.id = v.author_id \
             JOIN trigger_runs tr ON tr.id = sr.trigger_run_id"
        )
    };
}

type TriggerCatalog = HashMap<Uuid, TriggerDefinition>;

fn uuid_column(row: &AnyRow, column: &str) -> StoreResult<Uuid> {
    rows::parsed(row, column, Uuid::parse_str)
}

fn small_int(row: &AnyRow, column: &str) -> StoreResult<i32> {
    let value = rows::int(row, column)?;
    i32::try_from(value)
        .map_err(|_| StoreError::internal(format!("column {column} holds {value}, beyond i32")))
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn read_trigger(row: &AnyRow) -> StoreResult<TriggerDefinition> {
    let entry = TriggerCatalogEntry {
        uuid: uuid_column(row, "uuid")?,
        fn_name: rows::text(row, "fn_name")?,
        display_name: rows::text(row, "display_name")?,
        parent: rows::opt_parsed(row, "parent_uuid", Uuid::parse_str)?,
        tree_labels: rows::json(row, "tree_labels")?,
        display_index: small_int(row, "display_index")?,
        is_runnable: rows::flag(row, "is_runnable")?,
        is_scriptable: rows::flag(row, "is_scriptable")?,
        trigger_arg_names: rows::json(row, "trigger_arg_names")?,
        script_var_names: rows::json(row, "script_var_names")?,
    };
    Ok(TriggerDefinition {
        entry,
        is_archived: rows::flag(row, "is_archived")?,
        created_at: rows::time(row, "created_at")?,
        updated_at: rows::time(row, "updated_at")?,
    })
}

async fn trigger_catalog(connection: &mut AnyConnection) -> StoreResult<TriggerCatalog> {
    let found = sqlx::query(select_triggers!())
        .fetch_all(&mut *connection)
        .await
        .db()?;
    found
        .iter()
        .map(|row| read_trigger(row).map(|trigger| (trigger.entry.uuid, trigger)))
        .collect()
}

fn trigger_from(catalog: &TriggerCatalog, uuid: Uuid) -> StoreResult<TriggerDefinition> {
    catalog.get(&uuid).cloned().ok_or_else(|| {
        StoreError::internal(format!(
            "a row refers to trigger {uuid}, which is not stored"
        ))
    })
}

fn read_script(row: &AnyRow, catalog: &TriggerCatalog) -> StoreResult<ScriptRecord> {
    Ok(ScriptRecord {
        id: rows::int(row, "script_id")?,
        display_name: rows::text(row, "script_display_name")?,
        trigger_def: trigger_from(catalog, uuid_column(row, "script_trigger_uuid")?)?,
        is_enabled: rows::flag(row, "script_is_enabled")?,
        is_archived: rows::flag(row, "script_is_archived")?,
        allow_network: rows::flag(row, "script_allow_network")?,
        secret_names: secret_names(rows::json(row, "script_secret_names")?),
        created_at: rows::time(row, "script_created_at")?,
        updated_at: rows::time(row, "script_updated_at")?,
    })
}

/// Names sorted and without duplicates, as records and the stored column keep them.
fn secret_names(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names.dedup();
    names
}

fn read_version(row: &AnyRow) -> StoreResult<ScriptVersionRecord> {
    Ok(ScriptVersionRecord {
        id: rows::int(row, "version_id")?,
        script_id: rows::int(row, "version_script_id")?,
        v_num: small_int(row, "version_v_num")?,
        code: rows::text(row, "version_code")?,
        author: read_user(row)?,
        created_at: rows::time(row, "version_created_at")?,
        updated_at: rows::time(row, "version_updated_at")?,
    })
}

fn read_trigger_run(row: &AnyRow, catalog: &TriggerCatalog) -> StoreResult<TriggerRunRecord> {
    Ok(TriggerRunRecord {
        id: rows::int(row, "trigger_run_id")?,
        batch: rows::opt_int(row, "trigger_run_batch")?,
        trigger_args: rows::json::<Map<String, Value>>(row, "trigger_run_args")?,
        trigger_def: trigger_from(catalog, uuid_column(row, "trigger_run_trigger_uuid")?)?,
        investigation_id: rows::opt_int(row, "trigger_run_investigation_id")?,
        entity: rows::opt_text(row, "trigger_run_entity")?,
        created_at: rows::time(row, "trigger_run_created_at")?,
        updated_at: rows::time(row, "trigger_run_updated_at")?,
    })
}

fn read_script_run(row: &AnyRow, catalog: &TriggerCatalog) -> StoreResult<ScriptRunRecord> {
    Ok(ScriptRunRecord {
        id: rows::int(row, "run_id")?,
        script: read_script(row, catalog)?,
        script_version: read_version(row)?,
        trigger_run: read_trigger_run(row, catalog)?,
        status: rows::parsed(row, "run_status", ScriptRunStatus::parse)?,
        stdout: rows::opt_text(row, "run_stdout")?,
        stderr: rows::opt_text(row, "run_stderr")?,
        syserr: rows::opt_text(row, "run_syserr")?,
        isolation: rows::opt_text(row, "run_isolation")?,
        duration_ms: rows::opt_int(row, "run_duration_ms")?,
        runner: rows::text(row, "run_runner")?,
        deadline_at: rows::time(row, "run_deadline_at")?,
        created_at: rows::time(row, "run_created_at")?,
        updated_at: rows::time(row, "run_updated_at")?,
    })
}

/// The catalog entry as canonical JSON: stored beside the entry so that a sync can tell
/// whether anything changed.
fn definition_json(input: &TriggerCatalogEntry) -> StoreResult<String> {
    rows::to_json(&serde_json::json!({
        "fn_name": input.fn_name,
        "display_name": input.display_name,
        "parent": input.parent.map(|uuid| uuid.to_string()),
        "tree_labels": input.tree_labels,
        "display_index": input.display_index,
        "is_runnable": input.is_runnable,
        "is_scriptable": input.is_scriptable,
        "trigger_arg_names": input.trigger_arg_names,
        "script_var_names": input.script_var_names,
    }))
}

const UPSERT_TRIGGER: &str = "INSERT INTO trigger_definitions (uuid, fn_name, display_name, \
    parent_uuid, tree_labels, display_index, is_archived, is_runnable, is_scriptable, \
    trigger_arg_names, script_var_names, definition, created_at, updated_at) \
    VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8, $9, $10, $11, $12, $12) \
    ON CONFLICT (uuid) DO UPDATE SET fn_name = excluded.fn_name, \
    display_name = excluded.display_name, parent_uuid = excluded.parent_uuid, \
    tree_labels = excluded.tree_labels, display_index = excluded.display_index, \
    is_archived = 0, is_runnable = excluded.is_runnable, is_scriptable = excluded.is_scriptable, \
    trigger_arg_names = excluded.trigger_arg_names, script_var_names = excluded.script_var_names, \
    definition = excluded.definition, updated_at = excluded.updated_at \
    WHERE trigger_definitions.definition <> excluded.definition \
    OR trigger_definitions.is_archived <> 0";

async fn sync_trigger_catalog(
    pool: &AnyPool,
    dialect: Dialect,
    catalog: &[TriggerCatalogEntry],
    at: Timestamp,
) -> StoreResult<()> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    for input in catalog {
        sqlx::query(UPSERT_TRIGGER)
            .bind(input.uuid.to_string())
            .bind(&input.fn_name)
            .bind(&input.display_name)
            .bind(input.parent.map(|uuid| uuid.to_string()))
            .bind(rows::to_json(&input.tree_labels)?)
            .bind(i64::from(input.display_index))
            .bind(i64::from(input.is_runnable))
            .bind(i64::from(input.is_scriptable))
            .bind(rows::to_json(&input.trigger_arg_names)?)
            .bind(rows::to_json(&input.script_var_names)?)
            .bind(definition_json(input)?)
            .bind(micros(at))
            .execute(&mut *transaction)
            .await
            .db()?;
    }
    let stored: Vec<String> =
        sqlx::query_scalar("SELECT uuid FROM trigger_definitions WHERE is_archived = 0")
            .fetch_all(&mut *transaction)
            .await
            .db()?;
    for uuid in stored {
        let in_catalog = catalog.iter().any(|input| input.uuid.to_string() == uuid);
        if !in_catalog {
            sqlx::query(
                "UPDATE trigger_definitions SET is_archived = 1, updated_at = $2 WHERE uuid = $1",
            )
            .bind(uuid)
            .bind(micros(at))
            .execute(&mut *transaction)
            .await
            .db()?;
        }
    }
    transaction.commit().await.db()
}

async fn list_trigger_definitions(pool: &AnyPool) -> StoreResult<Vec<TriggerDefinition>> {
    let found = sqlx::query(concat!(
        select_triggers!(),
        " ORDER BY display_index, fn_name"
    ))
    .fetch_all(pool)
    .await
    .db()?;
    found.iter().map(read_trigger).collect()
}

async fn get_trigger_definition(
    connection: &mut AnyConnection,
    uuid: Uuid,
) -> StoreResult<TriggerDefinition> {
    let row = sqlx::query(concat!(select_triggers!(), " WHERE uuid = $1"))
        .bind(uuid.to_string())
        .fetch_optional(&mut *connection)
        .await
        .db()?;
    row.as_ref()
        .map(read_trigger)
        .transpose()?
        .ok_or_else(|| StoreError::not_found("trigger definition", uuid))
}

/// Scripts may only be tied to a trigger that exists, is in the catalog and takes scripts.
async fn require_scriptable_trigger(connection: &mut AnyConnection, uuid: Uuid) -> StoreResult<()> {
    match get_trigger_definition(connection, uuid).await {
        Ok(trigger) if trigger.entry.is_scriptable && !trigger.is_archived => Ok(()),
        Ok(trigger) => Err(StoreError::Rejected {
            detail: format!(
                "trigger {uuid} ({}) does not take scripts; pick one whose is_scriptable is true \
                 from GET /app/api/v1/response-actions/triggers",
                trigger.entry.fn_name
            ),
        }),
        Err(StoreError::NotFound { .. }) => Err(StoreError::Rejected {
            detail: format!(
                "there is no trigger {uuid}; the triggers are listed at \
                 GET /app/api/v1/response-actions/triggers"
            ),
        }),
        Err(other) => Err(other),
    }
}

async fn insert_version(
    connection: &mut AnyConnection,
    script_id: i64,
    v_num: i32,
    code: &str,
    author_id: i64,
    at: Timestamp,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO response_script_versions (script_id, v_num, code, author_id, created_at, \
         updated_at) VALUES ($1, $2, $3, $4, $5, $5)",
    )
    .bind(script_id)
    .bind(i64::from(v_num))
    .bind(code)
    .bind(author_id)
    .bind(micros(at))
    .execute(&mut *connection)
    .await
    .db()?;
    Ok(())
}

async fn create_script(
    pool: &AnyPool,
    dialect: Dialect,
    script: &NewScript,
    at: Timestamp,
) -> StoreResult<ScriptRecord> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    require_scriptable_trigger(&mut transaction, script.trigger_uuid).await?;
    let script_id: i64 = sqlx::query_scalar(
        "INSERT INTO response_scripts (display_name, trigger_uuid, is_enabled, is_archived, \
         allow_network, secret_names, created_at, updated_at) \
         VALUES ($1, $2, $3, 0, $4, $5, $6, $6) RETURNING id",
    )
    .bind(&script.display_name)
    .bind(script.trigger_uuid.to_string())
    .bind(i64::from(script.is_enabled))
    .bind(i64::from(script.allow_network))
    .bind(rows::to_json(&secret_names(script.secret_names.clone()))?)
    .bind(micros(at))
    .fetch_one(&mut *transaction)
    .await
    .db()?;
    insert_version(
        &mut transaction,
        script_id,
        1,
        &script.code,
        script.author_id,
        at,
    )
    .await?;
    transaction.commit().await.db()?;
    get_script(pool, script_id).await
}

async fn list_scripts(pool: &AnyPool, archived: bool) -> StoreResult<Vec<ScriptRecord>> {
    let mut connection = pool.acquire().await.db()?;
    let catalog = trigger_catalog(&mut connection).await?;
    let found = sqlx::query(concat!(
        "SELECT ",
        script_columns!(),
        " FROM response_scripts s WHERE s.is_archived = $1 ORDER BY s.id"
    ))
    .bind(i64::from(archived))
    .fetch_all(&mut *connection)
    .await
    .db()?;
    found.iter().map(|row| read_script(row, &catalog)).collect()
}

async fn fetch_script(connection: &mut AnyConnection, script_id: i64) -> StoreResult<ScriptRecord> {
    let catalog = trigger_catalog(connection).await?;
    let row = sqlx::query(concat!(
        "SELECT ",
        script_columns!(),
        " FROM response_scripts s WHERE s.id = $1"
    ))
    .bind(script_id)
    .fetch_optional(&mut *connection)
    .await
    .db()?;
    row.as_ref()
        .map(|row| read_script(row, &catalog))
        .transpose()?
        .ok_or_else(|| StoreError::not_found("response action", script_id))
}

async fn get_script(pool: &AnyPool, script_id: i64) -> StoreResult<ScriptRecord> {
    let mut connection = pool.acquire().await.db()?;
    fetch_script(&mut connection, script_id).await
}

async fn update_script(
    pool: &AnyPool,
    dialect: Dialect,
    script_id: i64,
    changes: &ScriptChanges,
    at: Timestamp,
) -> StoreResult<ScriptRecord> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    // On PostgreSQL, concurrent updates of one script take turns here, so that two code
    // changes never compute the same next v_num. (SQLite's IMMEDIATE already serialises.)
    let lock_sql = match dialect {
        Dialect::Sqlite => "SELECT is_archived FROM response_scripts WHERE id = $1",
        Dialect::Postgres => "SELECT is_archived FROM response_scripts WHERE id = $1 FOR UPDATE",
    };
    let archived: Option<i64> = sqlx::query_scalar(lock_sql)
        .bind(script_id)
        .fetch_optional(&mut *transaction)
        .await
        .db()?;
    match archived {
        None => return Err(StoreError::not_found("response action", script_id)),
        Some(0) => {}
        Some(_) => {
            return Err(StoreError::Rejected {
                detail: format!("response action {script_id} is archived and cannot be updated"),
            });
        }
    }
    if let Some(trigger_uuid) = changes.trigger_uuid {
        require_scriptable_trigger(&mut transaction, trigger_uuid).await?;
    }
    sqlx::query(
        "UPDATE response_scripts SET display_name = COALESCE($2, display_name), \
         is_enabled = COALESCE($3, is_enabled), trigger_uuid = COALESCE($4, trigger_uuid), \
         allow_network = COALESCE($5, allow_network), \
         secret_names = COALESCE($6, secret_names), updated_at = $7 WHERE id = $1",
    )
    .bind(script_id)
    .bind(changes.display_name.as_deref())
    .bind(changes.is_enabled.map(i64::from))
    .bind(changes.trigger_uuid.map(|uuid| uuid.to_string()))
    .bind(changes.allow_network.map(i64::from))
    .bind(
        changes
            .secret_names
            .as_ref()
            .map(|names| rows::to_json(&secret_names(names.clone())))
            .transpose()?,
    )
    .bind(micros(at))
    .execute(&mut *transaction)
    .await
    .db()?;
    if let Some(code) = &changes.code {
        let latest: Option<(i64, String)> = sqlx::query_as(
            "SELECT v_num, code FROM response_script_versions WHERE script_id = $1 \
             ORDER BY v_num DESC LIMIT 1",
        )
        .bind(script_id)
        .fetch_optional(&mut *transaction)
        .await
        .db()?;
        let next_v_num = match &latest {
            Some((_, latest_code)) if latest_code == code => None,
            Some((v_num, _)) => Some(v_num.saturating_add(1)),
            None => Some(1),
        };
        if let Some(next_v_num) = next_v_num {
            let next_v_num = i32::try_from(next_v_num).map_err(|_| StoreError::Rejected {
                detail: format!(
                    "response action {script_id} has used every version number; create a new \
                     response action"
                ),
            })?;
            insert_version(
                &mut transaction,
                script_id,
                next_v_num,
                code,
                changes.author_id,
                at,
            )
            .await?;
        }
    }
    transaction.commit().await.db()?;
    get_script(pool, script_id).await
}

async fn archive_script(
    pool: &AnyPool,
    dialect: Dialect,
    script_id: i64,
    at: Timestamp,
) -> StoreResult<()> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM response_scripts WHERE id = $1")
        .bind(script_id)
        .fetch_optional(&mut *transaction)
        .await
        .db()?;
    if exists.is_none() {
        return Err(StoreError::not_found("response action", script_id));
    }
    sqlx::query(
        "UPDATE response_scripts SET is_archived = 1, updated_at = $2 \
         WHERE id = $1 AND is_archived = 0",
    )
    .bind(script_id)
    .bind(micros(at))
    .execute(&mut *transaction)
    .await
    .db()?;
    sqlx::query(
        "DELETE FROM response_script_versions WHERE script_id = $1 AND NOT EXISTS \
         (SELECT 1 FROM script_runs sr WHERE sr.script_version_id = response_script_versions.id)",
    )
    .bind(script_id)
    .execute(&mut *transaction)
    .await
    .db()?;
    transaction.commit().await.db()
}

async fn require_script(connection: &mut AnyConnection, script_id: i64) -> StoreResult<()> {
    let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM response_scripts WHERE id = $1")
        .bind(script_id)
        .fetch_optional(&mut *connection)
        .await
        .db()?;
    match exists {
        Some(_) => Ok(()),
        None => Err(StoreError::not_found("response action", script_id)),
    }
}

async fn list_script_versions(
    pool: &AnyPool,
    script_id: i64,
) -> StoreResult<Vec<ScriptVersionRecord>> {
    let mut connection = pool.acquire().await.db()?;
    require_script(&mut connection, script_id).await?;
    let found = sqlx::query(concat!(
        select_versions!(),
        " WHERE v.script_id = $1 ORDER BY v.v_num DESC"
    ))
    .bind(script_id)
    .fetch_all(&mut *connection)
    .await
    .db()?;
    found.iter().map(read_version).collect()
}

async fn script_summary(pool: &AnyPool, script_id: i64) -> StoreResult<ScriptSummary> {
    let mut connection = pool.acquire().await.db()?;
    require_script(&mut connection, script_id).await?;
    let run_count: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM script_runs WHERE script_id = $1")
            .bind(script_id)
            .fetch_one(&mut *connection)
            .await
            .db()?;
    let version_count: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM response_script_versions WHERE script_id = $1")
            .bind(script_id)
            .fetch_one(&mut *connection)
            .await
            .db()?;
    let latest_version = sqlx::query(concat!(
        select_versions!(),
        " WHERE v.script_id = $1 ORDER BY v.v_num DESC LIMIT 1"
    ))
    .bind(script_id)
    .fetch_optional(&mut *connection)
    .await
    .db()?;
    let latest = RunPage {
        limit: 1,
        offset: 0,
    };
    let latest_run = fetch_script_runs(&mut connection, script_id, latest, &TenantScope::All)
        .await?
        .pop();
    Ok(ScriptSummary {
        run_count: count(run_count),
        version_count: count(version_count),
        latest_run,
        latest_version: latest_version.as_ref().map(read_version).transpose()?,
    })
}

async fn scripts_to_run(
    pool: &AnyPool,
    trigger_uuids: &[Uuid],
) -> StoreResult<Vec<RunnableScript>> {
    if trigger_uuids.is_empty() {
        return Ok(Vec::new());
    }
    let mut connection = pool.acquire().await.db()?;
    // Uuids print as hex digits and dashes only; formatting them cannot inject anything.
    // The trigger sets fired are few (one per kind of outcome), so each text stays prepared.
    let uuid_list = trigger_uuids
        .iter()
        .map(|uuid| format!("'{uuid}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT {}, {} FROM response_scripts s \
         JOIN response_script_versions v ON v.script_id = s.id \
         JOIN users u ON u.id = v.author_id \
         WHERE s.trigger_uuid IN ({uuid_list}) AND s.is_enabled = 1 AND s.is_archived = 0 \
         AND v.v_num = (SELECT MAX(latest.v_num) FROM response_script_versions latest \
             WHERE latest.script_id = s.id) \
         ORDER BY s.id",
        script_columns!(),
        version_columns!()
    );
    let found = sqlx::query(sqlx::AssertSqlSafe(sql))
        .fetch_all(&mut *connection)
        .await
        .db()?;
    if found.is_empty() {
        // Most firings run nothing: the catalog is read only for those that do.
        return Ok(Vec::new());
    }
    let catalog = trigger_catalog(&mut connection).await?;
    found
        .iter()
        .map(|row| {
            Ok(RunnableScript {
                script: read_script(row, &catalog)?,
                version: read_version(row)?,
            })
        })
        .collect()
}

async fn record_trigger_runs(
    pool: &AnyPool,
    dialect: Dialect,
    runs: &[NewTriggerRun],
    at: Timestamp,
) -> StoreResult<Vec<TriggerRunRecord>> {
    if runs.is_empty() {
        return Ok(Vec::new());
    }
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let mut ids = Vec::with_capacity(runs.len());
    for run in runs {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO trigger_runs (trigger_uuid, batch, trigger_args, investigation_id, \
             entity, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id",
        )
        .bind(run.trigger_uuid.to_string())
        .bind(ids.first().copied())
        .bind(rows::to_json(&run.trigger_args)?)
        .bind(run.investigation_id)
        .bind(run.entity.as_deref())
        .bind(micros(at))
        .fetch_one(&mut *transaction)
        .await
        .db()?;
        ids.push(id);
    }
    // The first run of the batch names the batch; it learns its own id only now.
    sqlx::query("UPDATE trigger_runs SET batch = id WHERE id = $1")
        .bind(ids[0])
        .execute(&mut *transaction)
        .await
        .db()?;
    transaction.commit().await.db()?;
    let mut connection = pool.acquire().await.db()?;
    let catalog = trigger_catalog(&mut connection).await?;
    let mut records = Vec::with_capacity(ids.len());
    for id in ids {
        let row = sqlx::query(concat!(
            "SELECT ",
            trigger_run_columns!(),
            " FROM trigger_runs tr WHERE tr.id = $1"
        ))
        .bind(id)
        .fetch_one(&mut *connection)
        .await
        .db()?;
        records.push(read_trigger_run(&row, &catalog)?);
    }
    Ok(records)
}

async fn start_script_run(pool: &AnyPool, run: &NewScriptRun, at: Timestamp) -> StoreResult<i64> {
    sqlx::query_scalar(
        "INSERT INTO script_runs (script_id, script_version_id, trigger_run_id, status, runner, \
         deadline_at, created_at, updated_at) VALUES ($1, $2, $3, 'running', $4, $5, $6, $6) \
         RETURNING id",
    )
    .bind(run.script_id)
    .bind(run.script_version_id)
    .bind(run.trigger_run_id)
    .bind(&run.runner)
    .bind(micros(run.deadline_at))
    .bind(micros(at))
    .fetch_one(pool)
    .await
    .db()
}

async fn finish_script_run(
    pool: &AnyPool,
    dialect: Dialect,
    script_run_id: i64,
    end: &ScriptRunEnd,
    at: Timestamp,
) -> StoreResult<bool> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let updated = sqlx::query(
        "UPDATE script_runs SET status = $2, stdout = $3, stderr = $4, syserr = $5, \
         isolation = $6, duration_ms = $7, updated_at = $8 WHERE id = $1 AND status = 'running'",
    )
    .bind(script_run_id)
    .bind(end.status.as_str())
    .bind(&end.stdout)
    .bind(&end.stderr)
    .bind(end.syserr.as_deref())
    .bind(&end.isolation)
    .bind(end.duration_ms)
    .bind(micros(at))
    .execute(&mut *transaction)
    .await
    .db()?;
    let finished = updated.rows_affected() > 0;
    if finished && is_failure(end.status) {
        let detail = end
            .syserr
            .as_deref()
            .filter(|syserr| !syserr.trim().is_empty())
            .unwrap_or(&end.stderr);
        record_run_failures(&mut transaction, dialect, &[script_run_id], detail, at).await?;
    }
    transaction.commit().await.db()?;
    Ok(finished)
}

fn is_failure(status: ScriptRunStatus) -> bool {
    matches!(
        status,
        ScriptRunStatus::Failed | ScriptRunStatus::TimedOut | ScriptRunStatus::Error
    )
}

/// The most of a failed run's output its system event quotes (the end of it, where the
/// error usually is).
const FAILURE_DETAIL_CHARS: usize = 500;

/// The end of `text`, at most `FAILURE_DETAIL_CHARS` characters.
fn tail(text: &str) -> String {
    let text = text.trim();
    let count = text.chars().count();
    if count <= FAILURE_DETAIL_CHARS {
        return text.to_string();
    }
    let tail: String = text.chars().skip(count - FAILURE_DETAIL_CHARS).collect();
    format!("…{tail}")
}

/// Writes, inside the caller's transaction, the `RESPONSE_ACTION_RUN_FAILED` system event
/// of each of these runs (just ended in failure), quoting `detail`.
async fn record_run_failures(
    transaction: &mut sqlx::Transaction<'_, sqlx::Any>,
    dialect: Dialect,
    script_run_ids: &[i64],
    detail: &str,
    at: Timestamp,
) -> StoreResult<()> {
    use sqlx::Row;
    let mut events = Vec::with_capacity(script_run_ids.len());
    for script_run_id in script_run_ids {
        let row = sqlx::query(
            "SELECT sr.status, sr.script_id, s.display_name, tr.investigation_id, tr.entity \
             FROM script_runs sr JOIN response_scripts s ON s.id = sr.script_id \
             JOIN trigger_runs tr ON tr.id = sr.trigger_run_id WHERE sr.id = $1",
        )
        .bind(*script_run_id)
        .fetch_one(&mut **transaction)
        .await
        .db()?;
        let status: String = row.try_get(0).db()?;
        let script_id: i64 = row.try_get(1).db()?;
        let script_name: String = row.try_get(2).db()?;
        let investigation_id: Option<i64> = row.try_get(3).db()?;
        let entity: Option<String> = row.try_get(4).db()?;
        let mut trigger_args = serde_json::Map::new();
        trigger_args.insert("script_run_id".into(), (*script_run_id).into());
        trigger_args.insert("script_id".into(), script_id.into());
        trigger_args.insert("script_name".into(), script_name.into());
        trigger_args.insert("status".into(), status.into());
        trigger_args.insert("detail".into(), tail(detail).into());
        if let Some(investigation_id) = investigation_id {
            trigger_args.insert("investigation_id".into(), investigation_id.into());
        }
        events.push(NewSystemEvent {
            trigger_name: RESPONSE_ACTION_RUN_FAILED.to_string(),
            trigger_args,
            investigation_id,
            entity,
        });
    }
    let rows: Vec<(&NewSystemEvent, Timestamp)> = events.iter().map(|event| (event, at)).collect();
    let mut statements = crate::builder::Statements::new(dialect);
    crate::system_events::insert_in(&mut statements, dialect, &rows)?;
    statements.run(transaction).await.map(drop)
}

async fn fetch_script_runs(
    connection: &mut AnyConnection,
    script_id: i64,
    page: RunPage,
    scope: &TenantScope,
) -> StoreResult<Vec<ScriptRunRecord>> {
    let catalog = trigger_catalog(connection).await?;
    let mut select = SqlBuilder::new(concat!(select_script_runs!(), " WHERE sr.script_id = "));
    select.bind(script_id)?;
    if !scope.is_all() {
        // A run with no investigation (NULL) is in no union.
        select.push(
            " AND tr.investigation_id IN (SELECT scoped.id FROM investigations scoped WHERE 1 = 1",
        );
        crate::scope::push_union_filter(&mut select, "scoped.tenant_union_id", scope)?;
        select.push(")");
    }
    select.push(" ORDER BY sr.id DESC");
    select.limit_offset(page.limit, page.offset);
    let found = select.build().fetch_all(&mut *connection).await.db()?;
    found
        .iter()
        .map(|row| read_script_run(row, &catalog))
        .collect()
}

async fn get_script_run(pool: &AnyPool, script_run_id: i64) -> StoreResult<ScriptRunRecord> {
    let mut connection = pool.acquire().await.db()?;
    let catalog = trigger_catalog(&mut connection).await?;
    let row = sqlx::query(concat!(select_script_runs!(), " WHERE sr.id = $1"))
        .bind(script_run_id)
        .fetch_optional(&mut *connection)
        .await
        .db()?;
    row.as_ref()
        .map(|row| read_script_run(row, &catalog))
        .transpose()?
        .ok_or_else(|| StoreError::not_found("script run", script_run_id))
}

async fn list_script_runs(
    pool: &AnyPool,
    script_id: i64,
    page: RunPage,
    scope: &TenantScope,
) -> StoreResult<Vec<ScriptRunRecord>> {
    let mut connection = pool.acquire().await.db()?;
    require_script(&mut connection, script_id).await?;
    fetch_script_runs(&mut connection, script_id, page, scope).await
}

/// Walks `trigger_runs_by_investigation`, then `script_runs_by_trigger_run`: the work is
/// the investigation's own runs, however many runs the database holds.
async fn list_investigation_script_runs(
    pool: &AnyPool,
    investigation_id: i64,
    limit: u32,
) -> StoreResult<Vec<ScriptRunRecord>> {
    let mut connection = pool.acquire().await.db()?;
    let catalog = trigger_catalog(&mut connection).await?;
    let mut select = SqlBuilder::new(concat!(
        select_script_runs!(),
        " WHERE tr.investigation_id = "
    ));
    select.bind(investigation_id)?;
    select.push(" ORDER BY sr.id DESC");
    select.limit_offset(limit, 0);
    let found = select.build().fetch_all(&mut *connection).await.db()?;
    found
        .iter()
        .map(|row| read_script_run(row, &catalog))
        .collect()
}

async fn running_script_runners(pool: &AnyPool) -> StoreResult<Vec<String>> {
    sqlx::query_scalar("SELECT DISTINCT runner FROM script_runs WHERE status = 'running'")
        .fetch_all(pool)
        .await
        .db()
}

async fn fail_interrupted_script_runs(
    pool: &AnyPool,
    dialect: Dialect,
    dead_runners: &[String],
    reason: &str,
    at: Timestamp,
) -> StoreResult<u64> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    // The runs are ended one by one, each with its system event, so that a run is never
    // ended without its event nor told twice.
    let mut interrupted: Vec<i64> = sqlx::query_scalar(
        "SELECT id FROM script_runs WHERE status = 'running' AND deadline_at < $1",
    )
    .bind(micros(at))
    .fetch_all(&mut *transaction)
    .await
    .db()?;
    for runner in dead_runners {
        interrupted.extend(
            sqlx::query_scalar::<_, i64>(
                "SELECT id FROM script_runs WHERE status = 'running' AND runner = $1",
            )
            .bind(runner)
            .fetch_all(&mut *transaction)
            .await
            .db()?,
        );
    }
    interrupted.sort_unstable();
    interrupted.dedup();
    for script_run_id in &interrupted {
        sqlx::query(
            "UPDATE script_runs SET status = 'error', syserr = $1, updated_at = $2 \
             WHERE id = $3 AND status = 'running'",
        )
        .bind(reason)
        .bind(micros(at))
        .bind(*script_run_id)
        .execute(&mut *transaction)
        .await
        .db()?;
    }
    record_run_failures(&mut transaction, dialect, &interrupted, reason, at).await?;
    transaction.commit().await.db()?;
    Ok(u64::try_from(interrupted.len()).unwrap_or(u64::MAX))
}

async fn set_script_secret(
    pool: &AnyPool,
    name: &str,
    value: &SealedSecret,
    at: Timestamp,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO script_secrets (name, value, key_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $4) ON CONFLICT (name) DO UPDATE SET value = excluded.value, \
         key_id = excluded.key_id, updated_at = excluded.updated_at",
    )
    .bind(name)
    .bind(&value.ciphertext)
    .bind(&value.key_id)
    .bind(micros(at))
    .execute(pool)
    .await
    .db()?;
    Ok(())
}

async fn list_script_secrets(pool: &AnyPool) -> StoreResult<Vec<SecretInfo>> {
    let found = sqlx::query(
        "SELECT name, key_id, created_at, updated_at FROM script_secrets ORDER BY name",
    )
    .fetch_all(pool)
    .await
    .db()?;
    found
        .iter()
        .map(|row| {
            Ok(SecretInfo {
                name: rows::text(row, "name")?,
                key_id: rows::opt_text(row, "key_id")?,
                created_at: rows::time(row, "created_at")?,
                updated_at: rows::time(row, "updated_at")?,
            })
        })
        .collect()
}

async fn delete_script_secret(pool: &AnyPool, name: &str) -> StoreResult<()> {
    let deleted = sqlx::query("DELETE FROM script_secrets WHERE name = $1")
        .bind(name)
        .execute(pool)
        .await
        .db()?;
    if deleted.rows_affected() == 0 {
        return Err(StoreError::not_found("secret", name));
    }
    Ok(())
}

fn stored_secret(value: String, key_id: Option<String>) -> StoredSecret {
    match key_id {
        None => StoredSecret::Plaintext(SecretValue(value)),
        Some(key_id) => StoredSecret::Sealed(SealedSecret {
            key_id,
            ciphertext: value,
        }),
    }
}

async fn script_secrets(
    pool: &AnyPool,
    names: &[String],
) -> StoreResult<BTreeMap<String, StoredSecret>> {
    if names.is_empty() {
        return Ok(BTreeMap::new());
    }
    let mut query = crate::builder::SqlBuilder::new(
        "SELECT name, value, key_id FROM script_secrets WHERE name IN ",
    );
    query.bind_padded_list(names)?;
    let found = query.build().fetch_all(pool).await.db()?;
    found
        .iter()
        .map(|row| {
            Ok((
                rows::text(row, "name")?,
                stored_secret(rows::text(row, "value")?, rows::opt_text(row, "key_id")?),
            ))
        })
        .collect()
}

async fn reseal_script_secret(
    pool: &AnyPool,
    name: &str,
    expected: &StoredSecret,
    sealed: &SealedSecret,
) -> StoreResult<bool> {
    let (expected_value, expected_key_id) = match expected {
        StoredSecret::Plaintext(value) => (value.0.as_str(), None),
        StoredSecret::Sealed(sealed) => (sealed.ciphertext.as_str(), Some(sealed.key_id.as_str())),
    };
    // A compare-and-swap: a value set meanwhile (by the API, or another process resealing)
    // is never overwritten with an older one.
    let replaced = sqlx::query(
        "UPDATE script_secrets SET value = $1, key_id = $2 WHERE name = $3 AND value = $4 \
         AND ((key_id IS NULL AND $5 IS NULL) OR key_id = $5)",
    )
    .bind(&sealed.ciphertext)
    .bind(&sealed.key_id)
    .bind(name)
    .bind(expected_value)
    .bind(expected_key_id)
    .execute(pool)
    .await
    .db()?;
    Ok(replaced.rows_affected() == 1)
}

/// The script runs fired for these investigations, oldest first, as their list items show
/// them: what each acted on and the action's name.
pub(crate) async fn remediation_runs(
    connection: &mut AnyConnection,
    investigation_ids: &[i64],
) -> StoreResult<HashMap<i64, Vec<RemediationRun>>> {
    let mut by_investigation: HashMap<i64, Vec<RemediationRun>> = HashMap::new();
    if investigation_ids.is_empty() {
        return Ok(by_investigation);
    }
    let found = crate::builder::by_id_list(
        "SELECT tr.investigation_id, tr.entity, s.display_name FROM script_runs sr \
         JOIN trigger_runs tr ON tr.id = sr.trigger_run_id \
         JOIN response_scripts s ON s.id = sr.script_id \
         WHERE tr.investigation_id IN ",
        investigation_ids,
        " ORDER BY sr.id",
    )?
    .fetch_all(&mut *connection)
    .await
    .db()?;
    for row in &found {
        let investigation_id = rows::int(row, "investigation_id")?;
        let entity = rows::opt_text(row, "entity")?
            .unwrap_or_else(|| format!("investigation:{investigation_id}"));
        by_investigation
            .entry(investigation_id)
            .or_default()
            .push(RemediationRun {
                entity,
                action_name: rows::text(row, "display_name")?,
            });
    }
    Ok(by_investigation)
}

#[async_trait]
impl ResponseActionStore for SqlStore {
    async fn sync_trigger_catalog(
        &self,
        catalog: &[TriggerCatalogEntry],
        at: Timestamp,
    ) -> StoreResult<()> {
        sync_trigger_catalog(&self.pool, self.dialect, catalog, at).await
    }

    async fn list_trigger_definitions(&self) -> StoreResult<Vec<TriggerDefinition>> {
        list_trigger_definitions(&self.pool).await
    }

    async fn get_trigger_definition(&self, uuid: Uuid) -> StoreResult<TriggerDefinition> {
        let mut connection = self.pool.acquire().await.db()?;
        get_trigger_definition(&mut connection, uuid).await
    }

    async fn create_script(&self, script: &NewScript, at: Timestamp) -> StoreResult<ScriptRecord> {
        create_script(&self.pool, self.dialect, script, at).await
    }

    async fn list_scripts(&self, archived: bool) -> StoreResult<Vec<ScriptRecord>> {
        list_scripts(&self.pool, archived).await
    }

    async fn get_script(&self, script_id: i64) -> StoreResult<ScriptRecord> {
        get_script(&self.pool, script_id).await
    }

    async fn update_script(
        &self,
        script_id: i64,
        changes: &ScriptChanges,
        at: Timestamp,
    ) -> StoreResult<ScriptRecord> {
        update_script(&self.pool, self.dialect, script_id, changes, at).await
    }

    async fn archive_script(&self, script_id: i64, at: Timestamp) -> StoreResult<()> {
        archive_script(&self.pool, self.dialect, script_id, at).await
    }

    async fn list_script_versions(&self, script_id: i64) -> StoreResult<Vec<ScriptVersionRecord>> {
        list_script_versions(&self.pool, script_id).await
    }

    async fn script_summary(&self, script_id: i64) -> StoreResult<ScriptSummary> {
        script_summary(&self.pool, script_id).await
    }

    async fn scripts_to_run(&self, trigger_uuids: &[Uuid]) -> StoreResult<Vec<RunnableScript>> {
        scripts_to_run(&self.pool, trigger_uuids).await
    }

    async fn record_trigger_runs(
        &self,
        runs: &[NewTriggerRun],
        at: Timestamp,
    ) -> StoreResult<Vec<TriggerRunRecord>> {
        record_trigger_runs(&self.pool, self.dialect, runs, at).await
    }

    async fn start_script_run(&self, run: &NewScriptRun, at: Timestamp) -> StoreResult<i64> {
        start_script_run(&self.pool, run, at).await
    }

    async fn finish_script_run(
        &self,
        script_run_id: i64,
        end: &ScriptRunEnd,
        at: Timestamp,
    ) -> StoreResult<bool> {
        finish_script_run(&self.pool, self.dialect, script_run_id, end, at).await
    }

    async fn get_script_run(&self, script_run_id: i64) -> StoreResult<ScriptRunRecord> {
        get_script_run(&self.pool, script_run_id).await
    }

    async fn list_script_runs(
        &self,
        script_id: i64,
        page: RunPage,
        scope: &TenantScope,
    ) -> StoreResult<Vec<ScriptRunRecord>> {
        list_script_runs(&self.pool, script_id, page, scope).await
    }

    async fn list_investigation_script_runs(
        &self,
        investigation_id: i64,
        limit: u32,
    ) -> StoreResult<Vec<ScriptRunRecord>> {
        list_investigation_script_runs(&self.pool, investigation_id, limit).await
    }

    async fn running_script_runners(&self) -> StoreResult<Vec<String>> {
        running_script_runners(&self.pool).await
    }

    async fn fail_interrupted_script_runs(
        &self,
        dead_runners: &[String],
        reason: &str,
        at: Timestamp,
    ) -> StoreResult<u64> {
        fail_interrupted_script_runs(&self.pool, self.dialect, dead_runners, reason, at).await
    }

    async fn set_script_secret(
        &self,
        name: &str,
        value: &SealedSecret,
        at: Timestamp,
    ) -> StoreResult<()> {
        set_script_secret(&self.pool, name, value, at).await
    }

    async fn list_script_secrets(&self) -> StoreResult<Vec<SecretInfo>> {
        list_script_secrets(&self.pool).await
    }

    async fn delete_script_secret(&self, name: &str) -> StoreResult<()> {
        delete_script_secret(&self.pool, name).await
    }

    async fn script_secrets(
        &self,
        names: &[String],
    ) -> StoreResult<BTreeMap<String, StoredSecret>> {
        script_secrets(&self.pool, names).await
    }

    async fn reseal_script_secret(
        &self,
        name: &str,
        expected: &StoredSecret,
        sealed: &SealedSecret,
    ) -> StoreResult<bool> {
        reseal_script_secret(&self.pool, name, expected, sealed).await
    }
}
