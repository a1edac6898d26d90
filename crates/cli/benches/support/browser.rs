//! What a browser does with the console, over the benches' keep-alive client: sign in with
//! the form's own cookie and CSRF field (double submit, as `console/session.rs` asks),
//! keep the session cookie, and send it with every page request. A file of its own beside
//! `support/mod.rs`, included only by the benches that sign in, so the others compile no
//! function they do not call.

use http_body_util::{BodyExt, Full};
use hyper::HeaderMap;
use hyper::body::Bytes;

use super::support::{Sender, connect};

/// An answer: its status, headers and body.
pub(crate) struct Page {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// Sends one request with these headers (and a form body, when given).
pub(crate) async fn request(
    sender: &mut Sender,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    form: Option<String>,
) -> Page {
    sender.ready().await.expect("connection ready");
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "bench")
        .header("accept", "text/html");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if form.is_some() {
        request = request.header("content-type", "application/x-www-form-urlencoded");
    }
    let request = request
        .body(Full::new(Bytes::from(form.unwrap_or_default())))
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    Page {
        status,
        headers,
        body,
    }
}

/// The `name=value` pair of the cookie `name` a response sets, if it sets one.
fn set_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .filter_map(|value| value.split(';').next())
        .find(|pair| pair.starts_with(&format!("{name}=")))
        .map(str::to_string)
}

/// Signs `email` in at the console of the server at `address` as a browser would, and
/// answers the `Cookie` header value of the session (`sleuth_session=...`).
pub(crate) async fn sign_in(address: &str, email: &str, password: &str) -> String {
    let mut sender = connect(address).await;
    let form_page = request(&mut sender, "GET", "/sign-in", &[], None).await;
    assert_eq!(form_page.status, 200, "GET /sign-in");
    let form_cookie = set_cookie(&form_page.headers, "sleuth_sign_in")
        .expect("the sign-in form's cookie (console.behind_tls must be off for the bench)");
    let csrf = form_cookie
        .trim_start_matches("sleuth_sign_in=")
        .to_string();
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("email", email)
        .append_pair("password", password)
        .append_pair("csrf", &csrf)
        .append_pair("next", "/")
        .finish();
    let signed_in = request(
        &mut sender,
        "POST",
        "/sign-in",
        &[("cookie", &form_cookie)],
        Some(body),
    )
    .await;
    assert_eq!(
        signed_in.status,
        303,
        "POST /sign-in: {}",
        String::from_utf8_lossy(&signed_in.body)
    );
    set_cookie(&signed_in.headers, "sleuth_session").expect("a session cookie")
}

/// The text of the element with this id, tags and all, up to its closing `</tag>`: the
/// console renders `<span id="count">1–20 of 1000000 · sorted by Alert time</span>`.
pub(crate) fn element_text(html: &str, id: &str) -> Option<String> {
    let marker = format!("id=\"{id}\"");
    let start = html.find(&marker)?;
    let open_end = start + html[start..].find('>')? + 1;
    let close = open_end + html[open_end..].find("</")?;
    Some(html[open_end..close].to_string())
}
