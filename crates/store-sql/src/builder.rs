//! A small SQL builder for dynamic statements: it numbers placeholders `$1, $2, ...` (which
//! both SQLite and PostgreSQL accept; sqlx's own builder writes `?` for the Any driver) and
//! keeps every user-supplied value a bound parameter.

use sleuth_store::{StoreError, StoreResult};
use sqlx::any::{Any, AnyArguments};
use sqlx::{Arguments, Encode, Type};

#[derive(Default)]
pub struct SqlBuilder {
    sql: String,
    arguments: AnyArguments,
    parameter_count: usize,
}

impl SqlBuilder {
    pub fn new(start: &str) -> SqlBuilder {
        SqlBuilder {
            sql: start.to_string(),
            ..SqlBuilder::default()
        }
    }

    /// Appends trusted SQL text (never user input).
    pub fn push(&mut self, sql: &str) -> &mut Self {
        self.sql.push_str(sql);
        self
    }

    /// Binds a value and appends its placeholder.
    pub fn bind<T>(&mut self, value: T) -> StoreResult<&mut Self>
    where
        T: for<'q> Encode<'q, Any> + Type<Any> + Send + 'static,
    {
        let placeholder = self.bind_only(value)?;
        self.sql.push_str(&placeholder);
        Ok(self)
    }

    /// Binds a value without appending anything; returns its placeholder for later use.
    pub fn bind_only<T>(&mut self, value: T) -> StoreResult<String>
    where
        T: for<'q> Encode<'q, Any> + Type<Any> + Send + 'static,
    {
        self.arguments
            .add(value)
            .map_err(|error| StoreError::internal(format!("cannot bind a parameter: {error}")))?;
        self.parameter_count += 1;
        Ok(format!("${}", self.parameter_count))
    }

    /// Appends `(p1, p2, ...)` binding each value.
    pub fn bind_list<T>(&mut self, values: impl IntoIterator<Item = T>) -> StoreResult<&mut Self>
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

    /// Appends ` LIMIT a OFFSET b`: one page of a list (the offset saturates). The numbers
    /// are written in, not bound: SQLite plans a LIMIT as a constant, so a statement with a
    /// bound LIMIT is prepared again every time it is bound (profiles showed that second
    /// preparation in every paged read). They are integers, so nothing can be injected.
    pub fn limit_offset(&mut self, limit: u32, offset: u64) -> &mut Self {
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        self.push(&format!(" LIMIT {limit} OFFSET {offset}"))
    }

    pub fn next_parameter(&self) -> usize {
        self.parameter_count + 1
    }

    // Built statements are not kept prepared (`persistent(false)`): their text varies with
    // the filters or the batch size, and each new text would push a hot, fixed statement
    // out of the connection's statement cache (on SQLite, profiles showed connections
    // re-preparing and finalizing statements all the time).
    pub fn build_scalar<O>(self) -> sqlx::query::QueryScalar<'static, Any, O, AnyArguments>
    where
        O: Send + Unpin,
        (O,): for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow>,
    {
        sqlx::query_scalar_with(sqlx::AssertSqlSafe(self.sql), self.arguments).persistent(false)
    }

    pub fn build(self) -> sqlx::query::Query<'static, Any, AnyArguments> {
        sqlx::query_with(sqlx::AssertSqlSafe(self.sql), self.arguments).persistent(false)
    }
}

/// `{select}($1, $2, …){rest}` with the ids bound. A single id (a worker loading its job,
/// a read) is the hot case: that statement is kept prepared. Longer lists are not (see
/// `SqlBuilder::build`): each length is a new text.
pub fn by_id_list(
    select: &str,
    ids: &[i64],
    rest: &str,
) -> StoreResult<sqlx::query::Query<'static, Any, AnyArguments>> {
    let mut sql = SqlBuilder::new(select);
    sql.bind_list(ids.iter().copied())?;
    sql.push(rest);
    Ok(sql.build().persistent(ids.len() == 1))
}
