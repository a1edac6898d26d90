//! Okta's System Log (`GET /api/v1/logs`) in polling mode: `since`, `sortOrder=ASCENDING`,
//! `limit` and an optional `filter` expression; the `Link: <...>; rel="next"` header names
//! the next page. In polling mode Okta always gives a next link: a page shorter than the
//! limit means the log is read up to now, and the link is where the next poll starts.

use reqwest::header::{HeaderMap, LINK};

use super::{Cursor, iso, same_origin, time};
use crate::http::Http;
use crate::{Page, PollError, Settings};

pub(crate) async fn page(
    http: &mut Http,
    settings: &Settings,
    mut cursor: Cursor,
) -> Result<Page, PollError> {
    let base = settings.base();
    let answer = match &cursor.next {
        Some(link) => http.get(link, &[]).await?,
        None => {
            let mut query = vec![
                ("since", iso(cursor.since)),
                ("sortOrder", "ASCENDING".to_owned()),
                ("limit", settings.page_size.to_string()),
            ];
            if let Some(filter) = &settings.filter {
                query.push(("filter", filter.clone()));
            }
            http.get(&format!("{base}/api/v1/logs"), &query).await?
        }
    };
    let events = answer
        .body
        .as_array()
        .ok_or_else(|| http.shape("the answer is not a list of events"))?
        .clone();
    let next = match next_link(&answer.headers) {
        Some(link) => Some(same_origin(&link, base).map_err(|detail| http.shape(&detail))?),
        None => None,
    };
    let times: Vec<_> = events
        .iter()
        .filter_map(|event| time(event, "published"))
        .collect();
    let read_to_now = events.len() < settings.page_size as usize;
    match next {
        Some(link) if read_to_now => {
            // Okta's own place in the log: the next poll asks from there.
            cursor.high = times.iter().copied().chain(cursor.high).max();
            cursor.next = Some(link);
            Ok(Page {
                alerts: events,
                filtered: 0,
                cursor: cursor.to_value(),
                caught_up: true,
            })
        }
        next => Ok(cursor.page(events, times, next)),
    }
}

/// The `rel="next"` target of the `Link` headers (RFC 8288).
fn next_link(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(LINK)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .find_map(|link| {
            let (target, params) = link.split_once(';')?;
            let is_next = params.split(';').any(|param| {
                let param = param.trim().replace(' ', "");
                param == "rel=\"next\"" || param == "rel=next"
            });
            let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
            is_next.then(|| target.to_owned())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_link_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.append(
            LINK,
            "<https://x.okta.com/api/v1/logs?limit=2>; rel=\"self\""
                .parse()
                .expect("header"),
        );
        headers.append(
            LINK,
            "<https://x.okta.com/api/v1/logs?after=abc&limit=2>; rel=\"next\""
                .parse()
                .expect("header"),
        );
        assert_eq!(
            next_link(&headers).as_deref(),
            Some("https://x.okta.com/api/v1/logs?after=abc&limit=2")
        );
        let mut one = HeaderMap::new();
        one.insert(
            LINK,
            "<https://a/self>; rel=\"self\", <https://a/next>; rel=\"next\""
                .parse()
                .expect("header"),
        );
        assert_eq!(next_link(&one).as_deref(), Some("https://a/next"));
        assert_eq!(next_link(&HeaderMap::new()), None);
    }
}
