//! Bodies that carry several alerts at once, in the shapes the tools really deliver or
//! answer them: an Okta event hook delivery (`data.events`), a Microsoft Graph list page
//! (`value`), a Security Hub EventBridge event or GetFindings answer (`detail.findings`,
//! `Findings`), an Alert Center `alerts.list` page (`alerts`), a Falcon API answer
//! (`resources`), a SentinelOne API page (`data`), an Elasticsearch search answer
//! (`hits.hits`), a Splunk search or notable export (`results`), a Cortex XDR alerts
//! answer (`reply.alerts`), and a plain JSON array.
//!
//! `split` recognises such a body and cuts it into one value per alert, each in the shape
//! its parser reads on its own. Nothing here decides what to do with them: the server
//! either investigates every one, or refuses a body whose alerts it cannot answer one by
//! one, saying how to send it. Never half taken: a parser that reads only the first alert
//! of a list would drop the rest without a word.
//!
//! A shape counts as an envelope only when the body is nothing but the envelope (its
//! other keys are the vendor's paging and metadata keys) and every item is an object, so
//! that an alert which merely has a list field named `value` or `data` is never cut up.

use serde_json::Value;

use crate::json::{at, str_at};

/// The most alerts one body may carry. A delivery larger than this is refused whole (the
/// vendors' own batches are far smaller: Okta sends at most a few hundred events a request).
pub const MAX_ITEMS: usize = 1000;

/// A kind of multi-alert body, named in the vendor's terms for error messages and docs.
#[derive(Debug)]
pub struct EnvelopeKind {
    /// Stable key (`okta_event_hook`), used in logs and metrics.
    pub key: &'static str,
    /// What the body is, as a sentence fragment ("an Okta event hook delivery").
    pub description: &'static str,
    /// Where its alerts are (`data.events`).
    pub items_at: &'static str,
    /// The push endpoint's source segment that takes this body whole (`okta`), when one does.
    pub push_source: &'static str,
    recognise: fn(&Value) -> bool,
    cut: fn(&Value) -> Vec<Value>,
}

/// A recognised multi-alert body, cut into its alerts.
#[derive(Debug)]
pub struct Envelope {
    pub kind: &'static EnvelopeKind,
    /// One value per alert, in delivery order; each reads like a single alert of its format.
    pub items: Vec<Value>,
}

static KINDS: [EnvelopeKind; 10] = [
    EnvelopeKind {
        key: "okta_event_hook",
        description: "an Okta event hook delivery",
        items_at: "data.events",
        push_source: "okta",
        recognise: |raw| {
            str_at(raw, "eventType") == Some("com.okta.event_hook")
                && objects_at(raw, "data.events").is_some()
        },
        cut: |raw| cloned_items(raw, "data.events"),
    },
    EnvelopeKind {
        key: "aws_securityhub_eventbridge",
        description: "a Security Hub EventBridge event",
        items_at: "detail.findings",
        push_source: "eventbridge",
        recognise: |raw| {
            str_at(raw, "source") == Some("aws.securityhub")
                && objects_at(raw, "detail.findings").is_some()
        },
        cut: |raw| {
            // Each finding keeps the event around it (account, region, time): the parser
            // reads a one-finding event exactly as Security Hub sends it in practice.
            let Some(findings) = objects_at(raw, "detail.findings") else {
                return Vec::new();
            };
            findings
                .iter()
                .map(|finding| {
                    let mut event = raw.clone();
                    if let Some(detail) = event.get_mut("detail").and_then(Value::as_object_mut) {
                        detail.insert("findings".into(), Value::Array(vec![finding.clone()]));
                    }
                    event
                })
                .collect()
        },
    },
    EnvelopeKind {
        key: "aws_securityhub_get_findings",
        description: "a Security Hub GetFindings answer",
        items_at: "Findings",
        push_source: "eventbridge",
        recognise: |raw| only_keys(raw, "Findings", &["NextToken"]),
        cut: |raw| cloned_items(raw, "Findings"),
    },
    EnvelopeKind {
        key: "microsoft_graph_list",
        description: "a Microsoft Graph list page",
        items_at: "value",
        push_source: "graph",
        recognise: |raw| {
            only_keys(
                raw,
                "value",
                &["@odata.context", "@odata.nextLink", "@odata.count"],
            ) && !is_change_notification_list(raw)
        },
        cut: |raw| cloned_items(raw, "value"),
    },
    EnvelopeKind {
        key: "google_workspace_alerts_list",
        description: "a Google Workspace Alert Center alerts.list page",
        items_at: "alerts",
        push_source: "google-workspace",
        recognise: |raw| only_keys(raw, "alerts", &["nextPageToken"]),
        cut: |raw| cloned_items(raw, "alerts"),
    },
    EnvelopeKind {
        key: "crowdstrike_api_answer",
        description: "a CrowdStrike Falcon API answer",
        items_at: "resources",
        push_source: "crowdstrike",
        recognise: |raw| only_keys(raw, "resources", &["meta", "errors"]),
        cut: |raw| cloned_items(raw, "resources"),
    },
    EnvelopeKind {
        key: "sentinelone_api_page",
        description: "a SentinelOne API page",
        items_at: "data",
        push_source: "sentinelone",
        recognise: |raw| only_keys(raw, "data", &["pagination", "errors"]),
        cut: |raw| cloned_items(raw, "data"),
    },
    EnvelopeKind {
        key: "elasticsearch_search_answer",
        description: "an Elasticsearch search answer",
        items_at: "hits.hits",
        push_source: "elastic",
        recognise: |raw| {
            raw.as_object().is_some_and(|map| {
                map.keys().all(|key| {
                    [
                        "hits",
                        "took",
                        "timed_out",
                        "_shards",
                        "pit_id",
                        "_scroll_id",
                    ]
                    .contains(&key.as_str())
                })
            }) && objects_at(raw, "hits.hits").is_some()
        },
        cut: |raw| cloned_items(raw, "hits.hits"),
    },
    EnvelopeKind {
        key: "splunk_results",
        description: "a Splunk search results export",
        items_at: "results",
        push_source: "splunk",
        recognise: |raw| {
            only_keys(
                raw,
                "results",
                &[
                    "preview",
                    "init_offset",
                    "messages",
                    "fields",
                    "highlighted",
                    "post_process_count",
                ],
            )
        },
        cut: |raw| cloned_items(raw, "results"),
    },
    EnvelopeKind {
        key: "cortex_xdr_alerts_answer",
        description: "a Cortex XDR alerts answer",
        items_at: "reply.alerts",
        push_source: "cortex-xdr",
        recognise: |raw| {
            raw.as_object().is_some_and(|map| map.len() == 1)
                && at(raw, "reply").is_some_and(|reply| {
                    only_keys(reply, "alerts", &["total_count", "result_count"])
                })
        },
        cut: |raw| cloned_items(raw, "reply.alerts"),
    },
];

/// The plain JSON array: a list of alerts with no envelope at all.
static ARRAY: EnvelopeKind = EnvelopeKind {
    key: "json_array",
    description: "a JSON array",
    items_at: "the array's elements",
    push_source: "generic",
    recognise: |raw| {
        raw.as_array()
            .is_some_and(|items| items.iter().all(Value::is_object))
    },
    cut: |raw| raw.as_array().cloned().unwrap_or_default(),
};

/// Every kind of envelope, for docs and tests.
pub fn kinds() -> impl Iterator<Item = &'static EnvelopeKind> {
    KINDS.iter().chain(std::iter::once(&ARRAY))
}

/// The body's alerts, when it is a multi-alert envelope (of any count, even one or none);
/// `None` when it is a single alert.
pub fn split(raw: &Value) -> Option<Envelope> {
    let kind = kinds().find(|kind| (kind.recognise)(raw))?;
    Some(Envelope {
        kind,
        items: (kind.cut)(raw),
    })
}

/// The items at `path` when it is an array of objects only (an empty one included).
fn objects_at<'a>(raw: &'a Value, path: &str) -> Option<&'a Vec<Value>> {
    at(raw, path)
        .and_then(Value::as_array)
        .filter(|items| items.iter().all(Value::is_object))
}

fn cloned_items(raw: &Value, path: &str) -> Vec<Value> {
    objects_at(raw, path).cloned().unwrap_or_default()
}

/// Whether `raw` is an object holding the list `items` (of objects) and otherwise only
/// keys from `others`: the vendor's page, not an alert that happens to have such a list.
fn only_keys(raw: &Value, items: &str, others: &[&str]) -> bool {
    let Some(map) = raw.as_object() else {
        return false;
    };
    map.get(items)
        .and_then(Value::as_array)
        .is_some_and(|list| list.iter().all(Value::is_object))
        && map
            .keys()
            .all(|key| key == items || others.contains(&key.as_str()))
}

/// Graph change notifications also come as `{"value": [...]}`, but each item is a
/// notification about a resource (`subscriptionId`, `changeType`), not an alert.
pub fn is_change_notification_list(raw: &Value) -> bool {
    raw.get("value")
        .and_then(Value::as_array)
        .is_some_and(|items| {
            !items.is_empty()
                && items.iter().all(|item| {
                    item.get("subscriptionId").is_some() && item.get("changeType").is_some()
                })
        })
}

/// The notifications of a Graph change notification delivery, when it is one.
pub fn change_notifications(raw: &Value) -> Option<&Vec<Value>> {
    is_change_notification_list(raw)
        .then(|| raw.get("value").and_then(Value::as_array))
        .flatten()
}

/// What the body held, for messages ("an Okta event hook delivery holding 2 alerts in
/// `data.events`").
pub fn describe_count(envelope: &Envelope) -> String {
    let count = envelope.items.len();
    format!(
        "{} holding {count} alert{} in `{}`",
        envelope.kind.description,
        if count == 1 { "" } else { "s" },
        envelope.kind.items_at
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key_of(raw: &Value) -> Option<&'static str> {
        split(raw).map(|envelope| envelope.kind.key)
    }

    #[test]
    fn an_okta_event_hook_is_cut_into_its_events() {
        let hook = json!({
            "eventType": "com.okta.event_hook", "eventTypeVersion": "1.0",
            "cloudEventsVersion": "0.1", "source": "https://example.okta.com/api/v1/eventHooks/who",
            "eventId": "b5a188b9-5ece-4636-b041-482ffda96311",
            "data": {"events": [{"uuid": "a"}, {"uuid": "b"}]}
        });
        let envelope = split(&hook).expect("an envelope");
        assert_eq!(envelope.kind.key, "okta_event_hook");
        assert_eq!(
            envelope.items,
            vec![json!({"uuid": "a"}), json!({"uuid": "b"})]
        );
    }

    #[test]
    fn each_security_hub_finding_keeps_its_event_around_it() {
        let event = json!({
            "version": "0", "source": "aws.securityhub", "account": "111122223333",
            "detail-type": "Security Hub Findings - Imported",
            "detail": {"findings": [{"Id": "one"}, {"Id": "two"}]}
        });
        let envelope = split(&event).expect("an envelope");
        assert_eq!(envelope.items.len(), 2);
        assert_eq!(
            envelope.items[1]["detail"]["findings"],
            json!([{"Id": "two"}])
        );
        assert_eq!(envelope.items[1]["account"], "111122223333");
    }

    #[test]
    fn vendor_pages_are_envelopes_by_their_paging_keys() {
        let cases = [
            (
                json!({"@odata.context": "x", "value": [{"id": "1"}]}),
                "microsoft_graph_list",
            ),
            (
                json!({"alerts": [{"alertId": "1"}], "nextPageToken": "t"}),
                "google_workspace_alerts_list",
            ),
            (
                json!({"meta": {"query_time": 0.1}, "resources": [{"composite_id": "c"}], "errors": []}),
                "crowdstrike_api_answer",
            ),
            (
                json!({"data": [{"id": "1"}], "pagination": {"nextCursor": null}}),
                "sentinelone_api_page",
            ),
            (
                json!({"took": 3, "hits": {"total": {"value": 1}, "hits": [{"_id": "1"}]}}),
                "elasticsearch_search_answer",
            ),
            (
                json!({"preview": false, "results": [{"rule_name": "x"}]}),
                "splunk_results",
            ),
            (
                json!({"reply": {"total_count": 1, "alerts": [{"alert_id": "1"}]}}),
                "cortex_xdr_alerts_answer",
            ),
            (
                json!({"Findings": [{"Id": "1"}], "NextToken": "n"}),
                "aws_securityhub_get_findings",
            ),
            (json!([{"title": "a"}, {"title": "b"}]), "json_array"),
        ];
        for (raw, key) in cases {
            assert_eq!(key_of(&raw), Some(key), "{raw}");
        }
    }

    #[test]
    fn an_alert_with_a_list_field_is_not_an_envelope() {
        for raw in [
            json!({"title": "x", "value": [{"a": 1}, {"b": 2}]}),
            json!({"alertId": "a", "data": [{"x": 1}], "customerId": "c"}),
            json!({"results": ["a", "b"]}),
            json!({"hits": {"hits": "nope"}}),
            json!({"eventType": "com.okta.event_hook", "data": {"events": "nope"}}),
            json!([1, 2]),
            json!({"uuid": "x", "published": "2024-01-01T00:00:00Z", "eventType": "user.session.start"}),
        ] {
            assert_eq!(key_of(&raw), None, "{raw}");
        }
    }

    #[test]
    fn graph_change_notifications_are_not_an_alert_list() {
        let notifications = json!({"value": [{
            "subscriptionId": "s", "changeType": "created", "resource": "security/alerts/1",
            "clientState": "secret"
        }]});
        assert_eq!(key_of(&notifications), None);
        assert_eq!(change_notifications(&notifications).map(Vec::len), Some(1));
    }
}
