//! One create on its way to the group-commit writer (`create`): the alert, and what is made
//! of it in the submitting request's task (its stored JSON and search document), so that
//! the writer, which every create waits on, only writes; and the audit entries of a
//! batch's creates. Both the per-create and the set-based path (`create_batch`) read it.

use serde_json::json;
use sleuth_store::{Created, NewAlert, NewAuditEntry, StoreResult};

use crate::rows;

pub(crate) struct CreateRequest {
    pub(crate) alert: NewAlert,
    pub(crate) force: bool,
    /// Appended to the audit log in the create's transaction (see `audited`).
    pub(crate) audit: Option<NewAuditEntry>,
    /// The parsed alert as stored (JSON) and its search document, made by `new` in the
    /// submitting request's task: the writer, which every create waits on, only writes.
    pub(crate) parsed_json: String,
    pub(crate) search_document: String,
}

impl CreateRequest {
    pub(crate) fn new(
        alert: NewAlert,
        force: bool,
        audit: Option<NewAuditEntry>,
    ) -> StoreResult<CreateRequest> {
        Ok(CreateRequest {
            parsed_json: rows::to_json(&alert.parsed)?,
            search_document: crate::search::document(&crate::search::parsed_search_text(
                &alert.parsed,
            )),
            alert,
            force,
            audit,
        })
    }
}

/// The audit entries of the creates that succeeded (`created`, in batch order), each naming
/// the investigation it answered with. Written in the batch's own transaction rather than
/// by the audit writer after the answer: one write turn per batch instead of two.
pub(crate) fn audited<'a>(
    batch: &[CreateRequest],
    created: impl Iterator<Item = Option<&'a Created>>,
) -> Vec<NewAuditEntry> {
    batch
        .iter()
        .zip(created)
        .filter_map(|(request, created)| {
            let mut entry = request.audit.clone()?;
            let created = created?;
            entry.resource_id = Some(created.investigation_id().to_string());
            // An alert of the same identity is of the same union: the union is part of it.
            entry.tenant_union_id = Some(request.alert.tenant_union_id);
            entry.detail.insert(
                "investigation".into(),
                json!(match created {
                    Created::New(_) => "new",
                    Created::Existing(_) => "existing",
                }),
            );
            Some(entry)
        })
        .collect()
}
