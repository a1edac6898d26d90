//! CrowdStrike Falcon alerts: `GET /alerts/queries/alerts/v2` (an FQL `filter`, `sort`,
//! `limit` and the `after` token of the next page) answers composite ids, then
//! `POST /alerts/entities/alerts/v2` with `composite_ids` answers the alerts themselves.

use serde_json::{Value, json};

use super::{Cursor, time};
use crate::http::Http;
use crate::{Page, PollError, Settings};

pub(crate) async fn page(
    http: &mut Http,
    settings: &Settings,
    cursor: Cursor,
) -> Result<Page, PollError> {
    let base = settings.base();
    // FQL takes times to the second; the window's start is floored, so nothing is missed.
    let since = cursor.since.format("%Y-%m-%dT%H:%M:%SZ");
    let mut filter = format!("created_timestamp:>='{since}'");
    if let Some(extra) = &settings.filter {
        filter.push_str(&format!("+({extra})"));
    }
    let mut query = vec![
        ("filter", filter),
        ("sort", "created_timestamp.asc".to_owned()),
        ("limit", settings.page_size.to_string()),
    ];
    if let Some(after) = &cursor.next {
        query.push(("after", after.clone()));
    }
    let ids = http
        .get(&format!("{base}/alerts/queries/alerts/v2"), &query)
        .await?
        .body;
    let composite_ids: Vec<Value> = ids
        .get("resources")
        .and_then(Value::as_array)
        .ok_or_else(|| http.shape("the query answer has no `resources` list"))?
        .clone();
    let after = ids
        .pointer("/meta/pagination/after")
        .and_then(Value::as_str)
        .filter(|after| !after.is_empty())
        .map(str::to_owned);
    let full = composite_ids.len() >= settings.page_size as usize;
    let alerts = if composite_ids.is_empty() {
        Vec::new()
    } else {
        let entities = http
            .post_json(
                &format!("{base}/alerts/entities/alerts/v2"),
                &json!({ "composite_ids": composite_ids }),
            )
            .await?
            .body;
        entities
            .get("resources")
            .and_then(Value::as_array)
            .ok_or_else(|| http.shape("the entities answer has no `resources` list"))?
            .clone()
    };
    let times: Vec<_> = alerts
        .iter()
        .filter_map(|alert| time(alert, "created_timestamp"))
        .collect();
    Ok(cursor.page(alerts, times, after.filter(|_| full)))
}
