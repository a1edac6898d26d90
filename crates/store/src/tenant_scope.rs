//! Which tenant unions a caller may see and touch. A user and each of their API keys may
//! be bound to tenant unions; what a request may reach is the narrower of the two. The
//! store applies a scope inside its queries, so pages and counts hold only what the caller
//! may see, and another tenant's object reads as missing (`NotFound`), never as forbidden.

use crate::{StoreError, StoreResult};

/// Every tenant union (users and keys made before scoping existed, and any not bound), or
/// only the ones listed. An empty list sees nothing: a key bound to unions its user no
/// longer has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TenantScope {
    #[default]
    All,
    Unions(Vec<i64>),
}

impl TenantScope {
    /// Bound to `ids` (sorted, without repeats).
    pub fn unions(ids: impl IntoIterator<Item = i64>) -> TenantScope {
        let mut ids: Vec<i64> = ids.into_iter().collect();
        ids.sort_unstable();
        ids.dedup();
        TenantScope::Unions(ids)
    }

    pub fn is_all(&self) -> bool {
        matches!(self, TenantScope::All)
    }

    /// The listed unions; `None` for every union.
    pub fn union_ids(&self) -> Option<&[i64]> {
        match self {
            TenantScope::All => None,
            TenantScope::Unions(ids) => Some(ids),
        }
    }

    pub fn allows(&self, tenant_union_id: i64) -> bool {
        match self {
            TenantScope::All => true,
            TenantScope::Unions(ids) => ids.contains(&tenant_union_id),
        }
    }

    /// What both scopes allow.
    pub fn narrowed(&self, other: &TenantScope) -> TenantScope {
        match (self, other) {
            (TenantScope::All, scope) | (scope, TenantScope::All) => scope.clone(),
            (TenantScope::Unions(mine), TenantScope::Unions(theirs)) => {
                TenantScope::unions(mine.iter().copied().filter(|id| theirs.contains(id)))
            }
        }
    }

    /// True when everything this scope allows, `outer` allows too.
    pub fn is_within(&self, outer: &TenantScope) -> bool {
        match (self, outer) {
            (_, TenantScope::All) => true,
            (TenantScope::All, TenantScope::Unions(_)) => false,
            (TenantScope::Unions(mine), TenantScope::Unions(theirs)) => {
                mine.iter().all(|id| theirs.contains(id))
            }
        }
    }

    /// The stored form: NULL for every union, else a JSON array of ids.
    pub fn to_column(&self) -> Option<String> {
        self.union_ids()
            .map(|ids| serde_json::Value::from(ids.to_vec()).to_string())
    }

    /// Reads what `to_column` wrote.
    pub fn from_column(column: Option<&str>) -> StoreResult<TenantScope> {
        match column {
            None => Ok(TenantScope::All),
            Some(text) => serde_json::from_str::<Vec<i64>>(text)
                .map(TenantScope::unions)
                .map_err(|error| {
                    StoreError::internal(format!(
                        "a stored tenant scope is not a list of ids: {error}"
                    ))
                }),
        }
    }
}

impl std::fmt::Display for TenantScope {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TenantScope::All => formatter.write_str("every tenant union"),
            TenantScope::Unions(ids) => {
                let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
                write!(formatter, "tenant unions {}", ids.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_keeps_what_both_allow() {
        let one_two = TenantScope::unions([2, 1, 2]);
        assert_eq!(one_two, TenantScope::Unions(vec![1, 2]));
        assert_eq!(TenantScope::All.narrowed(&one_two), one_two);
        assert_eq!(one_two.narrowed(&TenantScope::All), one_two);
        assert_eq!(
            one_two.narrowed(&TenantScope::unions([2, 3])),
            TenantScope::Unions(vec![2])
        );
        let none = one_two.narrowed(&TenantScope::unions([3]));
        assert!(!none.allows(1) && !none.allows(3));
        assert!(TenantScope::All.allows(7));
    }

    #[test]
    fn within_means_no_wider() {
        let one = TenantScope::unions([1]);
        let one_two = TenantScope::unions([1, 2]);
        assert!(one.is_within(&one_two));
        assert!(!one_two.is_within(&one));
        assert!(one.is_within(&TenantScope::All));
        assert!(!TenantScope::All.is_within(&one));
    }

    #[test]
    fn the_column_round_trips() {
        for scope in [TenantScope::All, TenantScope::unions([3, 1])] {
            let column = scope.to_column();
            assert_eq!(TenantScope::from_column(column.as_deref()).unwrap(), scope);
        }
        assert_eq!(
            TenantScope::unions([3, 1]).to_column().as_deref(),
            Some("[1,3]")
        );
        assert!(TenantScope::from_column(Some("not json")).is_err());
    }
}
