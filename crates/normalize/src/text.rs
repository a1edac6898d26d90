//! Text that says nothing, text cut to a length, and text kept to one line.

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

/// `text` on one line: every control character (line breaks, tabs, escapes) a space, so
/// that what an attacker wrote can neither start a new log line nor a new mail header.
pub fn one_line(text: &str) -> String {
    text.chars()
        .map(|character| {
            if character.is_control() {
                ' '
            } else {
                character
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_turns_every_control_character_into_a_space() {
        assert_eq!(one_line("a\r\nBcc: x\tb\u{1b}[0m"), "a  Bcc: x b [0m");
        assert_eq!(one_line("plain é"), "plain é");
    }
}
