//! A small SQL builder for dynamic statements: it numbers placeholders `$1, $2, ...` (which
//! both SQLite and PostgreSQL accept; sqlx's own builder writes `?` for the Any driver) and
//! keeps every user-supplied value a bound parameter.
//!
//! The statement habits of the store's hot paths, which this builder makes easy:
//! - every statement is a round trip (for SQLite, two thread wake-ups) and every row a
//!   hand-over between threads, so a hot path asks once for many rows and no more rows than
//!   it needs; statements that read nothing back are gathered into [`Statements`] and sent
//!   as one query on SQLite;
//! - LIMIT and OFFSET are written into the SQL, never bound: SQLite prepares a statement
//!   with a bound LIMIT again every time it is bound;
//! - statements whose text varies (filters) are not kept prepared, so that they do not
//!   evict the fixed ones, unless padding makes the text one of a few
//!   ([`SqlBuilder::bind_padded_list`], [`SqlBuilder::value_rows`]).

use sleuth_store::{StoreError, StoreResult};
use sqlx::any::{Any, AnyArguments};
use sqlx::{Arguments, Encode, Type};

use crate::{DbResultExt, Dialect};

#[derive(Default)]
pub(crate) struct SqlBuilder {
    sql: String,
    arguments: AnyArguments,
    parameter_count: usize,
    placeholders: Placeholders,
    /// Whether the built statement is kept prepared: only when its text is one of a small,
    /// fixed set (see `build`).
    keep_prepared: bool,
    /// Whether every statement written before the current one (`then`) would be kept
    /// prepared on its own: a text of several is one of a few only if each part is.
    earlier_kept_prepared: bool,
}

/// The fewest rows (or list items) a padded statement is written for: below it, a few
/// extra NULLs cost less than a statement text of their own.
const PADDED_MIN: usize = 4;

/// SQLite's plan for the statement `write` builds, one line per step of `EXPLAIN QUERY
/// PLAN` (its `detail`): for the backend's tests of plans that must not read what grows
/// with the store.
pub(crate) async fn sqlite_plan(
    pool: &sqlx::AnyPool,
    write: impl FnOnce(&mut SqlBuilder) -> StoreResult<()>,
) -> StoreResult<Vec<String>> {
    let mut sql = SqlBuilder::many(Dialect::Sqlite, "EXPLAIN QUERY PLAN ");
    write(&mut sql)?;
    let rows = sql.build().fetch_all(pool).await.db()?;
    rows.iter()
        .map(|row| crate::rows::text(row, "detail"))
        .collect()
}

/// The length a list or a set of rows is padded to: a power of two, so that a handful of
/// statement texts cover every length.
pub(crate) fn padded_length(count: usize) -> usize {
    count.next_power_of_two().max(PADDED_MIN)
}

/// How placeholders are written.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Placeholders {
    /// `$1, $2, …`: both dialects accept them, and one can be used twice (`bind_only`).
    #[default]
    Numbered,
    /// `?`, each the next parameter: SQLite only, each used once.
    Anonymous,
}

impl SqlBuilder {
    pub(crate) fn new(start: &str) -> SqlBuilder {
        SqlBuilder {
            sql: start.to_string(),
            earlier_kept_prepared: true,
            ..SqlBuilder::default()
        }
    }

    /// A builder for a statement with many parameters: multi-row INSERTs and long id lists.
    /// On SQLite its placeholders are `?`. SQLite's parser looks each `$n` up among the
    /// names seen before it, and sqlx looks up each parameter's name again to bind it, so
    /// numbered placeholders cost time quadratic in their count, which a batch of hundreds
    /// of creates (thousands of parameters) would pay on every statement.
    pub(crate) fn many(dialect: Dialect, start: &str) -> SqlBuilder {
        SqlBuilder {
            sql: start.to_string(),
            placeholders: match dialect {
                Dialect::Sqlite => Placeholders::Anonymous,
                Dialect::Postgres => Placeholders::Numbered,
            },
            earlier_kept_prepared: true,
            ..SqlBuilder::default()
        }
    }

    /// Ends the statement written so far and begins another with `start`, for SQLite to
    /// run both as one query (`Statements`). Only anonymous placeholders carry over: sqlx
    /// binds them in order across statements, but reads `$n` as the query's n-th value.
    fn then(&mut self, start: &str) -> &mut Self {
        self.earlier_kept_prepared &= self.keep_prepared;
        self.keep_prepared = false;
        self.sql.push_str("; ");
        self.sql.push_str(start);
        self
    }

    /// Marks the statement's text as fixed (it names no varying count of values), so that
    /// it is kept prepared.
    pub(crate) fn fixed_text(&mut self) -> &mut Self {
        self.keep_prepared = true;
        self
    }

    /// Appends trusted SQL text (never user input).
    pub(crate) fn push(&mut self, sql: &str) -> &mut Self {
        self.sql.push_str(sql);
        self
    }

    /// Binds a value and appends its placeholder.
    pub(crate) fn bind<T>(&mut self, value: T) -> StoreResult<&mut Self>
    where
        T: for<'q> Encode<'q, Any> + Type<Any> + Send + 'static,
    {
        self.add(value)?;
        match self.placeholders {
            Placeholders::Numbered => {
                let placeholder = format!("${}", self.parameter_count);
                self.sql.push_str(&placeholder);
            }
            Placeholders::Anonymous => self.sql.push('?'),
        }
        Ok(self)
    }

    /// Binds a value without appending anything; returns its placeholder for later use
    /// (numbered placeholders only: an anonymous one could not be used later or twice).
    pub(crate) fn bind_only<T>(&mut self, value: T) -> StoreResult<String>
    where
        T: for<'q> Encode<'q, Any> + Type<Any> + Send + 'static,
    {
        if self.placeholders == Placeholders::Anonymous {
            return Err(StoreError::internal(
                "bind_only needs numbered placeholders (SqlBuilder::new)",
            ));
        }
        self.add(value)?;
        Ok(format!("${}", self.parameter_count))
    }

    fn add<T>(&mut self, value: T) -> StoreResult<()>
    where
        T: for<'q> Encode<'q, Any> + Type<Any> + Send + 'static,
    {
        self.arguments
            .add(value)
            .map_err(|error| StoreError::internal(format!("cannot bind a parameter: {error}")))?;
        self.parameter_count += 1;
        Ok(())
    }

    /// Appends `(p1, p2, ...)` binding each value.
    pub(crate) fn bind_list<T>(
        &mut self,
        values: impl IntoIterator<Item = T>,
    ) -> StoreResult<&mut Self>
    where
        T: for<'q> Encode<'q, Any> + Type<Any> + Send + 'static,
    {
        self.sql.push('(');
        for (index, value) in values.into_iter().enumerate() {
            if index > 0 {
                self.sql.push_str(", ");
            }
            self.bind(value)?;
        }
        self.sql.push(')');
        Ok(self)
    }

    /// Appends `(p1, p2, ...)` binding each value, padded to `padded_length` by repeating
    /// the last one (harmless inside `IN`), and keeps the statement prepared: its text
    /// depends only on the padded length. At least one value.
    pub(crate) fn bind_padded_list<T>(&mut self, values: &[T]) -> StoreResult<&mut Self>
    where
        T: Clone + for<'q> Encode<'q, Any> + Type<Any> + Send + 'static,
    {
        let last = values
            .last()
            .ok_or_else(|| StoreError::internal("a padded list needs at least one value"))?;
        let padding = std::iter::repeat_n(last, padded_length(values.len()) - values.len());
        self.bind_list(values.iter().chain(padding).cloned())?;
        self.keep_prepared = true;
        Ok(self)
    }

    /// Appends `count` rows of `width` values: those of a multi-row `INSERT INTO table
    /// (columns)` or of a table of values (`WITH name (columns) AS (…)`), which the
    /// builder's start wrote. Row `index` is bound by `bind_row(self, index)` with `", "`
    /// between its values, its first value never NULL.
    ///
    /// On SQLite the rows are padded with rows of NULLs to `padded_length` and filtered
    /// out again (`SELECT column1, … FROM (VALUES …) WHERE column1 IS NOT NULL`), and the
    /// statement is kept prepared: its text depends only on the padded count. Preparing
    /// each batch's multi-row INSERTs anew was a large share of a create's CPU, all of it
    /// inside the write turn every other writer waits for. PostgreSQL
    /// gets exactly the rows (`VALUES …`): it would have to guess the type of a column of
    /// NULLs.
    pub(crate) fn value_rows(
        &mut self,
        dialect: Dialect,
        width: usize,
        count: usize,
        mut bind_row: impl FnMut(&mut SqlBuilder, usize) -> StoreResult<()>,
    ) -> StoreResult<&mut Self> {
        let padded = match dialect {
            Dialect::Sqlite => {
                let columns: Vec<String> = (1..=width)
                    .map(|column| format!("column{column}"))
                    .collect();
                self.push(&format!(" SELECT {} FROM (VALUES ", columns.join(", ")));
                padded_length(count)
            }
            Dialect::Postgres => {
                self.push(" VALUES ");
                count
            }
        };
        for index in 0..padded {
            self.push(if index == 0 { "(" } else { ", (" });
            let before = self.parameter_count;
            if index < count {
                bind_row(self, index)?;
            } else {
                for column in 0..width {
                    if column > 0 {
                        self.push(", ");
                    }
                    self.bind(None::<i64>)?;
                }
            }
            if self.parameter_count - before != width {
                return Err(StoreError::internal(format!(
                    "a row of a multi-row INSERT bound {} values instead of {width}",
                    self.parameter_count - before
                )));
            }
            self.push(")");
        }
        if dialect == Dialect::Sqlite {
            self.push(") WHERE column1 IS NOT NULL");
            self.keep_prepared = true;
        }
        Ok(self)
    }

    /// Appends ` LIMIT a OFFSET b`: one page of a list (the offset saturates). The numbers
    /// are written in, not bound: SQLite plans a LIMIT as a constant, so a statement with a
    /// bound LIMIT is prepared again every time it is bound (profiles showed that second
    /// preparation in every paged read). They are integers, so nothing can be injected.
    pub(crate) fn limit_offset(&mut self, limit: u32, offset: u64) -> &mut Self {
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        self.push(&format!(" LIMIT {limit} OFFSET {offset}"))
    }

    pub(crate) fn next_parameter(&self) -> usize {
        self.parameter_count + 1
    }

    // Built statements are not kept prepared (`persistent(false)`) unless padding made
    // their text one of a few (`bind_padded_list`, `value_rows`): the text varies with the
    // filters or the batch size, and each new text would push a hot, fixed statement out
    // of the connection's statement cache (on SQLite, profiles showed connections
    // re-preparing and finalizing statements all the time).
    pub(crate) fn build_scalar<O>(self) -> sqlx::query::QueryScalar<'static, Any, O, AnyArguments>
    where
        O: Send + Unpin,
        (O,): for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow>,
    {
        let persistent = self.kept_prepared();
        sqlx::query_scalar_with(sqlx::AssertSqlSafe(self.sql), self.arguments)
            .persistent(persistent)
    }

    pub(crate) fn build(self) -> sqlx::query::Query<'static, Any, AnyArguments> {
        let persistent = self.kept_prepared();
        sqlx::query_with(sqlx::AssertSqlSafe(self.sql), self.arguments).persistent(persistent)
    }

    fn kept_prepared(&self) -> bool {
        self.keep_prepared && self.earlier_kept_prepared
    }
}

/// Statements run in order on one transaction, whose rows (if any) are read together
/// once all have run: for writes that need nothing back from each other. On SQLite they
/// are sent as one multi-statement query, one round trip to the connection's thread
/// instead of one each; under load each round trip waited about half a millisecond for a
/// core, inside the write turn every other writer waits for. PostgreSQL's protocol
/// prepares one statement per query, so there they run one by one.
///
/// Each statement is written with `SqlBuilder::many`'s anonymous placeholders.
pub(crate) struct Statements {
    dialect: Dialect,
    written: Vec<SqlBuilder>,
}

impl Statements {
    pub(crate) fn new(dialect: Dialect) -> Statements {
        Statements {
            dialect,
            written: Vec::new(),
        }
    }

    /// Begins the next statement with `start`; write the rest of it with the builder
    /// returned.
    pub(crate) fn next(&mut self, start: &str) -> &mut SqlBuilder {
        let index = match (self.dialect, self.written.len()) {
            (Dialect::Sqlite, written @ 1..) => {
                let last = written - 1;
                self.written[last].then(start);
                last
            }
            (_, written) => {
                self.written.push(SqlBuilder::many(self.dialect, start));
                written
            }
        };
        &mut self.written[index]
    }

    /// Runs them all; the rows any of them returned, in order.
    pub(crate) async fn run(
        self,
        connection: &mut sqlx::AnyConnection,
    ) -> StoreResult<Vec<sqlx::any::AnyRow>> {
        let mut rows = Vec::new();
        for sql in self.written {
            rows.extend(sql.build().fetch_all(&mut *connection).await.db()?);
        }
        Ok(rows)
    }
}

/// `{select}($1, $2, …){rest}` with the ids bound. A single id (a worker loading its job,
/// a read) is the hot case: that statement is kept prepared. Longer lists are not (see
/// `SqlBuilder::build`): each length is a new text.
pub(crate) fn by_id_list(
    select: &str,
    ids: &[i64],
    rest: &str,
) -> StoreResult<sqlx::query::Query<'static, Any, AnyArguments>> {
    let mut sql = SqlBuilder::new(select);
    sql.bind_list(ids.iter().copied())?;
    sql.push(rest);
    Ok(sql.build().persistent(ids.len() == 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_parameters_are_anonymous_on_sqlite_and_numbered_on_postgres() {
        let values = [1_i64, 2, 3];
        let mut sqlite = SqlBuilder::many(Dialect::Sqlite, "SELECT 1 WHERE x IN ");
        sqlite.bind_list(values).unwrap();
        assert_eq!(sqlite.sql, "SELECT 1 WHERE x IN (?, ?, ?)");
        let mut postgres = SqlBuilder::many(Dialect::Postgres, "SELECT 1 WHERE x IN ");
        postgres.bind_list(values).unwrap();
        assert_eq!(postgres.sql, "SELECT 1 WHERE x IN ($1, $2, $3)");
    }

    #[test]
    fn padded_lists_repeat_their_last_value_to_a_power_of_two() {
        let mut sql = SqlBuilder::many(Dialect::Sqlite, "SELECT 1 WHERE x IN ");
        sql.bind_padded_list(&[1_i64, 2, 3, 4, 5]).unwrap();
        assert_eq!(
            sql.sql,
            format!("SELECT 1 WHERE x IN ({})", ["?"; 8].join(", "))
        );
        assert_eq!(sql.parameter_count, 8);
        assert!(sql.keep_prepared);
        assert!(
            SqlBuilder::many(Dialect::Sqlite, "")
                .bind_padded_list::<i64>(&[])
                .is_err()
        );
    }

    #[test]
    fn inserted_rows_are_padded_with_null_rows_on_sqlite_only() {
        let bind_pair = |sql: &mut SqlBuilder, index: usize| -> StoreResult<()> {
            sql.bind(index as i64)?.push(", ");
            sql.bind(format!("row {index}"))?;
            Ok(())
        };
        let mut sqlite = SqlBuilder::many(Dialect::Sqlite, "INSERT INTO t (a, b)");
        sqlite.value_rows(Dialect::Sqlite, 2, 5, bind_pair).unwrap();
        assert_eq!(
            sqlite.sql,
            format!(
                "INSERT INTO t (a, b) SELECT column1, column2 FROM (VALUES {}) WHERE column1 IS NOT NULL",
                ["(?, ?)"; 8].join(", ")
            )
        );
        assert_eq!(sqlite.parameter_count, 16);
        assert!(sqlite.keep_prepared);
        let mut postgres = SqlBuilder::many(Dialect::Postgres, "INSERT INTO t (a, b)");
        postgres
            .value_rows(Dialect::Postgres, 2, 2, bind_pair)
            .unwrap();
        assert_eq!(
            postgres.sql,
            "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)"
        );
        assert!(!postgres.keep_prepared);
        // A row that binds the wrong number of values is a bug, refused.
        let mut wrong = SqlBuilder::many(Dialect::Sqlite, "INSERT INTO t (a, b)");
        let short = wrong.value_rows(Dialect::Sqlite, 2, 1, |sql, _| {
            sql.bind(1_i64)?;
            Ok(())
        });
        assert!(short.is_err());
    }

    #[test]
    fn statements_are_one_query_on_sqlite_and_kept_prepared_only_if_each_would_be() {
        let write_two = |dialect: Dialect, first_fixed: bool| {
            let mut statements = Statements::new(dialect);
            let first = statements.next("UPDATE a SET n = ");
            first.bind(1_i64).unwrap();
            if first_fixed {
                first.fixed_text();
            }
            statements
                .next("DELETE FROM b WHERE id IN ")
                .bind_padded_list(&[2_i64, 3])
                .unwrap();
            statements.written
        };
        let sqlite = write_two(Dialect::Sqlite, true);
        assert_eq!(sqlite.len(), 1);
        assert_eq!(
            sqlite[0].sql,
            "UPDATE a SET n = ?; DELETE FROM b WHERE id IN (?, ?, ?, ?)"
        );
        assert_eq!(sqlite[0].parameter_count, 5);
        assert!(sqlite[0].kept_prepared());
        // A part whose text varies makes the whole vary.
        assert!(!write_two(Dialect::Sqlite, false)[0].kept_prepared());
        let postgres = write_two(Dialect::Postgres, true);
        let texts: Vec<&str> = postgres.iter().map(|sql| sql.sql.as_str()).collect();
        assert_eq!(
            texts,
            [
                "UPDATE a SET n = $1",
                "DELETE FROM b WHERE id IN ($1, $2, $3, $4)"
            ]
        );
    }

    #[test]
    fn an_anonymous_placeholder_cannot_be_kept_for_later() {
        let mut sqlite = SqlBuilder::many(Dialect::Sqlite, "SELECT ");
        assert!(sqlite.bind_only(1_i64).is_err());
        let mut numbered = SqlBuilder::new("SELECT ");
        assert_eq!(numbered.bind_only(1_i64).unwrap(), "$1");
        assert_eq!(numbered.bind_only(2_i64).unwrap(), "$2");
    }
}
