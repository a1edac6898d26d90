//! What can go wrong in storage, in terms the server can act on.

/// A storage failure. The server maps each variant to one HTTP answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The thing asked for does not exist (or is not visible).
    #[error("{what} {id} not found")]
    NotFound { what: &'static str, id: String },
    /// The write would break a uniqueness rule; `detail` says which, in user terms.
    #[error("{detail}")]
    Conflict { detail: String },
    /// The request names something that cannot be used (an unknown tenant union, a
    /// finished investigation to cancel); `detail` says what to do instead.
    #[error("{detail}")]
    Rejected { detail: String },
    /// The database cannot be reached or is not ready; the request may be retried.
    #[error("database unavailable: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Anything else: a bug or corrupt data. Logged in full, never shown to clients.
    #[error("storage failure: {0}")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    pub fn not_found(what: &'static str, id: impl ToString) -> StoreError {
        StoreError::NotFound {
            what,
            id: id.to_string(),
        }
    }

    pub fn internal(message: impl Into<String>) -> StoreError {
        StoreError::Internal(message.into().into())
    }
}

pub type StoreResult<T> = Result<T, StoreError>;
