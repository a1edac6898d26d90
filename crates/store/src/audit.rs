//! The audit log in storage: append-only and hash-chained. Each entry carries the SHA-256
//! of the entry before it (`prev_hash`) and of its own canonical content (`hash`, which
//! covers `prev_hash`), so editing, deleting or inserting an entry breaks the chain at
//! that entry. A one-row chain head (last sequence number and hash) is kept beside the
//! log: it is what appends lock to stay serial across processes, and it makes a cut-off
//! tail detectable too. The chain detects tampering by anyone who does not also rewrite
//! every later hash and the head; keep the head hash that `sleuth audit verify` prints
//! somewhere else to detect even that.

use async_trait::async_trait;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use sleuth_domain::Timestamp;

use crate::{StoreResult, TenantScope, TimeRange};

/// The `prev_hash` of the first entry.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// An entry to append; the store assigns its sequence number, time and hashes.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAuditEntry {
    /// Who did it; `None` for the command line, which acts as the operator of the host.
    pub actor_user_id: Option<i64>,
    pub actor_email: Option<String>,
    /// What was done: `POST /app/api/v1/context-memory/create`, `cli apikey create`.
    pub action: String,
    /// What kind of thing it was done to: `context-memory`, `api-key`, `secret`.
    pub resource_type: String,
    pub resource_id: Option<String>,
    /// The `x-request-id` of the HTTP request, when there was one.
    pub request_id: Option<String>,
    /// A small description of the change. Never secrets: no API keys, no secret values.
    pub detail: Map<String, Value>,
    /// The tenant union of what it was done to (an investigation, a note on one, a context
    /// memory item of a union); `None` for what every tenant shares. It is what lets an
    /// admin bound to tenant unions list the entry, and it is kept beside the chain, not in
    /// it: the hashes cover only what the entry says was done.
    pub tenant_union_id: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// 1, 2, 3, ... with no gaps: the position in the chain.
    pub seq: i64,
    pub at: Timestamp,
    pub actor_user_id: Option<i64>,
    pub actor_email: Option<String>,
    pub action: String,
    pub resource_type: String,
    pub resource_id: Option<String>,
    pub request_id: Option<String>,
    pub detail: Value,
    pub prev_hash: String,
    pub hash: String,
}

impl AuditEntry {
    /// The hash this entry's content and `prev_hash` call for (equal to `hash` unless the
    /// entry was tampered with).
    pub fn expected_hash(&self) -> String {
        entry_hash(&AuditContent {
            seq: self.seq,
            at_micros: self.at.timestamp_micros(),
            actor_user_id: self.actor_user_id,
            actor_email: self.actor_email.as_deref(),
            action: &self.action,
            resource_type: &self.resource_type,
            resource_id: self.resource_id.as_deref(),
            request_id: self.request_id.as_deref(),
            detail: &self.detail,
            prev_hash: &self.prev_hash,
        })
    }
}

/// What an entry's hash covers, exactly as stored (the time in microseconds).
#[derive(Debug, Clone, Copy)]
pub struct AuditContent<'a> {
    pub seq: i64,
    pub at_micros: i64,
    pub actor_user_id: Option<i64>,
    pub actor_email: Option<&'a str>,
    pub action: &'a str,
    pub resource_type: &'a str,
    pub resource_id: Option<&'a str>,
    pub request_id: Option<&'a str>,
    pub detail: &'a Value,
    pub prev_hash: &'a str,
}

/// SHA-256 (lower-case hex) of the canonical JSON of the content: an object with keys
/// sorted at every depth and no white space, so the same content always hashes the same
/// whatever order the detail's keys were written in.
pub fn entry_hash(content: &AuditContent<'_>) -> String {
    // The object is written field by field, keys in sorted order, rather than built as a
    // `Value` and sorted: every create appends an entry inside the write turn that all
    // other writers wait for, and building the object was most of the time spent there.
    let mut out = Vec::with_capacity(512);
    out.push(b'{');
    field(&mut out, "action", content.action);
    field(&mut out, "actor_email", &content.actor_email);
    field(&mut out, "actor_user_id", &content.actor_user_id);
    field(&mut out, "at", &content.at_micros);
    key(&mut out, "detail");
    write_canonical(content.detail, &mut out);
    field(&mut out, "prev_hash", content.prev_hash);
    field(&mut out, "request_id", &content.request_id);
    field(&mut out, "resource_id", &content.resource_id);
    field(&mut out, "resource_type", content.resource_type);
    field(&mut out, "seq", &content.seq);
    out.push(b'}');
    hex::encode(Sha256::digest(&out))
}

/// JSON with object keys sorted at every depth and no insignificant white space.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // Only serde_json and ASCII punctuation wrote it: always UTF-8.
    String::from_utf8(out)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// Appends `"key":value` to an object being written.
fn field<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, name: &str, value: &T) {
    key(out, name);
    write_json(out, value);
}

/// Appends `"key":` to an object being written, after a comma unless it is the first.
fn key(out: &mut Vec<u8>, name: &str) {
    if out.last() != Some(&b'{') {
        out.push(b',');
    }
    write_json(out, name);
    out.push(b':');
}

/// A string, number, boolean or null as serde_json writes it (strings escaped).
fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing a scalar into a Vec cannot fail.
    let _ = serde_json::to_writer(out, value);
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|left, right| left.0.cmp(right.0));
            out.push(b'{');
            for (name, child) in entries {
                key(out, name);
                write_canonical(child, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_json(out, scalar),
    }
}

/// Which entries to list, newest first. Every filter set must hold.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// A user id (digits) or an email address (any case).
    pub actor: Option<String>,
    /// Any of these actions; empty means all.
    pub actions: Vec<String>,
    /// Any of these resource types; empty means all.
    pub resource_types: Vec<String>,
    pub time: TimeRange,
    /// The caller's tenant unions. A bound caller sees only entries about what lies in
    /// them (`NewAuditEntry::tenant_union_id`).
    pub scope: TenantScope,
    pub limit: u32,
    pub offset: u64,
}

#[derive(Debug, Clone)]
pub struct AuditPage {
    pub total: u64,
    pub items: Vec<AuditEntry>,
}

/// The result of walking the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditVerdict {
    Intact {
        count: u64,
        /// The hash of the last entry (the genesis hash when the log is empty).
        head_hash: String,
    },
    Broken {
        /// The first entry whose hash or position does not match.
        seq: i64,
        reason: String,
    },
}

/// Walks a chain in sequence order, one entry at a time, so that a store can verify a
/// log of any length page by page.
#[derive(Debug, Clone)]
pub struct ChainWalk {
    next_seq: i64,
    prev_hash: String,
    count: u64,
}

impl Default for ChainWalk {
    fn default() -> ChainWalk {
        ChainWalk {
            next_seq: 1,
            prev_hash: GENESIS_HASH.to_string(),
            count: 0,
        }
    }
}

impl ChainWalk {
    /// Checks the next entry; `Err` is the verdict on the first broken one.
    pub fn check(&mut self, entry: &AuditEntry) -> Result<(), AuditVerdict> {
        let broken = |reason: String| AuditVerdict::Broken {
            seq: entry.seq,
            reason,
        };
        if entry.seq != self.next_seq {
            return Err(broken(if entry.seq > self.next_seq {
                format!(
                    "entry {} follows entry {}: {} missing (deleted)",
                    entry.seq,
                    self.next_seq - 1,
                    if entry.seq - self.next_seq == 1 {
                        format!("entry {} is", self.next_seq)
                    } else {
                        format!("entries {} to {} are", self.next_seq, entry.seq - 1)
                    }
                )
            } else {
                format!("entry {} is out of sequence (inserted)", entry.seq)
            }));
        }
        if entry.prev_hash != self.prev_hash {
            return Err(broken(format!(
                "entry {} does not link to the entry before it (its prev_hash is not that \
                 entry's hash): an entry was inserted, deleted or edited here",
                entry.seq
            )));
        }
        if entry.expected_hash() != entry.hash {
            return Err(broken(format!(
                "entry {} does not match its hash: its content was edited",
                entry.seq
            )));
        }
        self.next_seq += 1;
        self.prev_hash = entry.hash.clone();
        self.count += 1;
        Ok(())
    }

    /// The verdict once every entry was checked, against the stored chain head.
    pub fn finish(self, head_seq: i64, head_hash: &str) -> AuditVerdict {
        let last_seq = self.next_seq - 1;
        if head_seq > last_seq {
            return AuditVerdict::Broken {
                seq: last_seq + 1,
                reason: format!(
                    "the chain head records {head_seq} entries but the log ends at entry \
                     {last_seq}: the entries after it were deleted"
                ),
            };
        }
        if head_seq < last_seq {
            return AuditVerdict::Broken {
                seq: head_seq + 1,
                reason: format!(
                    "entry {} is beyond the chain head ({head_seq} entries): it was inserted \
                     outside Sleuth",
                    head_seq + 1
                ),
            };
        }
        if head_hash != self.prev_hash {
            return AuditVerdict::Broken {
                seq: last_seq,
                reason: format!(
                    "entry {last_seq} does not match the hash the chain head recorded for it: \
                     the log was rewritten"
                ),
            };
        }
        AuditVerdict::Intact {
            count: self.count,
            head_hash: self.prev_hash,
        }
    }
}

/// The audit log in storage.
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Appends an entry at the end of the chain. Appends are serial across every process
    /// sharing the database, so the chain never forks.
    async fn append_audit_entry(&self, entry: &NewAuditEntry) -> StoreResult<AuditEntry>;
    async fn list_audit_entries(&self, query: &AuditQuery) -> StoreResult<AuditPage>;
    /// Up to `limit` entries after `after_seq`, in chain order (for the export).
    async fn audit_entries_after(&self, after_seq: i64, limit: u32)
    -> StoreResult<Vec<AuditEntry>>;
    /// Walks the whole chain from its first entry.
    async fn verify_audit_chain(&self) -> StoreResult<AuditVerdict>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The canonical form as first written (a `Value` built, then every key sorted): the
    /// chains already stored were hashed this way, so `entry_hash` must agree with it.
    fn reference_hash(content: &AuditContent<'_>) -> String {
        fn sorted(value: &Value) -> String {
            match value {
                Value::Object(map) => {
                    let mut keys: Vec<&String> = map.keys().collect();
                    keys.sort();
                    let fields: Vec<String> = keys
                        .into_iter()
                        .map(|key| format!("{}:{}", Value::String(key.clone()), sorted(&map[key])))
                        .collect();
                    format!("{{{}}}", fields.join(","))
                }
                Value::Array(items) => {
                    let items: Vec<String> = items.iter().map(sorted).collect();
                    format!("[{}]", items.join(","))
                }
                scalar => scalar.to_string(),
            }
        }
        let canonical = sorted(&json!({
            "seq": content.seq,
            "at": content.at_micros,
            "actor_user_id": content.actor_user_id,
            "actor_email": content.actor_email,
            "action": content.action,
            "resource_type": content.resource_type,
            "resource_id": content.resource_id,
            "request_id": content.request_id,
            "detail": content.detail,
            "prev_hash": content.prev_hash,
        }));
        hex::encode(Sha256::digest(canonical.as_bytes()))
    }

    #[test]
    fn hashes_agree_with_the_canonical_form_chains_were_stored_with() {
        let detail = json!({
            "zeta": {"b": [1, -2.5, "x\u{0}\"\\\n"], "a": null},
            "Émile": "naïve \u{1F600} \u{7f} </script>",
            "alpha": true,
            "": {},
        });
        let empty = json!({});
        for (actor_email, request_id, detail) in [
            (Some("a.b@example.com"), Some("req-1"), &detail),
            (None, None, &empty),
            (Some("quote\"back\\slash"), Some("\t"), &detail),
        ] {
            let content = AuditContent {
                seq: 42,
                at_micros: -1_700_000_000_123_456,
                actor_user_id: actor_email.map(|_| 7),
                actor_email,
                action: "POST /app/api/v1/investigation/create",
                resource_type: "investigation",
                resource_id: request_id.map(|_| "99"),
                request_id,
                detail,
                prev_hash: GENESIS_HASH,
            };
            assert_eq!(entry_hash(&content), reference_hash(&content));
        }
        assert_eq!(
            canonical_json(&detail),
            "{\"\":{},\"alpha\":true,\"zeta\":{\"a\":null,\"b\":[1,-2.5,\"x\\u0000\\\"\\\\\\n\"]},\"Émile\":\"naïve 😀 \u{7f} </script>\"}"
        );
    }

    fn entry(seq: i64, prev_hash: &str) -> AuditEntry {
        let mut entry = AuditEntry {
            seq,
            at: chrono::DateTime::from_timestamp_micros(1_700_000_000_000_000 + seq)
                .expect("a valid time"),
            actor_user_id: Some(1),
            actor_email: Some("admin@example.com".into()),
            action: "POST /app/api/v1/things".into(),
            resource_type: "things".into(),
            resource_id: Some(seq.to_string()),
            request_id: None,
            detail: json!({"b": 1, "a": [true, null]}),
            prev_hash: prev_hash.into(),
            hash: String::new(),
        };
        entry.hash = entry.expected_hash();
        entry
    }

    fn chain(length: i64) -> Vec<AuditEntry> {
        let mut entries: Vec<AuditEntry> = Vec::new();
        for seq in 1..=length {
            let prev = entries
                .last()
                .map_or(GENESIS_HASH.to_string(), |last| last.hash.clone());
            entries.push(entry(seq, &prev));
        }
        entries
    }

    fn walk(entries: &[AuditEntry], head_seq: i64, head_hash: &str) -> AuditVerdict {
        let mut walk = ChainWalk::default();
        for entry in entries {
            if let Err(verdict) = walk.check(entry) {
                return verdict;
            }
        }
        walk.finish(head_seq, head_hash)
    }

    fn broken_at(verdict: AuditVerdict) -> i64 {
        match verdict {
            AuditVerdict::Broken { seq, .. } => seq,
            intact => panic!("expected a broken chain, got {intact:?}"),
        }
    }

    #[test]
    fn an_untouched_chain_is_intact_and_an_empty_one_too() {
        let entries = chain(4);
        let head = entries[3].hash.clone();
        assert_eq!(
            walk(&entries, 4, &head),
            AuditVerdict::Intact {
                count: 4,
                head_hash: head
            }
        );
        assert!(matches!(
            walk(&[], 0, GENESIS_HASH),
            AuditVerdict::Intact { count: 0, .. }
        ));
    }

    #[test]
    fn edits_deletions_and_insertions_name_the_first_broken_entry() {
        let entries = chain(5);
        let head = entries[4].hash.clone();

        let mut edited = entries.clone();
        edited[2].action = "GET /nothing/to/see".into();
        assert_eq!(broken_at(walk(&edited, 5, &head)), 3);

        let mut deleted = entries.clone();
        deleted.remove(1);
        assert_eq!(broken_at(walk(&deleted, 5, &head)), 3);

        let mut tail_cut = entries.clone();
        tail_cut.pop();
        assert_eq!(broken_at(walk(&tail_cut, 5, &head)), 5);

        // An entry appended outside Sleuth, even with a correct hash, is past the head.
        let mut inserted = entries.clone();
        inserted.push(entry(6, &head));
        assert_eq!(broken_at(walk(&inserted, 5, &head)), 6);

        // Rehashing an edited entry breaks the link of the next one.
        let mut rehashed = entries.clone();
        rehashed[1].detail = json!({"innocent": true});
        rehashed[1].hash = rehashed[1].expected_hash();
        assert_eq!(broken_at(walk(&rehashed, 5, &head)), 3);
    }

    #[test]
    fn the_hash_ignores_key_order_but_not_values() {
        let first = entry(1, GENESIS_HASH);
        let mut reordered = first.clone();
        reordered.detail = serde_json::from_str(r#"{"a": [true, null], "b": 1}"#).unwrap();
        assert_eq!(first.expected_hash(), reordered.expected_hash());
        let mut changed = first.clone();
        changed.detail = json!({"a": [true, null], "b": 2});
        assert_ne!(first.expected_hash(), changed.expected_hash());
        assert_eq!(
            canonical_json(&json!({"z": {"y": 1, "x": "é\""}, "a": []})),
            r#"{"a":[],"z":{"x":"é\"","y":1}}"#
        );
    }
}
