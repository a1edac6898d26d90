//! SPEC.md's response shapes as data, and a checker: every field present with the right
//! type, nullability, enum value and format, and no field SPEC does not list. A client
//! written against SPEC reads these responses; this is what it would trip over.

use serde_json::{Map, Value};

const OUTCOMES: &[&str] = &[
    "COMPLETED_BREACHED_CONFIRMED",
    "COMPLETED_BREACHED_SUSPICIOUS",
    "COMPLETED_FALSE_ALERT",
    "INCOMPLETE",
    "IGNORED",
];
const FINDING_OUTCOMES: &[&str] = &[
    "COMPLETED_BREACHED_CONFIRMED",
    "COMPLETED_BREACHED_SUSPICIOUS",
    "COMPLETED_FALSE_ALERT",
    "COMPLETED_ACTION_INFO",
    "INCOMPLETE",
];
const PRIORITIES: &[&str] = &["informational", "notable", "urgent"];
const STATUSES: &[&str] = &["not_asked", "loading", "success", "error"];
const CANCELED: &[&str] = &["CANCEL_MANUAL", "CANCEL_THRESHOLD"];
const ROLES: &[&str] = &["admin", "member", "restricted-read-only"];
const FEEDBACK_STATUSES: &[&str] = &["in_review", "reviewed"];

#[derive(Clone, Copy)]
enum Kind {
    Integer,
    Text,
    /// A string of at most this many characters.
    BoundedText(usize),
    Email,
    DateTime,
    Boolean,
    Object,
    /// A string, an object or an array (evidence data).
    Data,
    Enum(&'static [&'static str]),
    Strings,
    Uuid,
    Shape(fn(&Value, &str)),
    ArrayOf(fn(&Value, &str)),
}

struct Field {
    name: &'static str,
    kind: Kind,
    nullable: bool,
}

const fn field(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        nullable: false,
    }
}

const fn nullable(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        nullable: true,
    }
}

fn check(value: &Value, fields: &[Field], context: &str) {
    let object: &Map<String, Value> = value
        .as_object()
        .unwrap_or_else(|| panic!("{context}: not an object: {value}"));
    let expected: std::collections::BTreeSet<&str> =
        fields.iter().map(|field| field.name).collect();
    let actual: std::collections::BTreeSet<&str> = object.keys().map(String::as_str).collect();
    assert_eq!(
        actual, expected,
        "{context}: the fields must be exactly SPEC's"
    );
    for field in fields {
        let path = format!("{context}.{}", field.name);
        let value = &object[field.name];
        if value.is_null() {
            assert!(field.nullable, "{path} must not be null");
            continue;
        }
        check_kind(value, field.kind, &path);
    }
}

fn check_kind(value: &Value, kind: Kind, path: &str) {
    match kind {
        Kind::Integer => assert!(value.is_i64(), "{path} must be an integer: {value}"),
        Kind::Text => assert!(value.is_string(), "{path} must be a string: {value}"),
        Kind::BoundedText(max) => {
            let text = value
                .as_str()
                .unwrap_or_else(|| panic!("{path} must be a string"));
            assert!(text.chars().count() <= max, "{path} longer than {max}");
        }
        Kind::Email => {
            let text = value
                .as_str()
                .unwrap_or_else(|| panic!("{path} must be a string"));
            assert!(
                text.contains('@') && text.len() <= 254,
                "{path} must be an email: {text}"
            );
        }
        Kind::DateTime => {
            let text = value
                .as_str()
                .unwrap_or_else(|| panic!("{path} must be a date-time string"));
            assert!(
                chrono::DateTime::parse_from_rfc3339(text).is_ok(),
                "{path} is not ISO 8601: {text}"
            );
        }
        Kind::Boolean => assert!(value.is_boolean(), "{path} must be a boolean: {value}"),
        Kind::Object => assert!(value.is_object(), "{path} must be an object: {value}"),
        Kind::Data => assert!(
            value.is_string() || value.is_object() || value.is_array(),
            "{path} must be a string, object or array"
        ),
        Kind::Enum(allowed) => {
            let text = value
                .as_str()
                .unwrap_or_else(|| panic!("{path} must be a string enum"));
            assert!(
                allowed.contains(&text),
                "{path}: '{text}' is not one of {allowed:?}"
            );
        }
        Kind::Strings => {
            let items = value
                .as_array()
                .unwrap_or_else(|| panic!("{path} must be an array"));
            assert!(
                items.iter().all(Value::is_string),
                "{path} must hold strings"
            );
        }
        Kind::Uuid => {
            let text = value
                .as_str()
                .unwrap_or_else(|| panic!("{path} must be a uuid string"));
            assert!(
                uuid::Uuid::parse_str(text).is_ok(),
                "{path} is not a uuid: {text}"
            );
        }
        Kind::Shape(check_shape) => check_shape(value, path),
        Kind::ArrayOf(check_item) => {
            let items = value
                .as_array()
                .unwrap_or_else(|| panic!("{path} must be an array"));
            for (index, item) in items.iter().enumerate() {
                check_item(item, &format!("{path}[{index}]"));
            }
        }
    }
}

fn user(value: &Value, path: &str) {
    check(
        value,
        &[
            field("id", Kind::Integer),
            field("email", Kind::Email),
            field("first_name", Kind::BoundedText(150)),
            field("last_name", Kind::BoundedText(150)),
            nullable("oidc_user_id", Kind::Text),
            field("role", Kind::Enum(ROLES)),
        ],
        path,
    );
}

fn tenant_union_full(value: &Value, path: &str) {
    check(
        value,
        &[
            field("id", Kind::Integer),
            field("display_name", Kind::Text),
            field("created_at", Kind::DateTime),
            field("updated_at", Kind::DateTime),
            field("lookup_dict", Kind::Object),
            nullable("last_modified_by", Kind::Shape(user)),
        ],
        path,
    );
}

fn tenant_union_list(value: &Value, path: &str) {
    check(
        value,
        &[
            field("id", Kind::Integer),
            field("display_name", Kind::Text),
            field("created_at", Kind::DateTime),
            field("updated_at", Kind::DateTime),
            field("lookup_dict", Kind::Object),
        ],
        path,
    );
}

fn entity(value: &Value, path: &str) {
    check(
        value,
        &[field("type", Kind::Text), field("value", Kind::Text)],
        path,
    );
}

/// The fields both alert forms share.
fn alert_common() -> Vec<Field> {
    vec![
        field("id", Kind::Integer),
        field("alert_type", Kind::Text),
        field("assets", Kind::Object),
        nullable("coalesce_key", Kind::Text),
        field("create_time", Kind::DateTime),
        field("created_at", Kind::DateTime),
        field("updated_at", Kind::DateTime),
        field("direct_source_label", Kind::Text),
        nullable("origin_integration", Kind::Text),
        nullable("origin_ticket_id", Kind::Text),
        nullable("origin_ticket_id_label", Kind::Text),
        nullable("origin_ticket_url", Kind::Text),
        field("original_title", Kind::Text),
        nullable("proxy_source_label", Kind::Text),
        field("raw_alert_content", Kind::Text),
        field("schema_key", Kind::Text),
        nullable("severity", Kind::Text),
        nullable("start_time", Kind::DateTime),
        nullable("tenant_id", Kind::Text),
        nullable("tenant_integration_key", Kind::Text),
        nullable("tenant_label", Kind::Text),
        field("title", Kind::Text),
    ]
}

fn alert_full(value: &Value, path: &str) {
    let mut fields = alert_common();
    fields.extend([
        nullable("enrich_result", Kind::Object),
        field("entities", Kind::ArrayOf(entity)),
        field("handler_version", Kind::Enum(&["v1", "v2"])),
        field("origin_integration_display_name", Kind::Text),
        nullable("tenant_union", Kind::Shape(tenant_union_full)),
    ]);
    check(value, &fields, path);
}

fn alert_list(value: &Value, path: &str) {
    let mut fields = alert_common();
    fields.extend([
        field("entities", Kind::Object),
        field("tenant_union", Kind::Shape(tenant_union_list)),
    ]);
    check(value, &fields, path);
}

fn evidence(value: &Value, path: &str) {
    check(
        value,
        &[
            field("data", Kind::Data),
            field("evidence_type", Kind::Text),
            nullable("tag", Kind::Text),
        ],
        path,
    );
}

fn finding(value: &Value, path: &str) {
    check(
        value,
        &[
            field("artifacts", Kind::Strings),
            field("evidences", Kind::ArrayOf(evidence)),
            field("finding", Kind::Text),
            field("headline", Kind::Text),
            field("outcome", Kind::Enum(FINDING_OUTCOMES)),
        ],
        path,
    );
}

fn feedback(value: &Value, path: &str) {
    check(
        value,
        &[
            field("id", Kind::Integer),
            field("conclusion", Kind::Text),
            nullable("conclusion_summary", Kind::Text),
            field("created_at", Kind::DateTime),
            field("updated_at", Kind::DateTime),
            field("findings", Kind::Object),
            nullable("findings_ranking", Kind::Object),
            nullable("insight_tags", Kind::Object),
            nullable("key_findings", Kind::Object),
            nullable("outcome", Kind::Enum(OUTCOMES)),
            nullable("outcome_note", Kind::Text),
            nullable("priority", Kind::Enum(PRIORITIES)),
            field("remediations_done", Kind::Object),
            field("status", Kind::Enum(FEEDBACK_STATUSES)),
        ],
        path,
    );
}

fn remediation_run(value: &Value, path: &str) {
    fn action(value: &Value, path: &str) {
        check(value, &[field("name", Kind::Text)], path);
    }
    check(
        value,
        &[
            field("entity", Kind::Text),
            field("remediation_action", Kind::Shape(action)),
        ],
        path,
    );
}

/// The fields both investigation shapes share.
fn investigation_common() -> Vec<Field> {
    vec![
        nullable("alert_summary", Kind::Text),
        nullable("attack_surface", Kind::Text),
        nullable("canceled", Kind::Enum(CANCELED)),
        field("conclusion", Kind::Text),
        nullable("conclusion_summary", Kind::Text),
        field("created_at", Kind::DateTime),
        nullable("error_msg", Kind::Text),
        nullable("exec_summary", Kind::Text),
        field("findings_ranking", Kind::Object),
        nullable("generated_time", Kind::DateTime),
        field("id", Kind::Integer),
        field("insight_tags", Kind::Object),
        field("interview_proposals", Kind::Object),
        field("inv_url", Kind::Text),
        field("key_findings", Kind::Object),
        nullable("mitre_tactic", Kind::Text),
        nullable("outcome", Kind::Enum(OUTCOMES)),
        nullable("priority", Kind::Enum(PRIORITIES)),
        nullable("start_time", Kind::DateTime),
        field("status", Kind::Enum(STATUSES)),
        field("updated_at", Kind::DateTime),
    ]
}

/// SPEC's single-read investigation (GET by id).
pub(crate) fn assert_single_read(value: &Value) {
    let mut fields = investigation_common();
    fields.extend([
        field("alert", Kind::Shape(alert_full)),
        nullable("backfill", Kind::Integer),
        nullable("email_screenshot", Kind::Text),
        field("findings", Kind::ArrayOf(finding)),
        nullable("ignored_for", Kind::Integer),
        field("is_retried", Kind::Boolean),
        field("ready", Kind::Boolean),
        field("recommended_remediations", Kind::Strings),
        nullable("related_alert_hypothesis", Kind::Object),
    ]);
    check(value, &fields, "investigation");
}

/// SPEC's list-item investigation.
pub(crate) fn assert_list_item(value: &Value) {
    let mut fields = investigation_common();
    fields.extend([
        field("alert", Kind::Shape(alert_list)),
        field("findings", Kind::Object),
        field("recommended_remediations", Kind::Object),
        nullable("custom_outcome", Kind::Object),
        field("feedback", Kind::Shape(feedback)),
        nullable("ignored_for_investigation_id", Kind::Integer),
        field("remediation_action_runs", Kind::ArrayOf(remediation_run)),
    ]);
    check(value, &fields, "list item");
}

/// SPEC's paginated list.
pub(crate) fn assert_page(value: &Value) {
    fn results(value: &Value, path: &str) {
        for (index, item) in value
            .as_array()
            .unwrap_or_else(|| panic!("{path} must be an array"))
            .iter()
            .enumerate()
        {
            let _ = index;
            assert_list_item(item);
        }
    }
    check(
        value,
        &[
            field("count", Kind::Integer),
            nullable("next", Kind::Text),
            nullable("previous", Kind::Text),
            field("results", Kind::Shape(results)),
        ],
        "page",
    );
}

/// SPEC's User.
pub(crate) fn assert_user(value: &Value) {
    user(value, "user");
}

/// A user as the users endpoints show it: SPEC's User and `tenant_union_ids` (null, or the
/// ids of the tenant unions the user is bound to).
pub(crate) fn assert_managed_user(value: &Value) {
    let ids = &value["tenant_union_ids"];
    assert!(
        ids.is_null()
            || ids
                .as_array()
                .is_some_and(|ids| !ids.is_empty() && ids.iter().all(Value::is_i64)),
        "tenant_union_ids must be null or a list of ids: {ids}"
    );
    let mut user_only = value.clone();
    user_only
        .as_object_mut()
        .expect("a user object")
        .remove("tenant_union_ids")
        .expect("tenant_union_ids is always there");
    user(&user_only, "managed user");
}

/// SPEC's Investigation feedback.
pub(crate) fn assert_feedback(value: &Value) {
    feedback(value, "feedback");
}

/// SPEC's Investigation note.
pub(crate) fn assert_note(value: &Value) {
    check(
        value,
        &[
            field("id", Kind::Integer),
            field("investigation", Kind::Integer),
            field("text", Kind::Text),
            field("user", Kind::Shape(user)),
            field("created_at", Kind::DateTime),
            field("updated_at", Kind::DateTime),
        ],
        "note",
    );
}

const CUSTOM_OUTCOMES: &[&str] = &[
    "COMPLETED_BREACHED_CONFIRMED",
    "COMPLETED_BREACHED_SUSPICIOUS",
    "COMPLETED_FALSE_ALERT",
];

fn integer(value: &Value, path: &str) {
    check_kind(value, Kind::Integer, path);
}

fn outcome_value(value: &Value, path: &str) {
    check_kind(value, Kind::Enum(OUTCOMES), path);
}

fn custom_instruction(value: &Value, path: &str) {
    check(
        value,
        &[
            field("id", Kind::Integer),
            field("content", Kind::Text),
            field("created_at", Kind::DateTime),
            nullable("internal_origin_uuid", Kind::Uuid),
            field("strategy_versions", Kind::ArrayOf(integer)),
            field("usage_count", Kind::Integer),
        ],
        path,
    );
}

fn custom_outcome(value: &Value, path: &str) {
    check(
        value,
        &[
            field("id", Kind::Integer),
            field("condition", Kind::Object),
            field("outcome", Kind::Enum(CUSTOM_OUTCOMES)),
            field("conclusions_affected", Kind::Integer),
            field("created_at", Kind::DateTime),
            nullable("internal_origin_uuid", Kind::Uuid),
            field("strategy_versions", Kind::ArrayOf(integer)),
        ],
        path,
    );
}

fn custom_priority(value: &Value, path: &str) {
    check(
        value,
        &[
            field("id", Kind::Integer),
            field("priority", Kind::Enum(PRIORITIES)),
            field("ranking", Kind::Integer),
            field("outcomes", Kind::ArrayOf(outcome_value)),
            nullable("insight_tag_rule", Kind::Object),
            field("priorities_affected", Kind::Integer),
            field("created_at", Kind::DateTime),
            nullable("internal_origin_uuid", Kind::Uuid),
            field("strategy_versions", Kind::ArrayOf(integer)),
        ],
        path,
    );
    let ranking = value["ranking"].as_i64().unwrap_or_default();
    assert!(
        (1..=2_147_483_647).contains(&ranking),
        "{path}.ranking out of range"
    );
    assert!(
        !value["outcomes"].as_array().is_none_or(Vec::is_empty),
        "{path}.outcomes needs at least one item"
    );
}

/// SPEC's Custom strategy (combined strategy and one version).
pub(crate) fn assert_strategy(value: &Value) {
    check(
        value,
        &[
            field("id", Kind::Integer),
            field("version_id", Kind::Integer),
            field("internal_origin_uuid", Kind::Uuid),
            field("title", Kind::Text),
            nullable("scenario", Kind::Text),
            field("alert_sources", Kind::Strings),
            field("attack_surfaces", Kind::Strings),
            field("mitre_tactics", Kind::Strings),
            field("is_archived", Kind::Boolean),
            field("is_enabled", Kind::Boolean),
            field("is_latest", Kind::Boolean),
            field("is_protected", Kind::Boolean),
            field("instructions", Kind::ArrayOf(custom_instruction)),
            field("outcomes", Kind::ArrayOf(custom_outcome)),
            field("priorities", Kind::ArrayOf(custom_priority)),
            field("total_conclusions_affected", Kind::Integer),
            field("total_instructions_used", Kind::Integer),
            field("total_priorities_affected", Kind::Integer),
            field("created_at", Kind::DateTime),
            field("updated_at", Kind::DateTime),
        ],
        "strategy",
    );
}
