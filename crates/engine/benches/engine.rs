//! The engine alone, on one core: investigations per second over the whole alert corpus
//! with the corpus context (issue 4's target: at least 20,000/s), parse + investigate
//! per second beside it, and the accuracy figures of the main corpus and of the held-out
//! corpus (corpus/holdout, with its own context), printed separately.
//!
//! `cargo bench -p sleuth-engine --bench engine` (BENCH_SECONDS to run longer).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]
// The one unsafe call reads this thread's CPU time from the kernel (getrusage).
#![allow(unsafe_code)]

/// The sleuth binary's allocator, so the figures are what the service does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use sleuth_domain::{History, ParsedAlert};
use sleuth_engine::scoring::{Label, Report, Scored};
use sleuth_engine::{Context, ContextDocument, EngineInput};

fn files_under(directory: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|found| found == extension) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// CPU time this thread has used: unlike wall time, it does not grow while the thread
/// waits for a core, so the rate holds on a loaded machine too.
fn thread_cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes a whole rusage into the pointer it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr());
        usage.assume_init()
    };
    let micros = |time: libc::timeval| {
        Duration::from_secs(u64::try_from(time.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(time.tv_usec).unwrap_or(0))
    };
    micros(usage.ru_utime) + micros(usage.ru_stime)
}

struct Case {
    name: String,
    source: String,
    raw: Value,
    parsed: ParsedAlert,
    label: Label,
}

/// The context of a corpus: every TOML file under `directory`, merged. Intel feeds are
/// not read here (the corpora name none).
fn context_of(directory: &Path) -> Context {
    let mut document = ContextDocument::default();
    for path in files_under(directory, "toml") {
        document
            .merge(ContextDocument::from_toml(&std::fs::read_to_string(path).unwrap()).unwrap());
    }
    Context::build(document).unwrap()
}

fn cases_of(directory: &Path, now: chrono::DateTime<chrono::Utc>) -> Vec<Case> {
    files_under(directory, "json")
        .into_iter()
        .map(|path| {
            let case: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let raw = case["alert"].clone();
            Case {
                name: path.strip_prefix(directory).unwrap().display().to_string(),
                source: path
                    .parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .to_string(),
                parsed: sleuth_parsers::parse_alert(None, &raw, now).unwrap(),
                label: Label::from_expect(&case["expect"]).unwrap(),
                raw,
            }
        })
        .collect()
}

/// Every case investigated once and scored against its label.
fn accuracy(cases: &[Case], context: &Context, now: chrono::DateTime<chrono::Utc>) -> Report {
    let history = History::default();
    let empty = Map::new();
    Report::new(
        cases
            .iter()
            .map(|case| {
                let result = sleuth_engine::investigate(
                    &EngineInput {
                        alert: &case.parsed,
                        raw: &empty,
                        history: &history,
                        facts: &sleuth_domain::Facts::default(),
                        strategies: &[],
                        now,
                    },
                    context,
                );
                Scored::new(
                    case.name.clone(),
                    case.source.clone(),
                    case.label.clone(),
                    &case.parsed,
                    &result,
                )
            })
            .collect(),
    )
}

fn print_figures(name: &str, report: &Report) {
    let figures = &report.figures;
    println!("\n{name} ({} alerts):", report.cases.len());
    for (what, tally) in [
        ("outcome right", figures.outcome),
        (
            "breach or suspicion called false",
            figures.breach_or_suspicion_called_false,
        ),
        ("priority at or above the floor", figures.priority_floor),
        ("MITRE tactic", figures.tactic),
        ("entity recall", figures.entity_recall),
    ] {
        println!("  {what:<34} {tally}");
    }
}

fn main() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    let context = context_of(&corpus.join("context"));
    let now = chrono::Utc::now();
    let cases = cases_of(&corpus.join("alerts"), now);
    let seconds: u64 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(3);
    let history = History::default();
    let empty = Map::new();

    // Accuracy, once per case: the main corpus and the held-out one, each with its context.
    let main_report = accuracy(&cases, &context, now);
    let holdout = corpus.join("holdout");
    let holdout_report = accuracy(
        &cases_of(&holdout.join("alerts"), now),
        &context_of(&holdout.join("context")),
        now,
    );

    // BENCH_ROUNDS=N: investigate every corpus alert N times and stop, for instruction
    // counting under callgrind (two runs with different N give the cost per investigation,
    // independent of the machine's load).
    if let Some(rounds) = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|text| text.parse::<u64>().ok())
    {
        for _ in 0..rounds {
            for case in &cases {
                let result = sleuth_engine::investigate(
                    &EngineInput {
                        alert: &case.parsed,
                        raw: &empty,
                        history: &history,
                        facts: &sleuth_domain::Facts::default(),
                        strategies: &[],
                        now,
                    },
                    &context,
                );
                std::hint::black_box(result);
            }
        }
        println!("{} investigations", rounds * cases.len() as u64);
        return;
    }

    // Engine alone: investigate pre-parsed alerts, round-robin, on this one thread.
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let cpu_started = thread_cpu_time();
    let mut investigations = 0_u64;
    while Instant::now() < deadline {
        for case in &cases {
            let result = sleuth_engine::investigate(
                &EngineInput {
                    alert: &case.parsed,
                    raw: &empty,
                    history: &history,
                    facts: &sleuth_domain::Facts::default(),
                    strategies: &[],
                    now,
                },
                &context,
            );
            std::hint::black_box(result);
            investigations += 1;
        }
    }
    let engine_rate = investigations as f64 / started.elapsed().as_secs_f64();
    let engine_cpu_rate = investigations as f64 / (thread_cpu_time() - cpu_started).as_secs_f64();

    // Parse + investigate: what a worker does with a stored raw alert.
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let cpu_started = thread_cpu_time();
    let mut full = 0_u64;
    while Instant::now() < deadline {
        for case in &cases {
            let parsed = sleuth_parsers::parse_alert(None, &case.raw, now).unwrap();
            let result = sleuth_engine::investigate(
                &EngineInput {
                    alert: &parsed,
                    raw: &empty,
                    history: &history,
                    facts: &sleuth_domain::Facts::default(),
                    strategies: &[],
                    now,
                },
                &context,
            );
            std::hint::black_box(result);
            full += 1;
        }
    }
    let full_rate = full as f64 / started.elapsed().as_secs_f64();
    let full_cpu_rate = full as f64 / (thread_cpu_time() - cpu_started).as_secs_f64();

    println!(
        "engine over {} corpus alerts, one thread, {seconds} s each:",
        cases.len()
    );
    println!(
        "                          per second of wall time   per second of this thread's CPU time"
    );
    println!(
        "  investigate only        {engine_rate:>10.0}/s ({:>6.1} µs)    {engine_cpu_rate:>10.0}/s ({:>6.1} µs)",
        1e6 / engine_rate,
        1e6 / engine_cpu_rate
    );
    println!(
        "  parse + investigate     {full_rate:>10.0}/s ({:>6.1} µs)    {full_cpu_rate:>10.0}/s ({:>6.1} µs)",
        1e6 / full_rate,
        1e6 / full_cpu_rate
    );
    println!(
        "  (the CPU-time rate is what one core does; the wall-time rate is lower when the machine is busy)"
    );
    print_figures("main corpus (corpus/alerts)", &main_report);
    print_figures(
        "held-out corpus (corpus/holdout, never tuned on)",
        &holdout_report,
    );
    println!("\n  (per source and every disagreement: sleuth eval corpus/holdout)");
}
