//! Microsoft Graph security alerts (`GET /v1.0/security/alerts_v2`): an OData `$filter` on
//! `lastUpdateDateTime` and `$top`; further pages through `@odata.nextLink`. An alert
//! updated since it was read comes again, and is stored as a revision.

use serde_json::Value;

use super::{Cursor, iso, same_origin, time};
use crate::http::Http;
use crate::{Page, PollError, Settings};

pub(crate) async fn page(
    http: &mut Http,
    settings: &Settings,
    cursor: Cursor,
) -> Result<Page, PollError> {
    let base = settings.base();
    let answer = match &cursor.next {
        Some(link) => http.get(link, &[]).await?,
        None => {
            let mut filter = format!("lastUpdateDateTime ge {}", iso(cursor.since));
            if let Some(extra) = &settings.filter {
                filter.push_str(&format!(" and ({extra})"));
            }
            let query = [
                ("$filter", filter),
                ("$top", settings.page_size.to_string()),
            ];
            http.get(&format!("{base}/v1.0/security/alerts_v2"), &query)
                .await?
        }
    };
    let alerts = answer
        .body
        .get("value")
        .and_then(Value::as_array)
        .ok_or_else(|| http.shape("the answer has no `value` list"))?
        .clone();
    let next = match answer.body.get("@odata.nextLink").and_then(Value::as_str) {
        Some(link) => Some(same_origin(link, base).map_err(|detail| http.shape(&detail))?),
        None => None,
    };
    let times: Vec<_> = alerts
        .iter()
        .filter_map(|alert| {
            time(alert, "lastUpdateDateTime").or_else(|| time(alert, "createdDateTime"))
        })
        .collect();
    Ok(cursor.page(alerts, times, next))
}
