//! Every wire format Sleuth reads, in the order detection tries them: the most
//! distinctive formats first, the generic reader last (it accepts anything).

use serde_json::Value;
use sleuth_domain::ParsedAlert;

use crate::ParseError;
use crate::builder::{AlertBuilder, FormatLabels};
use crate::sources;

/// One supported wire format.
#[derive(Debug)]
pub struct Schema {
    /// The `schema_key` clients send ("aws_guardduty_eventbridge").
    pub key: &'static str,
    /// What the format is, for people ("AWS GuardDuty finding (EventBridge event)").
    pub display_name: &'static str,
    /// The product that raises these alerts: the alert's `direct_source_label`.
    pub source_label: &'static str,
    /// The integration key: the alert's `origin_integration` ("aws_guardduty").
    pub integration: &'static str,
    /// A realistic example alert in this format, as JSON text.
    pub sample: &'static str,
    /// Whether a raw alert is in this format. Must be cheap and never panic.
    pub detect: fn(&Value) -> bool,
    /// Reads a raw alert of this format. Fails only when the alert lacks what makes it
    /// this format at all (the message names what is missing).
    pub parse: fn(&Value, AlertBuilder) -> Result<ParsedAlert, ParseError>,
}

impl Schema {
    /// What the builder writes into every alert read in this format.
    pub fn labels(&self) -> FormatLabels {
        FormatLabels {
            key: self.key,
            display_name: self.display_name,
            source_label: self.source_label,
            integration: self.integration,
        }
    }
}

/// All formats, in detection order. Each group below is owned by one module family;
/// keep the generic reader last.
static SCHEMAS: &[&Schema] = &[
    // --- Cloud and application security (AWS, Google Cloud, GitHub, Falco, Jamf) ---
    &sources::guardduty::EVENTBRIDGE,
    &sources::guardduty::FINDING,
    &sources::security_hub::FINDING,
    &sources::gcp_scc::FINDING,
    &sources::github_secret_scanning::ALERT,
    &sources::falco::EVENT,
    &sources::jamf_protect::ALERT,
    // --- Microsoft (Defender, Graph, Sentinel, Entra ID) ---
    &sources::microsoft::office365::ALERT,
    &sources::microsoft::entra::RISK_DETECTION,
    &sources::microsoft::sentinel::INCIDENT,
    &sources::microsoft::sentinel::SECURITY_ALERT,
    &sources::microsoft::graph::ALERT_V2,
    &sources::microsoft::defender_endpoint::ALERT,
    // --- Endpoint and XDR (CrowdStrike, SentinelOne, Cortex XDR, Elastic, Wazuh) ---
    &sources::crowdstrike::ALERT,
    &sources::crowdstrike::DETECTION_SUMMARY,
    &sources::sentinelone::THREAT,
    &sources::cortex_xdr::INCIDENT,
    &sources::cortex_xdr::ALERT,
    &sources::elastic::ALERT,
    &sources::wazuh::ALERT,
    // --- Identity and SIEM (Okta, Google Workspace, Google SecOps, Splunk) ---
    &sources::okta::SYSTEM_LOG,
    &sources::google_workspace::ALERT_CENTER,
    &sources::google_secops::DETECTION,
    // An ES notable before the alert webhook: a notable can arrive wrapped in `result`.
    &sources::splunk::ES_NOTABLE,
    &sources::splunk::ALERT_WEBHOOK,
    // --- Network and email (Suricata, Zeek, Proofpoint, Sublime) ---
    &sources::suricata::EVE,
    &sources::zeek::NOTICE,
    &sources::proofpoint_tap::MESSAGE,
    &sources::proofpoint_tap::CLICK,
    &sources::sublime::ALERT,
    // --- Anything else ---
    &sources::generic::SCHEMA,
];

/// Every format, in detection order.
pub fn all() -> &'static [&'static Schema] {
    SCHEMAS
}

/// The format with this key.
pub fn find(key: &str) -> Option<&'static Schema> {
    SCHEMAS.iter().copied().find(|schema| schema.key == key)
}

/// The first format that recognises the alert; the generic reader when none does.
pub fn detect(raw: &Value) -> &'static Schema {
    SCHEMAS
        .iter()
        .copied()
        .find(|schema| (schema.detect)(raw))
        .unwrap_or(&sources::generic::SCHEMA)
}
