//! SentinelOne threats (`GET /web/api/v2.1/threats`): `createdAt__gte`, `sortBy=createdAt`,
//! `limit`, and the `cursor` of the next page from `pagination.nextCursor`.

use serde_json::Value;

use super::{Cursor, iso, time};
use crate::http::Http;
use crate::{Page, PollError, Settings};

pub(crate) async fn page(
    http: &mut Http,
    settings: &Settings,
    cursor: Cursor,
) -> Result<Page, PollError> {
    let base = settings.base();
    let mut query = vec![
        ("createdAt__gte", iso(cursor.since)),
        ("sortBy", "createdAt".to_owned()),
        ("sortOrder", "asc".to_owned()),
        ("limit", settings.page_size.to_string()),
    ];
    if let Some(next) = &cursor.next {
        query.push(("cursor", next.clone()));
    }
    let answer = http
        .get(&format!("{base}/web/api/v2.1/threats"), &query)
        .await?
        .body;
    let threats = answer
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| http.shape("the answer has no `data` list"))?
        .clone();
    let next = answer
        .pointer("/pagination/nextCursor")
        .and_then(Value::as_str)
        .filter(|next| !next.is_empty())
        .map(str::to_owned);
    let times: Vec<_> = threats
        .iter()
        .filter_map(|threat| time(threat, "threatInfo.createdAt"))
        .collect();
    Ok(cursor.page(threats, times, next))
}
