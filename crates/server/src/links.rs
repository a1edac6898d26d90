//! Absolute links: the base URL clients reach Sleuth at, and the list's next/previous pages.

use axum::http::header::{HOST, LINK};
use axum::http::{HeaderMap, HeaderValue};

use crate::extract::QueryPairs;
use crate::state::AppState;

/// `server.public_url` when configured; otherwise the request's own scheme and host
/// (honouring `X-Forwarded-Proto` from a proxy).
pub(crate) fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    if let Some(public_url) = &state.settings().server.public_url {
        return public_url.trim_end_matches('/').to_string();
    }
    let host = headers
        .get(HOST)
        .and_then(|value| value.to_str().ok())
        .filter(|host| is_plausible_host(host))
        .map_or_else(|| state.settings().server.listen.clone(), str::to_string);
    let scheme = match headers
        .get("x-forwarded-proto")
        .and_then(|value| value.to_str().ok())
    {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}

/// A Host header is echoed into links, so it must look like a host, not markup.
fn is_plausible_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']' | '_'))
}

/// The next and previous page URLs of any list paged by `limit` and `offset`.
pub(crate) fn page_links_at(
    base_url: &str,
    path: &str,
    pairs: &QueryPairs,
    limit: u32,
    offset: u64,
    total: u64,
) -> (Option<String>, Option<String>) {
    page_links_after(
        base_url,
        path,
        pairs,
        limit,
        offset,
        u64::from(limit),
        total,
    )
}

/// The page links of a page that holds `read` items from `offset` on, which may be fewer
/// than `limit` (a list answer's byte budget): the next page starts after the last item
/// this one holds, with the same limit.
pub(crate) fn page_links_after(
    base_url: &str,
    path: &str,
    pairs: &QueryPairs,
    limit: u32,
    offset: u64,
    read: u64,
    total: u64,
) -> (Option<String>, Option<String>) {
    let limit = u64::from(limit);
    let next =
        (offset + read < total).then(|| page_url(base_url, path, pairs, offset + read, limit));
    let previous =
        (offset > 0).then(|| page_url(base_url, path, pairs, offset.saturating_sub(limit), limit));
    (next, previous)
}

/// The headers that page a list whose body has no room for links (an array, or a shape
/// DESIGN.md fixes as `{count, results}`): `Link: <url>; rel="next"` (RFC 8288) while more
/// follow, and with `total`, `X-Total-Count`.
pub(crate) fn paging_headers(next: Option<&str>, total: Option<u64>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(total) = total {
        headers.insert("x-total-count", HeaderValue::from(total));
    }
    // The URL is ASCII (a checked host, an encoded query) unless `server.public_url` holds
    // something a header cannot; the body then stands without its link, `count` still says
    // more follow.
    match next.map(|next| HeaderValue::from_str(&format!("<{next}>; rel=\"next\""))) {
        Some(Ok(link)) => {
            headers.insert(LINK, link);
        }
        Some(Err(error)) => tracing::warn!(%error, "a next-page link that no header can hold"),
        None => {}
    }
    headers
}

fn page_url(base_url: &str, path: &str, pairs: &QueryPairs, offset: u64, limit: u64) -> String {
    let mut serializer = form_urlencoded::Serializer::new(String::new());
    for (name, value) in &pairs.0 {
        if name != "offset" && name != "limit" {
            serializer.append_pair(name, value);
        }
    }
    serializer.append_pair("limit", &limit.to_string());
    serializer.append_pair("offset", &offset.to_string());
    format!("{base_url}{path}?{}", serializer.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_keep_other_parameters_and_stop_at_the_ends() {
        let pairs = QueryPairs(vec![
            ("alert_types".into(), "a b".into()),
            ("alert_types".into(), "c&d".into()),
            ("offset".into(), "20".into()),
        ]);
        let (next, previous) = page_links_at("http://h:1", "/x", &pairs, 20, 20, 45);
        assert_eq!(
            next.as_deref(),
            Some("http://h:1/x?alert_types=a+b&alert_types=c%26d&limit=20&offset=40")
        );
        assert_eq!(
            previous.as_deref(),
            Some("http://h:1/x?alert_types=a+b&alert_types=c%26d&limit=20&offset=0")
        );
        assert_eq!(page_links_at("http://h", "/x", &pairs, 20, 40, 45).0, None);
        assert_eq!(page_links_at("http://h", "/x", &pairs, 20, 0, 45).1, None);
    }

    #[test]
    fn a_page_cut_short_links_to_the_item_after_its_last() {
        let pairs = QueryPairs(vec![("limit".into(), "100".into())]);
        let (next, previous) = page_links_after("http://h", "/x", &pairs, 100, 200, 7, 1000);
        assert_eq!(next.as_deref(), Some("http://h/x?limit=100&offset=207"));
        assert_eq!(previous.as_deref(), Some("http://h/x?limit=100&offset=100"));
        assert_eq!(
            page_links_after("http://h", "/x", &pairs, 100, 200, 7, 207).0,
            None
        );
    }

    #[test]
    fn hosts_that_are_not_hosts_are_not_echoed() {
        assert!(is_plausible_host("sleuth.example.com:8080"));
        assert!(is_plausible_host("[::1]:8080"));
        assert!(!is_plausible_host("evil.com/<script>"));
        assert!(!is_plausible_host(""));
    }
}
