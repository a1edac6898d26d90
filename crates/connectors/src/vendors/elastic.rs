//! Elastic Security alerts: `POST /<index>/_search` on the alerts index
//! (`.alerts-security.alerts-default` unless set), sorted by `@timestamp` then
//! `kibana.alert.uuid`, each page after the last one's sort values (`search_after`).
//! Each hit's `_source` is one alert document.

use serde_json::{Value, json};

use super::{Cursor, iso, time};
use crate::http::Http;
use crate::{Page, PollError, Settings};

const DEFAULT_INDEX: &str = ".alerts-security.alerts-default";

pub(crate) async fn page(
    http: &mut Http,
    settings: &Settings,
    mut cursor: Cursor,
) -> Result<Page, PollError> {
    let index = settings.index.as_deref().unwrap_or(DEFAULT_INDEX);
    let mut body = json!({
        "size": settings.page_size,
        "sort": [{"@timestamp": {"order": "asc"}}, {"kibana.alert.uuid": {"order": "asc"}}],
        "query": {"bool": {"filter": [{"range": {"@timestamp": {"gte": iso(cursor.since)}}}]}},
    });
    if let Some(after) = &cursor.search_after {
        body["search_after"] = after.clone();
    }
    let answer = http
        .post_json(&format!("{}/{index}/_search", settings.base()), &body)
        .await?
        .body;
    let hits = answer
        .pointer("/hits/hits")
        .and_then(Value::as_array)
        .ok_or_else(|| http.shape("the answer has no `hits.hits` list"))?;
    let mut alerts = Vec::with_capacity(hits.len());
    for hit in hits {
        let source = hit
            .get("_source")
            .filter(|source| source.is_object())
            .ok_or_else(|| http.shape("a hit has no `_source` object"))?;
        alerts.push(source.clone());
        if let Some(sort) = hit.get("sort").filter(|sort| sort.is_array()) {
            cursor.search_after = Some(sort.clone());
        }
    }
    // search_after is Elastic's own place in the sorted alerts: it stays across polls.
    let caught_up = alerts.len() < settings.page_size as usize;
    cursor.high = alerts
        .iter()
        .filter_map(|alert| time(alert, "@timestamp"))
        .chain(cursor.high)
        .max();
    Ok(Page {
        alerts,
        filtered: 0,
        cursor: cursor.to_value(),
        caught_up,
    })
}
