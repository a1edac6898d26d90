//! Signing in to the console: a user's password (only its argon2id hash, made by the
//! server, is stored) and the console's sessions. A session is a random 256-bit token
//! the browser holds in a cookie; only its SHA-256 is stored ([`KeyHash`], as for API
//! keys), so a copy of the database opens no session. A separate trait from
//! [`crate::Store`] (which requires it); no SQL lives here.

use async_trait::async_trait;
use sleuth_domain::Timestamp;

use crate::{KeyHash, StoreResult, User};

/// A password hash in the PHC string format (`$argon2id$v=19$m=...`). Its `Debug` says
/// nothing: a hash is still something to keep out of logs.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash(pub String);

impl std::fmt::Debug for PasswordHash {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("PasswordHash(..)")
    }
}

/// What a sign-in checks: the user (active or not: the caller refuses the inactive) and
/// their password hash, absent when no password was ever set.
#[derive(Debug, Clone)]
pub struct SignInRecord {
    pub user: User,
    pub password_hash: Option<PasswordHash>,
    /// Set by an admin's reset and on the first admin's generated password: the console
    /// lets the user do nothing else until they chose their own.
    pub must_change_password: bool,
}

/// A session to store at sign-in.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub token_hash: KeyHash,
    pub user_id: i64,
    /// The secret every form of this session carries back (CSRF), random per session.
    pub csrf_secret: String,
    pub created_at: Timestamp,
    /// The absolute end: the session ends then however busy it is.
    pub expires_at: Timestamp,
}

/// A live console session and its user.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: i64,
    pub user: User,
    pub csrf_secret: String,
    pub must_change_password: bool,
    pub created_at: Timestamp,
    pub last_seen_at: Timestamp,
    pub expires_at: Timestamp,
}

#[async_trait]
pub trait SignInStore: Send + Sync {
    /// The user with this email (compared lower-cased) and their password hash.
    async fn sign_in_record(&self, email: &str) -> StoreResult<Option<SignInRecord>>;
    /// Sets the user's password hash, and whether they must change it at their next
    /// sign-in. Every session of the user ends: a reset locks out whoever held one.
    /// `NotFound` when there is no such user.
    async fn set_password(
        &self,
        user_id: i64,
        hash: &PasswordHash,
        must_change: bool,
        at: Timestamp,
    ) -> StoreResult<()>;
    async fn create_session(&self, session: &NewSession) -> StoreResult<i64>;
    /// The session with this token hash if it is live: before its absolute end, seen
    /// after `idle_cutoff`, and of an active user (a deactivated user's sessions stop at
    /// once).
    async fn find_session(
        &self,
        token_hash: &KeyHash,
        now: Timestamp,
        idle_cutoff: Timestamp,
    ) -> StoreResult<Option<Session>>;
    /// Records that the session was used at `at` (what the idle limit counts from).
    async fn touch_session(&self, session_id: i64, at: Timestamp) -> StoreResult<()>;
    /// Signing out: the session ends. Ending one that is gone is harmless.
    async fn delete_session(&self, token_hash: &KeyHash) -> StoreResult<()>;
    /// Deletes the sessions that ended by either limit; how many.
    async fn delete_ended_sessions(
        &self,
        now: Timestamp,
        idle_cutoff: Timestamp,
    ) -> StoreResult<u64>;
}
