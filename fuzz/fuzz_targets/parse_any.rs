//! Bytes -> JSON -> every way an alert enters the parsers: format detection (as
//! `create/custom` uses it), the detected parser, every parser by its schema key (the
//! generic reader included), and the plain-words entity extraction of context memory.
//! Any panic is a finding; libFuzzer's `-timeout` turns a hang into one too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // Text that is not JSON is still text an operator could write: the plain-words
    // reader takes it as it is.
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = sleuth_parsers::plain_words::entities_in_plain_words(text);
    }
    let Ok(raw) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let received_at = chrono::DateTime::UNIX_EPOCH;
    let _ = sleuth_parsers::detect(&raw);
    let _ = sleuth_parsers::parse_alert(None, &raw, received_at);
    for schema in sleuth_parsers::schemas() {
        let _ = sleuth_parsers::parse_alert(Some(schema.key), &raw, received_at);
    }
});
