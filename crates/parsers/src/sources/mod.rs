//! One module per security tool: each knows its tool's wire format(s) and nothing else.

// --- Cloud and application security ---
pub(crate) mod falco;
pub(crate) mod gcp_scc;
pub(crate) mod github_secret_scanning;
pub(crate) mod guardduty;
pub(crate) mod jamf_protect;
pub(crate) mod security_hub;

// --- Microsoft ---
pub(crate) mod microsoft;

// --- Endpoint and XDR ---
pub(crate) mod cortex_xdr;
pub(crate) mod crowdstrike;
pub(crate) mod elastic;
mod endpoint_common;
pub(crate) mod sentinelone;
pub(crate) mod wazuh;

// --- Identity and SIEM ---
pub(crate) mod google_secops;
pub(crate) mod google_workspace;
pub(crate) mod okta;
pub(crate) mod splunk;

// --- Network and email ---
pub(crate) mod proofpoint_tap;
pub(crate) mod sublime;
pub(crate) mod suricata;
pub(crate) mod zeek;

// --- Anything else ---
pub(crate) mod generic;
