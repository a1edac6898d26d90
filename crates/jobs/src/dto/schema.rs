//! OpenAPI schemas for fields whose Rust type lives in the domain crate (which knows
//! nothing of OpenAPI): each enum's allowed values come from the enum itself, so the
//! description cannot drift from what the server accepts and sends.

use serde_json::Value;
use sleuth_domain::{
    Canceled, CustomOutcomeValue, FeedbackStatus, FindingOutcome, HandlerVersion,
    InvestigationStatus, Outcome, Priority, Role, ScriptRunStatus,
};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};

fn string_enum(values: Vec<&'static str>, nullable: bool) -> utoipa::openapi::schema::Object {
    let mut allowed: Vec<Value> = values.into_iter().map(Value::from).collect();
    let schema_type = if nullable {
        allowed.push(Value::Null);
        SchemaType::from_iter([Type::String, Type::Null])
    } else {
        SchemaType::new(Type::String)
    };
    ObjectBuilder::new()
        .schema_type(schema_type)
        .enum_values(Some(allowed))
        .build()
}

macro_rules! enum_schemas {
    ($($required:ident, $nullable:ident => $enum:ty;)+) => {
        $(
            pub fn $required() -> utoipa::openapi::schema::Object {
                string_enum(<$enum>::ALL.iter().map(|value| value.as_str()).collect(), false)
            }
            pub fn $nullable() -> utoipa::openapi::schema::Object {
                string_enum(<$enum>::ALL.iter().map(|value| value.as_str()).collect(), true)
            }
        )+
    };
}

enum_schemas! {
    outcome, outcome_nullable => Outcome;
    finding_outcome, finding_outcome_nullable => FindingOutcome;
    priority, priority_nullable => Priority;
    investigation_status, investigation_status_nullable => InvestigationStatus;
    canceled, canceled_nullable => Canceled;
    handler_version, handler_version_nullable => HandlerVersion;
    role, role_nullable => Role;
    feedback_status, feedback_status_nullable => FeedbackStatus;
    script_run_status, script_run_status_nullable => ScriptRunStatus;
    custom_outcome, custom_outcome_nullable => CustomOutcomeValue;
}

/// An array of outcomes (a priority rule's `outcomes`: at least one).
pub fn outcome_list() -> utoipa::openapi::schema::Array {
    ArrayBuilder::new()
        .items(outcome())
        .min_items(Some(1))
        .build()
}

/// A free-form JSON object.
pub fn free_object() -> utoipa::openapi::schema::Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::new(Type::Object))
        .build()
}

/// A free-form JSON object, or null.
pub fn free_object_nullable() -> utoipa::openapi::schema::Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .build()
}
