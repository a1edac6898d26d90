//! The dashboard (`/dashboard`, any signed-in role): what the user's tenant unions saw in
//! the last days, as server-rendered SVG (no script, no chart library).
//!
//! Every figure comes from one bounded read, `AnalystStore::dashboard_sample`, scoped to
//! the user's tenant unions like the queue. The window is the last `days` days (7, 14, 30
//! or 90; 14 unless asked) by the time Sleuth received each alert. How each figure is
//! computed, and what bounds its cost:
//!
//! - **Alerts per day by outcome.** The investigations received in the window, per UTC
//!   day of receipt, split by the engine's verdict (concluded), "Stopped" (error) and
//!   "Open" (queued or running). Read newest first, at most `PER_STATE_LIMIT` per state;
//!   when a state had more, the page says the older days are partial.
//! - **Priority mix.** The concluded investigations of the sample, by the engine's
//!   priority.
//! - **Time to conclusion.** For concluded investigations of the sample: from the alert
//!   (the time its source gives) and from its receipt, to the conclusion; the median and
//!   the 90th percentile by nearest rank.
//! - **Analyst agreement.** Of the sampled investigations an analyst gave feedback on,
//!   the share whose outcome is the engine's verdict (feedback without an outcome of its
//!   own keeps the verdict, and agrees), and the corrections by verdict and outcome.
//! - **Top entities, assets and sources.** Entities (assets: hosts and cloud resources;
//!   entities: every other kind) counted once per alert over the alerts of the newest
//!   `ENTITY_ALERT_LIMIT` concluded investigations in the window; sources over the whole
//!   sample. The `TOP` most frequent of each.
//! - **Queue depth.** Queued and running investigations now, whatever the window,
//!   counted up to `QUEUE_COUNT_LIMIT` each ("at least" beyond).
//!
//! So a view reads at most 4 × `PER_STATE_LIMIT` investigations, `ENTITY_ALERT_LIMIT`
//! alerts and 2 × `QUEUE_COUNT_LIMIT` index entries, on the indexes by state and time of
//! receipt, however many investigations the database holds.
//!
//! Source labels and entity values came from alerts: they are escaped maud splices, in
//! the SVG as in the tables.

use std::collections::{BTreeMap, HashMap};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{Duration, NaiveDate};
use maud::{Markup, html};
use serde::Deserialize;
use sleuth_domain::{EntityKind, InvestigationStatus, Outcome, Priority, Role, Timestamp};
use sleuth_store::{DashboardQuery, DashboardSample};

use crate::console::pages::{api_error_page, html_response, outcome_label, query_string, shell};
use crate::console::session::SignedIn;
use crate::state::AppState;

/// The windows offered, in days.
const WINDOWS: [i64; 4] = [7, 14, 30, 90];
const DEFAULT_DAYS: i64 = 14;
/// The most investigations read per state.
const PER_STATE_LIMIT: u32 = 10_000;
/// The most alerts whose entities are counted.
const ENTITY_ALERT_LIMIT: u32 = 2_000;
/// Queue depth is counted up to this many per state.
const QUEUE_COUNT_LIMIT: u32 = 100_000;
/// How many of the most frequent entities, assets and sources are shown.
const TOP: usize = 10;

/// The bars of a day, in stacking order: the verdicts, then stopped and open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Bucket {
    Verdict(Outcome),
    Stopped,
    Open,
}

const BUCKETS: [Bucket; 7] = [
    Bucket::Verdict(Outcome::BreachedConfirmed),
    Bucket::Verdict(Outcome::BreachedSuspicious),
    Bucket::Verdict(Outcome::Incomplete),
    Bucket::Verdict(Outcome::FalseAlert),
    Bucket::Verdict(Outcome::Ignored),
    Bucket::Stopped,
    Bucket::Open,
];

impl Bucket {
    fn label(self) -> &'static str {
        match self {
            Bucket::Verdict(outcome) => outcome_label(outcome),
            Bucket::Stopped => "Stopped",
            Bucket::Open => "Open",
        }
    }

    /// The SVG class of its bars (colours in console.css).
    fn class(self) -> &'static str {
        match self {
            Bucket::Verdict(Outcome::BreachedConfirmed) => "bar confirmed",
            Bucket::Verdict(Outcome::BreachedSuspicious) => "bar suspicious",
            Bucket::Verdict(Outcome::FalseAlert) => "bar false-alert",
            Bucket::Verdict(Outcome::Incomplete) => "bar incomplete",
            Bucket::Verdict(Outcome::Ignored) => "bar ignored",
            Bucket::Stopped => "bar stopped",
            Bucket::Open => "bar open",
        }
    }
}

/// The median and 90th percentile of a set of durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spread {
    pub median: Duration,
    pub p90: Duration,
    pub count: usize,
}

/// Everything the page shows, computed from the sample.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figures {
    /// Every day of the window, oldest first, with its count per bucket.
    pub days: Vec<(NaiveDate, BTreeMap<Bucket, u64>)>,
    pub priorities: Vec<(Option<Priority>, u64)>,
    pub alert_to_conclusion: Option<Spread>,
    pub receipt_to_conclusion: Option<Spread>,
    /// Investigations with feedback, and how many of them agree with the verdict.
    pub reviewed: u64,
    pub agreed: u64,
    /// (verdict, the analyst's outcome) → how many, for the disagreements.
    pub corrections: Vec<((Option<Outcome>, Outcome), u64)>,
    pub top_entities: Vec<(String, u64)>,
    pub top_assets: Vec<(String, u64)>,
    pub top_sources: Vec<(String, u64)>,
    pub sampled: usize,
    pub truncated: bool,
    pub entity_alerts: u64,
    pub queued: u64,
    pub running: u64,
}

/// The nearest-rank percentile `percent` of sorted values.
fn nearest_rank(sorted: &[Duration], percent: usize) -> Duration {
    let rank = (percent * sorted.len()).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

fn spread(mut values: Vec<Duration>) -> Option<Spread> {
    if values.is_empty() {
        return None;
    }
    values.sort();
    Some(Spread {
        median: nearest_rank(&values, 50),
        p90: nearest_rank(&values, 90),
        count: values.len(),
    })
}

/// The `TOP` most frequent, most first; ties by name, so the page is stable.
fn top(counts: HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut counted: Vec<(String, u64)> = counts.into_iter().collect();
    counted.sort_by(|(left_name, left), (right_name, right)| {
        right.cmp(left).then_with(|| left_name.cmp(right_name))
    });
    counted.truncate(TOP);
    counted
}

fn is_asset(kind: EntityKind) -> bool {
    matches!(kind, EntityKind::Host | EntityKind::CloudResource)
}

/// The figures of a sample for the `days` days up to `now`.
pub(crate) fn figures(sample: &DashboardSample, now: Timestamp, days: i64) -> Figures {
    let today = now.date_naive();
    let mut per_day: BTreeMap<NaiveDate, BTreeMap<Bucket, u64>> = (0..days)
        .map(|back| (today - Duration::days(back), BTreeMap::new()))
        .collect();
    let mut priorities: BTreeMap<Option<Priority>, u64> = BTreeMap::new();
    let (mut from_alert, mut from_receipt) = (Vec::new(), Vec::new());
    let (mut reviewed, mut agreed) = (0, 0);
    let mut corrections: BTreeMap<(Option<Outcome>, Outcome), u64> = BTreeMap::new();
    let mut sources: HashMap<String, u64> = HashMap::new();
    for item in &sample.items {
        let bucket = match (item.status, item.outcome) {
            (InvestigationStatus::Success, Some(outcome)) => Bucket::Verdict(outcome),
            (InvestigationStatus::Error, _) => Bucket::Stopped,
            (InvestigationStatus::Success, None) => Bucket::Verdict(Outcome::Incomplete),
            _ => Bucket::Open,
        };
        if let Some(day) = per_day.get_mut(&item.received_at.date_naive()) {
            *day.entry(bucket).or_default() += 1;
        }
        *sources.entry(item.direct_source_label.clone()).or_default() += 1;
        if item.status != InvestigationStatus::Success {
            continue;
        }
        *priorities.entry(item.priority).or_default() += 1;
        if let Some(concluded) = item.concluded_at {
            from_alert.push((concluded - item.alert_time).max(Duration::zero()));
            from_receipt.push((concluded - item.received_at).max(Duration::zero()));
        }
        if let Some(chosen) = item.feedback {
            reviewed += 1;
            match chosen {
                Some(outcome) if Some(outcome) != item.outcome => {
                    *corrections.entry((item.outcome, outcome)).or_default() += 1;
                }
                _ => agreed += 1,
            }
        }
    }
    let (mut entities, mut assets) = (HashMap::new(), HashMap::new());
    for entity in &sample.entities {
        let counts = if is_asset(entity.kind) {
            &mut assets
        } else {
            &mut entities
        };
        *counts
            .entry(format!("{}: {}", entity.kind.as_str(), entity.value))
            .or_default() += 1;
    }
    let mut corrections: Vec<_> = corrections.into_iter().collect();
    corrections.sort_by(|(left_key, left), (right_key, right)| {
        right.cmp(left).then_with(|| left_key.cmp(right_key))
    });
    Figures {
        days: per_day.into_iter().collect(),
        priorities: [
            Some(Priority::Urgent),
            Some(Priority::Notable),
            Some(Priority::Informational),
            None,
        ]
        .into_iter()
        .map(|priority| (priority, priorities.get(&priority).copied().unwrap_or(0)))
        .collect(),
        alert_to_conclusion: spread(from_alert),
        receipt_to_conclusion: spread(from_receipt),
        reviewed,
        agreed,
        corrections,
        top_entities: top(entities),
        top_assets: top(assets),
        top_sources: top(sources),
        sampled: sample.items.len(),
        truncated: sample.truncated,
        entity_alerts: sample.entity_alerts,
        queued: sample.queued,
        running: sample.running,
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct DashboardParams {
    days: Option<String>,
}

pub(crate) async fn page(
    State(state): State<AppState>,
    signed_in: SignedIn,
    Query(params): Query<DashboardParams>,
) -> Response {
    let caller = signed_in.caller();
    if let Err(error) = caller.require(Role::RestrictedReadOnly) {
        return api_error_page(error);
    }
    let days = params
        .days
        .and_then(|days| days.parse::<i64>().ok())
        .filter(|days| WINDOWS.contains(days))
        .unwrap_or(DEFAULT_DAYS);
    let now = chrono::Utc::now();
    // The window starts at the first midnight (UTC) of its oldest day.
    let since = (now.date_naive() - Duration::days(days - 1))
        .and_hms_opt(0, 0, 0)
        .map_or(now - Duration::days(days), |start| start.and_utc());
    let query = DashboardQuery {
        scope: caller.scope(),
        since,
        per_state_limit: PER_STATE_LIMIT,
        entity_alert_limit: ENTITY_ALERT_LIMIT,
        queue_count_limit: QUEUE_COUNT_LIMIT,
    };
    let sample = match state.store() {
        Ok(store) => match store.dashboard_sample(&query).await {
            Ok(sample) => sample,
            Err(error) => return api_error_page(error.into()),
        },
        Err(error) => return api_error_page(error),
    };
    let figures = figures(&sample, now, days);
    html_response(
        StatusCode::OK,
        shell("Dashboard", Some(&signed_in), body(&figures, days)),
    )
}

fn body(figures: &Figures, days: i64) -> Markup {
    html! {
        section.dashboard {
            h1 { "Dashboard" }
            nav.windows {
                "The last "
                @for window in WINDOWS {
                    @if window == days {
                        strong.window { (window) " days" }
                    } @else {
                        a.window href=(format!("/dashboard?{}", query_string([("days", window.to_string().as_str())]))) { (window) " days" }
                    }
                    " "
                }
                span.meta { "· " (figures.sampled) " investigations received" }
            }
            @if figures.truncated {
                p.notice #truncated { "More investigations arrived in this window than the dashboard reads (" (PER_STATE_LIMIT) " per state, newest first): the older days show only part of them." }
            }
        }
        div.dashboard-grid {
            section #per-day.wide {
                h2 { "Alerts per day by outcome" }
                (per_day_chart(&figures.days))
            }
            section #queue-depth {
                h2 { "Queue depth" }
                p.big { span #queued { (count_at_most(figures.queued)) } " queued · " span #running { (count_at_most(figures.running)) } " running" }
                p.meta { "Now, of every day." }
            }
            section #priority-mix {
                h2 { "Priority mix" }
                (bars(&figures.priorities.iter().map(|(priority, count)| (priority.map_or("none", Priority::as_str).to_string(), *count, priority_bar_class(*priority))).collect::<Vec<_>>()))
            }
            section #time-to-conclusion {
                h2 { "Time to conclusion" }
                table.figures {
                    thead { tr { th {} th { "Median" } th { "90th percentile" } th { "Of" } } }
                    tbody {
                        (spread_row("From the alert", figures.alert_to_conclusion))
                        (spread_row("From its receipt", figures.receipt_to_conclusion))
                    }
                }
            }
            section #agreement {
                h2 { "Analyst agreement" }
                @if figures.reviewed == 0 {
                    p { "No feedback in this window yet." }
                } @else {
                    p.big #agreement-share { (percent(figures.agreed, figures.reviewed)) " %" }
                    p.meta { (figures.agreed) " of " (figures.reviewed) " reviewed investigations agree with the verdict." }
                    @if !figures.corrections.is_empty() {
                        table.figures #corrections {
                            thead { tr { th { "Verdict" } th { "Analyst's outcome" } th { "How many" } } }
                            tbody {
                                @for ((verdict, chosen), count) in &figures.corrections {
                                    tr { td { (verdict.map_or("none", outcome_label)) } td { (outcome_label(*chosen)) } td { (count) } }
                                }
                            }
                        }
                    }
                }
            }
            (top_list("top-entities", "Top entities", &figures.top_entities, figures.entity_alerts, "alerts"))
            (top_list("top-assets", "Top assets", &figures.top_assets, figures.entity_alerts, "alerts"))
            (top_list("top-sources", "Top sources", &figures.top_sources, figures.sampled as u64, "investigations"))
        }
    }
}

fn count_at_most(count: u64) -> String {
    if count >= u64::from(QUEUE_COUNT_LIMIT) {
        format!("at least {count}")
    } else {
        count.to_string()
    }
}

fn percent(part: u64, whole: u64) -> u64 {
    (part * 100 + whole / 2) / whole.max(1)
}

fn priority_bar_class(priority: Option<Priority>) -> &'static str {
    match priority {
        Some(Priority::Urgent) => "bar urgent",
        Some(Priority::Notable) => "bar notable",
        Some(Priority::Informational) => "bar informational",
        None => "bar open",
    }
}

/// A duration as people read it: seconds, minutes, hours or days.
fn readable(duration: Duration) -> String {
    let seconds = duration.num_seconds();
    match seconds {
        ..=119 => format!("{seconds} s"),
        120..=7_199 => format!("{} min", seconds / 60),
        7_200..=172_799 => format!("{:.1} h", seconds as f64 / 3_600.0),
        _ => format!("{:.1} days", seconds as f64 / 86_400.0),
    }
}

fn spread_row(label: &str, spread: Option<Spread>) -> Markup {
    html! {
        tr {
            th { (label) }
            @if let Some(spread) = spread {
                td.median { (readable(spread.median)) } td.p90 { (readable(spread.p90)) } td { (spread.count) }
            } @else {
                td { "—" } td { "—" } td { "0" }
            }
        }
    }
}

/// Horizontal bars, one per (label, count, class).
fn bars(rows: &[(String, u64, &'static str)]) -> Markup {
    let most = rows
        .iter()
        .map(|(_, count, _)| *count)
        .max()
        .unwrap_or(0)
        .max(1);
    let row_height = 26;
    let height = row_height * rows.len().max(1);
    html! {
        svg.chart viewBox=(format!("0 0 400 {height}")) role="img" aria-label="bars" {
            @for (index, (label, count, class)) in rows.iter().enumerate() {
                @let y = index * row_height;
                @let width = (*count as f64 / most as f64 * 220.0).round();
                text.label x="0" y=(y + 17) { (label) }
                rect class=(*class) x="120" y=(y + 4) width=(width) height="18" { title { (label) ": " (count) } }
                text.value x=(126.0 + width) y=(y + 17) { (count) }
            }
        }
    }
}

/// A day's bars stacked from `base` upwards: (bucket, count, top, height).
fn stacked(counts: &BTreeMap<Bucket, u64>, base: f64, scale: f64) -> Vec<(Bucket, u64, f64, f64)> {
    let mut top = base;
    BUCKETS
        .iter()
        .filter_map(|bucket| {
            let count = counts.get(bucket).copied().filter(|count| *count > 0)?;
            let tall = count as f64 * scale;
            top -= tall;
            Some((*bucket, count, top, tall))
        })
        .collect()
}

/// The stacked bars of the days, with a legend.
fn per_day_chart(days: &[(NaiveDate, BTreeMap<Bucket, u64>)]) -> Markup {
    let most = days
        .iter()
        .map(|(_, counts)| counts.values().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let (width, height, left, bottom) = (760.0, 220.0, 40.0, 24.0);
    let slot = (width - left) / days.len().max(1) as f64;
    let bar = (slot * 0.7).max(1.0);
    let scale = (height - bottom - 10.0) / most as f64;
    let label_every = days.len().div_ceil(10).max(1);
    html! {
        svg.chart.per-day viewBox=(format!("0 0 {width} {height}")) role="img" aria-label="Alerts per day by outcome" {
            line.axis x1=(left) y1=(height - bottom) x2=(width) y2=(height - bottom) {}
            text.value x="0" y="14" { (most) }
            text.value x="0" y=(height - bottom) { "0" }
            @for (index, (day, counts)) in days.iter().enumerate() {
                @let x = left + index as f64 * slot + (slot - bar) / 2.0;
                g.day data-day=(day.to_string()) data-total=(counts.values().sum::<u64>()) {
                    @for (bucket, count, top, tall) in stacked(counts, height - bottom, scale) {
                        rect class=(bucket.class()) x=(format!("{x:.1}")) y=(format!("{top:.1}")) width=(format!("{bar:.1}")) height=(format!("{tall:.1}")) {
                            title { (day) " · " (bucket.label()) ": " (count) }
                        }
                    }
                    @if index % label_every == 0 {
                        text.label x=(format!("{x:.1}")) y=(height - 6.0) { (day.format("%m-%d")) }
                    }
                }
            }
        }
        ul.legend {
            @for bucket in BUCKETS {
                li { svg.swatch viewBox="0 0 10 10" { rect class=(bucket.class()) width="10" height="10" {} } " " (bucket.label()) }
            }
        }
    }
}

fn top_list(id: &str, title: &str, rows: &[(String, u64)], of: u64, unit: &str) -> Markup {
    html! {
        section id=(id) {
            h2 { (title) }
            @if rows.is_empty() {
                p { "None in this window." }
            } @else {
                ol.top {
                    @for (name, count) in rows {
                        li { span.name { (name) } " " span.count { (count) } }
                    }
                }
                p.meta { "Counted over " (of) " " (unit) "." }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use sleuth_domain::Entity;
    use sleuth_store::DashboardItem;

    fn at(day: u32, hour: u32) -> Timestamp {
        chrono::Utc
            .with_ymd_and_hms(2026, 3, day, hour, 0, 0)
            .single()
            .expect("a valid time")
    }

    fn item(status: InvestigationStatus, outcome: Option<Outcome>, day: u32) -> DashboardItem {
        DashboardItem {
            status,
            outcome,
            priority: outcome.map(|_| Priority::Notable),
            received_at: at(day, 10),
            alert_time: at(day, 9),
            concluded_at: outcome.map(|_| at(day, 11)),
            feedback: None,
            direct_source_label: "EDR".into(),
        }
    }

    #[test]
    fn nearest_rank_percentiles() {
        let check = |values: &[i64], median: i64, p90: i64| {
            let spread =
                spread(values.iter().map(|s| Duration::seconds(*s)).collect()).expect("values");
            assert_eq!(
                (spread.median.num_seconds(), spread.p90.num_seconds()),
                (median, p90),
                "{values:?}"
            );
        };
        check(&[5], 5, 5);
        check(&[1, 2], 1, 2);
        check(&[3, 1, 2], 2, 3);
        check(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 5, 9);
        check(&(1..=100).collect::<Vec<_>>(), 50, 90);
        assert_eq!(spread(Vec::new()), None);
    }

    #[test]
    fn days_buckets_agreement_and_tops_follow_the_sample() {
        let mut agreed = item(InvestigationStatus::Success, Some(Outcome::FalseAlert), 10);
        agreed.feedback = Some(Some(Outcome::FalseAlert));
        let mut kept = item(InvestigationStatus::Success, Some(Outcome::FalseAlert), 10);
        kept.feedback = Some(None);
        let mut corrected = item(
            InvestigationStatus::Success,
            Some(Outcome::BreachedSuspicious),
            9,
        );
        corrected.feedback = Some(Some(Outcome::FalseAlert));
        corrected.direct_source_label = "Firewall".into();
        let sample = DashboardSample {
            items: vec![
                agreed,
                kept,
                corrected,
                item(InvestigationStatus::Error, None, 9),
                item(InvestigationStatus::NotAsked, None, 10),
                // Before the window: counted in sources, not in a day.
                item(InvestigationStatus::Loading, None, 1),
            ],
            truncated: false,
            entities: vec![
                Entity::new(EntityKind::Host, "WKS-1"),
                Entity::new(EntityKind::Host, "WKS-1"),
                Entity::new(EntityKind::Ip, "203.0.113.5"),
                Entity::new(EntityKind::User, "ana"),
                Entity::new(EntityKind::User, "ana"),
            ],
            entity_alerts: 2,
            queued: 1,
            running: 1,
        };
        let figures = figures(&sample, at(10, 20), 3);
        let days: Vec<(String, Vec<(Bucket, u64)>)> = figures
            .days
            .iter()
            .map(|(day, counts)| {
                (
                    day.to_string(),
                    counts
                        .iter()
                        .map(|(bucket, count)| (*bucket, *count))
                        .collect(),
                )
            })
            .collect();
        assert_eq!(
            days,
            [
                ("2026-03-08".to_string(), vec![]),
                (
                    "2026-03-09".to_string(),
                    vec![
                        (Bucket::Verdict(Outcome::BreachedSuspicious), 1),
                        (Bucket::Stopped, 1)
                    ]
                ),
                (
                    "2026-03-10".to_string(),
                    vec![(Bucket::Verdict(Outcome::FalseAlert), 2), (Bucket::Open, 1)]
                ),
            ]
        );
        assert_eq!((figures.reviewed, figures.agreed), (3, 2));
        assert_eq!(
            figures.corrections,
            [((Some(Outcome::BreachedSuspicious), Outcome::FalseAlert), 1)]
        );
        assert_eq!(figures.priorities[1], (Some(Priority::Notable), 3));
        let spread = figures.alert_to_conclusion.expect("three concluded");
        assert_eq!((spread.median, spread.count), (Duration::hours(2), 3));
        assert_eq!(
            figures.receipt_to_conclusion.map(|spread| spread.p90),
            Some(Duration::hours(1))
        );
        assert_eq!(figures.top_assets, [("host: WKS-1".to_string(), 2)]);
        assert_eq!(
            figures.top_entities,
            [
                ("user: ana".to_string(), 2),
                ("ip: 203.0.113.5".to_string(), 1)
            ]
        );
        assert_eq!(
            figures.top_sources,
            [("EDR".to_string(), 5), ("Firewall".to_string(), 1)]
        );
    }

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(readable(Duration::seconds(42)), "42 s");
        assert_eq!(readable(Duration::minutes(30)), "30 min");
        assert_eq!(readable(Duration::hours(5)), "5.0 h");
        assert_eq!(readable(Duration::days(3)), "3.0 days");
    }
}
