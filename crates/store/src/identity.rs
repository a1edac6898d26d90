//! The dedupe identity of an alert: the source's own id where the format has one, else a
//! canonical hash of the content; always scoped by tenant so two tenants never collide.

use serde_json::Value;
use sha2::{Digest, Sha256};
use sleuth_domain::ParsedAlert;

/// The identity under which an alert is stored once. Two deliveries of the same alert get
/// the same identity; the same content from two tenants gets two.
/// `content_hash` is `canonical_hash` of the raw alert, computed once by the caller (it is
/// also what tells a revision from a repeat).
pub fn alert_identity(
    parsed: &ParsedAlert,
    content_hash: &str,
    tenant_union_id: i64,
    tenant_integration_key: Option<&str>,
) -> String {
    let tenant_scope = format!(
        "{tenant_union_id}/{}",
        tenant_integration_key.unwrap_or("-")
    );
    let source_scope = match parsed.tenant_id.as_deref() {
        Some(tenant_id) => format!("{}@{}", parsed.schema_key, tenant_id),
        None => parsed.schema_key.clone(),
    };
    let key = match parsed.origin_ticket_id.as_deref() {
        Some(origin_id) if !origin_id.is_empty() => format!("id:{source_scope}:{origin_id}"),
        _ => format!("sha256:{content_hash}"),
    };
    // Hash the whole identity so it has a fixed size however long the source's id is.
    let digest = Sha256::digest(format!("{tenant_scope}|{key}").as_bytes());
    hex::encode(digest)
}

/// SHA-256 of the JSON with object keys sorted and no insignificant white space, so the
/// same alert serialised in another key order hashes the same.
pub fn canonical_hash(value: &Value) -> String {
    let mut hasher = Sha256::new();
    write_canonical(value, &mut hasher);
    hex::encode(hasher.finalize())
}

fn write_canonical(value: &Value, hasher: &mut Sha256) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            hasher.update(b"{");
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    hasher.update(b",");
                }
                write_canonical(&Value::String(key.clone()), hasher);
                hasher.update(b":");
                if let Some(child) = map.get(key) {
                    write_canonical(child, hasher);
                }
            }
            hasher.update(b"}");
        }
        Value::Array(items) => {
            hasher.update(b"[");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    hasher.update(b",");
                }
                write_canonical(item, hasher);
            }
            hasher.update(b"]");
        }
        scalar => hasher.update(scalar.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_hash() {
        let first = json!({"a": 1, "b": {"c": [1, 2], "d": "x"}});
        let second: Value =
            serde_json::from_str(r#"{"b": {"d": "x", "c": [1, 2]}, "a": 1}"#).unwrap();
        assert_eq!(canonical_hash(&first), canonical_hash(&second));
        assert_ne!(canonical_hash(&first), canonical_hash(&json!({"a": 2})));
    }
}
