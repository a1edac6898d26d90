//! One module per vendor: the requests of one page, the alerts in the answer, and the
//! cursor past them. What they share is here: the cursor, reading vendor fields, and each
//! vendor's severity and type mapped for the filters.
//!
//! A cursor remembers where the query of the current window started (`since`), the
//! vendor's token for its next page (`next`), and the newest alert time met in it
//! (`high`). When the vendor has no further page the next window starts at `high`,
//! inclusive: the alerts at that instant are read twice and dedupe on their identity,
//! so none that shares the instant is skipped.

pub(crate) mod crowdstrike;
pub(crate) mod elastic;
pub(crate) mod google_workspace;
pub(crate) mod graph;
pub(crate) mod okta;
pub(crate) mod sentinelone;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Kind, Page, Severity};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Cursor {
    pub since: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<DateTime<Utc>>,
    /// Elastic: the sort values of the last hit read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_after: Option<Value>,
}

impl Cursor {
    /// The stored cursor, or a new one at `start` (the backfill window) when there is none
    /// or it cannot be read (the window is then read again, and deduped).
    pub(crate) fn read(stored: Option<&Value>, start: DateTime<Utc>) -> Cursor {
        stored
            .and_then(|value| {
                serde_json::from_value(value.clone())
                    .inspect_err(|error| {
                        tracing::warn!(%error, "a connector's cursor is unreadable; reading its backfill window again");
                    })
                    .ok()
            })
            .unwrap_or(Cursor {
                since: start,
                next: None,
                high: None,
                search_after: None,
            })
    }

    /// The page of `alerts` whose times are `times`, with `next` the vendor's token for
    /// the page after (`None`: the query is done, and the next starts at the newest time).
    pub(crate) fn page(
        mut self,
        alerts: Vec<Value>,
        times: impl IntoIterator<Item = DateTime<Utc>>,
        next: Option<String>,
    ) -> Page {
        self.high = times.into_iter().chain(self.high).max();
        let caught_up = next.is_none();
        match next {
            Some(next) => self.next = Some(next),
            None => {
                self.since = self.high.take().unwrap_or(self.since).max(self.since);
                self.next = None;
            }
        }
        Page {
            alerts,
            filtered: 0,
            cursor: self.to_value(),
            caught_up,
        }
    }

    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A field by its dotted path: a flattened key (`kibana.alert.severity`, as Elastic's
/// alert documents hold them) or nested objects.
pub(crate) fn field<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    if let Some(found) = value.get(path) {
        return Some(found);
    }
    let (head, rest) = path.split_once('.')?;
    field(value.get(head)?, rest)
}

pub(crate) fn text<'a>(value: &'a Value, path: &str) -> Option<&'a str> {
    field(value, path)?.as_str()
}

pub(crate) fn time(value: &Value, path: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text(value, path)?)
        .ok()
        .map(|time| time.with_timezone(&Utc))
}

/// RFC 3339 in UTC with milliseconds (`2026-03-02T09:14:31.402Z`).
pub(crate) fn iso(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A vendor's next-page link, when it points where the connector's base URL does: the
/// credentials go nowhere else.
pub(crate) fn same_origin(link: &str, base: &str) -> Result<String, String> {
    let parsed =
        url::Url::parse(link).map_err(|error| format!("a next link is not a URL: {error}"))?;
    let origin = url::Url::parse(base).map_err(|error| error.to_string())?;
    if parsed.origin() != origin.origin() {
        return Err(format!(
            "a next link points to {}, not to the connector's base URL",
            parsed.origin().ascii_serialization()
        ));
    }
    Ok(link.to_owned())
}

/// The alert's severity on the common scale, as its vendor grades it.
pub(crate) fn severity(kind: Kind, alert: &Value) -> Option<Severity> {
    match kind {
        Kind::Crowdstrike => {
            let score = field(alert, "severity")?.as_f64()?;
            Some(match score {
                score if score >= 80.0 => Severity::Critical,
                score if score >= 60.0 => Severity::High,
                score if score >= 40.0 => Severity::Medium,
                score if score >= 20.0 => Severity::Low,
                _ => Severity::Informational,
            })
        }
        Kind::GraphSecurity => named(text(alert, "severity")?),
        Kind::Okta => match text(alert, "severity")? {
            "DEBUG" | "INFO" => Some(Severity::Informational),
            "WARN" => Some(Severity::Medium),
            "ERROR" => Some(Severity::High),
            _ => None,
        },
        Kind::Sentinelone => match text(alert, "threatInfo.confidenceLevel")? {
            "malicious" => Some(Severity::High),
            "suspicious" => Some(Severity::Medium),
            _ => None,
        },
        Kind::Elastic => named(
            text(alert, "kibana.alert.severity")
                .or_else(|| text(alert, "kibana.alert.rule.severity"))?,
        ),
        Kind::GoogleWorkspace => named(text(alert, "metadata.severity")?),
    }
}

fn named(text: &str) -> Option<Severity> {
    match text.to_ascii_lowercase().as_str() {
        "informational" | "info" => Some(Severity::Informational),
        "low" => Some(Severity::Low),
        "medium" => Some(Severity::Medium),
        "high" => Some(Severity::High),
        "critical" => Some(Severity::Critical),
        _ => None,
    }
}

/// The vendor's own type of the alert, for the `types` filter.
pub(crate) fn alert_type(kind: Kind, alert: &Value) -> Option<String> {
    let path = match kind {
        Kind::Crowdstrike => "type",
        Kind::GraphSecurity => "category",
        Kind::Okta => "eventType",
        Kind::Sentinelone => "threatInfo.classification",
        Kind::Elastic => "kibana.alert.rule.type",
        Kind::GoogleWorkspace => "type",
    };
    text(alert, path).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .expect("time")
            .with_timezone(&Utc)
    }

    #[test]
    fn a_finished_query_starts_the_next_at_its_newest_alert() {
        let start = at("2026-03-01T00:00:00Z");
        let cursor = Cursor::read(None, start);
        let page = cursor.page(
            vec![json!({})],
            [at("2026-03-01T05:00:00Z")],
            Some("token-2".into()),
        );
        assert!(!page.caught_up);
        let cursor = Cursor::read(Some(&page.cursor), start);
        assert_eq!(
            cursor.since, start,
            "the window stays while its pages are read"
        );
        assert_eq!(cursor.next.as_deref(), Some("token-2"));
        let page = cursor.page(vec![json!({})], [at("2026-03-01T03:00:00Z")], None);
        assert!(page.caught_up);
        let cursor = Cursor::read(Some(&page.cursor), start);
        assert_eq!(cursor.since, at("2026-03-01T05:00:00Z"));
        assert_eq!(cursor.next, None);
        assert_eq!(cursor.high, None);
        // An empty window keeps its start.
        let page = cursor.page(Vec::new(), [], None);
        let cursor = Cursor::read(Some(&page.cursor), start);
        assert_eq!(cursor.since, at("2026-03-01T05:00:00Z"));
    }

    #[test]
    fn flattened_and_nested_fields_read_alike() {
        let flat = json!({"kibana.alert.severity": "high"});
        let nested = json!({"kibana": {"alert": {"severity": "high"}}});
        assert_eq!(severity(Kind::Elastic, &flat), Some(Severity::High));
        assert_eq!(severity(Kind::Elastic, &nested), Some(Severity::High));
        assert_eq!(
            severity(Kind::Crowdstrike, &json!({"severity": 90})),
            Some(Severity::Critical)
        );
        assert_eq!(
            severity(Kind::Okta, &json!({"severity": "WARN"})),
            Some(Severity::Medium)
        );
        assert_eq!(
            severity(
                Kind::GoogleWorkspace,
                &json!({"metadata": {"severity": "HIGH"}})
            ),
            Some(Severity::High)
        );
    }

    #[test]
    fn next_links_stay_on_the_vendor() {
        assert!(
            same_origin(
                "https://graph.example/v1.0/x?$skiptoken=1",
                "https://graph.example"
            )
            .is_ok()
        );
        assert!(same_origin("https://evil.example/x", "https://graph.example").is_err());
        assert!(same_origin("http://graph.example/x", "https://graph.example").is_err());
    }
}
