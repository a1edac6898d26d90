//! Google Workspace Alert Center (`GET /v1beta1/alerts`, `alerts.list`): a `filter` on
//! `createTime` (`createTime >= "…"`, with the connector's own query ANDed),
//! `orderBy=create_time asc`, `pageSize`, and the `pageToken` of the next page from
//! `nextPageToken`; `customerId` when set. Each entry of `alerts` is one `Alert` resource.

use serde_json::Value;

use super::{Cursor, iso, time};
use crate::http::Http;
use crate::{Page, PollError, Settings};

pub(crate) async fn page(
    http: &mut Http,
    settings: &Settings,
    cursor: Cursor,
) -> Result<Page, PollError> {
    let mut filter = format!("createTime >= \"{}\"", iso(cursor.since));
    if let Some(extra) = &settings.filter {
        filter.push_str(&format!(" AND ({extra})"));
    }
    // The same query goes with each page token: Google pages the query it was given.
    let mut query = vec![
        ("filter", filter),
        ("orderBy", "create_time asc".to_owned()),
        ("pageSize", settings.page_size.to_string()),
    ];
    if let Some(customer) = &settings.customer_id {
        query.push(("customerId", customer.clone()));
    }
    if let Some(token) = &cursor.next {
        query.push(("pageToken", token.clone()));
    }
    let answer = http
        .get(&format!("{}/v1beta1/alerts", settings.base()), &query)
        .await?
        .body;
    if !answer.is_object() {
        return Err(http.shape("the answer is not an object"));
    }
    // An empty answer is `{}`: Google leaves out a list with nothing in it.
    let alerts = match answer.get("alerts") {
        None => Vec::new(),
        Some(Value::Array(alerts)) => alerts.clone(),
        Some(_) => return Err(http.shape("`alerts` is not a list")),
    };
    let next = answer
        .get("nextPageToken")
        .and_then(Value::as_str)
        .filter(|token| !token.is_empty())
        .map(str::to_owned);
    let times: Vec<_> = alerts
        .iter()
        .filter_map(|alert| time(alert, "createTime"))
        .collect();
    Ok(cursor.page(alerts, times, next))
}
