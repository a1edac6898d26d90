//! The console's stylesheet and script, embedded in the binary. Pages name them by the
//! hash of their content (`/console/assets/console.css?v=<hash>`), so a browser may keep
//! them for a year and still gets a new build's at once; a request answers 304 when its
//! `If-None-Match` names the current hash.

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::Digest;

use crate::console::pages::error_page;

struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const ASSETS: [Asset; 2] = [
    Asset {
        name: "console.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("static/console.css"),
    },
    Asset {
        name: "console.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("static/console.js"),
    },
];

/// The first 16 hex digits of each asset's SHA-256, computed once.
fn hashes() -> &'static [String; 2] {
    static HASHES: OnceLock<[String; 2]> = OnceLock::new();
    HASHES.get_or_init(|| {
        ASSETS.each_ref().map(|asset| {
            let digest = sha2::Sha256::digest(asset.body.as_bytes());
            hex::encode(&digest[..8])
        })
    })
}

/// The URL a page uses for the asset `name` (one of the embedded ones).
pub(crate) fn url(name: &str) -> String {
    let index = ASSETS
        .iter()
        .position(|asset| asset.name == name)
        .expect("pages name only embedded assets");
    format!("/console/assets/{name}?v={}", hashes()[index])
}

pub(crate) async fn serve(Path(name): Path<String>, headers: HeaderMap) -> Response {
    let Some(index) = ASSETS.iter().position(|asset| asset.name == name) else {
        return error_page(StatusCode::NOT_FOUND, "There is no such file.");
    };
    let asset = &ASSETS[index];
    let etag = format!("\"{}\"", hashes()[index]);
    let cache = [
        (
            CACHE_CONTROL,
            "public, max-age=31536000, immutable".to_string(),
        ),
        (ETAG, etag.clone()),
    ];
    let matches = headers
        .get(IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.split(',').any(|tag| tag.trim() == etag));
    if matches {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    (
        cache,
        [(CONTENT_TYPE, asset.content_type.to_string())],
        asset.body,
    )
        .into_response()
}
