//! The byte budget of a list answer. An investigation carries its alert's raw content, which
//! may be megabytes, so `limit` alone does not bound an answer. A page is read from the store
//! a few rows at a time, each item serialized as it comes; the page stops when the next item
//! would take it past the budget (it always holds at least one, so a client can get past any
//! item). The answer keeps SPEC's shape: `results` simply holds fewer items, and `next`
//! starts after the last one it holds (`links::page_links_after`).
//!
//! Reading a few rows at a time is what keeps memory small: the store hands over whole rows,
//! and a page of a hundred large alerts read at once is held whole however little of it is
//! sent.

use serde::Serialize;
use serde_json::value::RawValue;
use sleuth_store::{InvestigationQuery, InvestigationRecord, Store};

use crate::error::{ApiError, ApiResult};

/// The most rows the first read of a page asks for: a default page in one read.
pub const FIRST_READ_ROWS: u32 = 20;

/// A page cut to its budget.
#[derive(Debug)]
pub struct BudgetedPage {
    /// How many investigations match, over all pages.
    pub total: u64,
    pub items: Vec<Box<RawValue>>,
    /// How many positions of the list this page covers from its offset (its items, and any
    /// item seen twice because the list moved between reads).
    pub read: u64,
}

/// How many rows the next read asks for: all the page still wants when the items so far
/// say they fit in what is left of the budget, otherwise as many as should fit plus one (the
/// one that tells the page is full), never fewer than one.
pub fn next_read_rows(
    rows_wanted: u32,
    budget_left: usize,
    items_so_far: usize,
    bytes_so_far: usize,
) -> u32 {
    if items_so_far == 0 {
        return rows_wanted.min(FIRST_READ_ROWS);
    }
    let average = (bytes_so_far / items_so_far).max(1);
    let fitting = budget_left / average + 1;
    u32::try_from(fitting)
        .unwrap_or(u32::MAX)
        .clamp(1, rows_wanted.max(1))
}

/// One page of `query`, at most `budget` bytes of items (or one item), each item made by
/// `item` from its record.
pub async fn investigations<T: Serialize>(
    store: &dyn Store,
    query: &InvestigationQuery,
    budget: usize,
    item: impl Fn(&InvestigationRecord) -> T,
) -> ApiResult<BudgetedPage> {
    let limit = query.limit;
    let mut read_query = query.clone();
    let mut items: Vec<Box<RawValue>> = Vec::new();
    let mut ids = std::collections::HashSet::new();
    let mut bytes = 0_usize;
    let mut total = None;
    let mut read = 0_u64;
    loop {
        let rows_wanted = limit.saturating_sub(u32::try_from(items.len()).unwrap_or(u32::MAX));
        if rows_wanted == 0 {
            break;
        }
        read_query.limit = next_read_rows(
            rows_wanted,
            budget.saturating_sub(bytes),
            items.len(),
            bytes,
        );
        read_query.offset = query.offset + read;
        let page = store.list_investigations(&read_query).await?;
        let total = *total.get_or_insert(page.total);
        let rows = page.items.len();
        for record in page.items {
            if !ids.insert(record.id) {
                read += 1;
                continue;
            }
            let serialized = serde_json::value::to_raw_value(&item(&record)).map_err(|error| {
                tracing::error!(%error, "could not serialize an investigation");
                ApiError::system_error()
            })?;
            let size = serialized.get().len() + 1;
            if !items.is_empty() && bytes + size > budget {
                return Ok(BudgetedPage { total, items, read });
            }
            bytes += size;
            items.push(serialized);
            read += 1;
        }
        if rows < read_query.limit as usize || query.offset + read >= total {
            break;
        }
    }
    Ok(BudgetedPage {
        total: total.unwrap_or(0),
        items,
        read,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rows_read_follow_the_budget_left() {
        // (rows wanted, budget left, items so far, bytes so far) -> rows to read
        let cases = [
            ((20, 4_000_000, 0, 0), 20),
            ((100, 4_000_000, 0, 0), FIRST_READ_ROWS),
            ((5, 4_000_000, 0, 0), 5),
            // Small items: the rest of the page in one read.
            ((80, 4_000_000 - 20_000, 20, 20_000), 80),
            // Items of half a megabyte: as many as fit, and one more.
            ((80, 1_000_000, 6, 3_000_000), 3),
            // Full already: one row, to learn that it does not fit.
            ((80, 0, 8, 4_000_000), 1),
            ((1, 4_000_000, 3, 3_000), 1),
        ];
        for ((wanted, left, items, bytes), expected) in cases {
            assert_eq!(
                next_read_rows(wanted, left, items, bytes),
                expected,
                "wanted {wanted}, left {left}, {items} items of {bytes} bytes"
            );
        }
    }
}
