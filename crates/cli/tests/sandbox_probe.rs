//! The script sandbox as the real `sleuth` binary starts it, with the default settings: its
//! start-up probe runs a script allowed the network through `sleuth sandbox-exec` (this
//! binary, with its own allocator, under the run's default limits), and the egress guard
//! must be found working. The sandbox crate's own tests use a small launcher of their own,
//! which is why they could not see the guard fail to start under the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

#[path = "support/sleuth_process.rs"]
mod sleuth_process;

use sleuth_process::{free_port, http, start};

#[test]
fn the_default_sandbox_of_the_binary_has_its_egress_guard() {
    let directory = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", directory.path().join("sleuth.db").display());
    let port = free_port();
    let (_server, _key) = start(&database, port, &[]);
    let (status, body) = http(port, "GET", "/readyz", "", None).unwrap();
    assert_eq!(status, 200, "{body}");
    let ready: serde_json::Value = serde_json::from_str(&body).unwrap();
    let layers = ready["sandbox"]["layers"]
        .as_array()
        .expect("the probe's layers");
    let layer = |name: &str| {
        layers
            .iter()
            .find(|layer| layer["layer"] == name)
            .cloned()
            .unwrap_or_default()
    };
    if layer("seccomp")["available"] != true {
        // Without seccomp there is no guard to start; CI runs as root, where there is.
        eprintln!(
            "SKIPPED: seccomp is not available here: {}",
            layer("seccomp")
        );
        return;
    }
    let guard = layer("egress-guard");
    assert_eq!(guard["available"], true, "the egress guard: {guard}");
}
