//! The stream has the shape the benchmarks rely on, and every alert of it is one Sleuth
//! reads as its own alert.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use sleuth_workload::{Alert, Settings, Workload};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus/alerts")
}

fn stream(settings: Settings, count: usize) -> Vec<Alert> {
    Workload::new(&corpus(), settings)
        .unwrap()
        .take(count)
        .collect()
}

#[test]
fn the_same_seed_gives_the_same_alerts_and_another_seed_others() {
    let bodies = |seed| -> Vec<String> {
        stream(
            Settings {
                seed,
                ..Settings::default()
            },
            500,
        )
        .iter()
        .map(|alert| alert.body.to_string())
        .collect()
    };
    assert_eq!(bodies(7), bodies(7));
    assert_ne!(bodies(7), bodies(8));
}

#[test]
fn sources_rules_tenants_addresses_and_sizes_are_mixed_like_a_real_day() {
    let settings = Settings::default();
    let alerts = stream(settings.clone(), 20_000);
    let sources: BTreeSet<&str> = alerts.iter().map(|alert| alert.source.as_str()).collect();
    assert_eq!(
        sources.len(),
        25,
        "the 24 vendor sources and generic: {sources:?}"
    );
    let mut per_rule: BTreeMap<usize, usize> = BTreeMap::new();
    for rule in alerts.iter().filter_map(|alert| alert.rule) {
        *per_rule.entry(rule).or_default() += 1;
    }
    assert!(
        per_rule.len() > 1_000,
        "a long tail of rules: {}",
        per_rule.len()
    );
    let top = per_rule.values().max().copied().unwrap_or(0);
    let singles = per_rule.values().filter(|count| **count == 1).count();
    assert!(
        top > 200 && singles > 300,
        "Zipf: top {top}, seen once {singles}"
    );
    let tenants: BTreeSet<usize> = alerts.iter().map(|alert| alert.tenant).collect();
    assert!(tenants.len() >= 45 && tenants.iter().all(|tenant| *tenant < 50));
    let everywhere = alerts
        .iter()
        .filter(|alert| {
            alert.body["src_ip"]
                .as_str()
                .is_some_and(|ip| ip == "10.0.8.8")
        })
        .count();
    assert!(everywhere > 250, "a proxy in many alerts: {everywhere}");
    let sizes: Vec<usize> = alerts
        .iter()
        .map(|alert| alert.body.to_string().len())
        .collect();
    let small = sizes.iter().filter(|size| **size < 2_048).count();
    let large = sizes.iter().filter(|size| **size > 40 * 1_024).count();
    assert!(
        sizes.iter().all(|size| *size >= 900 && *size <= 60 * 1_024),
        "{:?}",
        sizes.iter().max()
    );
    assert!(
        small > 1_000 && large > 500,
        "1 KB to 50 KB: {small} small, {large} large"
    );
}

#[test]
fn storms_are_one_rule_of_one_tenant_interleaved_with_the_rest() {
    let settings = Settings {
        storm_every: 1_000,
        storm_size: 300,
        ..Settings::default()
    };
    let alerts = stream(settings, 1_700);
    let storm: Vec<&Alert> = alerts.iter().filter(|alert| alert.storm).collect();
    assert_eq!(storm.len(), 300);
    let rules: BTreeSet<Option<usize>> = storm.iter().map(|alert| alert.rule).collect();
    let tenants: BTreeSet<usize> = storm.iter().map(|alert| alert.tenant).collect();
    assert_eq!((rules.len(), tenants.len()), (1, 1));
    assert!(alerts[..1_000].iter().all(|alert| !alert.storm));
    assert!(
        alerts[1_000..1_600].iter().any(|alert| !alert.storm),
        "interleaved"
    );
}

/// Every alert parses; none repeats another's identity; and a generic rule is one alert
/// type whatever host, user or address its title names.
#[test]
fn every_alert_is_its_own_and_a_rule_is_one_type() {
    let settings = Settings {
        max_bytes: 2_048,
        ..Settings::default()
    };
    let now = chrono::Utc::now();
    let mut tickets = BTreeSet::new();
    let mut types_by_rule: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    for alert in stream(settings, 6_000) {
        let parsed = sleuth_parsers::parse_alert(alert.schema_key.as_deref(), &alert.body, now)
            .unwrap_or_else(|error| panic!("{} #{}: {error}", alert.source, alert.sequence));
        if let Some(ticket) = parsed.origin_ticket_id {
            assert!(
                tickets.insert((parsed.schema_key.clone(), ticket.clone())),
                "{} #{} repeats ticket {ticket}",
                alert.source,
                alert.sequence
            );
        }
        if let Some(rule) = alert.rule {
            types_by_rule
                .entry(rule)
                .or_default()
                .insert(parsed.alert_type);
        }
    }
    let split: Vec<_> = types_by_rule
        .iter()
        .filter(|(_, types)| types.len() > 1)
        .take(3)
        .collect();
    assert!(split.is_empty(), "rules with several types: {split:?}");
}
