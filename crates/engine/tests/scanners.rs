//! Scanners that have no fixed address (docs/context.md `[[scanners]]`): an in-cluster
//! scanner named by its Kubernetes namespace or cluster, a cloud scanner by the identity it
//! acts as, each only inside its windows.

mod support;

use serde_json::{Value, json};
use sleuth_domain::Outcome;
use support::investigate;

const CONTEXT: &str = r#"
[[scanners]]
name = "In-cluster vulnerability scanner"
namespaces = ["sec-scan"]
windows = ["Tue 01:00-05:00"]

[[scanners]]
name = "Cloud posture scanner"
cloud_identities = ["posture-scan@sec-tools.iam.gserviceaccount.com"]
windows = ["Mon-Fri 22:00-02:00"]

[[scanners]]
name = "Security tooling cluster"
clusters = ["sec-tools-eks"]
windows = ["Tue 01:00-05:00"]

[[scanners]]
name = "Production in-cluster scanner"
clusters = ["prod-eks-1"]
namespaces = ["sec-scanning"]
"#;

/// Falco: nmap sweeping a subnet from a pod of `namespace`, at `time`.
fn sweep(namespace: &str, time: &str) -> Value {
    json!({
        "uuid": format!("a1-{namespace}-{time}"),
        "output": "Network scanning tool run in a container: nmap sweep of 10.60.0.0/24",
        "priority": "Warning",
        "rule": "Network scan tool launched in container",
        "time": time,
        "source": "syscall",
        "hostname": "k8s-node-03",
        "tags": ["container", "network", "mitre_discovery", "T1046"],
        "output_fields": {
            "container.id": "3f9a1c7e5b2d",
            "container.name": "scanner",
            "k8s.ns.name": namespace,
            "k8s.pod.name": "scanner-6c8d9",
            "proc.name": "nmap",
            "proc.cmdline": "nmap -sS -p 1-1024 10.60.0.0/24",
            "user.name": "root"
        }
    })
}

#[test]
fn a_scanner_is_known_by_its_namespace_or_identity_inside_its_windows() {
    // Tuesday 2026-03-31 02:10 UTC: inside the namespace's window.
    let inside = investigate(&sweep("sec-scan", "2026-03-31T02:10:00Z"), CONTEXT);
    assert_eq!(inside.outcome, Outcome::FalseAlert, "{}", inside.conclusion);
    // Another namespace: not the scanner.
    let other = investigate(&sweep("payments", "2026-03-31T02:10:00Z"), CONTEXT);
    assert_ne!(other.outcome, Outcome::FalseAlert, "{}", other.conclusion);
    // Wednesday afternoon: the scanner's namespace, outside its window.
    let outside = investigate(&sweep("sec-scan", "2026-04-01T14:00:00Z"), CONTEXT);
    assert_ne!(
        outside.outcome,
        Outcome::FalseAlert,
        "{}",
        outside.conclusion
    );

    // A window past midnight: Friday 22:00 to Saturday 02:00 counts, Saturday night not.
    let probe = |time: &str| {
        json!({"title": "Port scan of the production VPC", "alert_id": format!("S-{time}"),
               "created_at": time, "user": "posture-scan@sec-tools.iam.gserviceaccount.com",
               "dest_ip": "10.60.0.5"})
    };
    let friday_night = investigate(&probe("2026-04-04T01:30:00Z"), CONTEXT);
    assert_eq!(
        friday_night.outcome,
        Outcome::FalseAlert,
        "{}",
        friday_night.conclusion
    );
    let saturday_night = investigate(&probe("2026-04-05T01:30:00Z"), CONTEXT);
    assert_ne!(
        saturday_night.outcome,
        Outcome::FalseAlert,
        "{}",
        saturday_night.conclusion
    );
}

#[test]
fn a_window_or_a_cluster_the_checker_cannot_read_is_refused() {
    for (field, value, problem) in [
        ("windows", "Tuesday mornings", "window"),
        ("windows", "Tue 25:00-26:00", "window"),
        ("windows", "Xyz 01:00-02:00", "window"),
        ("clusters", "prod eks", "is not a cluster name"),
        ("clusters", "", "is not a cluster name"),
        (
            "clusters",
            "arn:aws:eks:eu-west-2:1:cluster/x",
            "is not a cluster name",
        ),
    ] {
        let text = format!("[[scanners]]\nname = \"s\"\n{field} = [\"{value}\"]\n");
        let refused = sleuth_engine::Context::build(
            sleuth_engine::ContextDocument::from_toml(&text).expect("reads"),
        )
        .expect_err("refused")
        .to_string();
        assert!(
            refused.contains("scanners 's'") && refused.contains(problem),
            "{value}: {refused}"
        );
    }
}

/// GuardDuty: a workload of `namespace` in the EKS cluster `cluster` enumerating the
/// Kubernetes API, at `time`.
fn enumeration(cluster: &str, namespace: &str, time: &str) -> Value {
    json!({"schemaVersion": "2.0", "accountId": "111122223333", "region": "eu-west-2",
        "id": format!("f-{cluster}-{namespace}-{time}"),
        "arn": "arn:aws:guardduty:eu-west-2:111122223333:detector/d/finding/f1",
        "type": "Discovery:Kubernetes/SuccessfulAnonymousAccess", "severity": 5,
        "createdAt": time, "updatedAt": time,
        "title": "Kubernetes API enumeration scan from a workload",
        "description": "A workload listed every secret and pod of the cluster.",
        "resource": {"resourceType": "EKSCluster",
            "eksClusterDetails": {"name": cluster, "arn": format!("arn:aws:eks:eu-west-2:111122223333:cluster/{cluster}")},
            "kubernetesDetails": {"kubernetesWorkloadDetails": {"name": "enumerator", "type": "jobs", "namespace": namespace}}},
        "service": {"serviceName": "guardduty", "count": 1}})
}

#[test]
fn a_scanner_is_known_by_its_cluster_inside_its_windows() {
    let tuesday = "2026-03-31T02:10:00.000Z";
    let inside = investigate(&enumeration("sec-tools-eks", "jobs", tuesday), CONTEXT);
    assert_eq!(inside.outcome, Outcome::FalseAlert, "{}", inside.conclusion);
    assert!(
        inside.conclusion.contains("cluster sec-tools-eks"),
        "{}",
        inside.conclusion
    );
    // Another cluster is not the scanner's.
    let other = investigate(&enumeration("staging-eks", "jobs", tuesday), CONTEXT);
    assert_ne!(other.outcome, Outcome::FalseAlert, "{}", other.conclusion);
    // Wednesday afternoon: the scanner's cluster, outside its window.
    let outside = investigate(
        &enumeration("sec-tools-eks", "jobs", "2026-04-01T14:00:00.000Z"),
        CONTEXT,
    );
    assert_ne!(
        outside.outcome,
        Outcome::FalseAlert,
        "{}",
        outside.conclusion
    );
}

#[test]
fn a_scanner_with_clusters_and_namespaces_is_those_namespaces_of_those_clusters() {
    let time = "2026-03-31T02:10:00.000Z";
    let ours = investigate(&enumeration("prod-eks-1", "sec-scanning", time), CONTEXT);
    assert_eq!(ours.outcome, Outcome::FalseAlert, "{}", ours.conclusion);
    // The same namespace in another cluster, another namespace in the cluster: not it.
    for (cluster, namespace) in [("staging-eks", "sec-scanning"), ("prod-eks-1", "payments")] {
        let result = investigate(&enumeration(cluster, namespace, time), CONTEXT);
        assert_ne!(
            result.outcome,
            Outcome::FalseAlert,
            "{cluster}/{namespace}: {}",
            result.conclusion
        );
    }
}
