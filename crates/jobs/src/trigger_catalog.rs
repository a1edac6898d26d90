//! The built-in trigger catalog: every event a response script can be tied to, in a tree
//! (groups are not scriptable; their leaves are). Each trigger's uuid is derived from its
//! `fn_name` (uuid v5 under a fixed namespace), so it never changes between releases and
//! is the same on every Sleuth. The catalog is synced into the store at start-up.
//!
//! `trigger_arg_names` are the keys of the `trigger_args` global a run gets, and
//! `script_var_names` the other globals it gets besides `trigger_args` and `secrets`
//! (DESIGN.md section 1, script contract). Only manual triggers are runnable: the others
//! fire on their event.

use sleuth_store::TriggerCatalogEntry;
use uuid::Uuid;

/// The namespace of trigger uuids. Never change it: scripts refer to triggers by uuid.
const TRIGGER_NAMESPACE: Uuid = Uuid::from_u128(0xae8d_def6_dcc1_426e_a839_03bc_aa1c_60ac);

pub const INVESTIGATION_COMPLETED: &str = "investigation_completed";
pub const INVESTIGATION_COMPLETED_CONFIRMED: &str = "investigation_completed_confirmed";
pub const INVESTIGATION_COMPLETED_SUSPICIOUS: &str = "investigation_completed_suspicious";
pub const INVESTIGATION_COMPLETED_FALSE_ALERT: &str = "investigation_completed_false_alert";
pub const INVESTIGATION_COMPLETED_INCOMPLETE: &str = "investigation_completed_incomplete";
pub const INVESTIGATION_STOPPED: &str = "investigation_stopped";
pub const INVESTIGATION_STOPPED_ERROR: &str = "investigation_stopped_error";
pub const INVESTIGATION_STOPPED_THRESHOLD: &str = "investigation_stopped_threshold";
pub const INVESTIGATION_STOPPED_MANUAL_CANCEL: &str = "investigation_stopped_manual_cancel";
pub const INVESTIGATION_PRIORITY_URGENT: &str = "investigation_priority_urgent";
pub const FEEDBACK_APPLIED: &str = "feedback_applied";
pub const REVIEW_COMPLETED: &str = "review_completed";
pub const NOTE_ADDED: &str = "note_added";
pub const MANUAL_INVESTIGATION: &str = "manual_investigation";
pub const MANUAL_ENTITY_USER: &str = "manual_entity_user";
pub const MANUAL_ENTITY_HOST: &str = "manual_entity_host";
pub const MANUAL_ENTITY_IP: &str = "manual_entity_ip";
pub const MANUAL_ENTITY_EMAIL: &str = "manual_entity_email";
pub const MANUAL_ENTITY_HASH: &str = "manual_entity_hash";
pub const API_KEY_CREATED: &str = "api_key_created";
pub const API_KEY_REVOKED: &str = "api_key_revoked";
pub const USER_CREATED: &str = "user_created";

const COMPLETED_ARGS: &[&str] = &["investigation_id", "outcome", "priority", "entities"];
const STOPPED_ARGS: &[&str] = &["investigation_id", "canceled", "error_msg", "entities"];
const REVIEW_ARGS: &[&str] = &[
    "investigation_id",
    "outcome",
    "priority",
    "outcome_note",
    "user_id",
];
const NOTE_ARGS: &[&str] = &["investigation_id", "note_id", "text", "user_id"];
const MANUAL_INVESTIGATION_ARGS: &[&str] = &["investigation_id"];
/// `investigation_id` is optional for entity runs; when given, the run shows on that
/// investigation and the `investigation` and `alert` globals are set (else None).
const MANUAL_ENTITY_ARGS: &[&str] = &["entity_value", "investigation_id"];
const API_KEY_ARGS: &[&str] = &[
    "api_key_id",
    "name",
    "prefix",
    "user_id",
    "user_email",
    "role",
];
const USER_ARGS: &[&str] = &["user_id", "email", "role"];

/// `investigation` is the list-item shape of the investigation; `alert` its full alert.
const INVESTIGATION_VARS: &[&str] = &["investigation", "alert"];
/// `entity` is `{"type": ..., "value": ...}`.
const ENTITY_VARS: &[&str] = &["entity", "investigation", "alert"];
/// `api_key` is `{id, name, prefix, created_at, revoked_at}`; `user` is SPEC's User.
const API_KEY_VARS: &[&str] = &["api_key", "user"];
const USER_VARS: &[&str] = &["user"];

/// One catalog entry, written compactly.
struct Spec {
    fn_name: &'static str,
    display_name: &'static str,
    parent: Option<&'static str>,
    labels: &'static [&'static str],
    display_index: i32,
    kind: Kind,
    args: &'static [&'static str],
    vars: &'static [&'static str],
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A node of the tree that only groups others.
    Group,
    /// Fires on its event.
    Event,
    /// Fires when a person runs a script on it.
    Manual,
}

const fn group(
    fn_name: &'static str,
    display_name: &'static str,
    parent: Option<&'static str>,
    labels: &'static [&'static str],
    display_index: i32,
) -> Spec {
    Spec {
        fn_name,
        display_name,
        parent,
        labels,
        display_index,
        kind: Kind::Group,
        args: &[],
        vars: &[],
    }
}

/// What a trigger gives its scripts: the `trigger_args` keys and the other globals.
struct Gives {
    args: &'static [&'static str],
    vars: &'static [&'static str],
}

const fn leaf(
    kind: Kind,
    fn_name: &'static str,
    display_name: &'static str,
    parent: &'static str,
    labels: &'static [&'static str],
    display_index: i32,
    gives: Gives,
) -> Spec {
    Spec {
        fn_name,
        display_name,
        parent: Some(parent),
        labels,
        display_index,
        kind,
        args: gives.args,
        vars: gives.vars,
    }
}

const ON_COMPLETED: Gives = Gives {
    args: COMPLETED_ARGS,
    vars: INVESTIGATION_VARS,
};
const ON_STOPPED: Gives = Gives {
    args: STOPPED_ARGS,
    vars: INVESTIGATION_VARS,
};
const ON_REVIEW: Gives = Gives {
    args: REVIEW_ARGS,
    vars: INVESTIGATION_VARS,
};
const ON_NOTE: Gives = Gives {
    args: NOTE_ARGS,
    vars: INVESTIGATION_VARS,
};
const ON_MANUAL_INVESTIGATION: Gives = Gives {
    args: MANUAL_INVESTIGATION_ARGS,
    vars: INVESTIGATION_VARS,
};
const ON_MANUAL_ENTITY: Gives = Gives {
    args: MANUAL_ENTITY_ARGS,
    vars: ENTITY_VARS,
};
const ON_API_KEY: Gives = Gives {
    args: API_KEY_ARGS,
    vars: API_KEY_VARS,
};
const ON_USER: Gives = Gives {
    args: USER_ARGS,
    vars: USER_VARS,
};

use Kind::{Event, Manual};

const INVESTIGATION: &str = "investigation";
const COMPLETED: &str = "investigation_completed_group";
const STOPPED: &str = "investigation_stopped_group";
const REVIEW: &str = "review";
const MANUAL: &str = "manual";
const MANUAL_ENTITY: &str = "manual_entity";
const ADMINISTRATION: &str = "administration";

#[rustfmt::skip]
const CATALOG: &[Spec] = &[
    group(INVESTIGATION, "Investigation", None, &["Investigation"], 100),
    group(COMPLETED, "Investigation completed", Some(INVESTIGATION), &["Investigation", "Completed"], 110),
    leaf(Event, INVESTIGATION_COMPLETED, "Investigation completed (any outcome)", COMPLETED, &["Investigation", "Completed", "Any outcome"], 111, ON_COMPLETED),
    leaf(Event, INVESTIGATION_COMPLETED_CONFIRMED, "Investigation completed: breach confirmed", COMPLETED, &["Investigation", "Completed", "Breach confirmed"], 112, ON_COMPLETED),
    leaf(Event, INVESTIGATION_COMPLETED_SUSPICIOUS, "Investigation completed: suspicious", COMPLETED, &["Investigation", "Completed", "Suspicious"], 113, ON_COMPLETED),
    leaf(Event, INVESTIGATION_COMPLETED_FALSE_ALERT, "Investigation completed: false alert", COMPLETED, &["Investigation", "Completed", "False alert"], 114, ON_COMPLETED),
    leaf(Event, INVESTIGATION_COMPLETED_INCOMPLETE, "Investigation completed: incomplete", COMPLETED, &["Investigation", "Completed", "Incomplete"], 115, ON_COMPLETED),
    group(STOPPED, "Investigation stopped", Some(INVESTIGATION), &["Investigation", "Stopped"], 120),
    leaf(Event, INVESTIGATION_STOPPED, "Investigation stopped (any reason)", STOPPED, &["Investigation", "Stopped", "Any reason"], 121, ON_STOPPED),
    leaf(Event, INVESTIGATION_STOPPED_ERROR, "Investigation stopped: error", STOPPED, &["Investigation", "Stopped", "Error"], 122, ON_STOPPED),
    leaf(Event, INVESTIGATION_STOPPED_THRESHOLD, "Investigation stopped: burst threshold", STOPPED, &["Investigation", "Stopped", "Burst threshold"], 123, ON_STOPPED),
    leaf(Event, INVESTIGATION_STOPPED_MANUAL_CANCEL, "Investigation stopped: canceled by a person", STOPPED, &["Investigation", "Stopped", "Manual cancel"], 124, ON_STOPPED),
    leaf(Event, INVESTIGATION_PRIORITY_URGENT, "Investigation priority became urgent", INVESTIGATION, &["Investigation", "Priority became urgent"], 130, ON_COMPLETED),
    group(REVIEW, "Review", None, &["Review"], 200),
    leaf(Event, FEEDBACK_APPLIED, "Feedback applied", REVIEW, &["Review", "Feedback applied"], 201, ON_REVIEW),
    leaf(Event, REVIEW_COMPLETED, "Review completed", REVIEW, &["Review", "Review completed"], 202, ON_REVIEW),
    leaf(Event, NOTE_ADDED, "Note added", REVIEW, &["Review", "Note added"], 203, ON_NOTE),
    group(MANUAL, "Manual", None, &["Manual"], 300),
    leaf(Manual, MANUAL_INVESTIGATION, "Run on an investigation", MANUAL, &["Manual", "On an investigation"], 301, ON_MANUAL_INVESTIGATION),
    group(MANUAL_ENTITY, "Run on an entity", Some(MANUAL), &["Manual", "On an entity"], 310),
    leaf(Manual, MANUAL_ENTITY_USER, "Run on a user", MANUAL_ENTITY, &["Manual", "On an entity", "User"], 311, ON_MANUAL_ENTITY),
    leaf(Manual, MANUAL_ENTITY_HOST, "Run on a host", MANUAL_ENTITY, &["Manual", "On an entity", "Host"], 312, ON_MANUAL_ENTITY),
    leaf(Manual, MANUAL_ENTITY_IP, "Run on an IP address", MANUAL_ENTITY, &["Manual", "On an entity", "IP address"], 313, ON_MANUAL_ENTITY),
    leaf(Manual, MANUAL_ENTITY_EMAIL, "Run on an email address", MANUAL_ENTITY, &["Manual", "On an entity", "Email address"], 314, ON_MANUAL_ENTITY),
    leaf(Manual, MANUAL_ENTITY_HASH, "Run on a file hash", MANUAL_ENTITY, &["Manual", "On an entity", "File hash"], 315, ON_MANUAL_ENTITY),
    group(ADMINISTRATION, "Administration", None, &["Administration"], 400),
    leaf(Event, API_KEY_CREATED, "API key created", ADMINISTRATION, &["Administration", "API key created"], 401, ON_API_KEY),
    leaf(Event, API_KEY_REVOKED, "API key revoked", ADMINISTRATION, &["Administration", "API key revoked"], 402, ON_API_KEY),
    leaf(Event, USER_CREATED, "User created", ADMINISTRATION, &["Administration", "User created"], 403, ON_USER),
];

/// The stable uuid of the trigger named `fn_name`.
pub fn trigger_uuid(fn_name: &str) -> Uuid {
    Uuid::new_v5(&TRIGGER_NAMESPACE, fn_name.as_bytes())
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|value| (*value).to_string()).collect()
}

/// The whole catalog, as the store keeps it.
pub fn catalog() -> Vec<TriggerCatalogEntry> {
    CATALOG
        .iter()
        .map(|spec| TriggerCatalogEntry {
            uuid: trigger_uuid(spec.fn_name),
            fn_name: spec.fn_name.to_string(),
            display_name: spec.display_name.to_string(),
            parent: spec.parent.map(trigger_uuid),
            tree_labels: strings(spec.labels),
            display_index: spec.display_index,
            is_runnable: spec.kind == Kind::Manual,
            is_scriptable: spec.kind != Kind::Group,
            trigger_arg_names: strings(spec.args),
            script_var_names: strings(spec.vars),
        })
        .collect()
}

/// Every global a trigger may give a script, for test-runs (which have no trigger): each
/// is bound from `trigger_args` under its name, or None.
pub fn all_script_var_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = CATALOG.iter().flat_map(|spec| spec.vars).copied().collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The entity kind a manual entity trigger acts on (`user`, `host`, ...), by fn_name. A
/// hash run takes any of the hash kinds; it is reported as `hash`.
pub fn manual_entity_kind(fn_name: &str) -> Option<&'static str> {
    match fn_name {
        MANUAL_ENTITY_USER => Some("user"),
        MANUAL_ENTITY_HOST => Some("host"),
        MANUAL_ENTITY_IP => Some("ip"),
        MANUAL_ENTITY_EMAIL => Some("email"),
        MANUAL_ENTITY_HASH => Some("hash"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn uuids_are_stable_and_unique() {
        // Scripts in operators' databases refer to this value: it must never change.
        assert_eq!(
            trigger_uuid(INVESTIGATION_COMPLETED).to_string(),
            Uuid::new_v5(&TRIGGER_NAMESPACE, b"investigation_completed").to_string()
        );
        assert_eq!(trigger_uuid("x"), trigger_uuid("x"));
        let catalog = catalog();
        let unique: HashSet<Uuid> = catalog.iter().map(|entry| entry.uuid).collect();
        assert_eq!(unique.len(), catalog.len());
    }

    #[test]
    fn the_tree_is_whole_and_groups_take_no_scripts() {
        let catalog = catalog();
        let uuids: HashSet<Uuid> = catalog.iter().map(|entry| entry.uuid).collect();
        for entry in &catalog {
            if let Some(parent) = entry.parent {
                assert!(
                    uuids.contains(&parent),
                    "{} has an unknown parent",
                    entry.fn_name
                );
                let parent = catalog.iter().find(|other| other.uuid == parent);
                assert!(
                    parent.is_some_and(|parent| !parent.is_scriptable),
                    "{}'s parent is a group",
                    entry.fn_name
                );
            }
            assert!(!entry.tree_labels.is_empty());
            if entry.is_scriptable {
                assert!(
                    !entry.trigger_arg_names.is_empty(),
                    "{} names its arguments",
                    entry.fn_name
                );
                assert!(
                    !entry.script_var_names.is_empty(),
                    "{} names its globals",
                    entry.fn_name
                );
                let manual = entry.fn_name.starts_with("manual_");
                assert_eq!(
                    entry.is_runnable, manual,
                    "only manual triggers run on request"
                );
            } else {
                assert!(!entry.is_runnable, "a group is not runnable");
            }
        }
    }

    #[test]
    fn test_runs_bind_every_global_a_trigger_gives() {
        assert_eq!(
            all_script_var_names(),
            ["alert", "api_key", "entity", "investigation", "user"]
        );
    }
}
