//! A destination's own headline: text with placeholders, such as
//! `"{priority} {outcome}: {title} ({link})"`. Without one, a destination uses
//! [`Event::headline`]. The values are inserted as they are; each renderer escapes the
//! whole headline for its medium, so a template cannot open a hole a title could not.

use crate::event::{Event, EventKind, outcome_words};

/// The placeholders a template may use.
pub const PLACEHOLDERS: [&str; 10] = [
    "event",
    "title",
    "outcome",
    "priority",
    "source",
    "conclusion",
    "tactic",
    "tenant",
    "investigation_id",
    "link",
];

/// The longest template accepted.
const MAX_TEMPLATE_CHARS: usize = 1000;

/// A checked template: literal text and placeholders, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Placeholder(&'static str),
}

impl Template {
    /// Reads `text`; `{{` and `}}` are literal braces. The error names what is wrong and,
    /// for an unknown placeholder, every known one.
    pub fn parse(text: &str) -> Result<Template, String> {
        if text.chars().count() > MAX_TEMPLATE_CHARS {
            return Err(format!(
                "a template is at most {MAX_TEMPLATE_CHARS} characters"
            ));
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut characters = text.chars().peekable();
        while let Some(character) = characters.next() {
            match character {
                '{' if characters.peek() == Some(&'{') => {
                    characters.next();
                    literal.push('{');
                }
                '}' if characters.peek() == Some(&'}') => {
                    characters.next();
                    literal.push('}');
                }
                '{' => {
                    let mut name = String::new();
                    let mut closed = false;
                    for next in characters.by_ref() {
                        if next == '}' {
                            closed = true;
                            break;
                        }
                        name.push(next);
                    }
                    if !closed {
                        return Err("a '{' is never closed (write {{ for a brace)".into());
                    }
                    let known = PLACEHOLDERS
                        .iter()
                        .find(|known| **known == name.trim())
                        .ok_or_else(|| {
                            format!(
                                "'{{{}}}' is not a placeholder (write {{{{ for a brace); known: {}",
                                name.chars().take(40).collect::<String>(),
                                PLACEHOLDERS.join(", ")
                            )
                        })?;
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Placeholder(known));
                }
                '}' => return Err("a lone '}' (write }} for a brace)".into()),
                other => literal.push(other),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        if parts.is_empty() {
            return Err("a template must not be empty".into());
        }
        Ok(Template { parts })
    }

    /// The headline for `event`; a placeholder the event has no value for is empty.
    pub fn render(&self, event: &Event) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Placeholder(name) => out.push_str(&value(event, name)),
            }
        }
        out
    }
}

/// The headline a destination shows: its template's, or the default.
pub fn headline(event: &Event, template: Option<&Template>) -> String {
    template.map_or_else(|| event.headline(), |template| template.render(event))
}

fn value(event: &Event, name: &str) -> String {
    let concluded = match &event.kind {
        EventKind::InvestigationConcluded(concluded) => Some(concluded),
        _ => None,
    };
    match name {
        "event" => event.name().as_str().to_string(),
        "tenant" => event.tenant.clone().unwrap_or_default(),
        "link" => event.link().unwrap_or_default().to_string(),
        "title" => match &event.kind {
            EventKind::InvestigationConcluded(concluded) => concluded.title.clone(),
            EventKind::InvestigationClosed(closed) => closed.title.clone(),
            EventKind::ResponseRunFailed(run) => run.action_name.clone(),
            EventKind::SystemEvent(notice) => notice.name.clone(),
        },
        "investigation_id" => match &event.kind {
            EventKind::InvestigationConcluded(concluded) => concluded.investigation_id.to_string(),
            EventKind::InvestigationClosed(closed) => closed.investigation_id.to_string(),
            EventKind::ResponseRunFailed(run) => run
                .investigation_id
                .map(|id| id.to_string())
                .unwrap_or_default(),
            EventKind::SystemEvent(_) => String::new(),
        },
        "outcome" => concluded.map_or(String::new(), |c| outcome_words(c.outcome).to_string()),
        "priority" => concluded.map_or(String::new(), |c| c.priority.as_str().to_string()),
        "source" => concluded.map_or(String::new(), |c| c.source.clone()),
        "conclusion" => concluded.map_or(String::new(), |c| c.conclusion.clone()),
        "tactic" => concluded
            .and_then(|c| c.mitre_tactic.clone())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::samples;

    #[test]
    fn placeholders_fill_and_braces_escape() {
        let template = Template::parse("{{SOC}} {priority}/{outcome}: {source} -> {link}").unwrap();
        assert_eq!(
            template.render(&samples::concluded()),
            "{SOC} urgent/confirmed breach: CrowdStrike Falcon -> https://sleuth.example/investigations/abcd"
        );
        // A close has no outcome: the placeholder is empty, the rest stands.
        let closed = Template::parse("{outcome}|{title}")
            .unwrap()
            .render(&samples::closed());
        assert_eq!(closed, format!("|{}", samples::HOSTILE_TITLE));
    }

    #[test]
    fn bad_templates_say_what_is_wrong() {
        let unknown = Template::parse("{colour}").unwrap_err();
        assert!(
            unknown.contains("'{colour}' is not a placeholder"),
            "{unknown}"
        );
        assert!(unknown.contains("investigation_id"), "{unknown}");
        assert!(Template::parse("a } b").unwrap_err().contains("lone '}'"));
        assert!(Template::parse("").is_err());
        assert!(Template::parse(&"x".repeat(1001)).is_err());
        assert!(
            Template::parse("{title").is_err(),
            "an unclosed brace is not a name"
        );
    }

    #[test]
    fn without_a_template_the_default_headline_stands() {
        let event = samples::concluded();
        assert_eq!(headline(&event, None), event.headline());
    }
}
