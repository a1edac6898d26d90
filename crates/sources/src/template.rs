//! The templates of a declared lookup: literal text with `{value}` placeholders, each with
//! an optional filter. The only thing a template can insert is the entity's value, so a
//! definition cannot be made to send a secret or another entity anywhere.

use base64::Engine as _;

#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Value(Filter),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Filter {
    Plain,
    /// Base64 with the URL alphabet and no padding (VirusTotal's URL identifiers).
    Base64Url,
    /// A backslash before `'`, `"` and `\` (CrowdStrike's FQL strings).
    Quoted,
    /// `'` doubled (OData string literals, Microsoft Graph's `$filter`).
    Odata,
    /// An account without its domain: `CORP\alice` and `alice@corp.example` give `alice`.
    Local,
}

/// Where a filled template goes: a path segment is percent-encoded here; query, form and
/// JSON values are encoded by their own writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Path,
    Other,
}

impl Template {
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| format!("an unclosed '{{' in '{text}'"))?;
            let inside = after[..close].trim();
            let filter = match inside {
                "value" => Filter::Plain,
                "value|base64url" => Filter::Base64Url,
                "value|quoted" => Filter::Quoted,
                "value|odata" => Filter::Odata,
                "value|local" => Filter::Local,
                other => {
                    return Err(format!(
                        "'{{{other}}}' is not a placeholder; allowed: {{value}}, \
                         {{value|base64url}}, {{value|quoted}}, {{value|odata}}, {{value|local}}"
                    ));
                }
            };
            parts.push(Part::Value(filter));
            rest = &after[close + 1..];
        }
        if rest.contains('}') {
            return Err(format!("a '}}' without its '{{' in '{text}'"));
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    pub fn fill(&self, value: &str, place: Place) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Value(filter) => {
                    let filtered = apply(*filter, value);
                    match place {
                        Place::Path => out.extend(
                            url::form_urlencoded::byte_serialize(filtered.as_bytes())
                                // A space is %20 in a path, not '+'.
                                .map(|piece| if piece == "+" { "%20" } else { piece }),
                        ),
                        Place::Other => out.push_str(&filtered),
                    }
                }
            }
        }
        out
    }
}

fn apply(filter: Filter, value: &str) -> String {
    match filter {
        Filter::Plain => value.to_string(),
        Filter::Base64Url => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value),
        Filter::Quoted => {
            let mut out = String::with_capacity(value.len());
            for character in value.chars() {
                if matches!(character, '\'' | '"' | '\\') {
                    out.push('\\');
                }
                out.push(character);
            }
            out
        }
        Filter::Odata => value.replace('\'', "''"),
        Filter::Local => local_account(value).to_string(),
    }
}

/// The account name without a `DOMAIN\` before it or an `@domain` after it.
pub(crate) fn local_account(value: &str) -> &str {
    let after_domain = value.rsplit('\\').next().unwrap_or(value);
    after_domain.split('@').next().unwrap_or(after_domain)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(template: &str, value: &str, place: Place, expected: &str) {
        let filled = Template::parse(template)
            .unwrap_or_else(|error| panic!("{template}: {error}"))
            .fill(value, place);
        assert_eq!(filled, expected, "{template} with {value}");
    }

    #[test]
    fn placeholders_fill_with_their_filters() {
        check("/files/{value}", "abc", Place::Path, "/files/abc");
        check(
            "/users/{value}",
            "a b/c?d",
            Place::Path,
            "/users/a%20b%2Fc%3Fd",
        );
        check(
            "/urls/{value|base64url}",
            "http://x.test/a",
            Place::Path,
            "/urls/aHR0cDovL3gudGVzdC9h",
        );
        check(
            "hostname:'{value|quoted}'",
            "a'b",
            Place::Other,
            "hostname:'a\\'b'",
        );
        check(
            "upn eq '{value|odata}'",
            "o'hara",
            Place::Other,
            "upn eq 'o''hara'",
        );
        check("{value|local}", "CORP\\alice", Place::Other, "alice");
        check("{value|local}", "alice@corp.example", Place::Other, "alice");
    }

    #[test]
    fn unknown_placeholders_and_stray_braces_are_refused() {
        for bad in ["/x/{secret}", "/x/{value", "/x/}", "{value|upper}"] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
    }
}
