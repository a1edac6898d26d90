//! What the source observed, in one vocabulary for every tool: the parsers fill it from
//! each vendor's fields, and the engine's playbooks read only this, never vendor JSON.
//! Every part is optional: a parser fills what its format carries and leaves the rest.

use serde::{Deserialize, Serialize};

/// The kind of thing an alert is about; it picks the playbooks that apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertCategory {
    /// A workstation or server: processes, files, malware, credential theft on the host.
    Endpoint,
    /// Accounts and sign-ins: risky logons, MFA abuse, password spray.
    Identity,
    /// Cloud control planes and workloads: IAM, configuration, cloud threat detection.
    Cloud,
    /// Mail: phishing, malicious attachments and links, business email compromise.
    Email,
    /// Traffic: IDS signatures, C2 beacons, scans, exfiltration over the wire.
    Network,
    /// Applications and code: SaaS admin actions, exposed secrets, runtime security.
    Application,
}

impl AlertCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertCategory::Endpoint => "endpoint",
            AlertCategory::Identity => "identity",
            AlertCategory::Cloud => "cloud",
            AlertCategory::Email => "email",
            AlertCategory::Network => "network",
            AlertCategory::Application => "application",
        }
    }
}

/// What the source did about the activity it reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionTaken {
    /// Prevented, killed, quarantined, dropped, denied, remediated: the activity was
    /// stopped. It still happened: a blocked attack is an attack.
    Blocked,
    /// Explicitly let through: delivered, permitted, allowed.
    Allowed,
    /// Only detected, or the source does not say.
    Observed,
}

/// The source's own classification of the alert, or its analysts', when the format has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceVerdict {
    /// The vendor or its analysts call it malicious or a true positive.
    Malicious,
    /// Suspicious, or not yet classified by a human at the source.
    Suspicious,
    /// Benign, a false positive, expected activity or a test, as the source says.
    Benign,
}

/// The source's severity, on one scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeverityLevel {
    Informational,
    Low,
    Medium,
    High,
    Critical,
}

impl SeverityLevel {
    /// Reads the wording tools use ("Sev 3", "HIGH", "crit", "moderate", "2") into the scale.
    /// Bare numbers are read on the common 1 (low) .. 4 or 5 (critical) scales only when
    /// small; scores out of 10 or 100 go through [`SeverityLevel::from_score`].
    pub fn parse(text: &str) -> Option<SeverityLevel> {
        let lowered = text.trim().to_ascii_lowercase();
        let word = lowered
            .trim_start_matches("severity")
            .trim_start_matches("sev")
            .trim_matches(|character: char| !character.is_ascii_alphanumeric());
        Some(match word {
            "info" | "informational" | "information" | "none" | "unknown" | "0" => {
                SeverityLevel::Informational
            }
            "low" | "minor" | "1" => SeverityLevel::Low,
            "medium" | "moderate" | "med" | "warning" | "2" => SeverityLevel::Medium,
            "high" | "major" | "important" | "severe" | "3" => SeverityLevel::High,
            "critical" | "crit" | "urgent" | "emergency" | "4" | "5" => SeverityLevel::Critical,
            _ => return None,
        })
    }

    /// A score on a 0..=`maximum` scale (10 for CVSS-like, 100 for risk scores).
    pub fn from_score(score: f64, maximum: f64) -> SeverityLevel {
        let fraction = if maximum > 0.0 { score / maximum } else { 0.0 };
        if fraction >= 0.9 {
            SeverityLevel::Critical
        } else if fraction >= 0.7 {
            SeverityLevel::High
        } else if fraction >= 0.4 {
            SeverityLevel::Medium
        } else if fraction > 0.0 {
            SeverityLevel::Low
        } else {
            SeverityLevel::Informational
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SeverityLevel::Informational => "informational",
            SeverityLevel::Low => "low",
            SeverityLevel::Medium => "medium",
            SeverityLevel::High => "high",
            SeverityLevel::Critical => "critical",
        }
    }
}

/// A process the alert is about (endpoint alerts).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessSignal {
    /// The image name ("powershell.exe").
    pub name: Option<String>,
    /// The image's full path.
    pub path: Option<String>,
    pub command_line: Option<String>,
    /// What the command line hides, decoded the way an analyst would (a PowerShell
    /// `-EncodedCommand`, a `base64 -d` pipe): judged like plain text.
    pub decoded_command: Option<String>,
    pub parent_name: Option<String>,
    pub parent_command_line: Option<String>,
    /// The account the process ran as.
    pub user: Option<String>,
    pub sha256: Option<String>,
    pub sha1: Option<String>,
    pub md5: Option<String>,
    /// The code signer, when the source says.
    pub signer: Option<String>,
}

/// A sign-in or authentication attempt (identity alerts).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SignInSignal {
    pub user: Option<String>,
    pub source_ip: Option<String>,
    /// ISO 3166 alpha-2 where the source gives a code, else the country's name.
    pub country: Option<String>,
    pub city: Option<String>,
    /// The network operator of the source address ("DigitalOcean", "Tor exit").
    pub network_owner: Option<String>,
    pub user_agent: Option<String>,
    /// The application or service signed in to.
    pub application: Option<String>,
    /// Whether the sign-in succeeded; `None` when the source does not say.
    pub succeeded: Option<bool>,
    /// Whether MFA was satisfied; `None` when unknown or not asked.
    pub mfa_passed: Option<bool>,
    /// Push or MFA prompts the user denied or ignored, for MFA-fatigue detections.
    pub mfa_denials: Option<u32>,
    /// Failed attempts the detection counted (brute force, spray).
    pub failure_count: Option<u32>,
    /// Distinct accounts targeted from one source (password spray).
    pub targeted_accounts: Option<u32>,
    /// The identity provider's own risk wording ("high", "atRisk").
    pub risk_level: Option<String>,
    /// Risk reasons as the provider names them ("unfamiliarFeatures", "anonymizedIPAddress").
    pub risk_reasons: Vec<String>,
}

/// An attachment of a message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AttachmentSignal {
    pub name: Option<String>,
    pub sha256: Option<String>,
    pub md5: Option<String>,
}

/// A message the alert is about (email alerts).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EmailSignal {
    pub sender: Option<String>,
    /// The display name the sender used ("David Okafor"): impersonation borrows a known name
    /// on a foreign address.
    pub sender_display_name: Option<String>,
    /// The Reply-To address when it differs from the sender.
    pub reply_to: Option<String>,
    /// The envelope (return-path) sender when it differs from the header sender.
    pub envelope_sender: Option<String>,
    pub sender_ip: Option<String>,
    pub recipients: Vec<String>,
    pub subject: Option<String>,
    pub urls: Vec<String>,
    pub attachments: Vec<AttachmentSignal>,
    /// The threat the source names: "phish", "malware", "spam", "impersonation", "bec".
    pub threat_kind: Option<String>,
    /// Whether the message reached the inbox; `None` when unknown.
    pub delivered: Option<bool>,
    /// Whether a recipient clicked a link in it.
    pub clicked: Option<bool>,
    /// Whether that click was let through to the site.
    pub click_permitted: Option<bool>,
}

/// Which way traffic flowed relative to the organisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Inbound,
    Outbound,
    Internal,
}

/// Traffic the alert is about (network alerts, and network detail of others).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetworkSignal {
    pub source_ip: Option<String>,
    pub source_port: Option<u16>,
    pub destination_ip: Option<String>,
    pub destination_port: Option<u16>,
    /// Transport ("tcp", "udp", "icmp").
    pub protocol: Option<String>,
    /// Application protocol ("http", "tls", "dns", "smb").
    pub application_protocol: Option<String>,
    pub direction: Option<Direction>,
    pub bytes_out: Option<u64>,
    pub bytes_in: Option<u64>,
    /// The IDS signature's name and id.
    pub signature: Option<String>,
    pub signature_id: Option<String>,
    /// The ruleset's category of the signature ("A Network Trojan was detected").
    pub signature_category: Option<String>,
    /// A host name seen in the traffic: DNS query, HTTP Host, TLS SNI.
    pub hostname: Option<String>,
}

/// A cloud control-plane action or resource (cloud alerts).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CloudSignal {
    /// "aws", "azure", "gcp", "github", "google_workspace", "okta", ...
    pub provider: Option<String>,
    pub account: Option<String>,
    pub region: Option<String>,
    pub service: Option<String>,
    /// The API call or operation ("CreateAccessKey", "SetIamPolicy").
    pub operation: Option<String>,
    /// The identity that acted (an IAM user or role, a service account).
    pub principal: Option<String>,
    pub resource: Option<String>,
    pub resource_type: Option<String>,
    /// The resource is reachable from the internet, as the source says.
    pub publicly_exposed: Option<bool>,
}

/// A credential found where it should not be (secret scanning).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SecretSignal {
    /// What kind of secret ("aws_access_key_id", "github_personal_access_token").
    pub secret_type: Option<String>,
    /// Where it was found (a repository, a file URL).
    pub location: Option<String>,
    /// Whether the repository or place is public.
    pub publicly_exposed: Option<bool>,
    /// Whether the provider says the secret still works; `None` when unknown.
    pub still_valid: Option<bool>,
    /// Whether someone already revoked or resolved it.
    pub resolved: Option<bool>,
}

/// Everything the parser could say about what happened, in Sleuth's vocabulary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Signals {
    pub category: Option<AlertCategory>,
    pub severity_level: Option<SeverityLevel>,
    /// The source's description of the detection, as written.
    pub description: Option<String>,
    /// ATT&CK tactic names, canonical spelling ("Credential Access"); see [`crate::mitre`].
    pub mitre_tactics: Vec<String>,
    /// ATT&CK technique ids ("T1003.001").
    pub mitre_techniques: Vec<String>,
    pub action: Option<ActionTaken>,
    pub source_verdict: Option<SourceVerdict>,
    /// The source's confidence that the detection is real, 0..=100.
    pub confidence: Option<u8>,
    /// Labels the source attached (threat names, rule tags, categories).
    pub tags: Vec<String>,
    /// The vendor marks the alert as a generated sample (a test of the integration). This
    /// says what the alert is, not that the activity is benign.
    pub generated_sample: bool,
    /// The people who handle the alert at the source (an incident's owner or assignee):
    /// named by the alert, but not parties to the activity it reports.
    pub handlers: Vec<String>,
    pub process: Option<ProcessSignal>,
    pub sign_in: Option<SignInSignal>,
    pub email: Option<EmailSignal>,
    pub network: Option<NetworkSignal>,
    pub cloud: Option<CloudSignal>,
    pub secret: Option<SecretSignal>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severity_words_from_many_tools_land_on_one_scale() {
        let cases = [
            ("HIGH", Some(SeverityLevel::High)),
            ("Sev 3", Some(SeverityLevel::High)),
            ("moderate", Some(SeverityLevel::Medium)),
            ("informational", Some(SeverityLevel::Informational)),
            ("critical", Some(SeverityLevel::Critical)),
            ("  low ", Some(SeverityLevel::Low)),
            ("banana", None),
        ];
        for (text, expected) in cases {
            assert_eq!(SeverityLevel::parse(text), expected, "{text}");
        }
    }

    #[test]
    fn scores_map_by_their_fraction_of_the_scale() {
        assert_eq!(SeverityLevel::from_score(8.0, 10.0), SeverityLevel::High);
        assert_eq!(
            SeverityLevel::from_score(95.0, 100.0),
            SeverityLevel::Critical
        );
        assert_eq!(
            SeverityLevel::from_score(0.0, 100.0),
            SeverityLevel::Informational
        );
        assert_eq!(SeverityLevel::from_score(5.0, 10.0), SeverityLevel::Medium);
    }

    #[test]
    fn signals_written_before_a_field_existed_still_read() {
        let signals: Signals = serde_json::from_str(r#"{"category": "endpoint"}"#).unwrap();
        assert_eq!(signals.category, Some(AlertCategory::Endpoint));
        assert!(signals.process.is_none());
    }
}
