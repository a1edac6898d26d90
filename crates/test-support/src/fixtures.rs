//! Small, valid values to build tests from.

use chrono::{TimeZone, Utc};
use serde_json::{Map, json};
use sleuth_domain::{
    EmailAddress, Entity, EntityKind, HandlerVersion, InvestigationResult, Outcome, ParsedAlert,
    Priority, Role, StrategyEffects, Timestamp,
};
use sleuth_store::{
    DEFAULT_TENANT_UNION_ID, KeyHash, NewAlert, NewApiKey, NewUser, alert_identity, canonical_hash,
};

/// A fixed point in time, so tests never depend on the clock.
pub fn time(minutes_after_base: i64) -> Timestamp {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0)
        .single()
        .expect("valid date")
        + chrono::Duration::minutes(minutes_after_base)
}

pub fn new_user(email: &str, role: Role) -> NewUser {
    NewUser {
        email: EmailAddress::parse(email).expect("valid test email"),
        first_name: "Test".into(),
        last_name: "User".into(),
        role,
        oidc_user_id: None,
        tenant_scope: sleuth_store::TenantScope::All,
    }
}

pub fn new_key(user_id: i64, secret: &str) -> NewApiKey {
    NewApiKey {
        user_id,
        name: "test key".into(),
        hash: KeyHash::of(secret),
        prefix: secret.chars().take(8).collect(),
        tenant_scope: sleuth_store::TenantScope::All,
    }
}

/// A parsed alert with the given title, source and entities, created `minute` minutes after
/// the base time.
pub fn parsed_alert(
    title: &str,
    source: &str,
    minute: i64,
    entities: &[(EntityKind, &str)],
) -> ParsedAlert {
    ParsedAlert {
        schema_key: "generic".into(),
        handler_version: HandlerVersion::V2,
        alert_type: format!("{source}:{title}"),
        title: title.into(),
        original_title: title.into(),
        create_time: time(minute),
        start_time: Some(time(minute - 1)),
        severity: Some("high".into()),
        direct_source_label: source.into(),
        proxy_source_label: None,
        origin_integration: None,
        origin_integration_display_name: source.into(),
        origin_ticket_id: None,
        origin_ticket_id_label: None,
        origin_ticket_url: None,
        entities: entities
            .iter()
            .map(|(kind, value)| Entity::new(*kind, *value))
            .collect(),
        assets: Map::new(),
        coalesce_key: None,
        tenant_id: None,
        tenant_label: None,
        signals: Default::default(),
    }
}

/// A new alert whose identity follows from its parsed form and raw body, as the server does.
pub fn new_alert(
    parsed: ParsedAlert,
    raw: serde_json::Value,
    tenant_union_id: Option<i64>,
) -> NewAlert {
    let tenant_union_id = tenant_union_id.unwrap_or(DEFAULT_TENANT_UNION_ID);
    let content_hash = canonical_hash(&raw);
    let identity = alert_identity(&parsed, &content_hash, tenant_union_id, None);
    NewAlert {
        content_hash,
        received_at: parsed.create_time,
        raw_alert_content: raw.to_string(),
        identity,
        tenant_union_id,
        tenant_integration_key: None,
        parsed,
    }
}

/// The simplest alert: unique by `title`.
pub fn simple_alert(title: &str, minute: i64) -> NewAlert {
    new_alert(
        parsed_alert(title, "Test Source", minute, &[]),
        json!({"title": title, "minute": minute}),
        None,
    )
}

pub fn result(outcome: Outcome, priority: Priority, conclusion: &str) -> InvestigationResult {
    InvestigationResult {
        outcome,
        priority,
        conclusion: conclusion.into(),
        conclusion_summary: Some(format!("summary: {conclusion}")),
        alert_summary: None,
        exec_summary: None,
        attack_surface: Some("endpoint".into()),
        mitre_tactic: Some("Execution".into()),
        findings: Vec::new(),
        findings_ranking: Map::new(),
        key_findings: Map::new(),
        insight_tags: Map::new(),
        interview_proposals: Map::new(),
        recommended_remediations: vec!["Isolate WKS-1".into()],
        related_alert_hypothesis: None,
        enrich_result: None,
        custom_outcome: None,
        strategy_effects: StrategyEffects::default(),
    }
}
