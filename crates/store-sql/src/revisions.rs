//! A known alert delivered again (`sleuth_store::revisions`): count the sighting, record a
//! new revision when its content changed, and decide whether the delivery is investigated.
//! Runs only on the per-create path (`create::create_one`): the set-based batch hands a
//! batch with a revision over to it (`create_batch::only_new_alerts_and_repeats`), so a
//! new alert never pays for any of this.
//!
//! The row of `alerts` that carries an identity is always the latest *investigated*
//! content. When a later revision is investigated, the old row gives up the identity
//! (it becomes `<identity>#<revision>`, `supersede`) and the new content is stored as a
//! new row under it; earlier investigations keep the content they were made on.

use serde_json::Value;
use sleuth_domain::SeverityLevel;
use sleuth_store::{
    AlertRevision, AlertRevisions, Changes, StoreError, StoreResult, canonical_hash, changed_paths,
};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::DbResultExt;
use crate::create_request::CreateRequest;
use crate::rows::{self, micros};

/// The stored row under an identity, and its sightings.
pub(crate) struct KnownAlert {
    pub(crate) alert_id: i64,
    content_hash: Option<String>,
    revision: i64,
    raw_alert_content: String,
    parsed: String,
    created_at: i64,
    sighting: Option<Sighting>,
}

struct Sighting {
    seen_count: i64,
    latest_revision: i64,
    latest_content_hash: String,
}

/// What a delivery of a known alert gets.
pub(crate) enum Decision {
    /// The existing investigation (a repeat, or a revision only recorded).
    AnswerExisting,
    /// A new investigation of the stored row's content (forced, content unchanged).
    InvestigateStored,
    /// A new investigation of this delivery's content, revision `revision`.
    InvestigateRevision { revision: i64 },
}

/// The row under `identity`, if any.
pub(crate) async fn find(
    connection: &mut AnyConnection,
    identity: &str,
) -> StoreResult<Option<KnownAlert>> {
    let row = sqlx::query(
        "SELECT a.id, a.content_hash, a.revision, a.raw_alert_content, a.parsed, a.created_at, \
         s.seen_count, s.latest_revision, s.latest_content_hash \
         FROM alerts a LEFT JOIN alert_sightings s ON s.identity = a.identity \
         WHERE a.identity = $1",
    )
    .bind(identity)
    .fetch_optional(&mut *connection)
    .await
    .db()?;
    row.map(|row| known_alert(&row)).transpose()
}

fn known_alert(row: &AnyRow) -> StoreResult<KnownAlert> {
    let sighting = match rows::opt_int(row, "seen_count")? {
        Some(seen_count) => Some(Sighting {
            seen_count,
            latest_revision: rows::int(row, "latest_revision")?,
            latest_content_hash: rows::text(row, "latest_content_hash")?,
        }),
        None => None,
    };
    Ok(KnownAlert {
        alert_id: rows::int(row, "id")?,
        content_hash: rows::opt_text(row, "content_hash")?,
        revision: rows::int(row, "revision")?,
        raw_alert_content: rows::text(row, "raw_alert_content")?,
        parsed: rows::text(row, "parsed")?,
        created_at: rows::int(row, "created_at")?,
        sighting,
    })
}

/// Records the delivery of `request`, an alert stored before as `known`: a sighting, and a
/// new revision when its content differs from the latest received. Investigated when
/// forced, or when a new revision's severity is above the investigated content's.
pub(crate) async fn meet(
    connection: &mut AnyConnection,
    request: &CreateRequest,
    known: &KnownAlert,
) -> StoreResult<Decision> {
    let alert = &request.alert;
    let identity = alert.identity.as_str();
    let now = micros(alert.received_at);
    let stored_hash = match &known.content_hash {
        Some(hash) => hash.clone(),
        None => backfill_hash(connection, known).await?,
    };
    let (seen_count, latest_revision, latest_hash) = match &known.sighting {
        Some(sighting) => (
            sighting.seen_count,
            sighting.latest_revision,
            sighting.latest_content_hash.clone(),
        ),
        None => (1, known.revision, stored_hash.clone()),
    };
    let incoming = alert.content_hash.as_str();
    let (revision, is_new_revision) = if incoming == latest_hash {
        (latest_revision, false)
    } else {
        let revision = latest_revision + 1;
        record_revision(connection, request, known, &stored_hash, latest_revision).await?;
        (revision, true)
    };
    sqlx::query(
        "INSERT INTO alert_sightings (identity, seen_count, last_seen_at, latest_revision, \
         latest_content_hash) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (identity) DO UPDATE SET seen_count = excluded.seen_count, \
         last_seen_at = excluded.last_seen_at, latest_revision = excluded.latest_revision, \
         latest_content_hash = excluded.latest_content_hash",
    )
    .bind(identity)
    .bind(seen_count + 1)
    .bind(now)
    .bind(revision)
    .bind(incoming)
    .execute(&mut *connection)
    .await
    .db()?;

    let raised = is_new_revision
        && alert.parsed.signals.severity_level > investigated_severity(&known.parsed);
    Ok(if !(request.force || raised) {
        Decision::AnswerExisting
    } else if incoming == stored_hash {
        Decision::InvestigateStored
    } else {
        Decision::InvestigateRevision { revision }
    })
}

/// The hash of a row stored before hashes were kept, written back so that its next
/// repeat takes the set-based path.
async fn backfill_hash(connection: &mut AnyConnection, known: &KnownAlert) -> StoreResult<String> {
    let hash = canonical_hash(&parse_raw(&known.raw_alert_content)?);
    sqlx::query("UPDATE alerts SET content_hash = $1 WHERE id = $2")
        .bind(&hash)
        .bind(known.alert_id)
        .execute(&mut *connection)
        .await
        .db()?;
    Ok(hash)
}

fn parse_raw(text: &str) -> StoreResult<Value> {
    serde_json::from_str(text)
        .map_err(|error| StoreError::internal(format!("a stored alert is not JSON: {error}")))
}

/// The severity of the content investigated last (the stored row's parsed alert).
fn investigated_severity(parsed: &str) -> Option<SeverityLevel> {
    let parsed: Value = serde_json::from_str(parsed).ok()?;
    serde_json::from_value(parsed.pointer("/signals/severity_level")?.clone()).ok()
}

/// Stores the request's content as the revision after `latest_revision`, with what changed
/// since that one. The first change of an alert also stores the content it had until then
/// (the stored row) as its first revision, so that every revision is kept.
async fn record_revision(
    connection: &mut AnyConnection,
    request: &CreateRequest,
    known: &KnownAlert,
    stored_hash: &str,
    latest_revision: i64,
) -> StoreResult<()> {
    let identity = request.alert.identity.as_str();
    let previous_raw = if latest_revision == known.revision {
        let recorded: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM alert_revisions WHERE identity = $1 AND revision = $2",
        )
        .bind(identity)
        .bind(latest_revision)
        .fetch_optional(&mut *connection)
        .await
        .db()?;
        if recorded.is_none() {
            let first_investigation: Option<i64> =
                sqlx::query_scalar("SELECT MIN(id) FROM investigations WHERE alert_id = $1")
                    .bind(known.alert_id)
                    .fetch_one(&mut *connection)
                    .await
                    .db()?;
            let severity = serde_json::from_str::<Value>(&known.parsed)
                .ok()
                .and_then(|parsed| parsed.get("severity")?.as_str().map(str::to_string));
            insert_revision(
                connection,
                identity,
                latest_revision,
                stored_hash,
                &known.raw_alert_content,
                severity.as_deref(),
                &Changes::default(),
                known.created_at,
                first_investigation,
            )
            .await?;
        }
        known.raw_alert_content.clone()
    } else {
        sqlx::query_scalar(
            "SELECT raw_alert_content FROM alert_revisions WHERE identity = $1 AND revision = $2",
        )
        .bind(identity)
        .bind(latest_revision)
        .fetch_one(&mut *connection)
        .await
        .db()?
    };
    let alert = &request.alert;
    let changes = changed_paths(
        &parse_raw(&previous_raw)?,
        &parse_raw(&alert.raw_alert_content)?,
    );
    insert_revision(
        connection,
        identity,
        latest_revision + 1,
        &alert.content_hash,
        &alert.raw_alert_content,
        alert.parsed.severity.as_deref(),
        &changes,
        micros(alert.received_at),
        None,
    )
    .await
}

#[allow(clippy::too_many_arguments)] // One per column of the row.
async fn insert_revision(
    connection: &mut AnyConnection,
    identity: &str,
    revision: i64,
    content_hash: &str,
    raw_alert_content: &str,
    severity: Option<&str>,
    changes: &Changes,
    received_at: i64,
    investigation_id: Option<i64>,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO alert_revisions (identity, revision, content_hash, raw_alert_content, \
         severity, changes, received_at, investigation_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(identity)
    .bind(revision)
    .bind(content_hash)
    .bind(raw_alert_content)
    .bind(severity)
    .bind(rows::to_json(changes)?)
    .bind(received_at)
    .bind(investigation_id)
    .execute(&mut *connection)
    .await
    .db()?;
    Ok(())
}

/// The stored row gives up its identity to the row of a later investigated revision.
pub(crate) async fn supersede(
    connection: &mut AnyConnection,
    known: &KnownAlert,
) -> StoreResult<()> {
    sqlx::query(
        "UPDATE alerts SET identity = identity || '#' || CAST(revision AS TEXT) WHERE id = $1",
    )
    .bind(known.alert_id)
    .execute(&mut *connection)
    .await
    .db()?;
    Ok(())
}

/// Notes the investigation made of a revision.
pub(crate) async fn mark_investigated(
    connection: &mut AnyConnection,
    identity: &str,
    revision: i64,
    investigation_id: i64,
) -> StoreResult<()> {
    sqlx::query(
        "UPDATE alert_revisions SET investigation_id = $1 WHERE identity = $2 AND revision = $3",
    )
    .bind(investigation_id)
    .bind(identity)
    .bind(revision)
    .execute(&mut *connection)
    .await
    .db()?;
    Ok(())
}

/// The sightings and revisions of the alert of an investigation.
pub(crate) async fn of_investigation(
    pool: &sqlx::AnyPool,
    investigation_id: i64,
) -> StoreResult<AlertRevisions> {
    let mut connection = pool.acquire().await.db()?;
    let row = sqlx::query(
        "SELECT a.identity, a.created_at, a.parsed, \
         (SELECT MIN(f.id) FROM investigations f WHERE f.alert_id = a.id) AS first_investigation \
         FROM investigations i JOIN alerts a ON a.id = i.alert_id WHERE i.id = $1",
    )
    .bind(investigation_id)
    .fetch_optional(&mut *connection)
    .await
    .db()?
    .ok_or_else(|| StoreError::not_found("investigation", investigation_id))?;
    let stored_identity = rows::text(&row, "identity")?;
    // A superseded row's identity is '<identity>#<revision>'.
    let identity = stored_identity
        .split_once('#')
        .map_or(stored_identity.as_str(), |(identity, _)| identity);
    let mut revisions = Vec::new();
    for revision in sqlx::query(
        "SELECT revision, received_at, severity, changes, investigation_id \
         FROM alert_revisions WHERE identity = $1 ORDER BY revision",
    )
    .bind(identity)
    .fetch_all(&mut *connection)
    .await
    .db()?
    {
        revisions.push(AlertRevision {
            revision: rows::int(&revision, "revision")?,
            received_at: rows::time(&revision, "received_at")?,
            severity: rows::opt_text(&revision, "severity")?,
            changes: rows::json(&revision, "changes")?,
            investigation_id: rows::opt_int(&revision, "investigation_id")?,
        });
    }
    if revisions.is_empty() {
        let parsed: Value = rows::json(&row, "parsed")?;
        revisions.push(AlertRevision {
            revision: 1,
            received_at: rows::time(&row, "created_at")?,
            severity: parsed
                .get("severity")
                .and_then(Value::as_str)
                .map(str::to_string),
            changes: Changes::default(),
            investigation_id: rows::opt_int(&row, "first_investigation")?,
        });
    }
    let first_seen_at = revisions[0].received_at;
    let sighting =
        sqlx::query("SELECT seen_count, last_seen_at FROM alert_sightings WHERE identity = $1")
            .bind(identity)
            .fetch_optional(&mut *connection)
            .await
            .db()?;
    let (seen_count, last_seen_at) = match sighting {
        Some(sighting) => (
            rows::int(&sighting, "seen_count")?,
            rows::time(&sighting, "last_seen_at")?,
        ),
        None => (1, first_seen_at),
    };
    Ok(AlertRevisions {
        seen_count,
        first_seen_at,
        last_seen_at,
        revisions,
    })
}
