//! The queue's live updates: the API's event stream (`routes::events`) for a console
//! session, at `/console/events`. The API's route keeps to keys (a cookie there would
//! make every API write reachable by a browser's ambient credentials); this twin only
//! reads, and applies the same roles and tenant unions through the session's `Caller`.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use crate::console::session::SignedIn;
use crate::extract::QueryPairs;
use crate::state::AppState;

pub(crate) async fn stream(
    State(state): State<AppState>,
    headers: HeaderMap,
    signed_in: SignedIn,
    query: QueryPairs,
) -> Response {
    crate::routes::events::open(&state, &headers, &signed_in.caller(), &query)
        .await
        .into_response()
}
