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

/// What the audit layer leaves in each writing request: the request's facts, the caller's
/// identity (filled by authentication, `Caller`), and whether a handler took the entry to
/// have it stored with its own write (`take_entry`). Cheap to clone; all clones share it.
#[derive(Debug, Clone, Default)]
pub struct AuditSlot(Arc<Mutex<SlotState>>);

#[derive(Debug, Clone, Default)]
struct SlotState {
    request: RequestFacts,
    actor: Option<Actor>,
    /// A handler took the entry: the layer appends nothing.
    taken: bool,
    /// The tenant union of what the request changes, once a handler found it.
    tenant_union_id: Option<i64>,
}

#[derive(Debug, Clone, Default)]
struct RequestFacts {
    method: String,
    /// The matched route (`/app/api/v1/context-memory/update/{item_id}`).
    route: String,
    path: String,
    request_id: Option<String>,
}

#[derive(Debug, Clone)]
struct Actor {
    user_id: i64,
    email: String,
    /// The key of an API request, or the session of a console request.
    api_key_id: Option<i64>,
    console_session_id: Option<i64>,
}

impl AuditSlot {
    fn new(request: RequestFacts) -> AuditSlot {
        AuditSlot(Arc::new(Mutex::new(SlotState {
            request,
            ..SlotState::default()
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SlotState> {
        // The state is plain data: a panic elsewhere cannot leave it half-written.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn fill(&self, principal: &Principal) {
        self.state().actor = Some(Actor {
            user_id: principal.user.id,
            email: principal.user.email.clone(),
            api_key_id: Some(principal.api_key_id),
            console_session_id: None,
        });
    }

    /// The caller of a console request: the session's user.
    pub fn fill_session(&self, user: &sleuth_store::User, session_id: i64) {
        self.state().actor = Some(Actor {
            user_id: user.id,
            email: user.email.clone(),
            api_key_id: None,
            console_session_id: Some(session_id),
        });
    }

    /// Says the request changes something of this tenant union (an investigation, a note on
    /// one, a context memory item of the union), so that admins bound to it see the entry.
    pub fn concerns_union(&self, tenant_union_id: i64) {
        self.state().tenant_union_id = Some(tenant_union_id);
    }

    /// The entry this request will have if it succeeds, for a handler that stores it in
    /// its own transaction (creates: the alert and who submitted it commit together, in
    /// one write turn). The layer then appends nothing for this request. The store names
    /// the resource.
    pub fn take_entry(&self) -> NewAuditEntry {
        let mut state = self.state();
        state.taken = true;
        entry(&state, 200, None)
    }
}

/// The audit entry of a request that answered `status`, with what its handler noted.
fn entry(state: &SlotState, status: u16, note: Option<AuditNote>) -> NewAuditEntry {
    let request = &state.request;
    let mut detail = Map::new();
    detail.insert("method".into(), json!(request.method));
    detail.insert("route".into(), json!(request.route));
    detail.insert("status".into(), json!(status));
    if let Some(actor) = &state.actor {
        if let Some(api_key_id) = actor.api_key_id {
            detail.insert("api_key_id".into(), json!(api_key_id));
        }
        if let Some(session_id) = actor.console_session_id {
            detail.insert("console_session_id".into(), json!(session_id));
        }
    }
    let mut noted_id = None;
    if let Some(note) = note {
        noted_id = note.resource_id;
        detail.extend(note.detail);
    }
    NewAuditEntry {
        actor_user_id: state.actor.as_ref().map(|actor| actor.user_id),
        actor_email: state.actor.as_ref().map(|actor| actor.email.clone()),
        action: format!("{} {}", request.method, request.route),
        resource_type: resource_type(&request.route),
        resource_id: noted_id.or_else(|| resource_id(&request.route, &request.path)),
        request_id: request.request_id.clone(),
        detail,
        tenant_union_id: state.tenant_union_id,
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
/// (`/app/api/v1/context-memory/update/{item_id}` -> `context-memory`), or of a console
/// route (`/investigations/{investigation_id}/notes` -> `investigations`).
fn resource_type(route: &str) -> String {
    route
        .strip_prefix(API_PREFIX)
        .or_else(|| route.strip_prefix('/'))
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

/// The audit layer: runs the request, then appends an entry if it wrote and succeeded
/// (unless its handler took the entry to store with its own write: `take_entry`).
/// The entry is appended before the answer leaves, so a client that saw its write
/// succeed finds it in the log; a failure to append is logged (the write is done) and
/// does not change the answer.
pub async fn record(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    if !writes(request.method()) {
        return next.run(request).await;
    }
    let path = request.uri().path().to_string();
    let facts = RequestFacts {
        method: request.method().as_str().to_string(),
        route: request
            .extensions()
            .get::<MatchedPath>()
            .map_or_else(|| path.clone(), |matched| matched.as_str().to_string()),
        path,
        request_id: request
            .headers()
            .get("x-request-id")
            .and_then(|value| value.to_str().ok())
            .map(|value| value.chars().take(200).collect::<String>()),
    };
    let slot = AuditSlot::new(facts);
    request.extensions_mut().insert(slot.clone());
    let response = next.run(request).await;
    let status = response.status();
    // A console form that succeeded answers 303 See Other (to the page to show next).
    if !(status.is_success() || status == axum::http::StatusCode::SEE_OTHER) {
        return response;
    }
    let Some(store) = state.store_if_ready() else {
        return response;
    };
    let note = response.extensions().get::<AuditNote>().cloned();
    let entry = {
        let state = slot.state();
        if state.taken {
            return response;
        }
        entry(&state, status.as_u16(), note)
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
        assert_eq!(resource_type("/metrics"), "metrics");
        assert_eq!(
            resource_type("/investigations/{investigation_id}/notes"),
            "investigations"
        );
    }

    #[test]
    fn only_methods_that_write_are_audited() {
        assert!(writes(&Method::POST) && writes(&Method::PUT));
        assert!(writes(&Method::PATCH) && writes(&Method::DELETE));
        assert!(!writes(&Method::GET) && !writes(&Method::HEAD) && !writes(&Method::OPTIONS));
    }
}
