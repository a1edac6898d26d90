//! Keeps hostile text away from a panic in `entities::refang`: it compares the first 7 or 8
//! bytes of the refanged text with "hxxp://" by slicing, which panics when that byte
//! offset falls inside a multi-byte character ("ΩΩΩΩ@evil.com"). The network and email
//! parsers hand every string that becomes an IP, domain, URL or email entity through here
//! until the framework slices safely (reported; framework files are not this group's).
//! The sweep refangs every token it finds, so free text is swept with its non-ASCII
//! characters blanked.
//!
//! Refanging only replaces ASCII patterns by shorter ASCII (at most 5 bytes by 1), so when
//! the first 40 bytes of the trimmed text are ASCII, the first 8 bytes of the refanged text
//! are too, and the slice is safe.

use std::borrow::Cow;

/// How many leading bytes must be ASCII for refanging to be safe.
const ASCII_PREFIX: usize = 40;

/// The text when it is safe to refang; `None` for the rare value that starts with
/// non-ASCII characters (such a value is no IP, URL or email worth correlating on anyway).
pub(crate) fn entity_safe(text: &str) -> Option<&str> {
    text.trim()
        .bytes()
        .take(ASCII_PREFIX)
        .all(|byte| byte.is_ascii())
        .then_some(text)
}

/// Free text made safe to sweep. The sweep refangs each token it finds on its own, so
/// every character that is not ASCII becomes a space: the indicators a sweep is for
/// (addresses, URLs, emails, digests) are ASCII, and nothing else is lost.
pub(crate) fn sweepable(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(
            text.chars()
                .map(|character| if character.is_ascii() { character } else { ' ' })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entities::Entities;

    #[test]
    fn guarded_text_never_reaches_the_unsafe_slice() {
        for text in [
            "ΩΩΩΩΩΩΩΩ@evil.com",
            "see ΩΩΩΩΩΩΩΩ@evil.com and ΩΩΩΩΩΩΩΩΩ.example.com/x",
            "a[.]b[.]c[.]d[.]e[.]f[.]g[.]h[.]i[.]jΩΩΩΩΩΩΩ",
            "(dot)(dot)(dot)(dot)(dot)(dot)(dot)(dot)ΩΩΩΩΩ",
            "hxxp://ΩΩΩΩ",
            "  ΩΩΩΩΩΩΩΩΩΩ  ",
        ] {
            let mut entities = Entities::default();
            entities.sweep(&sweepable(text));
            if let Some(safe) = entity_safe(text) {
                entities.add(sleuth_domain::EntityKind::Email, safe);
                entities.add(sleuth_domain::EntityKind::Url, safe);
            }
        }
    }
}
