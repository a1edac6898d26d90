//! Microsoft Teams workflow webhooks: a message carrying one Adaptive Card (version 1.4):
//! the headline, a fact set, and a button to the investigation.
//!
//! Teams renders a subset of Markdown in card text, so alert text could otherwise make a
//! link whose label hides its target (`[WKS-0231](http://evil)`) or restyle the card.
//! Markdown's punctuation is escaped with a backslash, which Teams shows as the character.

use serde_json::{Value, json};
use sleuth_normalize::text::truncate;

use super::{HttpMessage, detail_lines};
use crate::event::Event;
use crate::template::{Template, headline};

/// Long enough for any conclusion; Teams refuses a card over about 28 KB.
const TEXT_CHARS: usize = 2000;

pub fn render(event: &Event, template: Option<&Template>) -> HttpMessage {
    let facts: Vec<Value> = detail_lines(event)
        .iter()
        .map(
            |(label, value)| json!({"title": label, "value": escape(&truncate(value, TEXT_CHARS))}),
        )
        .collect();
    let mut card = json!({
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": [
            {"type": "TextBlock", "size": "Medium", "weight": "Bolder", "wrap": true,
             "text": escape(&truncate(&headline(event, template), TEXT_CHARS))},
            {"type": "FactSet", "facts": facts},
        ],
    });
    if let Some(link) = event.link() {
        card["actions"] =
            json!([{"type": "Action.OpenUrl", "title": "Open in Sleuth", "url": link}]);
    }
    let body = json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": card,
        }],
    });
    HttpMessage::json(&body)
}

/// Markdown's punctuation, escaped so that it shows as written.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        if "\\`*_{}[]()<>#+-.!|~".contains(character) {
            escaped.push('\\');
        }
        escaped.push(character);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::samples;

    #[test]
    fn a_card_with_facts_and_a_button_where_markdown_cannot_make_links() {
        let message = render(&samples::concluded(), None);
        let body: Value = serde_json::from_slice(&message.body).unwrap();
        assert_eq!(body["type"], "message");
        let attachment = &body["attachments"][0];
        assert_eq!(
            attachment["contentType"],
            "application/vnd.microsoft.card.adaptive"
        );
        let card = &attachment["content"];
        assert_eq!(card["type"], "AdaptiveCard");
        let headline = card["body"][0]["text"].as_str().unwrap();
        assert!(
            headline.contains(r"\[WKS\-0231\]\(http://evil\.example\)"),
            "{headline}"
        );
        let facts = card["body"][1]["facts"].as_array().unwrap();
        assert_eq!(facts[0]["title"], "Outcome");
        assert_eq!(
            card["actions"][0]["url"],
            "https://sleuth.example/investigations/abcd"
        );
    }
}
