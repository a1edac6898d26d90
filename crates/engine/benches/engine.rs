//! The engine alone, on one core: investigations per second over the whole alert corpus
//! with the corpus context (issue 4's target: at least 20,000/s), parse + investigate
//! per second beside it, and the corpus accuracy table.
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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use sleuth_domain::{History, Outcome, ParsedAlert};
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
    source: String,
    raw: Value,
    parsed: ParsedAlert,
    expected: Option<Outcome>,
}

fn main() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    let mut document = ContextDocument::default();
    for path in files_under(&corpus.join("context"), "toml") {
        document
            .merge(ContextDocument::from_toml(&std::fs::read_to_string(path).unwrap()).unwrap());
    }
    let context = Context::build(document).unwrap();
    let now = chrono::Utc::now();
    let cases: Vec<Case> = files_under(&corpus.join("alerts"), "json")
        .into_iter()
        .map(|path| {
            let case: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let raw = case["alert"].clone();
            Case {
                source: path
                    .parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .to_string(),
                parsed: sleuth_parsers::parse_alert(None, &raw, now).unwrap(),
                expected: case["expect"]["outcome"]
                    .as_str()
                    .and_then(|text| Outcome::parse(text).ok()),
                raw,
            }
        })
        .collect();
    let seconds: u64 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(3);
    let history = History::default();
    let empty = Map::new();

    // Accuracy, once per case.
    let mut table: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for case in &cases {
        let result = sleuth_engine::investigate(
            &EngineInput {
                alert: &case.parsed,
                raw: &empty,
                history: &history,
                strategies: &[],
                now,
            },
            &context,
        );
        let tally = table.entry(&case.source).or_default();
        tally.1 += 1;
        if Some(result.outcome) == case.expected {
            tally.0 += 1;
        }
    }

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
    println!("\ncorpus accuracy (outcome as the case expects):");
    println!("  {:<32} {:>6} {:>6}", "source", "right", "cases");
    let (mut right, mut total) = (0, 0);
    for (source, (passed, count)) in &table {
        println!("  {source:<32} {passed:>6} {count:>6}");
        right += passed;
        total += count;
    }
    println!("  {:<32} {right:>6} {total:>6}", "all");
}
