//! The script contract of DESIGN.md section 1: globals, output, and how each way of ending
//! maps to a status.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::json;
use sleuth_domain::ScriptRunStatus;
use sleuth_sandbox::{Sandbox, SandboxConfig, SandboxMode, ScriptJob, layer};

use crate::support::{TEARDOWN_BOUND, WALL_CLOCK, config, job, run, strict};

#[tokio::test]
async fn a_script_prints_and_reads_its_trigger_args_variables_and_secrets() {
    let sandbox = strict();
    let mut variables = serde_json::Map::new();
    variables.insert(
        "investigation".to_owned(),
        json!({"id": 42, "outcome": "INCOMPLETE"}),
    );
    variables.insert(
        "alert".to_owned(),
        json!({"title": "Impossible travel", "score": 7.5}),
    );
    let job = ScriptJob {
        code: [
            "print('investigation', investigation['id'], investigation['outcome'])",
            "print('alert', alert['title'], alert['score'])",
            "print('args', trigger_args['host'], trigger_args['tags'])",
            "print('secret', secrets['API_TOKEN'])",
            "print('unicode', trigger_args['note'])",
        ]
        .join("\n"),
        trigger_args: json!({"host": "web-1", "tags": ["a", "b"], "note": "café ✓"}),
        variables,
        secrets: BTreeMap::from([("API_TOKEN".to_owned(), "s3cr3t-value".to_owned())]),
        allow_network: false,
    };
    let outcome = sandbox.run(job).await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_eq!(
        outcome.stdout,
        "investigation 42 INCOMPLETE\nalert Impossible travel 7.5\nargs web-1 ['a', 'b']\n\
         secret s3cr3t-value\nunicode café ✓\n"
    );
    assert_eq!(outcome.stderr, "");
    assert_eq!(outcome.syserr, None);
    assert!(outcome.duration < WALL_CLOCK, "{outcome:?}");
}

#[tokio::test]
async fn every_layer_the_host_offers_is_applied_and_recorded_in_strict_mode() {
    let sandbox = strict();
    let report = sandbox.report();
    let outcome = run(&sandbox, "pass").await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert!(
        outcome.isolation.starts_with("strict: rlimits"),
        "{}",
        outcome.isolation
    );
    for name in [layer::LANDLOCK, layer::SECCOMP, layer::NO_NEW_PRIVS] {
        assert!(report.available(name), "{report}");
        assert!(outcome.isolation.contains(name), "{}", outcome.isolation);
    }
    for name in [
        layer::PID_NAMESPACE,
        layer::NET_NAMESPACE,
        layer::DEDICATED_UID,
    ] {
        if report.available(name) {
            assert!(outcome.isolation.contains(name), "{}", outcome.isolation);
        }
    }
}

#[tokio::test]
async fn an_uncaught_exception_fails_with_a_traceback_naming_script_py_lines() {
    let sandbox = strict();
    let outcome = run(
        &sandbox,
        "print('before')\ndef lookup(host):\n    raise KeyError(host)\nlookup('web-1')\n",
    )
    .await;
    assert_eq!(outcome.status, ScriptRunStatus::Failed, "{outcome:?}");
    assert_eq!(outcome.stdout, "before\n");
    assert!(
        outcome.stderr.starts_with("Traceback"),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome
            .stderr
            .contains("File \"script.py\", line 4, in <module>"),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome
            .stderr
            .contains("File \"script.py\", line 3, in lookup"),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome.stderr.contains("raise KeyError(host)"),
        "source lines are shown"
    );
    assert!(
        outcome.stderr.contains("KeyError: 'web-1'"),
        "{}",
        outcome.stderr
    );
    assert!(
        !outcome.stderr.contains("<string>"),
        "no bootstrap frame: {}",
        outcome.stderr
    );
    assert_eq!(outcome.syserr, None);
}

#[tokio::test]
async fn a_syntax_error_fails_naming_the_script_line() {
    let outcome = run(&strict(), "x = 1\nif x\n    print(x)\n").await;
    assert_eq!(outcome.status, ScriptRunStatus::Failed, "{outcome:?}");
    assert!(
        outcome.stderr.contains("File \"script.py\", line 2"),
        "{}",
        outcome.stderr
    );
    assert!(outcome.stderr.contains("SyntaxError"), "{}", outcome.stderr);
}

#[tokio::test]
async fn the_exit_code_decides_between_success_and_failure() {
    let sandbox = strict();
    let cases = [
        ("import sys\nsys.exit(0)", ScriptRunStatus::Success),
        ("import sys\nsys.exit(3)", ScriptRunStatus::Failed),
        ("raise SystemExit('giving up')", ScriptRunStatus::Failed),
        ("", ScriptRunStatus::Success),
    ];
    for (code, expected) in cases {
        let outcome = run(&sandbox, code).await;
        assert_eq!(outcome.status, expected, "{code}: {outcome:?}");
    }
}

#[tokio::test]
async fn a_script_past_its_time_limit_is_timed_out_and_killed() {
    let outcome = run(&strict(), "import time\nprint('started')\ntime.sleep(30)").await;
    assert_eq!(outcome.status, ScriptRunStatus::TimedOut, "{outcome:?}");
    assert_eq!(
        outcome.stdout, "started\n",
        "output before the kill is kept"
    );
    assert!(
        outcome
            .syserr
            .as_deref()
            .is_some_and(|reason| reason.contains("time limit"))
    );
    assert!(outcome.duration >= WALL_CLOCK);
    assert!(
        outcome.duration < WALL_CLOCK + TEARDOWN_BOUND,
        "{outcome:?}"
    );
}

#[tokio::test]
async fn output_loses_nul_bytes_and_keeps_invalid_utf8_as_replacement_characters() {
    let outcome = run(
        &strict(),
        "import sys\nsys.stdout.buffer.write(b'a\\x00b\\xffc\\n')\nsys.stderr.write('warn\\x00ing\\n')",
    )
    .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_eq!(outcome.stdout, "ab\u{fffd}c\n");
    assert_eq!(outcome.stderr, "warning\n");
}

#[tokio::test]
async fn a_large_job_reaches_the_script_whole() {
    let big = "x".repeat(2 * 1024 * 1024);
    let mut variables = serde_json::Map::new();
    variables.insert("investigation".to_owned(), json!({"blob": big}));
    let outcome = strict()
        .run(ScriptJob {
            variables,
            ..job("print(len(investigation['blob']))")
        })
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_eq!(outcome.stdout, format!("{}\n", 2 * 1024 * 1024));
}

#[tokio::test]
async fn the_script_works_in_a_private_dir_that_is_removed_after_the_run() {
    let sandbox = strict();
    let outcome = run(
        &sandbox,
        "import os\nopen('notes.txt', 'w').write('kept for the run')\nprint(os.getcwd())\n\
         print(os.environ['HOME'] == os.getcwd(), os.environ['TMPDIR'] == os.getcwd())\n\
         print(sorted(os.environ))",
    )
    .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    let mut lines = outcome.stdout.lines();
    let work_dir = PathBuf::from(lines.next().expect("the cwd"));
    assert_eq!(lines.next(), Some("True True"));
    assert_eq!(
        lines.next(),
        Some("['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR']"),
        "a clean environment: nothing of the service's leaks"
    );
    assert!(
        work_dir.starts_with(std::env::temp_dir()),
        "{}",
        work_dir.display()
    );
    assert!(!work_dir.exists(), "the work dir is removed after the run");
}

#[tokio::test]
async fn a_missing_interpreter_makes_the_sandbox_not_ready_and_runs_end_in_error() {
    let sandbox = Sandbox::probe(SandboxConfig {
        python: PathBuf::from("/nonexistent/python3"),
        ..config(SandboxMode::Strict)
    });
    let not_ready = sandbox.ready().expect_err("no interpreter, no scripts");
    assert!(
        not_ready.to_string().contains("/nonexistent/python3"),
        "{not_ready}"
    );
    let secret_job = ScriptJob {
        secrets: BTreeMap::from([("TOKEN".to_owned(), "never-shown-anywhere".to_owned())]),
        ..job("print(secrets)")
    };
    let outcome = sandbox.run(secret_job.clone()).await;
    assert_eq!(outcome.status, ScriptRunStatus::Error);
    let syserr = outcome.syserr.expect("the reason is recorded");
    assert!(syserr.contains("not ready"), "{syserr}");
    assert!(!syserr.contains("never-shown-anywhere"));
    assert!(
        !format!("{secret_job:?}").contains("never-shown-anywhere"),
        "Debug hides secrets"
    );
}

#[tokio::test]
async fn a_missing_launcher_is_an_error_with_the_reason() {
    let sandbox = Sandbox::probe(SandboxConfig {
        launcher: PathBuf::from("/nonexistent/sleuth"),
        ..config(SandboxMode::None)
    });
    assert!(sandbox.ready().is_err());
    let outcome = run(&sandbox, "pass").await;
    assert_eq!(outcome.status, ScriptRunStatus::Error);
    assert!(
        outcome
            .syserr
            .is_some_and(|reason| reason.contains("/nonexistent/sleuth"))
    );
}

#[tokio::test]
async fn mode_none_still_has_limits_a_clean_environment_and_a_private_dir() {
    let sandbox = Sandbox::probe(config(SandboxMode::None));
    sandbox
        .ready()
        .expect("none mode needs only the interpreter");
    let outcome = run(
        &sandbox,
        "import os\nprint(sorted(os.environ))\nwhile True: pass",
    )
    .await;
    assert_eq!(outcome.status, ScriptRunStatus::TimedOut, "{outcome:?}");
    assert_eq!(outcome.isolation, "none: rlimits");
    assert_eq!(
        outcome.stdout,
        "['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR']\n"
    );
}

#[tokio::test]
async fn best_effort_mode_records_the_layers_that_applied() {
    let sandbox = Sandbox::probe(config(SandboxMode::BestEffort));
    sandbox
        .ready()
        .expect("best effort runs with what there is");
    let outcome = run(&sandbox, "print('ok')").await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert!(
        outcome.isolation.starts_with("best_effort: rlimits"),
        "{}",
        outcome.isolation
    );
    // The egress guard applies only to scripts allowed the network (tests/egress.rs).
    for available in sandbox
        .report()
        .layers
        .iter()
        .filter(|layer| layer.available && layer.layer != layer::EGRESS_GUARD)
    {
        assert!(
            outcome.isolation.contains(&available.layer),
            "{}",
            outcome.isolation
        );
    }
}

#[tokio::test]
async fn in_mode_none_a_daemon_holding_the_output_outlives_the_run() {
    // FIXME: mode none (development only) has neither a PID namespace nor a dedicated uid,
    // so nothing contains a process that leaves the script's session. This asserts today's
    // behaviour: the run still ends on time and says so. Strict mode's daemon test asserts
    // the daemon is gone.
    let sandbox = Sandbox::probe(config(SandboxMode::None));
    let outcome = run(
        &sandbox,
        "import subprocess\n\
         daemon = subprocess.Popen(['/bin/sleep', '30'], start_new_session=True)\n\
         print(daemon.pid)",
    )
    .await;
    let daemon_pid = outcome.stdout.trim().to_owned();
    let daemon_alive = PathBuf::from(format!("/proc/{daemon_pid}")).exists();
    #[allow(clippy::disallowed_methods)] // The test cleans up what mode none let escape.
    let killed = std::process::Command::new("/bin/kill")
        .args(["-KILL", &daemon_pid])
        .status();
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert!(daemon_alive, "today the daemon survives in mode none");
    assert!(killed.is_ok_and(|status| status.success()));
    assert!(outcome.duration < WALL_CLOCK, "{outcome:?}");
    let syserr = outcome.syserr.expect("the held output is noted");
    assert!(syserr.contains("left behind"), "{syserr}");
}
