//! SPEC's response-action shapes: the Trigger definition, the Response script (plain and UI
//! forms), the Response script version, the Trigger run and the Response script run; the
//! details answer; and the request bodies of create, update, test-run, manual run and
//! secrets.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sleuth_domain::ScriptRunStatus;
use sleuth_store::{
    ScriptRecord, ScriptRunRecord, ScriptVersionRecord, SecretInfo, TriggerDefinition,
    TriggerRunRecord,
};
use utoipa::ToSchema;
use uuid::Uuid;

use super::user::UserDto;

/// SPEC's Trigger definition.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = TriggerDefinition)]
pub struct TriggerDefinitionDto {
    pub uuid: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Order among its siblings in the tree.
    pub display_index: i32,
    /// True for triggers that left the catalog (old runs still refer to them).
    pub is_archived: bool,
    /// Whether a person may run scripts on it (`POST .../{script_id}/run`).
    pub is_runnable: bool,
    /// Whether scripts may be tied to it (false for the tree's group nodes).
    pub is_scriptable: bool,
    pub parent: Option<Uuid>,
    /// The globals a script on this trigger gets, besides `trigger_args` and `secrets`.
    pub script_var_names: Vec<String>,
    /// The keys of the `trigger_args` global.
    pub trigger_arg_names: Vec<String>,
    pub trigger_display_name: String,
    pub trigger_fn_name: String,
    /// The path of labels from the root of the tree to this trigger.
    pub trigger_tree_labels: Vec<String>,
}

impl From<&TriggerDefinition> for TriggerDefinitionDto {
    fn from(trigger: &TriggerDefinition) -> TriggerDefinitionDto {
        let entry = &trigger.entry;
        TriggerDefinitionDto {
            uuid: entry.uuid,
            created_at: trigger.created_at,
            updated_at: trigger.updated_at,
            display_index: entry.display_index,
            is_archived: trigger.is_archived,
            is_runnable: entry.is_runnable,
            is_scriptable: entry.is_scriptable,
            parent: entry.parent,
            script_var_names: entry.script_var_names.clone(),
            trigger_arg_names: entry.trigger_arg_names.clone(),
            trigger_display_name: entry.display_name.clone(),
            trigger_fn_name: entry.fn_name.clone(),
            trigger_tree_labels: entry.tree_labels.clone(),
        }
    }
}

/// SPEC's Response script, plain form: `trigger_def` is the trigger's uuid.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ResponseScript)]
pub struct ResponseScriptDto {
    pub id: i64,
    pub display_name: String,
    pub is_archived: bool,
    pub is_enabled: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub trigger_def: Uuid,
}

impl From<&ScriptRecord> for ResponseScriptDto {
    fn from(script: &ScriptRecord) -> ResponseScriptDto {
        ResponseScriptDto {
            id: script.id,
            display_name: script.display_name.clone(),
            is_archived: script.is_archived,
            is_enabled: script.is_enabled,
            created_at: script.created_at,
            updated_at: script.updated_at,
            trigger_def: script.trigger_def.entry.uuid,
        }
    }
}

/// SPEC's Response script, UI form (list and create): `trigger_def` is the whole trigger.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ResponseScriptUi)]
pub struct ResponseScriptUiDto {
    pub id: i64,
    pub display_name: String,
    pub is_archived: bool,
    pub is_enabled: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub trigger_def: TriggerDefinitionDto,
}

impl From<&ScriptRecord> for ResponseScriptUiDto {
    fn from(script: &ScriptRecord) -> ResponseScriptUiDto {
        ResponseScriptUiDto {
            id: script.id,
            display_name: script.display_name.clone(),
            is_archived: script.is_archived,
            is_enabled: script.is_enabled,
            created_at: script.created_at,
            updated_at: script.updated_at,
            trigger_def: TriggerDefinitionDto::from(&script.trigger_def),
        }
    }
}

/// SPEC's Response script version.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ResponseScriptVersion)]
pub struct ResponseScriptVersionDto {
    pub id: i64,
    /// The id of the script.
    pub script: i64,
    /// Counts from 1 per script; each code change makes the next.
    pub v_num: i32,
    pub code: String,
    pub author: UserDto,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&ScriptVersionRecord> for ResponseScriptVersionDto {
    fn from(version: &ScriptVersionRecord) -> ResponseScriptVersionDto {
        ResponseScriptVersionDto {
            id: version.id,
            script: version.script_id,
            v_num: version.v_num,
            code: version.code.clone(),
            author: UserDto::from(&version.author),
            created_at: version.created_at,
            updated_at: version.updated_at,
        }
    }
}

/// SPEC's Trigger run: one firing of a trigger, with its arguments.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = TriggerRun)]
pub struct TriggerRunDto {
    pub id: i64,
    /// The trigger runs fired by one event share a batch: the id of the first of them.
    pub batch: Option<i64>,
    #[schema(schema_with = super::schema::free_object)]
    pub trigger_args: Map<String, Value>,
    pub trigger_def: TriggerDefinitionDto,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&TriggerRunRecord> for TriggerRunDto {
    fn from(run: &TriggerRunRecord) -> TriggerRunDto {
        TriggerRunDto {
            id: run.id,
            batch: run.batch,
            trigger_args: run.trigger_args.clone(),
            trigger_def: TriggerDefinitionDto::from(&run.trigger_def),
            created_at: run.created_at,
            updated_at: run.updated_at,
        }
    }
}

/// SPEC's Response script run.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ResponseScriptRun)]
pub struct ResponseScriptRunDto {
    pub id: i64,
    pub script: ResponseScriptDto,
    pub script_version: ResponseScriptVersionDto,
    /// `running` until the run ends, then `success`, `failed` (the script raised),
    /// `timed_out` or `error` (the runner could not run it; see `syserr`).
    #[schema(schema_with = super::schema::script_run_status)]
    pub status: ScriptRunStatus,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// The runner's own word: why it could not run the script, or why it stopped it.
    pub syserr: Option<String>,
    pub trigger_run: TriggerRunDto,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&ScriptRunRecord> for ResponseScriptRunDto {
    fn from(run: &ScriptRunRecord) -> ResponseScriptRunDto {
        ResponseScriptRunDto {
            id: run.id,
            script: ResponseScriptDto::from(&run.script),
            script_version: ResponseScriptVersionDto::from(&run.script_version),
            status: run.status,
            stdout: run.stdout.clone(),
            stderr: run.stderr.clone(),
            syserr: run.syserr.clone(),
            trigger_run: TriggerRunDto::from(&run.trigger_run),
            created_at: run.created_at,
            updated_at: run.updated_at,
        }
    }
}

/// A response-action run as an admin bound to tenant unions reads it (a run fired about an
/// investigation of its unions): SPEC's Response script run without the action's code, its
/// versions' authors or anything else of the action beyond its name. The action itself is
/// what every tenant shares.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ResponseScriptRunInScope)]
pub struct ScopedScriptRunDto {
    pub id: i64,
    pub script: ResponseScriptDto,
    pub script_version: ScriptVersionRefDto,
    #[schema(schema_with = super::schema::script_run_status)]
    pub status: ScriptRunStatus,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub syserr: Option<String>,
    pub trigger_run: TriggerRunDto,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Which version of an action ran, without its code.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ResponseScriptVersionRef)]
pub struct ScriptVersionRefDto {
    pub id: i64,
    /// The id of the script.
    pub script: i64,
    pub v_num: i32,
}

impl From<&ScriptRunRecord> for ScopedScriptRunDto {
    fn from(run: &ScriptRunRecord) -> ScopedScriptRunDto {
        ScopedScriptRunDto {
            id: run.id,
            script: ResponseScriptDto::from(&run.script),
            script_version: ScriptVersionRefDto {
                id: run.script_version.id,
                script: run.script_version.script_id,
                v_num: run.script_version.v_num,
            },
            status: run.status,
            stdout: run.stdout.clone(),
            stderr: run.stderr.clone(),
            syserr: run.syserr.clone(),
            trigger_run: TriggerRunDto::from(&run.trigger_run),
            created_at: run.created_at,
            updated_at: run.updated_at,
        }
    }
}

/// A run as its reader may see it: whole for an admin bound to no tenant union, without the
/// action's code for one bound to unions (`ResponseScriptRunInScope`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum RunViewDto {
    Whole(ResponseScriptRunDto),
    InScope(ScopedScriptRunDto),
}

impl RunViewDto {
    pub fn new(run: &ScriptRunRecord, whole: bool) -> RunViewDto {
        if whole {
            RunViewDto::Whole(ResponseScriptRunDto::from(run))
        } else {
            RunViewDto::InScope(ScopedScriptRunDto::from(run))
        }
    }
}

/// How many runs and versions a script has.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResponseScriptCounts {
    pub run: u64,
    pub version: u64,
}

/// The newest run and version of a script. SPEC types both as objects: one that does not
/// exist (a script that never ran, or an archived one whose versions were all
/// unreferenced) is the empty object `{}`, never null.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResponseScriptLatest {
    /// The newest run, in the Response script run shape, or `{}` if it never ran.
    #[serde(serialize_with = "none_as_empty_object")]
    #[schema(value_type = Object)]
    pub run: Option<ResponseScriptRunDto>,
    /// The newest version, in the Response script version shape, or `{}` if none is left.
    #[serde(serialize_with = "none_as_empty_object")]
    #[schema(value_type = Object)]
    pub version: Option<ResponseScriptVersionDto>,
}

fn none_as_empty_object<S: serde::Serializer, T: Serialize>(
    value: &Option<T>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => value.serialize(serializer),
        None => serde_json::Map::new().serialize(serializer),
    }
}

/// The answer of `GET /response-actions/{script_id}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResponseScriptDetails {
    pub counts: ResponseScriptCounts,
    pub latest: ResponseScriptLatest,
}

/// `POST /response-actions`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateResponseScriptRequest {
    /// Python 3; optional (an empty script). At most 256 KiB.
    pub code: Option<String>,
    /// Required: 1 to 255 characters.
    pub display_name: Option<String>,
    /// Required: a scriptable trigger from `GET /response-actions/triggers`.
    pub trigger_def_uuid: Option<String>,
    /// Ours: whether created enabled (default true).
    pub is_enabled: Option<bool>,
    /// Ours: outbound network for this script's runs (default false).
    pub allow_network: Option<bool>,
    /// Ours: the secrets this action's runs get as `secrets["NAME"]` (default none); a run
    /// gets these and no others.
    pub secret_names: Option<Vec<String>>,
}

/// `PATCH /response-actions/{script_id}`: any subset; at least one field.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateResponseScriptRequest {
    pub display_name: Option<String>,
    pub is_enabled: Option<bool>,
    pub trigger_def_uuid: Option<String>,
    /// Ours: new code makes the next version (the same code again makes none).
    pub code: Option<String>,
    /// Ours: outbound network for this script's runs.
    pub allow_network: Option<bool>,
    /// Ours: replaces the names of the secrets this action's runs get.
    pub secret_names: Option<Vec<String>>,
}

/// `POST /response-actions/test`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TestRunRequest {
    /// Python code to execute. At most 256 KiB.
    pub script_code: Option<String>,
    /// Bound as the global `trigger_args`; its keys that name a trigger's global
    /// (`investigation`, `alert`, `entity`, `user`, `api_key`) also set that global.
    #[schema(value_type = Option<Object>)]
    pub trigger_args: Option<Map<String, Value>>,
    /// Ours: a response action whose named secrets the script gets as `secrets`; without
    /// it, `secrets` is empty.
    pub script_id: Option<i64>,
}

/// The answer of a test-run.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TestRunResponse {
    /// `success`, `failed` (the script raised; the traceback is in stderr) or `timed_out`.
    pub status: String,
    pub stderr: String,
    pub stdout: String,
}

/// `POST /response-actions/{script_id}/run`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ManualRunRequest {
    /// The trigger's arguments (see its `trigger_arg_names`).
    #[schema(value_type = Option<Object>)]
    pub trigger_args: Option<Map<String, Value>>,
}

/// `PUT /response-actions/secrets/{name}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetSecretRequest {
    /// Stored encrypted; never returned by the API and never logged. The runs of the
    /// actions that name it get it (masked in what they print). At most 64 KiB.
    pub value: Option<String>,
}

/// A stored secret, without its value.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ScriptSecret)]
pub struct SecretDto {
    pub name: String,
    /// The id of the key that sealed it; null while it is still in plaintext (stored by an
    /// older Sleuth, encrypted at the first start with a key).
    pub key_id: Option<String>,
    /// The unarchived response actions whose runs get it.
    pub response_action_ids: Vec<i64>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl SecretDto {
    pub fn new(secret: &SecretInfo, scripts: &[ScriptRecord]) -> SecretDto {
        SecretDto {
            name: secret.name.clone(),
            key_id: secret.key_id.clone(),
            response_action_ids: scripts
                .iter()
                .filter(|script| script.secret_names.contains(&secret.name))
                .map(|script| script.id)
                .collect(),
            created_at: secret.created_at,
            updated_at: secret.updated_at,
        }
    }
}
