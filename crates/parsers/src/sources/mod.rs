//! One module per security tool: each knows its tool's wire format(s) and nothing else.

// --- Cloud and application security ---
pub mod falco;
pub mod gcp_scc;
pub mod github_secret_scanning;
pub mod guardduty;
pub mod jamf_protect;
pub mod security_hub;

// --- Microsoft ---
pub mod microsoft;

// --- Endpoint and XDR ---
pub mod cortex_xdr;
pub mod crowdstrike;
pub mod elastic;
mod endpoint_common;
pub mod sentinelone;
pub mod wazuh;

// --- Identity and SIEM ---
pub mod google_secops;
pub mod google_workspace;
pub mod okta;
pub mod splunk;

// --- Network and email ---
pub mod proofpoint_tap;
pub mod sublime;
pub mod suricata;
pub mod zeek;

// --- Anything else ---
pub mod generic;
