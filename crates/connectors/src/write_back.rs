//! Write-back: Sleuth's verdict on a vendor's alert, sent to that alert where the vendor
//! lets an API client change it. CrowdStrike Falcon: `PATCH /alerts/entities/alerts/v3`
//! with the alert's composite id and the actions `append_comment` and `update_status`.
//! Microsoft Graph: `PATCH /v1.0/security/alerts_v2/{id}` with `status`,
//! `classification` and `determination`, then the comment through
//! `POST /v1.0/security/alerts_v2/{id}/comments`. The same sign-in, 429 and 5xx handling
//! as polling (`http.rs`); whoever calls this keeps the attempt durable and retries it.

use serde_json::{Value, json};

use crate::http::Http;
use crate::{Kind, PollError, Settings};

/// What Sleuth concluded, in the terms every vendor's update can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conclusion {
    /// A real attack: the alert stays open for people to act on.
    Malicious,
    /// A false alert, or expected activity: the alert is closed.
    Benign,
    /// Neither could be shown: only the comment is added.
    Undetermined,
}

/// The verdict to write back: the conclusion and the comment that explains it.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub conclusion: Conclusion,
    /// The investigation's summary and where to read it; at most `MAX_COMMENT` characters
    /// are sent.
    pub comment: String,
}

/// Longer comments are cut: Falcon and Graph both keep comments short.
const MAX_COMMENT: usize = 2000;

impl Kind {
    /// Whether the vendor's alerts can be updated with the verdict.
    pub fn writes_back(self) -> bool {
        matches!(self, Kind::Crowdstrike | Kind::GraphSecurity)
    }
}

/// The vendor's own id of `alert` (as its page gave it), that its update names.
pub fn alert_id(kind: Kind, alert: &Value) -> Option<String> {
    let field = match kind {
        Kind::Crowdstrike => "composite_id",
        Kind::GraphSecurity => "id",
        _ => return None,
    };
    alert
        .get(field)
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

pub(crate) async fn write(
    http: &mut Http,
    kind: Kind,
    settings: &Settings,
    alert_id: &str,
    verdict: &Verdict,
) -> Result<(), PollError> {
    let base = settings.base();
    let comment: String = verdict.comment.chars().take(MAX_COMMENT).collect();
    match kind {
        Kind::Crowdstrike => {
            let mut actions = vec![json!({"name": "append_comment", "value": comment})];
            let status = match verdict.conclusion {
                Conclusion::Malicious => Some("in_progress"),
                Conclusion::Benign => Some("closed"),
                Conclusion::Undetermined => None,
            };
            if let Some(status) = status {
                actions.push(json!({"name": "update_status", "value": status}));
            }
            let body = json!({"composite_ids": [alert_id], "action_parameters": actions});
            let answer = http
                .patch_json(&format!("{base}/alerts/entities/alerts/v3"), &body)
                .await?;
            // Falcon answers 200 with the ids it could not update in `errors`.
            if let Some(errors) = answer.body.get("errors").and_then(Value::as_array)
                && !errors.is_empty()
            {
                return Err(PollError::Vendor {
                    vendor: http.vendor(),
                    status: 200,
                    detail: Value::Array(errors.clone())
                        .to_string()
                        .chars()
                        .take(300)
                        .collect(),
                });
            }
            Ok(())
        }
        Kind::GraphSecurity => {
            // The id is one path segment, escaped: it cannot reach another resource.
            let mut url = url::Url::parse(base).map_err(|error| http.shape(&error.to_string()))?;
            url.path_segments_mut()
                .map_err(|()| http.shape("the base URL cannot take a path"))?
                .pop_if_empty()
                .extend(["v1.0", "security", "alerts_v2", alert_id]);
            let url = url.to_string();
            let update = match verdict.conclusion {
                Conclusion::Malicious => Some(json!({"status": "inProgress",
                    "classification": "truePositive", "determination": "other"})),
                Conclusion::Benign => Some(json!({"status": "resolved",
                    "classification": "falsePositive", "determination": "notMalicious"})),
                Conclusion::Undetermined => None,
            };
            if let Some(update) = update {
                http.patch_json(&url, &update).await?;
            }
            let body =
                json!({"@odata.type": "microsoft.graph.security.alertComment", "comment": comment});
            http.post_json(&format!("{url}/comments"), &body).await?;
            Ok(())
        }
        _ => Err(PollError::Shape {
            vendor: http.vendor(),
            detail: "this vendor's alerts take no write-back".to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use axum::Router;
    use axum::extract::{Request, State};
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};

    use super::*;
    use crate::{Credentials, Poller, Timing};

    /// Each request the loopback vendor received: method, path, body.
    type Log = Arc<Mutex<Vec<(String, String, Value)>>>;

    /// A vendor that issues tokens, refuses the first update with 429 (`Retry-After: 0`)
    /// and takes every later one.
    async fn vendor() -> (String, Log) {
        let log: Log = Arc::default();
        async fn any(State(log): State<Log>, request: Request) -> Response {
            let method = request.method().to_string();
            let path = request.uri().path().to_owned();
            let bytes = axum::body::to_bytes(request.into_body(), 1 << 20)
                .await
                .unwrap_or_default();
            if path.ends_with("/token") {
                return axum::Json(json!({"access_token": "t-1", "expires_in": 3600}))
                    .into_response();
            }
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let mut log = log.lock().expect("log");
            log.push((method, path, body));
            if log.len() == 1 {
                return (
                    StatusCode::TOO_MANY_REQUESTS,
                    [("retry-after", "0")],
                    "slow down",
                )
                    .into_response();
            }
            if log.last().is_some_and(|(method, _, _)| method == "PATCH") {
                return axum::Json(json!({"meta": {}, "errors": []})).into_response();
            }
            (StatusCode::CREATED, axum::Json(json!({"comment": "ok"}))).into_response()
        }
        let router = Router::new().fallback(any).with_state(log.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        (format!("http://{address}"), log)
    }

    fn poller(kind: Kind, base: &str) -> Poller {
        let settings = Settings::check(
            kind,
            &json!({"base_url": base, "client_id": "c", "secret": "s", "tenant_id": "t",
                    "token_url": format!("{base}/token")}),
        )
        .expect("settings");
        let timing = Timing {
            attempts: 3,
            backoff: Duration::from_millis(1),
            max_inline_wait: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
        };
        let credentials = Credentials {
            client_id: Some("c".into()),
            secret: "s".into(),
        };
        Poller::new(kind, settings, credentials, timing).expect("poller")
    }

    #[tokio::test]
    async fn falcon_gets_the_comment_and_status_after_a_429() {
        let (base, log) = vendor().await;
        let verdict = Verdict {
            conclusion: Conclusion::Benign,
            comment: "Sleuth: false alert (the admin's scheduled backup)".into(),
        };
        poller(Kind::Crowdstrike, &base)
            .write_back("cid:ind:1", &verdict)
            .await
            .expect("written");
        let log = log.lock().expect("log").clone();
        assert_eq!(
            log.len(),
            2,
            "the 429 was honoured and the update sent again"
        );
        let (method, path, body) = &log[1];
        assert_eq!(
            (method.as_str(), path.as_str()),
            ("PATCH", "/alerts/entities/alerts/v3")
        );
        assert_eq!(
            body,
            &json!({"composite_ids": ["cid:ind:1"], "action_parameters": [
                {"name": "append_comment", "value": "Sleuth: false alert (the admin's scheduled backup)"},
                {"name": "update_status", "value": "closed"}]})
        );
    }

    #[tokio::test]
    async fn graph_gets_the_classification_then_the_comment() {
        let (base, log) = vendor().await;
        let verdict = Verdict {
            conclusion: Conclusion::Malicious,
            comment: "x".repeat(5000),
        };
        poller(Kind::GraphSecurity, &base)
            .write_back("da637/../x", &verdict)
            .await
            .expect("written");
        let log = log.lock().expect("log").clone();
        assert_eq!(log.len(), 3);
        let (method, path, body) = &log[1];
        assert_eq!(method, "PATCH");
        assert_eq!(
            path, "/v1.0/security/alerts_v2/da637%2F..%2Fx",
            "one escaped segment"
        );
        assert_eq!(
            body,
            &json!({"status": "inProgress", "classification": "truePositive", "determination": "other"})
        );
        let (method, path, body) = &log[2];
        assert_eq!(
            (method.as_str(), path.as_str()),
            ("POST", "/v1.0/security/alerts_v2/da637%2F..%2Fx/comments")
        );
        assert_eq!(body["@odata.type"], "microsoft.graph.security.alertComment");
        assert_eq!(body["comment"].as_str().map(str::len), Some(MAX_COMMENT));
    }

    #[test]
    fn the_vendor_id_is_read_where_each_vendor_keeps_it() {
        assert_eq!(
            alert_id(
                Kind::Crowdstrike,
                &json!({"id": "ind:1", "composite_id": "c:ind:1"})
            )
            .as_deref(),
            Some("c:ind:1")
        );
        assert_eq!(
            alert_id(Kind::GraphSecurity, &json!({"id": "da1"})).as_deref(),
            Some("da1")
        );
        assert_eq!(alert_id(Kind::Okta, &json!({"uuid": "u"})), None);
        assert!(!Kind::Okta.writes_back() && Kind::Crowdstrike.writes_back());
    }
}
