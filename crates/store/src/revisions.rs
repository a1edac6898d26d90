//! Revisions of an alert: the source sends an alert it sent before (same source id, so the
//! same identity) with changed content, as GuardDuty does when a finding recurs or
//! Security Hub when a finding is updated. Each distinct content is a revision; every
//! delivery is a sighting. The store keeps both; this module holds the records and the
//! pure part: what changed between two revisions.

use serde_json::Value;
use sleuth_domain::Timestamp;

/// The most changed paths kept per revision; the rest is counted, not listed.
pub const MAX_CHANGED_PATHS: usize = 50;

/// How often an alert was delivered, and each distinct content it came with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertRevisions {
    /// Deliveries of the alert, the first included.
    pub seen_count: i64,
    pub first_seen_at: Timestamp,
    pub last_seen_at: Timestamp,
    /// Oldest first; the first is the content first received.
    pub revisions: Vec<AlertRevision>,
}

/// One distinct content of an alert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertRevision {
    /// 1 for the content first received, then counting up.
    pub revision: i64,
    pub received_at: Timestamp,
    /// The source's severity wording in this revision.
    pub severity: Option<String>,
    /// What differs from the revision before (`Changes`); empty for the first.
    pub changes: Changes,
    /// The investigation of this content, when it was investigated (the first, a forced
    /// one, or one whose severity rose); otherwise it was recorded only.
    pub investigation_id: Option<i64>,
}

/// The JSON paths where two revisions differ: a value changed, added or removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Changes {
    /// Dotted paths, array elements by index (`service.count`, `resources.0.id`), in
    /// document order, at most `MAX_CHANGED_PATHS`.
    pub paths: Vec<String>,
    /// How many more paths differ than are listed.
    pub more: usize,
}

/// Where `after` differs from `before`. A changed scalar, a value of another type, or a
/// key or element present on one side only is one path; objects and arrays on both
/// sides are compared inside.
pub fn changed_paths(before: &Value, after: &Value) -> Changes {
    let mut changes = Changes::default();
    walk(before, after, &mut String::new(), &mut changes);
    changes
}

fn walk(before: &Value, after: &Value, path: &mut String, changes: &mut Changes) {
    match (before, after) {
        (Value::Object(left), Value::Object(right)) => {
            for (key, value) in right {
                descend(path, key, |path| match left.get(key) {
                    Some(old) => walk(old, value, path, changes),
                    None => note(path, changes),
                });
            }
            for key in left.keys().filter(|key| !right.contains_key(*key)) {
                descend(path, key, |path| note(path, changes));
            }
        }
        (Value::Array(left), Value::Array(right)) => {
            for index in 0..left.len().max(right.len()) {
                descend(path, &index.to_string(), |path| {
                    match (left.get(index), right.get(index)) {
                        (Some(old), Some(new)) => walk(old, new, path, changes),
                        _ => note(path, changes),
                    }
                });
            }
        }
        (left, right) if left == right => {}
        _ => note(path, changes),
    }
}

/// Runs `inside` with `segment` appended to `path`, then restores it.
fn descend(path: &mut String, segment: &str, inside: impl FnOnce(&mut String)) {
    let length = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(segment);
    inside(path);
    path.truncate(length);
}

fn note(path: &str, changes: &mut Changes) {
    if changes.paths.len() < MAX_CHANGED_PATHS {
        changes.paths.push(if path.is_empty() {
            "(the whole alert)".to_string()
        } else {
            path.to_string()
        });
    } else {
        changes.more += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changed_added_and_removed_values_are_named_by_path() {
        let before = json!({"id": "f", "service": {"count": 3, "archived": false},
                            "resources": [{"id": "a"}], "gone": 1});
        let after = json!({"id": "f", "service": {"count": 4, "archived": false},
                           "resources": [{"id": "a"}, {"id": "b"}], "severity": 8});
        let changes = changed_paths(&before, &after);
        assert_eq!(
            changes.paths,
            ["service.count", "resources.1", "severity", "gone"]
        );
        assert_eq!(changes.more, 0);
    }

    #[test]
    fn identical_content_has_no_changes_and_many_are_counted_not_listed() {
        let alert = json!({"a": [1, 2, {"b": null}]});
        assert_eq!(changed_paths(&alert, &alert), Changes::default());
        let before = json!(
            (0..80)
                .map(|index| (index.to_string(), json!(index)))
                .collect::<serde_json::Map<_, _>>()
        );
        let changes = changed_paths(&before, &json!({}));
        assert_eq!(changes.paths.len(), MAX_CHANGED_PATHS);
        assert_eq!(changes.more, 30);
        assert_eq!(
            changed_paths(&json!(1), &json!("1")).paths,
            ["(the whole alert)"]
        );
    }
}
