//! Which alerts of a tenant union name an entity, for correlation (`history`): written
//! with each new alert, read for each investigation. Keyed by the tenant union first
//! (migration entity_index_by_union): history reads only the alert's own union, and the
//! newest alerts of that union naming an entity are then the first ones read, whatever
//! other unions hold.
//!
//! - PostgreSQL: the table `alert_entities_by_union`, one row per alert and distinct
//!   entity, keyed (tenant_union_id, kind, value, alert_id).
//! - SQLite: the full-text index `alert_entities_by_union`, one row per alert (its rowid
//!   the alert's id) holding one token per distinct entity (`token`).
//!
//! Why two: on SQLite every write waits for the one before, and a commit writes each
//! page it changed to the WAL whole. A B-tree keyed by entity takes each new alert's
//! entries at as many places as it names entities, so a batch of creates changed many
//! pages for them, about half of all it wrote; FTS5 writes a transaction's new entries as
//! one new segment, a few pages. Creates are what a storm of alerts waits on.
//!
//! The price is paid when reading: FTS5 looks a token up in each of its segments (a few
//! dozen once merged down, growing with the log of the alerts), where the B-tree took one
//! seek. (The commit that made this change has the measurements.)
//!
//! PostgreSQL writes rows to its log, not pages, and keeps its B-tree.

use std::collections::BTreeSet;

use sleuth_domain::{Entity, EntityKind};
use sleuth_store::StoreResult;

use sqlx::AnyConnection;

use crate::builder::{SqlBuilder, Statements};
use crate::{DbResultExt, Dialect};

/// An entity named in a tenant union, as one token of the SQLite index: `e` and the
/// lowercase hex of the UTF-8 text `union:kind:value` (neither a union id nor a kind holds
/// a `:`, so no two entities share a token). FTS5's tokenizer keeps letters and digits
/// together, so the token stays whole, and folds case, which the hex never depends on.
/// Migration entity_index_by_union writes the same with SQL's `hex`.
pub(crate) fn token(tenant_union_id: i64, kind: EntityKind, value: &str) -> String {
    let text = format!("{tenant_union_id}:{}:{value}", kind.as_str());
    let mut token = String::with_capacity(1 + 2 * text.len());
    token.push('e');
    for byte in text.bytes() {
        token.push_str(&format!("{byte:02x}"));
    }
    token
}

/// A stored alert as the index knows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexedAlert<'a> {
    pub(crate) alert_id: i64,
    pub(crate) tenant_union_id: i64,
    pub(crate) entities: &'a [Entity],
}

/// Adds the writes of these new alerts' entities (a repeated entity is written once).
pub(crate) fn write(
    writes: &mut Statements,
    dialect: Dialect,
    alerts: &[IndexedAlert<'_>],
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
                .filter(|alert| !alert.entities.is_empty())
                .map(|alert| {
                    let tokens: Vec<String> = distinct(alert.entities)
                        .iter()
                        .map(|(kind, value)| token(alert.tenant_union_id, *kind, value))
                        .collect();
                    (alert.alert_id, tokens.join(" "))
                })
                .collect();
            for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                writes
                    .next("INSERT INTO alert_entities_by_union (rowid, tokens)")
                    .value_rows(dialect, 2, chunk.len(), |sql, position| {
                        let (alert_id, tokens) = &chunk[position];
                        sql.bind(*alert_id)?.push(", ");
                        sql.bind(tokens.clone())?;
                        Ok(())
                    })?;
            }
        }
        Dialect::Postgres => {
            let rows: Vec<(i64, EntityKind, String, i64)> = alerts
                .iter()
                .flat_map(|alert| {
                    distinct(alert.entities)
                        .into_iter()
                        .map(|(kind, value)| (alert.tenant_union_id, kind, value, alert.alert_id))
                })
                .collect();
            for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                writes
                    .next("INSERT INTO alert_entities_by_union (tenant_union_id, kind, value, alert_id)")
                    .value_rows(dialect, 4, chunk.len(), |sql, position| {
                        let (tenant_union_id, kind, value, alert_id) = &chunk[position];
                        sql.bind(*tenant_union_id)?.push(", ");
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

/// An alert to remove from the index, with what it was written with.
#[derive(Debug, Clone)]
pub(crate) struct RemovedAlert {
    pub(crate) alert_id: i64,
    pub(crate) tenant_union_id: i64,
    pub(crate) entities: Vec<Entity>,
}

/// Removes these alerts from the index.
pub(crate) async fn remove(
    connection: &mut AnyConnection,
    dialect: Dialect,
    alerts: &[RemovedAlert],
) -> StoreResult<()> {
    const ROWS_PER_STATEMENT: usize = 256;
    match dialect {
        // Contentless with `contentless_delete`: a row goes by its rowid alone.
        Dialect::Sqlite => {
            let ids: Vec<i64> = alerts.iter().map(|alert| alert.alert_id).collect();
            for chunk in ids.chunks(ROWS_PER_STATEMENT) {
                let mut delete =
                    SqlBuilder::new("DELETE FROM alert_entities_by_union WHERE rowid IN ");
                delete.bind_padded_list(chunk)?;
                delete.build().execute(&mut *connection).await.db()?;
            }
        }
        // By the table's key, so that no index on `alert_id` alone is needed.
        Dialect::Postgres => {
            let rows: Vec<(i64, String, String, i64)> = alerts
                .iter()
                .flat_map(|alert| {
                    alert
                        .entities
                        .iter()
                        .map(|entity| {
                            (
                                alert.tenant_union_id,
                                entity.kind.as_str().to_string(),
                                entity.value.clone(),
                                alert.alert_id,
                            )
                        })
                        .collect::<BTreeSet<_>>()
                })
                .collect();
            for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                let mut delete = SqlBuilder::new("DELETE FROM alert_entities_by_union e USING (");
                delete.value_rows(dialect, 4, chunk.len(), |sql, position| {
                    let (tenant_union_id, kind, value, alert_id) = &chunk[position];
                    sql.bind(*tenant_union_id)?.push(", ");
                    sql.bind(kind.clone())?.push(", ");
                    sql.bind(value.clone())?.push(", ");
                    sql.bind(*alert_id)?;
                    Ok(())
                })?;
                delete.push(
                    ") AS gone (tenant_union_id, kind, value, alert_id) \
                     WHERE e.tenant_union_id = gone.tenant_union_id AND e.kind = gone.kind \
                     AND e.value = gone.value AND e.alert_id = gone.alert_id",
                );
                delete.build().execute(&mut *connection).await.db()?;
            }
        }
    }
    Ok(())
}

/// Appends a subquery of the ids (column `alert_id`) of the newest `kept` alerts of tenant
/// union `tenant_union_id`, other than `alert_id`, that name `entity`, newest first, each
/// row also carrying `index` (column `entity`). What one entity costs is `kept` index
/// entries, however many alerts of this or any other union name it.
pub(crate) fn push_alerts_naming(
    sql: &mut SqlBuilder,
    dialect: Dialect,
    index: usize,
    entity: &Entity,
    alert_id: i64,
    tenant_union_id: i64,
    kept: i64,
) -> StoreResult<()> {
    match dialect {
        Dialect::Sqlite => {
            sql.push(&format!(
                "SELECT * FROM (SELECT {index} AS entity, rowid AS alert_id \
                 FROM alert_entities_by_union WHERE alert_entities_by_union MATCH "
            ));
            sql.bind(token(tenant_union_id, entity.kind, &entity.value))?
                .push(" AND rowid <> ");
            sql.bind(alert_id)?;
            sql.push(&format!(" ORDER BY rowid DESC LIMIT {kept})"));
        }
        Dialect::Postgres => {
            sql.push(&format!(
                "SELECT * FROM (SELECT {index} AS entity, alert_id \
                 FROM alert_entities_by_union WHERE tenant_union_id = "
            ));
            sql.bind(tenant_union_id)?.push(" AND kind = ");
            sql.bind(entity.kind.as_str().to_string())?
                .push(" AND value = ");
            sql.bind(entity.value.clone())?.push(" AND alert_id <> ");
            sql.bind(alert_id)?;
            sql.push(&format!(" ORDER BY alert_id DESC LIMIT {kept})"));
        }
    }
    sql.push(&format!(" AS entity_{index}"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_the_hex_of_kind_and_value_so_no_two_entities_share_one() {
        assert_eq!(
            token(1, EntityKind::Ip, "10.0.0.1"),
            "e313a69703a31302e302e302e31"
        );
        // The same entity in another tenant union is another token.
        assert_ne!(
            token(1, EntityKind::Ip, "10.0.0.1"),
            token(2, EntityKind::Ip, "10.0.0.1")
        );
        assert!(
            EntityKind::ALL
                .iter()
                .all(|kind| !kind.as_str().contains(':'))
        );
        // The same text split differently between kind and value is another entity.
        assert_ne!(
            token(1, EntityKind::Host, "a:b"),
            token(1, EntityKind::Host, "a_b")
        );
        assert_ne!(
            token(1, EntityKind::Host, "x"),
            token(1, EntityKind::Domain, "x")
        );
        // Case is kept in the hex, not left to the tokenizer, which folds it.
        assert_ne!(
            token(1, EntityKind::User, "Bob"),
            token(1, EntityKind::User, "bob")
        );
        // Any text, however written, is letters and digits only.
        let hostile = token(1, EntityKind::FilePath, "\" OR e* NEAR(\u{e9}) -- ;");
        assert!(
            hostile
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
    }
}
