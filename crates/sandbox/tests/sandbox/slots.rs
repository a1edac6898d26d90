//! Bounded concurrency: never more runs at once than slots, and never two on one uid.

use sleuth_domain::ScriptRunStatus;

use crate::support::{SLOTS, job, strict_with_slot_uids};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_beyond_the_slots_wait_and_concurrent_runs_never_share_a_uid() {
    let (sandbox, uid_range) = strict_with_slot_uids();
    let script = "import os, time\nstart = time.time()\ntime.sleep(0.25)\nprint(os.getuid(), start, time.time())";
    let runs: Vec<_> = (0..6)
        .map(|_| {
            let sandbox = sandbox.clone();
            tokio::spawn(async move { sandbox.run(job(script)).await })
        })
        .collect();
    let mut intervals = Vec::new();
    for run in runs {
        let outcome = run.await.expect("the run task finished");
        assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
        let fields: Vec<&str> = outcome.stdout.split_whitespace().collect();
        let uid: u32 = fields[0].parse().expect("uid");
        let start: f64 = fields[1].parse().expect("start");
        let end: f64 = fields[2].parse().expect("end");
        assert!(uid_range.contains(&uid), "uid {uid} outside the slots");
        intervals.push((uid, start, end));
    }
    // Concurrency peaks at some run's start: count the runs alive at each start.
    let mut most_at_once = 0;
    for (uid, start, _) in &intervals {
        let running: Vec<_> = intervals
            .iter()
            .filter(|(_, other_start, other_end)| other_start <= start && start < other_end)
            .collect();
        most_at_once = most_at_once.max(running.len());
        let same_uid = running
            .iter()
            .filter(|(other_uid, ..)| other_uid == uid)
            .count();
        assert_eq!(same_uid, 1, "two runs at once on uid {uid}: {intervals:?}");
    }
    assert_eq!(most_at_once, SLOTS, "{intervals:?}");
}
