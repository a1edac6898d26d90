//! Microsoft Entra ID Protection risk detections: the Graph `riskDetection` resource
//! (`GET /identityProtection/riskDetections`, v1.0 and beta) and the same record as
//! Sentinel stores it in the `AADUserRiskEvents` table (PascalCase names, `Location` and
//! `AdditionalInfo` as dynamic values).
//!
//! Read: `id`, `requestId`, `correlationId`, `riskEventType`, `riskState`, `riskLevel`,
//! `riskDetail`, `source`, `detectionTimingType`, `activity`, `tokenIssuerType`,
//! `ipAddress`, `location` (`city`, `countryOrRegion`), `activityDateTime`,
//! `detectedDateTime`, `userId`, `userDisplayName`, `userPrincipalName`, beta's
//! `mitreTechniqueId`, and `additionalInfo`, a string of JSON holding `Key`/`Value`
//! pairs (`userAgent`, `alertUrl`, `riskReasons`, `mitreTechniques`, `clientIp`...).

use serde_json::Value;
use sleuth_domain::{ActionTaken, AlertCategory, ParsedAlert, SignInSignal, SourceVerdict};

use super::common::{self, field, key_values, squeeze, string_list, text};
use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::normalize_ip;
use crate::json::{is_placeholder, scalar_text};
use crate::registry::Schema;
use crate::time::parse_value;

pub(crate) static RISK_DETECTION: Schema = Schema {
    key: "microsoft_entra_risk_detection",
    display_name: "Microsoft Entra ID Protection risk detection (Graph or AADUserRiskEvents)",
    source_label: "Microsoft Entra ID Protection",
    integration: "microsoft_entra_id_protection",
    sample: include_str!("../../../samples/microsoft_entra_risk_detection.json"),
    detect,
    parse,
};

fn detect(raw: &Value) -> bool {
    field(raw, "riskEventType").is_some_and(Value::is_string)
        && (field(raw, "riskState").is_some() || field(raw, "riskLevel").is_some())
        && [
            "detectedDateTime",
            "activityDateTime",
            "userPrincipalName",
            "id",
        ]
        .iter()
        .any(|key| field(raw, key).is_some())
}

/// The name the Entra portal shows for a risk event type.
fn risk_name(event_type: &str) -> Option<&'static str> {
    Some(match squeeze(event_type).as_str() {
        "unfamiliarfeatures" => "Unfamiliar sign-in properties",
        "anonymizedipaddress" => "Anonymous IP address",
        "unlikelytravel" => "Atypical travel",
        "impossibletravel" => "Impossible travel",
        "maliciousipaddress" => "Malicious IP address",
        "malwareinfectedipaddress" => "Malware linked IP address",
        "leakedcredentials" => "Leaked credentials",
        "passwordspray" => "Password spray",
        "investigationsthreatintelligence" => "Microsoft Entra threat intelligence",
        "mcassuspiciousinboxmanipulationrules" => "Suspicious inbox manipulation rules",
        "suspiciousinboxforwarding" => "Suspicious inbox forwarding",
        "newcountry" => "New country",
        "anomaloustoken" => "Anomalous token",
        "tokenissueranomaly" => "Token issuer anomaly",
        "suspiciousbrowser" => "Suspicious browser",
        "suspiciousipaddress" => "Suspicious IP address",
        "riskyipaddress" => "Activity from anonymous IP address",
        "suspiciousapitraffic" => "Suspicious API traffic",
        "anomaloususeractivity" => "Anomalous user activity",
        "adminconfirmedusercompromised" => "Admin confirmed user compromised",
        "attackerinthemiddle" => "Attacker in the middle",
        "nationstateip" => "Nation state IP",
        "mfafraud" => "MFA fraud",
        "userreportedsuspiciousactivity" => "User reported suspicious activity",
        "suspicioussendingpatterns" => "Suspicious sending patterns",
        "generic" => "Additional risk detected",
        _ => return None,
    })
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let Some(event_type) = text(raw, &["riskEventType"]) else {
        return Err(ParseError::DoesNotFit {
            schema_key: RISK_DETECTION.key,
            reason: "a risk detection has riskEventType".into(),
        });
    };
    let info = key_values(field(raw, "additionalInfo"));
    let info_text = |key: &str| {
        info.get(key)
            .and_then(scalar_text)
            .filter(|text| !is_placeholder(text))
    };
    let title = risk_name(&event_type)
        .map(str::to_string)
        .unwrap_or_else(|| format!("Entra ID Protection risk detection: {event_type}"));
    let level = text(raw, &["riskLevel"])
        .filter(|level| !matches!(squeeze(level).as_str(), "hidden" | "unknownfuturevalue"));
    alert
        .title(Some(&title))
        .alert_type(Some(&format!("entra_id_protection:{event_type}")))
        .create_time(time_of(raw, &["detectedDateTime", "TimeGenerated"]))
        .start_time(time_of(raw, &["activityDateTime"]))
        .severity(level.as_deref());
    let id = text(raw, &["id"]);
    alert.ticket(id.clone(), "risk detection id", info_text("alertUrl"));
    let user = text(raw, &["userPrincipalName"]);
    // Detections of one sign-in share its request id; other detections are one story
    // per user and risk type.
    alert.coalesce_key(
        text(raw, &["requestId"])
            .map(|request| format!("request:{request}"))
            .or_else(|| {
                user.as_deref()
                    .map(|user| format!("user:{user}:{event_type}"))
            })
            .or_else(|| id.as_deref().map(|id| format!("detection:{id}"))),
    );
    alert.tenant(text(raw, &["TenantId", "tenantId"]), None);

    let state = text(raw, &["riskState"]);
    alert.signals.category = Some(AlertCategory::Identity);
    alert.signals.source_verdict = state.as_deref().and_then(verdict_of_state);
    alert.signals.action = Some(ActionTaken::Observed);
    for tag in [
        "riskEventType",
        "riskState",
        "riskDetail",
        "source",
        "detectionTimingType",
        "activity",
        "tokenIssuerType",
    ] {
        alert.tag(text(raw, &[tag]).as_deref());
    }
    for technique in string_list(field(raw, "mitreTechniqueId"))
        .into_iter()
        .chain(string_list(info.get("mitreTechniques")))
    {
        alert.technique(Some(&technique));
    }

    let location = common::embedded(field(raw, "location"));
    let location = location.as_deref().unwrap_or(&Value::Null);
    let source_ip = text(raw, &["ipAddress"])
        .or_else(|| info_text("clientIp"))
        .and_then(|address| normalize_ip(&address));
    let mut reasons = vec![event_type.clone()];
    for reason in string_list(info.get("riskReasons")) {
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }
    alert.signals.sign_in = Some(SignInSignal {
        user: user.or_else(|| text(raw, &["userDisplayName"])),
        source_ip,
        country: text(location, &["countryOrRegion"]),
        city: text(location, &["city"]),
        user_agent: info_text("userAgent"),
        risk_level: level,
        risk_reasons: reasons,
        succeeded: asserts_success(&event_type).then_some(true),
        ..SignInSignal::default()
    });
    Ok(alert.finish())
}

fn time_of(raw: &Value, keys: &[&str]) -> Option<sleuth_domain::Timestamp> {
    keys.iter()
        .find_map(|key| field(raw, key).and_then(parse_value))
}

/// Whether Microsoft documents the detection type as raised only on a sign-in that
/// worked: "password spray" is "triggered when a password spray attack has been
/// successfully performed" (ID Protection's risk detections reference), so the guessed
/// password was right. Other types say nothing of the sign-in's result.
fn asserts_success(event_type: &str) -> bool {
    squeeze(event_type) == "passwordspray"
}

/// The verdict a risk state records: an administrator's confirmation either way, a
/// dismissal, or a risk still open.
fn verdict_of_state(state: &str) -> Option<SourceVerdict> {
    match squeeze(state).as_str() {
        "confirmedcompromised" => Some(SourceVerdict::Malicious),
        "confirmedsafe" | "dismissed" => Some(SourceVerdict::Benign),
        "atrisk" => Some(SourceVerdict::Suspicious),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sleuth_domain::EntityKind;

    use super::*;
    use crate::parse_alert;

    fn read(raw: &Value) -> ParsedAlert {
        parse_alert(None, raw, chrono::Utc::now()).expect("parses")
    }

    #[test]
    fn a_password_spray_detection_says_the_sign_in_worked() {
        let succeeded = |event_type: &str| {
            read(
                &json!({"id": "1", "riskEventType": event_type, "riskState": "atRisk",
                "userPrincipalName": "a@example.com", "ipAddress": "203.0.113.31"}),
            )
            .signals
            .sign_in
            .and_then(|sign_in| sign_in.succeeded)
        };
        assert_eq!(succeeded("passwordSpray"), Some(true));
        assert_eq!(succeeded("unfamiliarFeatures"), None);
    }

    #[test]
    fn the_sample_reads_completely() {
        let raw: Value = serde_json::from_str(RISK_DETECTION.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, RISK_DETECTION.key);
        let sign_in = parsed.signals.sign_in.as_ref().expect("a sign-in");
        assert!(sign_in.user.is_some());
        assert!(sign_in.source_ip.is_some());
        assert!(sign_in.country.is_some());
        assert!(sign_in.user_agent.is_some());
        assert!(parsed.start_time.is_some());
    }

    #[test]
    fn risk_states_become_verdicts() {
        let cases = [
            ("confirmedCompromised", Some(SourceVerdict::Malicious)),
            ("confirmedSafe", Some(SourceVerdict::Benign)),
            ("dismissed", Some(SourceVerdict::Benign)),
            ("atRisk", Some(SourceVerdict::Suspicious)),
            ("remediated", None),
        ];
        for (state, expected) in cases {
            let parsed = read(&json!({
                "id": "1", "riskEventType": "unfamiliarFeatures", "riskState": state, "riskLevel": "medium",
                "detectedDateTime": "2026-03-05T08:00:00Z", "userPrincipalName": "m.garcia@example.com"
            }));
            assert_eq!(parsed.signals.source_verdict, expected, "{state}");
            assert_eq!(parsed.title, "Unfamiliar sign-in properties");
        }
    }

    #[test]
    fn additional_info_and_the_log_analytics_row_read() {
        let parsed = read(&json!({
            "Id": "2", "RiskEventType": "anonymizedIPAddress", "RiskState": "atRisk", "RiskLevel": "high",
            "DetectedDateTime": "2026-03-05T08:00:00Z", "ActivityDateTime": "2026-03-05T07:58:00Z",
            "UserPrincipalName": "d.okafor@example.com", "IpAddress": "203.0.113.66",
            "Location": {"city": "Frankfurt", "countryOrRegion": "DE"},
            "AdditionalInfo": [{"Key": "userAgent", "Value": "Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Firefox/115.0"},
                               {"Key": "mitreTechniques", "Value": "T1090.003"}],
            "RequestId": "r1", "TenantId": "0d3c6b1e", "Type": "AADUserRiskEvents"
        }));
        let sign_in = parsed.signals.sign_in.as_ref().unwrap();
        assert_eq!(sign_in.country.as_deref(), Some("DE"));
        assert_eq!(sign_in.risk_level.as_deref(), Some("high"));
        assert_eq!(sign_in.risk_reasons, vec!["anonymizedIPAddress"]);
        assert!(sign_in.user_agent.as_deref().unwrap().contains("Firefox"));
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1090.003"]);
        assert!(
            parsed
                .entities
                .iter()
                .any(|entity| entity.kind == EntityKind::Ip && entity.value == "203.0.113.66")
        );
        assert_eq!(
            parsed.coalesce_key.as_deref(),
            Some("microsoft_entra_risk_detection:request:r1")
        );
    }

    #[test]
    fn risky_users_and_sign_ins_are_not_risk_detections() {
        assert!(!detect(
            &json!({"riskState": "atRisk", "riskLevel": "high", "userPrincipalName": "x"})
        ));
        assert!(!detect(
            &json!({"riskEventTypes_v2": ["x"], "riskState": "atRisk", "id": "1"})
        ));
    }

    #[test]
    fn hostile_input_never_panics() {
        let huge = "\u{FEFF}".repeat(100_000);
        for raw in [
            json!({"riskEventType": "x", "riskState": 1, "id": [], "location": "[{", "additionalInfo": huge.clone()}),
            json!({"riskEventType": huge, "riskLevel": {}, "detectedDateTime": -1, "ipAddress": 5,
                   "additionalInfo": "[{\"Key\": 1, \"Value\": {}}, 7, null]", "mitreTechniqueId": {}}),
            json!({"riskEventType": "generic", "riskState": "atRisk", "id": "1", "location": {"countryOrRegion": []}}),
            json!({"riskEventType": "generic", "riskState": "atRisk", "id": "1", "ipAddress": "ЖЖЖЖЖЖЖЖ", "userPrincipalName": "ЖЖЖЖЖЖЖЖ"}),
        ] {
            let _ = parse_alert(Some(RISK_DETECTION.key), &raw, chrono::Utc::now());
        }
        assert!(
            parse_alert(
                Some(RISK_DETECTION.key),
                &json!({"x": 1}),
                chrono::Utc::now()
            )
            .is_err()
        );
    }
}
