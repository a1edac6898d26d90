//! The STIX 2.1 patterning language, as far as a feed reader needs it: parse a pattern
//! into its tree, then find the comparisons that each, alone, are enough for the pattern
//! to match. `[a = 'x'] OR [b = 'y']` yields both; `[a = 'x' AND b = 'y']` yields
//! neither, because matching `a` alone would be a guess.

use std::borrow::Cow;

use crate::indicator::shorten;

/// How deep parentheses and brackets may nest. Real patterns nest two or three levels;
/// a hostile one cannot exhaust the stack.
const MAX_DEPTH: usize = 32;

/// The longest pattern read, in bytes. Large OR-lists of hashes are real; megabytes of
/// pattern are not.
const MAX_PATTERN_BYTES: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token<'a> {
    OpenBracket,
    CloseBracket,
    OpenParen,
    CloseParen,
    Comma,
    /// `=`, `!=`, `<`, `<=`, `>`, `>=`.
    Operator(&'static str),
    /// A keyword, an object path, a number or a boolean.
    Word(&'a str),
    /// A `'...'` string, unescaped.
    Text(Cow<'a, str>),
    /// A typed literal: `t'...'`, `h'...'`, `b'...'`.
    Typed,
}

/// One comparison of an object path with a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Comparison<'a> {
    pub path: &'a str,
    pub operator: &'static str,
    pub negated: bool,
    /// The string compared with; `None` for numbers, booleans, sets and typed literals.
    pub text: Option<Cow<'a, str>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Expression<'a> {
    Comparison(Comparison<'a>),
    Or(Vec<Expression<'a>>),
    /// `AND` between comparisons or between observations.
    And(Vec<Expression<'a>>),
    FollowedBy(Vec<Expression<'a>>),
    /// An observation under `WITHIN`, `REPEATS` or `START ... STOP`.
    Qualified(Box<Expression<'a>>),
}

/// What a pattern offers: the comparisons that alone make it match, and why the rest
/// of it was not taken.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Disjuncts<'a> {
    pub comparisons: Vec<Comparison<'a>>,
    pub rejected: Vec<String>,
}

/// The sufficient comparisons of `pattern`, or why it cannot be read at all.
pub(crate) fn disjuncts(pattern: &str) -> Result<Disjuncts<'_>, String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!("pattern longer than {MAX_PATTERN_BYTES} bytes"));
    }
    let tokens = tokenize(pattern)?;
    let mut parser = Parser {
        tokens: &tokens,
        position: 0,
    };
    let expression = parser.observations(0)?;
    if parser.position != tokens.len() {
        return Err("unexpected text after the pattern".into());
    }
    let mut found = Disjuncts::default();
    collect(expression, &mut found);
    Ok(found)
}

fn collect<'a>(expression: Expression<'a>, found: &mut Disjuncts<'a>) {
    match expression {
        Expression::Comparison(comparison) => {
            if comparison.operator == "=" && !comparison.negated {
                found.comparisons.push(comparison);
            } else {
                let not = if comparison.negated { "NOT " } else { "" };
                found.rejected.push(format!(
                    "{} {not}{}: only = comparisons are read",
                    shorten(comparison.path),
                    comparison.operator
                ));
            }
        }
        Expression::Or(children) => {
            for child in children {
                collect(child, found);
            }
        }
        Expression::And(_) => found
            .rejected
            .push("comparisons joined by AND: no single value is enough to match".into()),
        Expression::FollowedBy(_) => found
            .rejected
            .push("observations joined by FOLLOWEDBY: no single value is enough to match".into()),
        Expression::Qualified(_) => found.rejected.push(
            "an observation under WITHIN, REPEATS or START/STOP: one sighting is not enough".into(),
        ),
    }
}

type Characters<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

/// Where the next character starts: the end of what has been read.
fn offset(pattern: &str, characters: &mut Characters<'_>) -> usize {
    characters.peek().map_or(pattern.len(), |(index, _)| *index)
}

fn tokenize(pattern: &str) -> Result<Vec<Token<'_>>, String> {
    let mut tokens = Vec::new();
    let mut characters = pattern.char_indices().peekable();
    while let Some((start, character)) = characters.next() {
        match character {
            _ if character.is_whitespace() => {}
            '[' => tokens.push(Token::OpenBracket),
            ']' => tokens.push(Token::CloseBracket),
            '(' => tokens.push(Token::OpenParen),
            ')' => tokens.push(Token::CloseParen),
            ',' => tokens.push(Token::Comma),
            '\'' => tokens.push(Token::Text(read_quoted(pattern, &mut characters)?)),
            '=' => tokens.push(Token::Operator("=")),
            '!' | '<' | '>' => {
                let with_equals = characters.next_if(|(_, next)| *next == '=').is_some();
                tokens.push(Token::Operator(match (character, with_equals) {
                    ('!', true) => "!=",
                    ('<', true) => "<=",
                    ('>', true) => ">=",
                    ('<', false) => "<",
                    ('>', false) => ">",
                    _ => return Err("'!' without '='".into()),
                }));
            }
            _ => {
                let mut typed = false;
                while let Some(&(index, next)) = characters.peek() {
                    let word = &pattern[start..index];
                    if next == '\'' {
                        if word.ends_with('.') {
                            // A quoted path step: file:hashes.'SHA-256'.
                            characters.next();
                            read_quoted(pattern, &mut characters)?;
                            continue;
                        }
                        if matches!(word, "t" | "h" | "b") {
                            characters.next();
                            read_quoted(pattern, &mut characters)?;
                            typed = true;
                        }
                        break;
                    }
                    if next == '[' && word.contains(':') {
                        // A list step in a path: email-message:to_refs[*].value.
                        for (_, inside) in characters.by_ref() {
                            if inside == ']' {
                                break;
                            }
                        }
                        continue;
                    }
                    if next.is_whitespace() || "[]()',=!<>".contains(next) {
                        break;
                    }
                    characters.next();
                }
                tokens.push(if typed {
                    Token::Typed
                } else {
                    Token::Word(&pattern[start..offset(pattern, &mut characters)])
                });
            }
        }
    }
    Ok(tokens)
}

/// A `'...'` string after its opening quote; `\'` and `\\` are the escapes. Borrowed
/// from the pattern unless it has escapes.
fn read_quoted<'a>(
    pattern: &'a str,
    characters: &mut Characters<'a>,
) -> Result<Cow<'a, str>, String> {
    let start = offset(pattern, characters);
    let mut unescaped: Option<String> = None;
    while let Some((index, character)) = characters.next() {
        match character {
            '\'' => {
                return Ok(match unescaped {
                    Some(text) => Cow::Owned(text),
                    None => Cow::Borrowed(&pattern[start..index]),
                });
            }
            '\\' => {
                let text = unescaped.get_or_insert_with(|| pattern[start..index].to_string());
                match characters.next() {
                    Some((_, escaped)) => text.push(escaped),
                    None => break,
                }
            }
            _ => {
                if let Some(text) = &mut unescaped {
                    text.push(character);
                }
            }
        }
    }
    Err("a string is not closed".into())
}

struct Parser<'t, 'a> {
    tokens: &'t [Token<'a>],
    position: usize,
}

impl<'a> Parser<'_, 'a> {
    fn peek(&self) -> Option<&Token<'a>> {
        self.tokens.get(self.position)
    }

    fn next(&mut self) -> Option<&Token<'a>> {
        let token = self.tokens.get(self.position);
        self.position += 1;
        token
    }

    fn peek_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(word)) if word.eq_ignore_ascii_case(keyword))
    }

    fn expect(&mut self, expected: &Token<'_>, what: &str) -> Result<(), String> {
        match self.next() {
            Some(token) if token == expected => Ok(()),
            _ => Err(format!("expected {what}")),
        }
    }

    /// Observation expressions: FOLLOWEDBY binds loosest, then OR, then AND.
    fn observations(&mut self, depth: usize) -> Result<Expression<'a>, String> {
        self.joined(
            depth,
            "FOLLOWEDBY",
            Expression::FollowedBy,
            |parser, depth| {
                parser.joined(depth, "OR", Expression::Or, |parser, depth| {
                    parser.joined(depth, "AND", Expression::And, Parser::qualified_observation)
                })
            },
        )
    }

    /// `operand (keyword operand)*`, one node when there are several.
    fn joined(
        &mut self,
        depth: usize,
        keyword: &str,
        node: fn(Vec<Expression<'a>>) -> Expression<'a>,
        operand: impl Fn(&mut Self, usize) -> Result<Expression<'a>, String>,
    ) -> Result<Expression<'a>, String> {
        let mut operands = vec![operand(self, depth)?];
        while self.peek_keyword(keyword) {
            self.position += 1;
            operands.push(operand(self, depth)?);
        }
        Ok(if operands.len() == 1 {
            operands.remove(0)
        } else {
            node(operands)
        })
    }

    fn qualified_observation(&mut self, depth: usize) -> Result<Expression<'a>, String> {
        if depth > MAX_DEPTH {
            return Err("nested too deeply".into());
        }
        let mut expression = match self.next() {
            Some(Token::OpenBracket) => {
                let inner = self.comparisons(depth + 1)?;
                self.expect(&Token::CloseBracket, "']'")?;
                inner
            }
            Some(Token::OpenParen) => {
                let inner = self.observations(depth + 1)?;
                self.expect(&Token::CloseParen, "')'")?;
                inner
            }
            _ => return Err("expected '[' or '('".into()),
        };
        loop {
            if self.peek_keyword("WITHIN") {
                self.position += 1;
                self.number()?;
                self.keyword("SECONDS")?;
            } else if self.peek_keyword("REPEATS") {
                self.position += 1;
                self.number()?;
                self.keyword("TIMES")?;
            } else if self.peek_keyword("START") {
                self.position += 1;
                self.literal()?;
                self.keyword("STOP")?;
                self.literal()?;
            } else {
                break;
            }
            expression = Expression::Qualified(Box::new(expression));
        }
        Ok(expression)
    }

    /// Comparison expressions: OR binds looser than AND.
    fn comparisons(&mut self, depth: usize) -> Result<Expression<'a>, String> {
        self.joined(depth, "OR", Expression::Or, |parser, depth| {
            parser.joined(depth, "AND", Expression::And, Parser::comparison)
        })
    }

    fn comparison(&mut self, depth: usize) -> Result<Expression<'a>, String> {
        if depth > MAX_DEPTH {
            return Err("nested too deeply".into());
        }
        if self.peek() == Some(&Token::OpenParen) {
            self.position += 1;
            let inner = self.comparisons(depth + 1)?;
            self.expect(&Token::CloseParen, "')'")?;
            return Ok(inner);
        }
        if self.peek_keyword("EXISTS") {
            self.position += 1;
            let path = self.path()?;
            return Ok(Expression::Comparison(Comparison {
                path,
                operator: "EXISTS",
                negated: false,
                text: None,
            }));
        }
        let path = self.path()?;
        let negated = self.peek_keyword("NOT");
        if negated {
            self.position += 1;
        }
        let operator = match self.next() {
            Some(Token::Operator(operator)) => *operator,
            Some(Token::Word(word)) => ["LIKE", "MATCHES", "IN", "ISSUBSET", "ISSUPERSET"]
                .into_iter()
                .find(|keyword| word.eq_ignore_ascii_case(keyword))
                .ok_or_else(|| format!("expected an operator after {}", shorten(path)))?,
            _ => return Err(format!("expected an operator after {}", shorten(path))),
        };
        let text = if self.peek() == Some(&Token::OpenParen) {
            self.set()?;
            None
        } else {
            self.literal()?
        };
        Ok(Expression::Comparison(Comparison {
            path,
            operator,
            negated,
            text,
        }))
    }

    fn path(&mut self) -> Result<&'a str, String> {
        match self.next() {
            Some(Token::Word(word)) if word.contains(':') => Ok(word),
            _ => Err("expected an object path such as ipv4-addr:value".into()),
        }
    }

    /// A literal; the text of a plain string, `None` for any other kind.
    fn literal(&mut self) -> Result<Option<Cow<'a, str>>, String> {
        match self.next() {
            Some(Token::Text(text)) => Ok(Some(text.clone())),
            Some(Token::Typed) => Ok(None),
            Some(Token::Word(word)) if !word.contains(':') => Ok(None),
            _ => Err("expected a value".into()),
        }
    }

    /// `('a', 'b', ...)` after IN.
    fn set(&mut self) -> Result<(), String> {
        self.expect(&Token::OpenParen, "'('")?;
        loop {
            self.literal()?;
            match self.next() {
                Some(Token::Comma) => {}
                Some(Token::CloseParen) => return Ok(()),
                _ => return Err("expected ',' or ')' in a set".into()),
            }
        }
    }

    fn number(&mut self) -> Result<(), String> {
        match self.next() {
            Some(Token::Word(word)) if word.parse::<f64>().is_ok() => Ok(()),
            _ => Err("expected a number".into()),
        }
    }

    fn keyword(&mut self, keyword: &str) -> Result<(), String> {
        if self.peek_keyword(keyword) {
            self.position += 1;
            Ok(())
        } else {
            Err(format!("expected {keyword}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The (path, value) pairs a pattern yields and how many parts it rejected.
    fn check(pattern: &str, expected: &[(&str, &str)], rejected: usize) {
        let found = disjuncts(pattern).unwrap_or_else(|error| panic!("{pattern}: {error}"));
        let pairs: Vec<(&str, &str)> = found
            .comparisons
            .iter()
            .map(|comparison| {
                (
                    comparison.path,
                    comparison.text.as_deref().unwrap_or("<not a string>"),
                )
            })
            .collect();
        assert_eq!(pairs, expected, "{pattern}");
        assert_eq!(
            found.rejected.len(),
            rejected,
            "{pattern}: {:?}",
            found.rejected
        );
    }

    #[test]
    fn single_equalities_and_their_disjunctions_are_read() {
        check(
            "[ipv4-addr:value = '203.0.113.5']",
            &[("ipv4-addr:value", "203.0.113.5")],
            0,
        );
        check(
            "[domain-name:value='c2.example.net' OR domain-name:value = 'cdn.example.net']",
            &[
                ("domain-name:value", "c2.example.net"),
                ("domain-name:value", "cdn.example.net"),
            ],
            0,
        );
        check(
            "[file:hashes.'SHA-256' = 'abc'] OR ([file:hashes.MD5 = 'def'])",
            &[("file:hashes.'SHA-256'", "abc"), ("file:hashes.MD5", "def")],
            0,
        );
        check(
            r"[url:value = 'http://example.com/it\'s']",
            &[("url:value", "http://example.com/it's")],
            0,
        );
        check(
            "[email-addr:value = 'billing@invoices.example.com' or url:value = 'http://x.example.com/']",
            &[
                ("email-addr:value", "billing@invoices.example.com"),
                ("url:value", "http://x.example.com/"),
            ],
            0,
        );
    }

    #[test]
    fn conjunctions_sequences_qualifiers_and_other_operators_are_not_guessed() {
        check("[file:hashes.MD5 = 'abc' AND file:name = 'x.exe']", &[], 1);
        check(
            "[ipv4-addr:value = '203.0.113.5'] AND [domain-name:value = 'c2.example.net']",
            &[],
            1,
        );
        check(
            "[ipv4-addr:value = '203.0.113.5'] FOLLOWEDBY [url:value = 'http://a.example.com/']",
            &[],
            1,
        );
        check("[ipv4-addr:value = '203.0.113.5'] REPEATS 5 TIMES", &[], 1);
        check(
            "[ipv4-addr:value = '203.0.113.5'] WITHIN 300 SECONDS",
            &[],
            1,
        );
        check(
            "[ipv4-addr:value = '203.0.113.5'] START t'2026-01-01T00:00:00Z' STOP t'2026-02-01T00:00:00Z'",
            &[],
            1,
        );
        check("[ipv4-addr:value != '203.0.113.5']", &[], 1);
        check("[ipv4-addr:value NOT = '203.0.113.5']", &[], 1);
        check("[ipv4-addr:value ISSUBSET '198.51.100.0/24']", &[], 1);
        check("[url:value LIKE '%evil%']", &[], 1);
        check("[url:value MATCHES '^http']", &[], 1);
        check(
            "[ipv4-addr:value IN ('203.0.113.1', '203.0.113.2')]",
            &[],
            1,
        );
        check("[EXISTS file:hashes.MD5]", &[], 1);
        check("[network-traffic:dst_port > 1024]", &[], 1);
    }

    #[test]
    fn the_sufficient_parts_of_a_mixed_pattern_are_kept() {
        // AND binds tighter than OR: this is a OR (b AND c).
        check(
            "[ipv4-addr:value = '203.0.113.5' OR domain-name:value = 'a.example.com' AND url:value = 'http://b.example.com/']",
            &[("ipv4-addr:value", "203.0.113.5")],
            1,
        );
        check(
            "[ipv4-addr:value = '203.0.113.5'] OR [url:value LIKE '%x%'] OR ([a:b = 'c'] AND [d:e = 'f'])",
            &[("ipv4-addr:value", "203.0.113.5")],
            2,
        );
        check(
            "[email-message:to_refs[*].value = 'a@example.com' OR ipv6-addr:value = '2001:db8::1']",
            &[
                ("email-message:to_refs[*].value", "a@example.com"),
                ("ipv6-addr:value", "2001:db8::1"),
            ],
            0,
        );
    }

    #[test]
    fn malformed_and_hostile_patterns_are_errors_not_panics() {
        let deep = format!(
            "{}[ipv4-addr:value = '203.0.113.5']{}",
            "(".repeat(10_000),
            ")".repeat(10_000)
        );
        let deep_comparison = format!(
            "[{}ipv4-addr:value = '203.0.113.5'{}]",
            "(".repeat(10_000),
            ")".repeat(10_000)
        );
        for pattern in [
            "",
            "ipv4-addr:value = '203.0.113.5'",
            "[ipv4-addr:value = '203.0.113.5'",
            "[ipv4-addr:value = '203.0.113.5]",
            "[ipv4-addr:value '203.0.113.5']",
            "[ipv4-addr:value = ]",
            "[= '203.0.113.5']",
            "[ipv4-addr:value = '203.0.113.5'] OR",
            "[ipv4-addr:value = '203.0.113.5']]",
            "[ipv4-addr:value ! '203.0.113.5']",
            "[ipv4-addr:value IN ('a', ]",
            "[a:b = 'c'] WITHIN x SECONDS",
            "[a:b = 'c'] START t'2026' STOP",
            "[a:b = 'c\\",
            "[☃:☃ = '☃'] ☃",
            deep.as_str(),
            deep_comparison.as_str(),
        ] {
            assert!(disjuncts(pattern).is_err(), "{pattern:.80}");
        }
        let huge = format!("[url:value = '{}']", "a".repeat(MAX_PATTERN_BYTES));
        assert!(disjuncts(&huge).is_err());
    }
}
