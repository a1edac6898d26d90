//! The audit log's HTTP side: every API request that writes (any method but GET, HEAD and
//! OPTIONS) and succeeds is appended to the hash-chained log, with who (the authenticated
//! caller), what (method and matched route), which resource (the id in the path, or the
//! one a handler created), the request id and the status. One layer over every route, so
//! a new endpoint is audited without remembering to. Request bodies are never recorded:
//! they may carry scripts, secrets or alert content; handlers that want more said add an
//! [`AuditNote`] to their response.

use std::sync::{Arc, Mutex};

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{Map, Value, json};
use sleuth_store::{NewAuditEntry, Principal};

use crate::state::AppState;

const API_PREFIX: &str = "/app/api/v1/";

/// Where the caller's identity is left for the audit layer: the layer puts an empty slot in
/// the request, and authentication (`Caller`) fills it.
#[derive(Debug, Clone, Default)]
pub struct ActorSlot(Arc<Mutex<Option<Actor>>>);

#[derive(Debug, Clone)]
struct Actor {
    user_id: i64,
    email: String,
    api_key_id: i64,
}

impl ActorSlot {
    pub fn fill(&self, principal: &Principal) {
        let actor = Actor {
            user_id: principal.user.id,
            email: principal.user.email.clone(),
            api_key_id: principal.api_key_id,
        };
        match self.0.lock() {
            Ok(mut slot) => *slot = Some(actor),
            Err(poisoned) => *poisoned.into_inner() = Some(actor),
        }
    }

    fn take(&self) -> Option<Actor> {
        match self.0.lock() {
            Ok(mut slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        }
    }
}

/// What a handler adds to its response for the audit entry: the id of the resource it
/// created (the path names none), and a small detail. Never secrets.
#[derive(Debug, Clone, Default)]
pub struct AuditNote {
    pub resource_id: Option<String>,
    pub detail: Map<String, Value>,
}

/// Whether a request of this method changes anything.
fn writes(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The resource type of a route: its first segment under the API prefix
/// (`/app/api/v1/context-memory/update/{item_id}` -> `context-memory`).
fn resource_type(route: &str) -> String {
    route
        .strip_prefix(API_PREFIX)
        .and_then(|rest| rest.split('/').next())
        .filter(|segment| !segment.is_empty())
        .unwrap_or(route)
        .to_string()
}

/// The value of the route's first path parameter in the actual path.
fn resource_id(route: &str, path: &str) -> Option<String> {
    route
        .split('/')
        .zip(path.split('/'))
        .find(|(pattern, _)| pattern.starts_with('{') && pattern.ends_with('}'))
        .map(|(_, value)| value.chars().take(200).collect())
}

/// The audit layer: runs the request, then appends an entry if it wrote and succeeded.
/// The entry is appended before the answer leaves, so a client that saw its write
/// succeed finds it in the log; a failure to append is logged (the write is done) and
/// does not change the answer.
pub async fn record(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    if !writes(request.method()) {
        return next.run(request).await;
    }
    let slot = ActorSlot::default();
    request.extensions_mut().insert(slot.clone());
    let method = request.method().as_str().to_string();
    let path = request.uri().path().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| path.clone(), |matched| matched.as_str().to_string());
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .map(|value| value.chars().take(200).collect::<String>());
    let response = next.run(request).await;
    let status = response.status();
    if !status.is_success() {
        return response;
    }
    let Some(store) = state.store_if_ready() else {
        return response;
    };
    let note = response.extensions().get::<AuditNote>().cloned();
    let actor = slot.take();
    let mut detail = Map::new();
    detail.insert("method".into(), json!(method));
    detail.insert("route".into(), json!(route));
    detail.insert("status".into(), json!(status.as_u16()));
    if let Some(actor) = &actor {
        detail.insert("api_key_id".into(), json!(actor.api_key_id));
    }
    let mut noted_id = None;
    if let Some(note) = note {
        noted_id = note.resource_id;
        detail.extend(note.detail);
    }
    let entry = NewAuditEntry {
        actor_user_id: actor.as_ref().map(|actor| actor.user_id),
        actor_email: actor.map(|actor| actor.email),
        action: format!("{method} {route}"),
        resource_type: resource_type(&route),
        resource_id: noted_id.or_else(|| resource_id(&route, &path)),
        request_id,
        detail,
    };
    if let Err(error) = store.append_audit_entry(&entry).await {
        tracing::error!(%error, action = %entry.action, "could not append to the audit log");
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_name_their_resource_type_and_id() {
        let route = "/app/api/v1/context-memory/update/{item_id}";
        assert_eq!(resource_type(route), "context-memory");
        assert_eq!(
            resource_id(route, "/app/api/v1/context-memory/update/42").as_deref(),
            Some("42")
        );
        assert_eq!(
            resource_id(
                "/app/api/v1/investigation/create",
                "/app/api/v1/investigation/create"
            ),
            None
        );
        assert_eq!(
            resource_id(
                "/app/api/v1/investigation-user-notes/{investigation_id}/create",
                "/app/api/v1/investigation-user-notes/7/create"
            )
            .as_deref(),
            Some("7")
        );
        assert_eq!(resource_type("/metrics"), "/metrics");
    }

    #[test]
    fn only_methods_that_write_are_audited() {
        assert!(writes(&Method::POST) && writes(&Method::PUT));
        assert!(writes(&Method::PATCH) && writes(&Method::DELETE));
        assert!(!writes(&Method::GET) && !writes(&Method::HEAD) && !writes(&Method::OPTIONS));
    }
}
