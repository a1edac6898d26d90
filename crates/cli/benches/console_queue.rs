//! Issue 24's queue figure: the console's queue page (`GET /`) answered in at most 50 ms
//! p99 with a million investigations stored. The real `sleuth` binary (release, as
//! `cargo bench` builds it) is started as a child on an EXISTING database, BENCH_REUSE_DATABASE
//! (a SQLite path or sqlite:// URL, or a postgres:// URL), seeded beforehand, for instance by
//! the realistic bench (`BENCH_REUSE_DATABASE=/tmp/x.db BENCH_SEED_ALERTS=5000
//! BENCH_NO_DRAIN=1 cargo bench -p sleuth-cli --bench realistic`). Its workers are off:
//! nothing but the pages runs.
//!
//! A console user is made through the command line (`sleuth apikey create` makes the user,
//! `sleuth user set-password` gives it a password, read from standard input), signs in
//! over HTTP as a browser does (the form's cookie and CSRF field, then the session
//! cookie), and asks for the queue page in the default view and in every filter, sort,
//! search and page the page's form offers, as the browser sends them (the whole form,
//! empty fields included). Each shape is asked BENCH_REPEATS times (default 50) over one
//! keep-alive connection after one unmeasured request; one line each prints p50 and p99
//! and the count the page shows. BENCH_SHAPES=word,word measures only the shapes whose
//! name holds one of the words; BENCH_LIST_STATE=not_asked adds that state to every shape
//! that names none (the page shows concluded investigations by default: a seeding not
//! drained yet has none), as the realistic bench's lists do.
//!
//! `BENCH_REUSE_DATABASE=/tmp/x.db cargo bench -p sleuth-cli --bench console_queue`
//! (BENCH_SLEUTH_BIN runs another build of the binary). The
//! client runs on the same cores as the server: the figures are those of the whole
//! machine, printed with its load.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]
// A bench of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{connect, env_number, load_average, percentile};

#[path = "support/browser.rs"]
mod browser;
// The bench uses some of what the benches share.
#[allow(dead_code)]
mod support;

/// The console user the bench signs in as: a member, as an analyst is.
const EMAIL: &str = "console-bench@example.com";
const PASSWORD: &str = "console bench passphrase";

/// The workload's values (`sleuth-workload`), as the realistic bench filters by them.
const SOURCE: &str = "CrowdStrike Falcon";
const ALERT_TYPE: &str = "generic:Suspicious PowerShell download on {host}";

/// A running `sleuth serve` with its workers off, killed when dropped.
struct Server {
    child: Child,
    address: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    async fn start(database: &str) -> Server {
        let address = support::free_loopback_address();
        let child = Command::new(support::sleuth_binary())
            .args(["serve", "--listen", &address, "--database", database])
            .env("SLEUTH_WORKERS__ENABLED", "false")
            .env("SLEUTH_CONSOLE__BEHIND_TLS", "false")
            .env("SLEUTH_LOG__LEVEL", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sleuth");
        let server = Server { child, address };
        support::wait_until_ready(&server.address).await;
        server
    }
}

/// Runs the binary with `args` on `database`, `input` on its standard input; panics with
/// its error output when it fails.
fn sleuth(database: &str, args: &[&str], input: &str) {
    let mut child = Command::new(support::sleuth_binary())
        .args(args)
        .args(["--database", database])
        .env("SLEUTH_LOG__LEVEL", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sleuth");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let output = child.wait_with_output().expect("sleuth");
    assert!(
        output.status.success(),
        "sleuth {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The console user, made (or made again: `apikey create` keeps an existing user of the
/// same role) with a password of its own to keep.
fn make_console_user(database: &str) {
    sleuth(
        database,
        &[
            "apikey",
            "create",
            "--role",
            "member",
            "--email",
            EMAIL,
            "--name",
            "console queue bench",
        ],
        "",
    );
    sleuth(
        database,
        &["user", "set-password", "--email", EMAIL, "--keep"],
        &format!("{PASSWORD}\n"),
    );
}

/// What the queue's form sends when applied: every field, the empty ones too.
struct FormFields<'a> {
    search: &'a str,
    states: &'a [&'a str],
    priorities: &'a [&'a str],
    source: &'a str,
    alert_type: &'a str,
    from: &'a str,
    until: &'a str,
    sort: &'a str,
    direction: &'a str,
}

const EMPTY_FORM: FormFields<'static> = FormFields {
    search: "",
    states: &[],
    priorities: &[],
    source: "",
    alert_type: "",
    from: "",
    until: "",
    sort: "alert_create",
    direction: "desc",
};

fn submitted(fields: &FormFields) -> String {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("search", fields.search);
    for state in fields.states {
        form.append_pair("investigation_state", state);
    }
    for priority in fields.priorities {
        form.append_pair("priority_statuses", priority);
    }
    form.append_pair("direct_source_labels", fields.source);
    form.append_pair("alert_types", fields.alert_type);
    form.append_pair("alert_create_from", fields.from);
    form.append_pair("alert_create_until", fields.until);
    form.append_pair("sort_type", fields.sort);
    form.append_pair("sort_dir", fields.direction);
    format!("/?{}", form.finish())
}

/// Every shape of the page the form and its links offer, by name.
fn shapes() -> Vec<(String, String)> {
    let today = chrono::Utc::now().date_naive();
    let yesterday = today - chrono::Duration::days(1);
    let (today, yesterday) = (today.to_string(), yesterday.to_string());
    let mut shapes = vec![("default view".to_string(), "/".to_string())];
    for state in ["success", "loading", "not_asked", "error"] {
        shapes.push((
            format!("state {state}"),
            submitted(&FormFields {
                states: &[state],
                ..EMPTY_FORM
            }),
        ));
    }
    shapes.push((
        "every state".into(),
        submitted(&FormFields {
            states: &["success", "loading", "not_asked", "error"],
            ..EMPTY_FORM
        }),
    ));
    for priority in ["urgent", "notable", "informational", "none"] {
        shapes.push((
            format!("priority {priority}"),
            submitted(&FormFields {
                priorities: &[priority],
                ..EMPTY_FORM
            }),
        ));
    }
    shapes.push((
        "urgent and notable".into(),
        submitted(&FormFields {
            priorities: &["urgent", "notable"],
            ..EMPTY_FORM
        }),
    ));
    shapes.push((
        "one source".into(),
        submitted(&FormFields {
            source: SOURCE,
            ..EMPTY_FORM
        }),
    ));
    shapes.push((
        "one alert type".into(),
        submitted(&FormFields {
            alert_type: ALERT_TYPE,
            ..EMPTY_FORM
        }),
    ));
    shapes.push((
        "from yesterday".into(),
        submitted(&FormFields {
            from: &yesterday,
            ..EMPTY_FORM
        }),
    ));
    shapes.push((
        "until yesterday".into(),
        submitted(&FormFields {
            until: &yesterday,
            ..EMPTY_FORM
        }),
    ));
    shapes.push((
        "from yesterday until today".into(),
        submitted(&FormFields {
            from: &yesterday,
            until: &today,
            ..EMPTY_FORM
        }),
    ));
    for sort in [
        "alert_create",
        "alert_start",
        "inv_create",
        "inv_complete",
        "inv_update",
        "priority",
    ] {
        for direction in ["desc", "asc"] {
            shapes.push((
                format!("sort {sort} {direction}"),
                submitted(&FormFields {
                    sort,
                    direction,
                    ..EMPTY_FORM
                }),
            ));
        }
    }
    for (name, words) in [
        ("search, rare word", "variant"),
        ("search, common word", "powershell"),
        ("search, two words", "powershell download"),
        ("search, an address", "\"203.0.113.9\""),
    ] {
        shapes.push((
            name.to_string(),
            submitted(&FormFields {
                search: words,
                ..EMPTY_FORM
            }),
        ));
    }
    shapes.push((
        "search, source, priority sort".into(),
        submitted(&FormFields {
            search: "powershell",
            source: SOURCE,
            sort: "priority",
            ..EMPTY_FORM
        }),
    ));
    shapes.push((
        "every field".into(),
        submitted(&FormFields {
            search: "powershell",
            states: &["success"],
            priorities: &["urgent", "notable"],
            source: SOURCE,
            alert_type: ALERT_TYPE,
            from: &yesterday,
            until: &today,
            sort: "inv_complete",
            direction: "desc",
        }),
    ));
    // The pager's links: the next page, and one far down.
    shapes.push((
        "next page".into(),
        format!("{}&offset=20", submitted(&EMPTY_FORM)),
    ));
    shapes.push((
        "page 500".into(),
        format!("{}&offset=10000", submitted(&EMPTY_FORM)),
    ));
    shapes
}

/// The count the page shows (`1–20 of 1000000`), and the rows it lists.
fn shown(html: &str) -> (String, usize) {
    let count = browser::element_text(html, "count")
        .map(|text| {
            text.split(" · ")
                .next()
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .unwrap_or_else(|| "none".into());
    (count, html.matches("<tr class=\"row\"").count())
}

fn milliseconds(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

async fn run(database: &str) {
    let url = if database.starts_with("postgres://") || database.starts_with("sqlite://") {
        database.to_string()
    } else {
        format!("sqlite://{database}")
    };
    make_console_user(&url);
    let server = Server::start(&url).await;
    let session = browser::sign_in(&server.address, EMAIL, PASSWORD).await;
    let repeats = env_number("BENCH_REPEATS", 50).max(1);
    let only: Vec<String> = std::env::var("BENCH_SHAPES")
        .map(|words| {
            words
                .split(',')
                .map(|word| word.trim().to_string())
                .collect()
        })
        .unwrap_or_default();
    let state = std::env::var("BENCH_LIST_STATE").ok();
    let headers = [("cookie", session.as_str())];
    println!(
        "console queue page on {}, {repeats} requests per shape, one connection, workers off{}; \
         load {}",
        url.split(':').next().unwrap_or_default(),
        state
            .as_deref()
            .map(|state| format!(", state {state} where none is chosen"))
            .unwrap_or_default(),
        load_average()
    );
    println!("{:<32} {:>9} {:>9}  shown", "shape", "p50 ms", "p99 ms");
    let mut sender = connect(&server.address).await;
    let mut worst = Duration::ZERO;
    for (name, mut path) in shapes() {
        if !only.is_empty() && !only.iter().any(|word| name.contains(word.as_str())) {
            continue;
        }
        if let Some(state) = state.as_deref()
            && !path.contains("investigation_state=")
        {
            let separator = if path.contains('?') { "&" } else { "?" };
            path.push_str(&format!("{separator}investigation_state={state}"));
        }
        // One unmeasured request: the page's first read of what it walks.
        let first = browser::request(&mut sender, "GET", &path, &headers, None).await;
        assert_eq!(first.status, 200, "{name}: GET {path}");
        let html = String::from_utf8_lossy(&first.body).into_owned();
        let (count, rows) = shown(&html);
        let mut times = Vec::with_capacity(repeats as usize);
        for _ in 0..repeats {
            let started = Instant::now();
            let page = browser::request(&mut sender, "GET", &path, &headers, None).await;
            times.push(started.elapsed());
            assert_eq!(page.status, 200, "{name}: GET {path}");
        }
        times.sort();
        let p99 = percentile(&times, 0.99);
        worst = worst.max(p99);
        println!(
            "{name:<32} {:>9.1} {:>9.1}  {count} ({rows} rows)",
            milliseconds(percentile(&times, 0.5)),
            milliseconds(p99),
        );
    }
    println!(
        "worst p99 {:.1} ms (issue 24 asks at most 50 ms at 1,000,000 stored); load {}",
        milliseconds(worst),
        load_average()
    );
}

fn main() {
    let Ok(database) = std::env::var("BENCH_REUSE_DATABASE") else {
        println!(
            "console_queue: set BENCH_REUSE_DATABASE to a seeded database (a SQLite path or a \
             postgres:// URL); seed one with the realistic bench (BENCH_SEED_ALERTS)"
        );
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run(&database));
}
