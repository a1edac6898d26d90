//! Slack incoming webhooks: Block Kit, with a plain `text` fallback for notifications.
//!
//! Slack reads `&`, `<` and `>` in mrkdwn as control characters: `<!channel>` pings a
//! channel and `<http://x|text>` makes a link that hides its target. Alert text is escaped
//! to `&amp;`, `&lt;` and `&gt;`, Slack's own escapes, so it shows as written. Slack
//! refuses a header over 150 characters and a text over 3,000; both are cut.

use serde_json::{Value, json};
use sleuth_normalize::text::truncate;

use super::{HttpMessage, detail_lines};
use crate::event::Event;
use crate::template::{Template, headline};

/// Slack's limit on a header block's text.
const HEADER_CHARS: usize = 150;
/// Slack's limit on a section's text.
const SECTION_CHARS: usize = 3000;

pub fn render(event: &Event, template: Option<&Template>) -> HttpMessage {
    let headline = headline(event, template);
    let details = detail_lines(event)
        .iter()
        .map(|(label, value)| format!("*{label}:* {}", escape(value)))
        .collect::<Vec<_>>()
        .join("\n");
    let mut blocks = vec![
        json!({"type": "header", "text": {"type": "plain_text", "text": truncate(&headline, HEADER_CHARS)}}),
        json!({"type": "section", "text": {"type": "mrkdwn", "text": truncate(&details, SECTION_CHARS)}}),
    ];
    if let Some(link) = event.link() {
        blocks.push(json!({
            "type": "actions",
            "elements": [{
                "type": "button",
                "text": {"type": "plain_text", "text": "Open in Sleuth"},
                "url": link,
            }],
        }));
    }
    let body: Value = json!({
        "text": truncate(&escape(&headline), SECTION_CHARS),
        "blocks": blocks,
    });
    HttpMessage::json(&body)
}

/// Slack's escapes for its three control characters.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::samples;

    #[test]
    fn alert_text_cannot_mention_a_channel_or_forge_a_link() {
        let message = render(&samples::concluded(), None);
        let body: Value = serde_json::from_slice(&message.body).unwrap();
        let text = body["text"].as_str().unwrap();
        assert!(text.contains("&lt;!channel&gt;"), "{text}");
        assert!(!text.contains("<!channel>"));
        let section = body["blocks"][1]["text"]["text"].as_str().unwrap();
        assert!(
            section.contains("&lt;procdump.exe&gt; &amp; dumped"),
            "{section}"
        );
        assert!(section.contains("*Outcome:* confirmed breach"));
        assert_eq!(
            body["blocks"][2]["elements"][0]["url"],
            "https://sleuth.example/investigations/abcd"
        );
    }

    #[test]
    fn a_destinations_template_heads_the_message_and_is_escaped_too() {
        let template = Template::parse("{priority}: {title}").unwrap();
        let body: Value =
            serde_json::from_slice(&render(&samples::concluded(), Some(&template)).body).unwrap();
        let text = body["text"].as_str().unwrap();
        assert!(text.starts_with("urgent: &lt;!channel&gt;"), "{text}");
        assert!(
            body["blocks"][0]["text"]["text"]
                .as_str()
                .unwrap()
                .starts_with("urgent: ")
        );
    }

    #[test]
    fn long_texts_are_cut_to_slacks_limits() {
        let mut event = samples::concluded();
        if let crate::EventKind::InvestigationConcluded(concluded) = &mut event.kind {
            concluded.title = "A".repeat(10_000);
            concluded.conclusion = "B".repeat(10_000);
        }
        let body: Value = serde_json::from_slice(&render(&event, None).body).unwrap();
        let header = body["blocks"][0]["text"]["text"].as_str().unwrap();
        assert_eq!(header.chars().count(), HEADER_CHARS);
        let section = body["blocks"][1]["text"]["text"].as_str().unwrap();
        assert_eq!(section.chars().count(), SECTION_CHARS);
    }
}
