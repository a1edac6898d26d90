//! Email: a subject and a plain-text body (no HTML: nothing in an alert can become markup).
//! The subject is one line: line breaks in alert text would otherwise start new headers
//! (`Bcc:`); they become spaces, and the subject is cut to 200 characters.

use sleuth_normalize::text::{one_line, truncate};

use super::detail_lines;
use crate::event::Event;
use crate::template::{Template, headline};

const SUBJECT_CHARS: usize = 200;

/// What an email says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailMessage {
    pub subject: String,
    pub text: String,
}

pub fn render(event: &Event, template: Option<&Template>) -> EmailMessage {
    let headline = headline(event, template);
    let subject = format!("Sleuth: {}", truncate(&one_line(&headline), SUBJECT_CHARS));
    let mut text = format!("{headline}\n\n");
    for (label, value) in detail_lines(event) {
        text.push_str(&format!("{label}: {value}\n"));
    }
    if let Some(link) = event.link() {
        text.push_str(&format!("\nOpen in Sleuth: {link}\n"));
    }
    text.push_str(&format!("\nEvent id: {}\n", event.id));
    EmailMessage { subject, text }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::samples;

    #[test]
    fn the_subject_is_one_line_and_the_body_links_the_investigation() {
        let message = render(&samples::concluded(), None);
        assert!(
            !message.subject.contains(['\r', '\n']),
            "{}",
            message.subject
        );
        assert!(
            message
                .subject
                .starts_with("Sleuth: [urgent] confirmed breach: ")
        );
        assert!(message.text.contains("Outcome: confirmed breach\n"));
        assert!(
            message
                .text
                .contains("Open in Sleuth: https://sleuth.example/investigations/abcd")
        );
    }
}
