//! The byte budget of a list answer. An investigation carries its alert's raw content, which
//! may be megabytes, a note ten thousand characters, a system event the arguments of what
//! fired it: `limit` alone does not bound an answer. A page is read from the store a few
//! rows at a time, each item serialized as it comes; the page stops when the next item
//! would take it past the budget (it always holds at least one, so a client can get past any
//! item). The answer keeps its shape: `results` simply holds fewer items, and the link to the
//! next page starts after the last one it holds (`links::page_links_after`).
//!
//! Reading a few rows at a time is what keeps memory small: the store hands over whole rows,
//! and a page of a hundred large alerts read at once is held whole however little of it is
//! sent. Every list that pages by offset goes through [`page`]; the audit-log export, which
//! streams the whole log, cuts its pieces with the same [`Collector`].

use std::future::Future;

use serde::Serialize;
use serde_json::value::RawValue;
use sleuth_store::{InvestigationQuery, InvestigationRecord, Store, StoreResult};

use axum::http::HeaderMap;

use crate::error::{ApiError, ApiResult};
use crate::extract::QueryPairs;
use crate::links;
use crate::state::AppState;

/// The most rows the first read of a page asks for: a default page in one read.
pub(crate) const FIRST_READ_ROWS: u32 = 20;

/// A page cut to its budget.
#[derive(Debug)]
pub(crate) struct BudgetedPage {
    /// How many items match, over all pages.
    pub total: u64,
    pub items: Vec<Box<RawValue>>,
    /// How many positions of the list this page covers from its offset (its items, and any
    /// item seen twice because the list moved between reads).
    pub read: u64,
}

/// How many rows the next read asks for: all the page still wants when the items so far
/// say they fit in what is left of the budget, otherwise as many as should fit plus one (the
/// one that tells the page is full), never fewer than one.
pub(crate) fn next_read_rows(
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

/// Serialized items up to a byte budget.
#[derive(Debug)]
pub(crate) struct Collector {
    budget: usize,
    items: Vec<Box<RawValue>>,
    bytes: usize,
}

impl Collector {
    pub(crate) fn new(budget: usize) -> Collector {
        Collector {
            budget,
            items: Vec::new(),
            bytes: 0,
        }
    }

    /// How many rows the next read should ask for, of `rows_wanted` (`next_read_rows`).
    pub(crate) fn rows_to_read(&self, rows_wanted: u32) -> u32 {
        next_read_rows(
            rows_wanted,
            self.budget.saturating_sub(self.bytes),
            self.items.len(),
            self.bytes,
        )
    }

    /// Adds the item, serialized, unless it would take the items past the budget; the first
    /// always fits. False when it did not fit: the collection is full.
    pub(crate) fn push(&mut self, item: &impl Serialize) -> serde_json::Result<bool> {
        let serialized = serde_json::value::to_raw_value(item)?;
        // Its separator in the answer: a comma, or a newline in JSON Lines.
        let size = serialized.get().len() + 1;
        if !self.items.is_empty() && self.bytes + size > self.budget {
            return Ok(false);
        }
        self.bytes += size;
        self.items.push(serialized);
        Ok(true)
    }

    pub(crate) fn items_held(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn into_items(self) -> Vec<Box<RawValue>> {
        self.items
    }
}

/// One page, from `offset`, of at most `limit` items and at most `budget` bytes of them (or
/// one item), of a list the store reads by offset: `read(rows, offset)` answers the list's
/// total and up to `rows` records from `offset` on. `id` tells a record seen twice (the list
/// moved between two reads) so it is sent once; `item` makes what is sent of a record.
pub(crate) async fn page<R, T, Read, Reading>(
    limit: u32,
    offset: u64,
    budget: usize,
    mut read: Read,
    id: impl Fn(&R) -> i64,
    item: impl Fn(&R) -> T,
) -> ApiResult<BudgetedPage>
where
    T: Serialize,
    Read: FnMut(u32, u64) -> Reading,
    Reading: Future<Output = StoreResult<(u64, Vec<R>)>>,
{
    let mut collector = Collector::new(budget);
    let mut ids = std::collections::HashSet::new();
    let mut total = None;
    let mut read_so_far = 0_u64;
    loop {
        let rows_wanted =
            limit.saturating_sub(u32::try_from(collector.items_held()).unwrap_or(u32::MAX));
        if rows_wanted == 0 {
            break;
        }
        let rows_asked = collector.rows_to_read(rows_wanted);
        let (list_total, records) = read(rows_asked, offset + read_so_far).await?;
        let total = *total.get_or_insert(list_total);
        let rows = records.len();
        for record in &records {
            if !ids.insert(id(record)) {
                read_so_far += 1;
                continue;
            }
            let fitted = collector.push(&item(record)).map_err(|error| {
                tracing::error!(%error, "could not serialize a list item");
                ApiError::system_error()
            })?;
            if !fitted {
                return Ok(BudgetedPage {
                    total,
                    items: collector.into_items(),
                    read: read_so_far,
                });
            }
            read_so_far += 1;
        }
        if rows < rows_asked as usize || offset + read_so_far >= total {
            break;
        }
    }
    Ok(BudgetedPage {
        total: total.unwrap_or(0),
        items: collector.into_items(),
        read: read_so_far,
    })
}

/// A page a request asks for, and where its list lives, for the link to the page after it.
pub(crate) struct PageRequest<'a> {
    pub base_url: String,
    /// The list's path (`/app/api/v1/audit-log`).
    pub path: &'a str,
    pub pairs: &'a QueryPairs,
    pub limit: u32,
    pub offset: u64,
    pub budget: usize,
}

impl<'a> PageRequest<'a> {
    pub(crate) fn new(
        state: &AppState,
        headers: &HeaderMap,
        path: &'a str,
        pairs: &'a QueryPairs,
        (limit, offset): (u32, u64),
    ) -> PageRequest<'a> {
        PageRequest {
            base_url: links::base_url(state, headers),
            path,
            pairs,
            limit,
            offset,
            budget: state.settings().server.max_list_answer_bytes,
        }
    }
}

/// [`page`] for a request, with the URL of the page after it while more follow (it starts
/// after the last item sent: `links::page_links_after`).
pub(crate) async fn linked_page<R, T, Read, Reading>(
    request: &PageRequest<'_>,
    read: Read,
    id: impl Fn(&R) -> i64,
    item: impl Fn(&R) -> T,
) -> ApiResult<(BudgetedPage, Option<String>)>
where
    T: Serialize,
    Read: FnMut(u32, u64) -> Reading,
    Reading: Future<Output = StoreResult<(u64, Vec<R>)>>,
{
    let page = page(
        request.limit,
        request.offset,
        request.budget,
        read,
        id,
        item,
    )
    .await?;
    let (next, _) = links::page_links_after(
        &request.base_url,
        request.path,
        request.pairs,
        request.limit,
        request.offset,
        page.read,
        page.total,
    );
    Ok((page, next))
}

/// One page of `query`, at most `budget` bytes of items (or one item), each item made by
/// `item` from its record.
pub(crate) async fn investigations<T: Serialize>(
    store: &dyn Store,
    query: &InvestigationQuery,
    budget: usize,
    item: impl Fn(&InvestigationRecord) -> T,
) -> ApiResult<BudgetedPage> {
    page(
        query.limit,
        query.offset,
        budget,
        |rows, offset| {
            let mut read_query = query.clone();
            read_query.limit = rows;
            read_query.offset = offset;
            async move {
                let page = store.list_investigations(&read_query).await?;
                Ok((page.total, page.items))
            }
        },
        |record| record.id,
        item,
    )
    .await
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
