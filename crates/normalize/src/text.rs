//! Text that says nothing, and text cut to a length.

/// The longest placeholder below ("undefined", "<unknown>").
const PLACEHOLDER_MAX_BYTES: usize = 9;

/// Whether a string says nothing: empty, or one of the placeholders tools write.
pub fn is_placeholder(text: &str) -> bool {
    let trimmed = text.trim();
    // Every placeholder is short: a long value is never lower-cased just to tell, which
    // would copy a hostile multi-megabyte string on every read of it.
    trimmed.is_empty()
        || trimmed.len() <= PLACEHOLDER_MAX_BYTES
            && matches!(
                trimmed.to_ascii_lowercase().as_str(),
                "-" | "--"
                    | "n/a"
                    | "na"
                    | "null"
                    | "(null)"
                    | "none"
                    | "nil"
                    | "unknown"
                    | "undefined"
                    | "<unknown>"
                    | "?"
            )
}

/// At most `limit` characters, with an ellipsis when cut.
pub fn truncate(text: &str, limit: usize) -> String {
    // `nth` stops at the limit: a long text is not counted to its end first.
    if text.chars().nth(limit).is_none() {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(limit.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
