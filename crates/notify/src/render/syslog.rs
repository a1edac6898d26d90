//! Syslog for SIEMs: an RFC 5424 message whose MSG is a CEF record, framed for TCP by
//! octet counting (RFC 6587) or sent as one UDP datagram.
//!
//! `<PRI>1 TIMESTAMP HOSTNAME sleuth - MSGID - CEF:0|Sleuth|Sleuth|VERSION|ID|NAME|SEV|EXT`
//!
//! CEF's own escapes keep alert text inside its field: `\` and `|` in the header, `\`
//! and `=` in extension values, and line breaks written as `\n` and `\r`, so a title can
//! neither add a field nor start a second syslog message.

use super::{Loudness, detail_lines};
use crate::event::{Event, EventKind};

/// The syslog facility (RFC 5424 numbers: local0 = 16 … local7 = 23).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facility(pub u8);

impl Facility {
    pub const LOCAL4: Facility = Facility(20);

    /// A facility by its RFC 5424 number, 0 to 23.
    pub fn new(number: u8) -> Option<Facility> {
        (number <= 23).then_some(Facility(number))
    }
}

/// Longest CEF value kept; SIEMs truncate or drop longer records.
const VALUE_CHARS: usize = 1023;

/// The RFC 5424 line for `event` (no trailing newline, no framing).
pub fn render(event: &Event, facility: Facility, hostname: &str) -> String {
    let loudness = Loudness::of(event);
    // RFC 5424 severities: 2 critical, 3 error, 4 warning, 6 informational.
    let severity = match loudness {
        Loudness::Critical => 2,
        Loudness::Error => 3,
        Loudness::Warning => 4,
        Loudness::Info => 6,
    };
    let priority = u16::from(facility.0) * 8 + severity;
    let timestamp = event
        .occurred_at
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    format!(
        "<{priority}>1 {timestamp} {} sleuth - {} - {}",
        header_token(hostname),
        event.name().as_str(),
        cef(event, loudness)
    )
}

/// A line framed for TCP by octet counting: its length in bytes, a space, the line.
pub fn frame_for_tcp(line: &str) -> Vec<u8> {
    let mut framed = format!("{} ", line.len()).into_bytes();
    framed.extend_from_slice(line.as_bytes());
    framed
}

fn cef(event: &Event, loudness: Loudness) -> String {
    let cef_severity = match loudness {
        Loudness::Critical => 10,
        Loudness::Error => 8,
        Loudness::Warning => 5,
        Loudness::Info => 3,
    };
    let (name, external_id) = match &event.kind {
        EventKind::InvestigationConcluded(concluded) => (
            concluded.title.clone(),
            concluded.investigation_id.to_string(),
        ),
        EventKind::InvestigationClosed(closed) => (
            format!("Closed: {}", closed.title),
            closed.investigation_id.to_string(),
        ),
        EventKind::ResponseRunFailed(run) => (
            format!("Response action '{}' {}", run.action_name, run.status),
            run.run_id.to_string(),
        ),
        EventKind::SystemEvent(notice) => (notice.name.clone(), event.id.to_string()),
    };
    let mut extension = vec![
        (
            "rt".to_string(),
            event.occurred_at.timestamp_millis().to_string(),
        ),
        ("externalId".to_string(), external_id),
        ("cs1Label".to_string(), "eventId".to_string()),
        ("cs1".to_string(), event.id.to_string()),
    ];
    if let Some(tenant) = &event.tenant {
        extension.push(("cs2Label".into(), "tenant".into()));
        extension.push(("cs2".into(), tenant.clone()));
    }
    // The remaining custom strings, one per detail line, labelled by it.
    for (index, (label, value)) in detail_lines(event).into_iter().take(4).enumerate() {
        let slot = index + 3;
        extension.push((format!("cs{slot}Label"), label.to_string()));
        extension.push((format!("cs{slot}"), value));
    }
    if let Some(link) = event.link() {
        extension.push(("request".into(), link.to_string()));
    }
    let extension = extension
        .iter()
        .map(|(key, value)| format!("{key}={}", extension_value(value)))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "CEF:0|Sleuth|Sleuth|{}|{}|{}|{cef_severity}|{extension}",
        header_field(env!("CARGO_PKG_VERSION")),
        event.name().as_str(),
        header_field(&name)
    )
}

/// A CEF header field: `\` and `|` escaped, line breaks as spaces (the header has none).
fn header_field(text: &str) -> String {
    cut(text)
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\r', '\n'], " ")
}

/// A CEF extension value: `\` and `=` escaped, line breaks written as `\r` and `\n`.
fn extension_value(text: &str) -> String {
    cut(text)
        .replace('\\', "\\\\")
        .replace('=', "\\=")
        .replace('\r', "\\r")
        .replace('\n', "\\n")
}

fn cut(text: &str) -> String {
    sleuth_normalize::text::truncate(text, VALUE_CHARS)
}

/// An RFC 5424 header token: printable ASCII without spaces, at most 255, or `-`.
fn header_token(text: &str) -> String {
    let token: String = text
        .chars()
        .filter(|character| character.is_ascii_graphic())
        .take(255)
        .collect();
    if token.is_empty() {
        "-".to_string()
    } else {
        token
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::samples;

    #[test]
    fn one_line_with_rfc5424_header_and_cef_fields_that_alert_text_cannot_break() {
        let line = render(&samples::concluded(), Facility::LOCAL4, "sleuth-1.example");
        assert!(!line.contains('\n') && !line.contains('\r'), "{line}");
        // local4 (20) * 8 + critical (2).
        assert!(
            line.starts_with("<162>1 2026-03-01T12:00:00.000000Z sleuth-1.example sleuth - investigation.concluded - CEF:0|Sleuth|Sleuth|"),
            "{line}"
        );
        let cef = line.split_once(" - CEF:").unwrap().1;
        // Seven unescaped pipes: the header's fields; the title's pipe is escaped.
        let unescaped_pipes = cef
            .match_indices('|')
            .filter(|(at, _)| !cef[..*at].ends_with('\\'))
            .count();
        assert_eq!(unescaped_pipes, 7, "{cef}");
        assert!(cef.contains(r"\|x=1\\"), "{cef}");
        assert!(cef.contains("|10|rt=1772366400000 "), "{cef}");
        assert!(
            cef.contains(r"cs3Label=Outcome cs3=confirmed breach"),
            "{cef}"
        );
        assert!(cef.contains("request=https://sleuth.example/investigations/abcd"));
    }

    #[test]
    fn extension_values_escape_equals_and_line_breaks() {
        assert_eq!(extension_value("a=b\\c\r\nd"), r"a\=b\\c\r\nd");
        assert_eq!(header_field("a|b\\c\nd"), r"a\|b\\c d");
        assert_eq!(header_token("my host\u{7f}é"), "myhost");
        assert_eq!(header_token(""), "-");
    }

    #[test]
    fn tcp_framing_counts_octets() {
        assert_eq!(frame_for_tcp("<14>1 é"), b"8 <14>1 \xc3\xa9".to_vec());
        assert_eq!(Facility::new(24), None);
    }
}
