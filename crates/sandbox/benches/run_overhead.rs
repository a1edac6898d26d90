//! What the sandbox costs per run: p50 and p99 of `Sandbox::run` for `pass` in each mode,
//! against a bare `/usr/bin/python3 -c pass` (and `-I -S`) measured in the same process, so
//! the difference is the isolation's price on this machine. Target: at most 15 ms over bare.
//!
//! `cargo bench -p sleuth-sandbox --bench run_overhead [-- --runs N]`
#![allow(clippy::print_stdout)] // A benchmark prints its figures.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use sleuth_sandbox::{Sandbox, SandboxConfig, SandboxMode, ScriptJob};

const PYTHON: &str = "/usr/bin/python3";

struct Figures {
    label: String,
    samples: Vec<Duration>,
}

impl Figures {
    fn new(label: String) -> Figures {
        Figures {
            label,
            samples: Vec::new(),
        }
    }

    fn percentile(&self, fraction: f64) -> Duration {
        let mut sorted = self.samples.clone();
        sorted.sort();
        let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
        sorted.get(index).copied().unwrap_or_default()
    }

    fn mean(&self) -> Duration {
        let total: Duration = self.samples.iter().sum();
        total / u32::try_from(self.samples.len().max(1)).unwrap_or(u32::MAX)
    }
}

fn milliseconds(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[allow(clippy::disallowed_methods)] // The baseline: a bare interpreter start, no sandbox.
fn bare_python(arguments: &[&str]) -> Duration {
    let started = Instant::now();
    let status = std::process::Command::new(PYTHON)
        .args(arguments)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the interpreter starts");
    assert!(status.success());
    started.elapsed()
}

fn sandbox(mode: SandboxMode) -> Sandbox {
    let sandbox = Sandbox::probe(SandboxConfig {
        launcher: PathBuf::from(env!("CARGO_BIN_EXE_sleuth-sandbox-exec")),
        launcher_args: Vec::new(),
        mode,
        wall_clock: Duration::from_secs(10),
        uid_base: 2_140_000_000,
        work_root: std::env::temp_dir().join("sleuth-sandbox-bench"),
        ..SandboxConfig::default()
    });
    sandbox.ready().expect("the sandbox is ready on this host");
    sandbox
}

async fn sandboxed(sandbox: &Sandbox) -> (Duration, String) {
    let job = ScriptJob {
        code: "pass".to_owned(),
        ..ScriptJob::default()
    };
    let started = Instant::now();
    let outcome = sandbox.run(job).await;
    let elapsed = started.elapsed();
    assert_eq!(
        outcome.status,
        sleuth_domain::ScriptRunStatus::Success,
        "{outcome:?}"
    );
    (elapsed, outcome.isolation)
}

fn main() {
    let arguments: Vec<String> = std::env::args().collect();
    let runs = arguments
        .iter()
        .position(|argument| argument == "--runs")
        .and_then(|position| arguments.get(position + 1)?.parse().ok())
        .unwrap_or(200usize);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");

    let sandboxes = [
        sandbox(SandboxMode::Strict),
        sandbox(SandboxMode::BestEffort),
        sandbox(SandboxMode::None),
    ];
    let mut bare = Figures::new(format!("bare {PYTHON} -c pass"));
    let mut bare_isolated = Figures::new(format!("bare {PYTHON} -I -S -c pass"));
    let mut modes: Vec<Figures> = Vec::new();
    // Warm the page cache and the binaries before anything is measured.
    for _ in 0..10 {
        bare_python(&["-c", "pass"]);
        runtime.block_on(sandboxed(&sandboxes[0]));
    }
    // Interleaved, one of each per round, so that whatever else the machine does (other
    // builds on two cores) weighs on every figure alike.
    for round in 0..runs {
        bare.samples.push(bare_python(&["-c", "pass"]));
        bare_isolated
            .samples
            .push(bare_python(&["-I", "-S", "-c", "pass"]));
        for (index, sandbox) in sandboxes.iter().enumerate() {
            let (elapsed, isolation) = runtime.block_on(sandboxed(sandbox));
            if round == 0 {
                modes.push(Figures::new(format!("Sandbox::run(pass) [{isolation}]")));
            }
            modes[index].samples.push(elapsed);
        }
    }

    println!(
        "{runs} runs each, interleaved, on {} cores",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    println!("{:>9} {:>9} {:>9}  what", "p50 ms", "p99 ms", "mean ms");
    for figures in [&bare, &bare_isolated].into_iter().chain(&modes) {
        println!(
            "{:>9.2} {:>9.2} {:>9.2}  {}",
            milliseconds(figures.percentile(0.5)),
            milliseconds(figures.percentile(0.99)),
            milliseconds(figures.mean()),
            figures.label
        );
    }
    for (label, figures) in [("strict", &modes[0]), ("none", &modes[2])] {
        println!(
            "overhead of {label} over bare `python3 -c pass`: p50 {:+.2} ms, p99 {:+.2} ms \
             (target: at most 15 ms)",
            milliseconds(figures.percentile(0.5)) - milliseconds(bare.percentile(0.5)),
            milliseconds(figures.percentile(0.99)) - milliseconds(bare.percentile(0.99)),
        );
    }
}
