//! Free-text search: the only place the two dialects index text differently (SQLite's FTS5,
//! PostgreSQL's tsvector). Documents and queries both pass through
//! `sleuth_store::search_tokens`, so both backends agree on what matches.

use sleuth_domain::{EntityKind, InvestigationResult, ParsedAlert};
use sleuth_store::{StoreResult, search_tokens};
use sqlx::AnyConnection;

use crate::{DbResultExt, Dialect};

/// The document as the index stores it: its tokens, separated by spaces.
pub(crate) fn document(text: &str) -> String {
    search_tokens(text).collect::<Vec<_>>().join(" ")
}

/// What search finds an investigation by before it concludes: the alert's own words.
pub(crate) fn parsed_search_text(parsed: &ParsedAlert) -> String {
    let mut text = format!(
        "{} {} {} {}",
        parsed.title, parsed.original_title, parsed.alert_type, parsed.direct_source_label
    );
    for entity in &parsed.entities {
        text.push(' ');
        text.push_str(&entity.value);
        if entity.kind == EntityKind::Email {
            // Also index the mailbox alone, so "r.patel" finds r.patel@example.com.
            if let Some((local, _)) = entity.value.split_once('@') {
                text.push(' ');
                text.push_str(local);
            }
        }
    }
    text
}

/// What search finds a concluded investigation by: the alert's words and the conclusion's.
pub(crate) fn result_text(parsed: &ParsedAlert, result: &InvestigationResult) -> String {
    let mut text = parsed_search_text(parsed);
    for part in [
        Some(result.conclusion.as_str()),
        result.alert_summary.as_deref(),
        result.exec_summary.as_deref(),
        result.conclusion_summary.as_deref(),
    ]
    .into_iter()
    .flatten()
    {
        text.push(' ');
        text.push_str(part);
    }
    for finding in &result.findings {
        text.push(' ');
        text.push_str(&finding.headline);
        text.push(' ');
        text.push_str(&finding.finding);
    }
    text
}

/// What search finds an investigation by: the alert's words, and the conclusion's once
/// there is one (`result_text`).
pub(crate) fn investigation_text(
    parsed: &ParsedAlert,
    result: Option<&InvestigationResult>,
) -> String {
    match result {
        Some(result) => result_text(parsed, result),
        None => parsed_search_text(parsed),
    }
}

/// Replaces the search document (`document`) of one investigation.
pub(crate) async fn index_document(
    connection: &mut AnyConnection,
    dialect: Dialect,
    investigation_id: i64,
    body: String,
) -> StoreResult<()> {
    match dialect {
        Dialect::Sqlite => {
            sqlx::query("DELETE FROM investigation_search WHERE rowid = $1")
                .bind(investigation_id)
                .execute(&mut *connection)
                .await
                .db()?;
            sqlx::query("INSERT INTO investigation_search (rowid, body) VALUES ($1, $2)")
                .bind(investigation_id)
                .bind(body)
                .execute(&mut *connection)
                .await
                .db()?;
        }
        Dialect::Postgres => {
            sqlx::query(
                "UPDATE investigations SET search_vector = to_tsvector('simple', $2) WHERE id = $1",
            )
            .bind(investigation_id)
            .bind(body)
            .execute(&mut *connection)
            .await
            .db()?;
        }
    }
    Ok(())
}

/// The query text for one bound parameter, in the dialect's own syntax. Tokens hold only
/// letters, digits and `_`, so quoting them cannot be escaped out of.
pub(crate) fn match_expression(dialect: Dialect, phrases: &[Vec<String>]) -> String {
    match dialect {
        // FTS5: "a b" is a phrase (adjacent tokens); phrases separated by spaces are ANDed.
        Dialect::Sqlite => phrases
            .iter()
            .map(|phrase| format!("\"{}\"", phrase.join(" ")))
            .collect::<Vec<_>>()
            .join(" "),
        // to_tsquery: a <-> b is a phrase; & is AND.
        Dialect::Postgres => phrases
            .iter()
            .map(|phrase| {
                let quoted: Vec<String> = phrase.iter().map(|token| format!("'{token}'")).collect();
                format!("({})", quoted.join(" <-> "))
            })
            .collect::<Vec<_>>()
            .join(" & "),
    }
}

/// `match_expression` for a list that also filters by source labels: on SQLite, narrowed
/// to the documents holding one of `labels` as a phrase. Every document holds its
/// investigation's source label (`parsed_search_text`), so no match of the list is lost;
/// the list still filters by the label itself, which drops a document that names another
/// source's label in its text. The search index then hands over the matches of the word
/// from that source, not every match of a common word for the list to look up. A label
/// without tokens cannot narrow, and PostgreSQL, which would recheck a phrase on every
/// row, gains nothing: both get `match_expression`.
pub(crate) fn match_expression_from_sources(
    dialect: Dialect,
    phrases: &[Vec<String>],
    labels: &[String],
) -> String {
    let expression = match_expression(dialect, phrases);
    let label_phrases: Vec<Vec<String>> = labels
        .iter()
        .map(|label| search_tokens(label).collect())
        .collect();
    if dialect != Dialect::Sqlite
        || label_phrases.is_empty()
        || label_phrases.iter().any(Vec::is_empty)
    {
        return expression;
    }
    let any_label: Vec<String> = label_phrases
        .iter()
        .map(|phrase| format!("\"{}\"", phrase.join(" ")))
        .collect();
    // FTS5 allows an implicit AND between phrases only, not before a parenthesis.
    format!("{expression} AND ({})", any_label.join(" OR "))
}

/// The WHERE condition that keeps matching investigations (alias `i`); `$n` is the bound
/// match expression. `id` is how SQLite's condition names the investigation's id (`i.id`,
/// or `+i.id` to keep the search from choosing the statement's index).
pub(crate) fn filter_condition(dialect: Dialect, parameter: usize, id: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!(
            "{id} IN (SELECT rowid FROM investigation_search WHERE investigation_search MATCH ${parameter})"
        ),
        Dialect::Postgres => {
            format!("i.search_vector @@ to_tsquery('simple', ${parameter})")
        }
    }
}

/// `filter_condition` for a page that walks the sort order and tests each investigation it
/// passes (`Access::SortOrder`): on SQLite, a lookup of that one investigation's document
/// (FTS5 seeks each phrase's doclist to its rowid), where the `IN` of `filter_condition`
/// first reads every match into a temporary index, so a walk of fifty rows cost as much as
/// the word had matches. The `LIMIT 1` keeps the subquery correlated. PostgreSQL tests the
/// search vector on the row either way.
pub(crate) fn walked_filter_condition(dialect: Dialect, parameter: usize) -> String {
    match dialect {
        Dialect::Sqlite => format!(
            "EXISTS (SELECT 1 FROM investigation_search \
             WHERE investigation_search MATCH ${parameter} AND rowid = i.id LIMIT 1)"
        ),
        Dialect::Postgres => filter_condition(dialect, parameter, "i.id"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_from_sources_is_narrowed_to_their_labels_on_sqlite_only() {
        let phrases = vec![vec!["powershell".to_string()]];
        let labels = |names: &[&str]| {
            names
                .iter()
                .map(|name| name.to_string())
                .collect::<Vec<_>>()
        };
        let cases = [
            (Dialect::Sqlite, labels(&[]), "\"powershell\""),
            (
                Dialect::Sqlite,
                labels(&["CrowdStrike Falcon"]),
                "\"powershell\" AND (\"crowdstrike falcon\")",
            ),
            (
                Dialect::Sqlite,
                labels(&["CrowdStrike Falcon", "Okta"]),
                "\"powershell\" AND (\"crowdstrike falcon\" OR \"okta\")",
            ),
            // A label of no tokens matches no phrase: nothing is narrowed.
            (Dialect::Sqlite, labels(&["Okta", "--"]), "\"powershell\""),
            // Quotes and operators in a label are not tokens.
            (
                Dialect::Sqlite,
                labels(&["a\" OR \"b"]),
                "\"powershell\" AND (\"a or b\")",
            ),
            (Dialect::Postgres, labels(&["Okta"]), "('powershell')"),
        ];
        for (dialect, labels, expected) in cases {
            assert_eq!(
                match_expression_from_sources(dialect, &phrases, &labels),
                expected,
                "{dialect:?} {labels:?}"
            );
        }
    }
}
