//! Which alerts name an entity, for correlation (`history`): written with each new alert,
//! read for each investigation.
//!
//! - PostgreSQL: the table `alert_entities`, one row per alert and distinct entity, keyed
//!   (kind, value, alert_id).
//! - SQLite: the full-text index `alert_entity_index` (migration 0017), one row per alert
//!   (its rowid the alert's id) holding one token per distinct entity (`token`).
//!
//! Why two: on SQLite every write waits for the one before, and a commit writes each
//! page it changed to the WAL whole. A B-tree keyed by entity takes each new alert's
//! entries at as many places as it names entities, so a batch of creates changed many
//! pages for them, about half of all it wrote; FTS5 writes a transaction's new entries as
//! one new segment, a few pages. Creates are what a storm of alerts waits on.
//!
//! The price is paid when reading: FTS5 looks a token up in each of its segments (a few
//! dozen once merged down, growing with the log of the alerts), where the B-tree took one
//! seek, so history's entity statement is slower and the workers a little slower; they
//! keep well above the rate the latency target asks for. (The commit that made this
//! change has the measurements.)
//!
//! PostgreSQL writes rows to its log, not pages, and keeps its B-tree.

use std::collections::BTreeSet;

use sleuth_domain::{Entity, EntityKind};
use sleuth_store::StoreResult;

use sqlx::AnyConnection;

use crate::builder::{SqlBuilder, Statements};
use crate::{DbResultExt, Dialect};

/// An entity as one token of the SQLite index: `e` and the lowercase hex of the UTF-8
/// text `kind:value` (a kind holds no `:`, so no two entities share a token). FTS5's
/// tokenizer keeps letters and digits together, so the token stays whole, and folds case,
/// which the hex never depends on. Migration 0017 writes the same with SQL's `hex`.
pub(crate) fn token(kind: EntityKind, value: &str) -> String {
    let text = format!("{}:{value}", kind.as_str());
    let mut token = String::with_capacity(1 + 2 * text.len());
    token.push('e');
    for byte in text.bytes() {
        token.push_str(&format!("{byte:02x}"));
    }
    token
}

/// Adds the writes of these new alerts' entities (alert id, the alert's entities; a
/// repeated entity is written once).
pub(crate) fn write(
    writes: &mut Statements,
    dialect: Dialect,
    alerts: &[(i64, &[Entity])],
) -> StoreResult<()> {
    // Far below both dialects' parameter limits.
    const ROWS_PER_STATEMENT: usize = 256;
    let distinct = |entities: &[Entity]| -> BTreeSet<(EntityKind, String)> {
        entities
            .iter()
            .map(|entity| (entity.kind, entity.value.clone()))
            .collect()
    };
    match dialect {
        Dialect::Sqlite => {
            let rows: Vec<(i64, String)> = alerts
                .iter()
                .filter(|(_, entities)| !entities.is_empty())
                .map(|(alert_id, entities)| {
                    let tokens: Vec<String> = distinct(entities)
                        .iter()
                        .map(|(kind, value)| token(*kind, value))
                        .collect();
                    (*alert_id, tokens.join(" "))
                })
                .collect();
            for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                writes
                    .next("INSERT INTO alert_entity_index (rowid, tokens)")
                    .value_rows(dialect, 2, chunk.len(), |sql, position| {
                        let (alert_id, tokens) = &chunk[position];
                        sql.bind(*alert_id)?.push(", ");
                        sql.bind(tokens.clone())?;
                        Ok(())
                    })?;
            }
        }
        Dialect::Postgres => {
            let rows: Vec<(EntityKind, String, i64)> = alerts
                .iter()
                .flat_map(|(alert_id, entities)| {
                    distinct(entities)
                        .into_iter()
                        .map(|(kind, value)| (kind, value, *alert_id))
                })
                .collect();
            for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                writes
                    .next("INSERT INTO alert_entities (kind, value, alert_id)")
                    .value_rows(dialect, 3, chunk.len(), |sql, position| {
                        let (kind, value, alert_id) = &chunk[position];
                        sql.bind(kind.as_str().to_string())?.push(", ");
                        sql.bind(value.clone())?.push(", ");
                        sql.bind(*alert_id)?;
                        Ok(())
                    })?;
            }
        }
    }
    Ok(())
}

/// Removes these alerts from the index (alert id, the entities it was written with).
pub(crate) async fn remove(
    connection: &mut AnyConnection,
    dialect: Dialect,
    alerts: &[(i64, Vec<Entity>)],
) -> StoreResult<()> {
    const ROWS_PER_STATEMENT: usize = 256;
    match dialect {
        // Contentless with `contentless_delete`: a row goes by its rowid alone.
        Dialect::Sqlite => {
            let ids: Vec<i64> = alerts.iter().map(|(alert_id, _)| *alert_id).collect();
            for chunk in ids.chunks(ROWS_PER_STATEMENT) {
                let mut delete = SqlBuilder::new("DELETE FROM alert_entity_index WHERE rowid IN ");
                delete.bind_padded_list(chunk)?;
                delete.build().execute(&mut *connection).await.db()?;
            }
        }
        // By the table's key, so that no index on `alert_id` alone is needed.
        Dialect::Postgres => {
            let rows: Vec<(String, String, i64)> = alerts
                .iter()
                .flat_map(|(alert_id, entities)| {
                    entities
                        .iter()
                        .map(|entity| {
                            (
                                entity.kind.as_str().to_string(),
                                entity.value.clone(),
                                *alert_id,
                            )
                        })
                        .collect::<BTreeSet<_>>()
                })
                .collect();
            for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                let mut delete = SqlBuilder::new("DELETE FROM alert_entities e USING (");
                delete.value_rows(dialect, 3, chunk.len(), |sql, position| {
                    let (kind, value, alert_id) = &chunk[position];
                    sql.bind(kind.clone())?.push(", ");
                    sql.bind(value.clone())?.push(", ");
                    sql.bind(*alert_id)?;
                    Ok(())
                })?;
                delete.push(
                    ") AS gone (kind, value, alert_id) \
                     WHERE e.kind = gone.kind AND e.value = gone.value AND e.alert_id = gone.alert_id",
                );
                delete.build().execute(&mut *connection).await.db()?;
            }
        }
    }
    Ok(())
}

/// How many alerts naming an entity history reads, and keeps of the alert's union.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntityWindow {
    /// The newest alerts naming the entity that are read, of every tenant union: what one
    /// entity costs, however many alerts name it. An entity named by more alerts than
    /// this is everywhere (a proxy, a resolver, a scanner, a jump host): its older alerts
    /// are never looked at.
    pub(crate) read: i64,
    /// Of those, the newest of the alert's own tenant union that are kept.
    pub(crate) kept: i64,
}

/// Appends a subquery of the ids (column `alert_id`) of the newest `window.kept` alerts of
/// tenant union `tenant_union_id`, other than `alert_id`, among the newest `window.read`
/// alerts of any union that name `entity`, newest first, each row also carrying `index`
/// (column `entity`). The union is filtered before the kept limit: filtered after it, a
/// busy other union's alerts naming the same entity would fill the window and hide this
/// union's own. The read limit comes first, so that an entity everywhere in other unions
/// but rare in this one does not read its whole index entry (every alert naming it) in
/// search of this union's.
pub(crate) fn push_alerts_naming(
    sql: &mut SqlBuilder,
    dialect: Dialect,
    index: usize,
    entity: &Entity,
    alert_id: i64,
    tenant_union_id: i64,
    window: EntityWindow,
) -> StoreResult<()> {
    let EntityWindow { read, kept } = window;
    match dialect {
        Dialect::Sqlite => {
            sql.push(&format!(
                "SELECT * FROM (SELECT {index} AS entity, named.alert_id FROM \
                 (SELECT rowid AS alert_id FROM alert_entity_index WHERE alert_entity_index MATCH "
            ));
            sql.bind(token(entity.kind, &entity.value))?
                .push(" AND rowid <> ");
            sql.bind(alert_id)?;
            sql.push(&format!(" ORDER BY rowid DESC LIMIT {read}) AS named"));
        }
        Dialect::Postgres => {
            sql.push(&format!(
                "SELECT * FROM (SELECT {index} AS entity, named.alert_id FROM \
                 (SELECT alert_id FROM alert_entities WHERE kind = "
            ));
            sql.bind(entity.kind.as_str().to_string())?
                .push(" AND value = ");
            sql.bind(entity.value.clone())?.push(" AND alert_id <> ");
            sql.bind(alert_id)?;
            sql.push(&format!(" ORDER BY alert_id DESC LIMIT {read}) AS named"));
        }
    }
    sql.push(" JOIN alerts a ON a.id = named.alert_id WHERE a.tenant_union_id = ");
    sql.bind(tenant_union_id)?;
    sql.push(&format!(
        " ORDER BY named.alert_id DESC LIMIT {kept}) AS entity_{index}"
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_the_hex_of_kind_and_value_so_no_two_entities_share_one() {
        assert_eq!(token(EntityKind::Ip, "10.0.0.1"), "e69703a31302e302e302e31");
        assert!(
            EntityKind::ALL
                .iter()
                .all(|kind| !kind.as_str().contains(':'))
        );
        // The same text split differently between kind and value is another entity.
        assert_ne!(
            token(EntityKind::Host, "a:b"),
            token(EntityKind::Host, "a_b")
        );
        assert_ne!(token(EntityKind::Host, "x"), token(EntityKind::Domain, "x"));
        // Case is kept in the hex, not left to the tokenizer, which folds it.
        assert_ne!(
            token(EntityKind::User, "Bob"),
            token(EntityKind::User, "bob")
        );
        // Any text, however written, is letters and digits only.
        let hostile = token(EntityKind::FilePath, "\" OR e* NEAR(\u{e9}) -- ;");
        assert!(
            hostile
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
    }
}
