//! Console sign-in: password hashes on users and the console's sessions
//! (`sleuth_store::SignInStore`; migration 0030 on both backends).

use async_trait::async_trait;
use sleuth_domain::Timestamp;
use sleuth_store::{
    KeyHash, NewSession, PasswordHash, Session, SignInRecord, SignInStore, StoreError, StoreResult,
};

use crate::rows::{self, micros};
use crate::users::{read_user, user_columns};
use crate::{DbResultExt, SqlStore};

#[async_trait]
impl SignInStore for SqlStore {
    async fn sign_in_record(&self, email: &str) -> StoreResult<Option<SignInRecord>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            user_columns!(),
            ", u.password_hash, u.password_must_change FROM users u WHERE u.email = $1"
        ))
        .bind(email.trim().to_lowercase())
        .fetch_optional(&self.pool)
        .await
        .db()?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(SignInRecord {
            user: read_user(&row)?,
            password_hash: rows::opt_text(&row, "password_hash")?.map(PasswordHash),
            must_change_password: rows::flag(&row, "password_must_change")?,
        }))
    }

    async fn set_password(
        &self,
        user_id: i64,
        hash: &PasswordHash,
        must_change: bool,
        at: Timestamp,
    ) -> StoreResult<()> {
        let mut connection = self.pool.acquire().await.db()?;
        let (_write_turn, mut transaction) =
            crate::begin_write(&mut connection, self.dialect).await?;
        let updated = sqlx::query(
            "UPDATE users SET password_hash = $2, password_must_change = $3, \
             password_changed_at = $4, updated_at = $4 WHERE id = $1",
        )
        .bind(user_id)
        .bind(&hash.0)
        .bind(i64::from(must_change))
        .bind(micros(at))
        .execute(&mut *transaction)
        .await
        .db()?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::not_found("user", user_id));
        }
        sqlx::query("DELETE FROM console_sessions WHERE user_id = $1")
            .bind(user_id)
            .execute(&mut *transaction)
            .await
            .db()?;
        transaction.commit().await.db()
    }

    async fn create_session(&self, session: &NewSession) -> StoreResult<i64> {
        sqlx::query_scalar(
            "INSERT INTO console_sessions \
             (token_hash, user_id, csrf_secret, created_at, last_seen_at, expires_at) \
             VALUES ($1, $2, $3, $4, $4, $5) RETURNING id",
        )
        .bind(session.token_hash.to_hex())
        .bind(session.user_id)
        .bind(&session.csrf_secret)
        .bind(micros(session.created_at))
        .bind(micros(session.expires_at))
        .fetch_one(&self.pool)
        .await
        .db()
    }

    async fn find_session(
        &self,
        token_hash: &KeyHash,
        now: Timestamp,
        idle_cutoff: Timestamp,
    ) -> StoreResult<Option<Session>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            user_columns!(),
            ", s.id AS session_id, s.csrf_secret, s.created_at, s.last_seen_at, s.expires_at, \
             u.password_must_change FROM console_sessions s JOIN users u ON u.id = s.user_id \
             WHERE s.token_hash = $1 AND s.expires_at > $2 AND s.last_seen_at > $3 \
             AND u.is_active = 1"
        ))
        .bind(token_hash.to_hex())
        .bind(micros(now))
        .bind(micros(idle_cutoff))
        .fetch_optional(&self.pool)
        .await
        .db()?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(Session {
            id: rows::int(&row, "session_id")?,
            user: read_user(&row)?,
            csrf_secret: rows::text(&row, "csrf_secret")?,
            must_change_password: rows::flag(&row, "password_must_change")?,
            created_at: rows::time(&row, "created_at")?,
            last_seen_at: rows::time(&row, "last_seen_at")?,
            expires_at: rows::time(&row, "expires_at")?,
        }))
    }

    async fn touch_session(&self, session_id: i64, at: Timestamp) -> StoreResult<()> {
        // Never backwards: two requests of one session may finish out of order.
        sqlx::query(
            "UPDATE console_sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2",
        )
        .bind(session_id)
        .bind(micros(at))
        .execute(&self.pool)
        .await
        .db()?;
        Ok(())
    }

    async fn delete_session(&self, token_hash: &KeyHash) -> StoreResult<()> {
        sqlx::query("DELETE FROM console_sessions WHERE token_hash = $1")
            .bind(token_hash.to_hex())
            .execute(&self.pool)
            .await
            .db()?;
        Ok(())
    }

    async fn delete_ended_sessions(
        &self,
        now: Timestamp,
        idle_cutoff: Timestamp,
    ) -> StoreResult<u64> {
        let deleted = sqlx::query(
            "DELETE FROM console_sessions WHERE expires_at <= $1 OR last_seen_at <= $2",
        )
        .bind(micros(now))
        .bind(micros(idle_cutoff))
        .execute(&self.pool)
        .await
        .db()?;
        Ok(deleted.rows_affected())
    }
}
