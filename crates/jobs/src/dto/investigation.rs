//! SPEC's investigation shapes: the single-read form (GET by id), the list-item form, the
//! alert in each, feedback, findings, the paginated list, and the create request/response.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use sleuth_domain::{
    Canceled, Entity, FeedbackStatus, FindingOutcome, HandlerVersion, InvestigationStatus, Outcome,
    Priority,
};
use sleuth_store::{AlertRecord, FeedbackRecord, InvestigationRecord};
use utoipa::ToSchema;

use super::tenant::{TenantUnionDto, TenantUnionListDto};

/// `{type, value}`: one thing an alert names.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AlertEntity)]
pub struct EntityDto {
    /// ip, domain, url, email, user, host, process, file_path, hash_md5, hash_sha1,
    /// hash_sha256, cloud_account or cloud_resource.
    #[serde(rename = "type")]
    pub kind: String,
    pub value: String,
}

impl From<&Entity> for EntityDto {
    fn from(entity: &Entity) -> EntityDto {
        EntityDto {
            kind: entity.kind.as_str().to_string(),
            value: entity.value.clone(),
        }
    }
}

/// SPEC's Alert (full), inside the single-read investigation.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Alert)]
pub struct AlertDto {
    pub id: i64,
    pub alert_type: String,
    #[schema(schema_with = super::schema::free_object)]
    pub assets: Map<String, Value>,
    pub coalesce_key: Option<String>,
    pub create_time: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub direct_source_label: String,
    #[schema(schema_with = super::schema::free_object_nullable)]
    pub enrich_result: Option<Map<String, Value>>,
    pub entities: Vec<EntityDto>,
    #[schema(schema_with = super::schema::handler_version)]
    pub handler_version: HandlerVersion,
    pub origin_integration: Option<String>,
    pub origin_integration_display_name: String,
    pub origin_ticket_id: Option<String>,
    pub origin_ticket_id_label: Option<String>,
    pub origin_ticket_url: Option<String>,
    pub original_title: String,
    pub proxy_source_label: Option<String>,
    /// The alert exactly as received, as JSON text.
    pub raw_alert_content: String,
    pub schema_key: String,
    pub severity: Option<String>,
    pub start_time: Option<DateTime<Utc>>,
    pub tenant_id: Option<String>,
    pub tenant_integration_key: Option<String>,
    pub tenant_label: Option<String>,
    pub tenant_union: Option<TenantUnionDto>,
    pub title: String,
}

/// SPEC's Alert (list), inside the list-item investigation: entities grouped by type,
/// the tenant union in its list form, and no enrich_result, handler_version or
/// origin_integration_display_name.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AlertListItem)]
pub struct AlertListDto {
    pub id: i64,
    pub alert_type: String,
    #[schema(schema_with = super::schema::free_object)]
    pub assets: Map<String, Value>,
    pub coalesce_key: Option<String>,
    pub create_time: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub direct_source_label: String,
    /// Entity values grouped by type: `{"ip": ["203.0.113.5"], "user": ["r.patel"]}`.
    #[schema(schema_with = super::schema::free_object)]
    pub entities: Map<String, Value>,
    pub origin_integration: Option<String>,
    pub origin_ticket_id: Option<String>,
    pub origin_ticket_id_label: Option<String>,
    pub origin_ticket_url: Option<String>,
    pub original_title: String,
    pub proxy_source_label: Option<String>,
    pub raw_alert_content: String,
    pub schema_key: String,
    pub severity: Option<String>,
    pub start_time: Option<DateTime<Utc>>,
    pub tenant_id: Option<String>,
    pub tenant_integration_key: Option<String>,
    pub tenant_label: Option<String>,
    pub tenant_union: TenantUnionListDto,
    pub title: String,
}

impl From<&AlertRecord> for AlertDto {
    fn from(alert: &AlertRecord) -> AlertDto {
        let parsed = &alert.parsed;
        AlertDto {
            id: alert.id,
            alert_type: parsed.alert_type.clone(),
            assets: parsed.assets.clone(),
            coalesce_key: parsed.coalesce_key.clone(),
            create_time: parsed.create_time,
            created_at: alert.created_at,
            updated_at: alert.updated_at,
            direct_source_label: parsed.direct_source_label.clone(),
            enrich_result: alert.enrich_result.clone(),
            entities: parsed.entities.iter().map(EntityDto::from).collect(),
            handler_version: parsed.handler_version,
            origin_integration: parsed.origin_integration.clone(),
            origin_integration_display_name: parsed.origin_integration_display_name.clone(),
            origin_ticket_id: parsed.origin_ticket_id.clone(),
            origin_ticket_id_label: parsed.origin_ticket_id_label.clone(),
            origin_ticket_url: parsed.origin_ticket_url.clone(),
            original_title: parsed.original_title.clone(),
            proxy_source_label: parsed.proxy_source_label.clone(),
            raw_alert_content: alert.raw_alert_content.clone(),
            schema_key: parsed.schema_key.clone(),
            severity: parsed.severity.clone(),
            start_time: parsed.start_time,
            tenant_id: parsed.tenant_id.clone(),
            tenant_integration_key: alert.tenant_integration_key.clone(),
            tenant_label: parsed.tenant_label.clone(),
            tenant_union: Some(TenantUnionDto::from(&alert.tenant_union)),
            title: parsed.title.clone(),
        }
    }
}

impl From<&AlertRecord> for AlertListDto {
    fn from(alert: &AlertRecord) -> AlertListDto {
        let parsed = &alert.parsed;
        let mut grouped: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
        for entity in &parsed.entities {
            grouped
                .entry(entity.kind.as_str())
                .or_default()
                .push(Value::from(entity.value.clone()));
        }
        AlertListDto {
            id: alert.id,
            alert_type: parsed.alert_type.clone(),
            assets: parsed.assets.clone(),
            coalesce_key: parsed.coalesce_key.clone(),
            create_time: parsed.create_time,
            created_at: alert.created_at,
            updated_at: alert.updated_at,
            direct_source_label: parsed.direct_source_label.clone(),
            entities: grouped
                .into_iter()
                .map(|(kind, values)| (kind.to_string(), Value::Array(values)))
                .collect(),
            origin_integration: parsed.origin_integration.clone(),
            origin_ticket_id: parsed.origin_ticket_id.clone(),
            origin_ticket_id_label: parsed.origin_ticket_id_label.clone(),
            origin_ticket_url: parsed.origin_ticket_url.clone(),
            original_title: parsed.original_title.clone(),
            proxy_source_label: parsed.proxy_source_label.clone(),
            raw_alert_content: alert.raw_alert_content.clone(),
            schema_key: parsed.schema_key.clone(),
            severity: parsed.severity.clone(),
            start_time: parsed.start_time,
            tenant_id: parsed.tenant_id.clone(),
            tenant_integration_key: alert.tenant_integration_key.clone(),
            tenant_label: parsed.tenant_label.clone(),
            tenant_union: TenantUnionListDto::from(&alert.tenant_union),
            title: parsed.title.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Evidence)]
pub struct EvidenceDto {
    /// A string, an object or an array: the observation itself.
    #[schema(value_type = Object)]
    pub data: Value,
    pub evidence_type: String,
    /// `for` or `against` compromise, or null when neutral.
    pub tag: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Finding)]
pub struct FindingDto {
    pub artifacts: Vec<String>,
    pub evidences: Vec<EvidenceDto>,
    pub finding: String,
    pub headline: String,
    #[schema(schema_with = super::schema::finding_outcome)]
    pub outcome: FindingOutcome,
}

impl From<&sleuth_domain::Finding> for FindingDto {
    fn from(finding: &sleuth_domain::Finding) -> FindingDto {
        FindingDto {
            artifacts: finding.artifacts.clone(),
            evidences: finding
                .evidences
                .iter()
                .map(|evidence| EvidenceDto {
                    data: evidence.data.clone(),
                    evidence_type: evidence.evidence_type.clone(),
                    tag: evidence.tag.clone(),
                })
                .collect(),
            finding: finding.finding.clone(),
            headline: finding.headline.clone(),
            outcome: finding.outcome,
        }
    }
}

/// The conclusion shown before (or instead of) the engine's: what state the
/// investigation is in, in words.
fn conclusion(record: &InvestigationRecord) -> String {
    if let Some(result) = &record.result {
        return result.conclusion.clone();
    }
    match record.status {
        InvestigationStatus::NotAsked => {
            "Queued: Sleuth has not started this investigation yet.".into()
        }
        InvestigationStatus::Loading => "Sleuth is investigating this alert.".into(),
        InvestigationStatus::Success => "Investigation complete.".into(),
        InvestigationStatus::Error => match record.canceled {
            Some(Canceled::Manual) => "Stopped: canceled by an analyst before it concluded.".into(),
            Some(Canceled::Threshold) => {
                "Stopped: the source sent more alerts than the burst threshold allows.".into()
            }
            None => format!(
                "Stopped by an error: {}",
                record.error_msg.as_deref().unwrap_or("no detail recorded")
            ),
        },
    }
}

/// Link builder for `inv_url`.
pub fn investigation_url(base_url: &str, investigation_id: i64) -> String {
    format!(
        "{}/app/api/v1/investigation/{investigation_id}",
        base_url.trim_end_matches('/')
    )
}

/// SPEC's Investigation, single-read shape (GET /investigation/{id}).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Investigation)]
pub struct InvestigationDto {
    pub id: i64,
    pub alert: AlertDto,
    pub alert_summary: Option<String>,
    pub attack_surface: Option<String>,
    pub backfill: Option<i64>,
    #[schema(schema_with = super::schema::canceled_nullable)]
    pub canceled: Option<Canceled>,
    pub conclusion: String,
    pub conclusion_summary: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub email_screenshot: Option<String>,
    pub error_msg: Option<String>,
    pub exec_summary: Option<String>,
    pub findings: Vec<FindingDto>,
    #[schema(schema_with = super::schema::free_object)]
    pub findings_ranking: Map<String, Value>,
    pub generated_time: Option<DateTime<Utc>>,
    pub ignored_for: Option<i64>,
    #[schema(schema_with = super::schema::free_object)]
    pub insight_tags: Map<String, Value>,
    #[schema(schema_with = super::schema::free_object)]
    pub interview_proposals: Map<String, Value>,
    pub inv_url: String,
    pub is_retried: bool,
    #[schema(schema_with = super::schema::free_object)]
    pub key_findings: Map<String, Value>,
    pub mitre_tactic: Option<String>,
    #[schema(schema_with = super::schema::outcome_nullable)]
    pub outcome: Option<Outcome>,
    #[schema(schema_with = super::schema::priority_nullable)]
    pub priority: Option<Priority>,
    /// True once the investigation has concluded (status success).
    pub ready: bool,
    pub recommended_remediations: Vec<String>,
    #[schema(schema_with = super::schema::free_object_nullable)]
    pub related_alert_hypothesis: Option<Map<String, Value>>,
    pub start_time: Option<DateTime<Utc>>,
    #[schema(schema_with = super::schema::investigation_status)]
    pub status: InvestigationStatus,
}

impl InvestigationDto {
    pub fn new(record: &InvestigationRecord, base_url: &str) -> InvestigationDto {
        let result = record.result.as_ref();
        let map_of = |pick: fn(&sleuth_domain::InvestigationResult) -> &Map<String, Value>| {
            result.map(pick).cloned().unwrap_or_default()
        };
        InvestigationDto {
            id: record.id,
            alert: AlertDto::from(&record.alert),
            alert_summary: result.and_then(|result| result.alert_summary.clone()),
            attack_surface: result.and_then(|result| result.attack_surface.clone()),
            backfill: None,
            canceled: record.canceled,
            conclusion: conclusion(record),
            conclusion_summary: result.and_then(|result| result.conclusion_summary.clone()),
            created_at: record.created_at,
            updated_at: record.updated_at,
            email_screenshot: None,
            error_msg: record.error_msg.clone(),
            exec_summary: result.and_then(|result| result.exec_summary.clone()),
            findings: result
                .map(|result| result.findings.iter().map(FindingDto::from).collect())
                .unwrap_or_default(),
            findings_ranking: map_of(|result| &result.findings_ranking),
            generated_time: record.generated_time,
            ignored_for: record.ignored_for,
            insight_tags: map_of(|result| &result.insight_tags),
            interview_proposals: map_of(|result| &result.interview_proposals),
            inv_url: investigation_url(base_url, record.id),
            is_retried: record.is_retried,
            key_findings: map_of(|result| &result.key_findings),
            mitre_tactic: result.and_then(|result| result.mitre_tactic.clone()),
            outcome: record.outcome,
            priority: record.priority,
            ready: record.status == InvestigationStatus::Success,
            recommended_remediations: result
                .map(|result| result.recommended_remediations.clone())
                .unwrap_or_default(),
            related_alert_hypothesis: result
                .and_then(|result| result.related_alert_hypothesis.clone()),
            start_time: record.start_time,
            status: record.status,
        }
    }
}

/// SPEC's Investigation feedback.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = InvestigationFeedback)]
pub struct FeedbackDto {
    pub id: i64,
    pub conclusion: String,
    pub conclusion_summary: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[schema(schema_with = super::schema::free_object)]
    pub findings: Map<String, Value>,
    #[schema(schema_with = super::schema::free_object_nullable)]
    pub findings_ranking: Option<Map<String, Value>>,
    #[schema(schema_with = super::schema::free_object_nullable)]
    pub insight_tags: Option<Map<String, Value>>,
    #[schema(schema_with = super::schema::free_object_nullable)]
    pub key_findings: Option<Map<String, Value>>,
    #[schema(schema_with = super::schema::outcome_nullable)]
    pub outcome: Option<Outcome>,
    pub outcome_note: Option<String>,
    #[schema(schema_with = super::schema::priority_nullable)]
    pub priority: Option<Priority>,
    #[schema(schema_with = super::schema::free_object)]
    pub remediations_done: Map<String, Value>,
    #[schema(schema_with = super::schema::feedback_status)]
    pub status: FeedbackStatus,
}

impl FeedbackDto {
    pub fn new(record: &InvestigationRecord, feedback: &FeedbackRecord) -> FeedbackDto {
        let result = record.result.as_ref();
        FeedbackDto {
            id: feedback.id,
            conclusion: conclusion(record),
            conclusion_summary: result.and_then(|result| result.conclusion_summary.clone()),
            created_at: feedback.created_at,
            updated_at: feedback.updated_at,
            findings: findings_summary(record),
            findings_ranking: result.map(|result| result.findings_ranking.clone()),
            insight_tags: result.map(|result| result.insight_tags.clone()),
            key_findings: result.map(|result| result.key_findings.clone()),
            outcome: feedback.outcome,
            outcome_note: feedback.outcome_note.clone(),
            priority: feedback.priority,
            remediations_done: feedback.remediations_done.clone(),
            status: feedback.status,
        }
    }
}

/// The findings as the list shows them (an object, per SPEC): how many, how many of each
/// outcome, and their headlines.
fn findings_summary(record: &InvestigationRecord) -> Map<String, Value> {
    let findings = record
        .result
        .as_ref()
        .map(|result| result.findings.as_slice())
        .unwrap_or_default();
    let mut by_outcome: BTreeMap<&str, u64> = BTreeMap::new();
    for finding in findings {
        *by_outcome.entry(finding.outcome.as_str()).or_default() += 1;
    }
    let summary = json!({
        "count": findings.len(),
        "by_outcome": by_outcome,
        "headlines": findings.iter().map(|finding| finding.headline.as_str()).collect::<Vec<_>>(),
    });
    match summary {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RemediationActionName {
    pub name: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RemediationActionRun {
    pub entity: String,
    pub remediation_action: RemediationActionName,
}

/// SPEC's Investigation, list-item shape.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = InvestigationListItem)]
pub struct InvestigationListItemDto {
    pub id: i64,
    pub alert: AlertListDto,
    pub alert_summary: Option<String>,
    pub attack_surface: Option<String>,
    #[schema(schema_with = super::schema::canceled_nullable)]
    pub canceled: Option<Canceled>,
    pub conclusion: String,
    pub conclusion_summary: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Set when a custom strategy overrode the outcome: which rule, and what Sleuth said.
    #[schema(schema_with = super::schema::free_object_nullable)]
    pub custom_outcome: Option<Map<String, Value>>,
    pub error_msg: Option<String>,
    pub exec_summary: Option<String>,
    pub feedback: FeedbackDto,
    /// Counts and headlines of the findings (the full findings are on GET by id).
    #[schema(schema_with = super::schema::free_object)]
    pub findings: Map<String, Value>,
    #[schema(schema_with = super::schema::free_object)]
    pub findings_ranking: Map<String, Value>,
    pub generated_time: Option<DateTime<Utc>>,
    pub ignored_for_investigation_id: Option<i64>,
    #[schema(schema_with = super::schema::free_object)]
    pub insight_tags: Map<String, Value>,
    #[schema(schema_with = super::schema::free_object)]
    pub interview_proposals: Map<String, Value>,
    pub inv_url: String,
    #[schema(schema_with = super::schema::free_object)]
    pub key_findings: Map<String, Value>,
    pub mitre_tactic: Option<String>,
    #[schema(schema_with = super::schema::outcome_nullable)]
    pub outcome: Option<Outcome>,
    #[schema(schema_with = super::schema::priority_nullable)]
    pub priority: Option<Priority>,
    /// `{"count": n, "items": [...]}`.
    #[schema(schema_with = super::schema::free_object)]
    pub recommended_remediations: Map<String, Value>,
    pub remediation_action_runs: Vec<RemediationActionRun>,
    pub start_time: Option<DateTime<Utc>>,
    #[schema(schema_with = super::schema::investigation_status)]
    pub status: InvestigationStatus,
}

impl InvestigationListItemDto {
    pub fn new(record: &InvestigationRecord, base_url: &str) -> InvestigationListItemDto {
        let single = InvestigationDto::new(record, base_url);
        let remediations = &single.recommended_remediations;
        let mut recommended = Map::new();
        recommended.insert("count".into(), Value::from(remediations.len()));
        recommended.insert("items".into(), Value::from(remediations.clone()));
        InvestigationListItemDto {
            id: single.id,
            alert: AlertListDto::from(&record.alert),
            alert_summary: single.alert_summary,
            attack_surface: single.attack_surface,
            canceled: single.canceled,
            conclusion: single.conclusion,
            conclusion_summary: single.conclusion_summary,
            created_at: single.created_at,
            updated_at: single.updated_at,
            custom_outcome: record
                .result
                .as_ref()
                .and_then(|result| result.custom_outcome.clone()),
            error_msg: single.error_msg,
            exec_summary: single.exec_summary,
            feedback: FeedbackDto::new(record, &record.feedback),
            findings: findings_summary(record),
            findings_ranking: single.findings_ranking,
            generated_time: single.generated_time,
            ignored_for_investigation_id: record.ignored_for,
            insight_tags: single.insight_tags,
            interview_proposals: single.interview_proposals,
            inv_url: single.inv_url,
            key_findings: single.key_findings,
            mitre_tactic: single.mitre_tactic,
            outcome: single.outcome,
            priority: single.priority,
            recommended_remediations: recommended,
            remediation_action_runs: record
                .remediation_action_runs
                .iter()
                .map(|run| RemediationActionRun {
                    entity: run.entity.clone(),
                    remediation_action: RemediationActionName {
                        name: run.action_name.clone(),
                    },
                })
                .collect(),
            start_time: single.start_time,
            status: single.status,
        }
    }
}

/// SPEC's Paginated investigation list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PaginatedInvestigationList {
    /// How many investigations match the filters, over all pages.
    pub count: u64,
    #[schema(format = "uri")]
    pub next: Option<String>,
    #[schema(format = "uri")]
    pub previous: Option<String>,
    pub results: Vec<InvestigationListItemDto>,
}

/// `PaginatedInvestigationList` as sent: the same fields, with each item already
/// serialized, because the list's byte budget (`list_budget`) measures every item.
#[derive(Debug, Serialize)]
pub struct PaginatedInvestigationListBody {
    pub count: u64,
    pub next: Option<String>,
    pub previous: Option<String>,
    pub results: Vec<Box<serde_json::value::RawValue>>,
}

/// Body of POST /investigation/create.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateInvestigationRequest {
    /// Make a new investigation even when the alert was seen before.
    #[serde(default)]
    pub force_reinvestigation: Option<bool>,
    /// The alert, as the source emitted it. Kept as the exact JSON text received.
    #[schema(value_type = Object)]
    pub raw_alert_content: Option<Box<RawValue>>,
    /// Which parser reads the alert (GET /app/api/v1/schema-keys); detected when absent.
    pub schema_key: Option<String>,
    /// A number per SPEC; must be the integer id of a tenant union.
    #[serde(default)]
    #[schema(value_type = Option<i64>)]
    pub tenant_union_id: Option<serde_json::Number>,
    /// Our addition: the key of the integration the alert came through, when the caller
    /// tracks one; part of the alert's tenant scope.
    pub tenant_integration_key: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreateInvestigationResponse {
    pub investigation_id: i64,
}
