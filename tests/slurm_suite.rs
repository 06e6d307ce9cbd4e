//! The example suite through a real Slurm cluster (the one-host cluster that
//! `.ci/services.d/30-slurm.sh` starts: munged, slurmctld and slurmd on loopback): one array
//! job whose merged table has the classifications of a local run; a task that dies on its
//! first try (the test-only knob `TARE_TEST_SLURM_FAIL_TASK_ONCE`) is submitted again and
//! its shard completed; with no retries left the failure is one line; Ctrl-C cancels the
//! array and leaves no job in squeue.
//!
//! Needs root, gzip/xz/cmp and a Slurm cluster answering `sinfo`. Skipped with a message
//! when Slurm is missing, except under CI=true, where that is a failure.

mod remote_support;
use remote_support::skip;

use remote_support::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One test at a time: they share the cluster's two CPUs.
static CLUSTER: Mutex<()> = Mutex::new(());

fn slurm_ready() -> bool {
    let ok = have("sbatch")
        && Command::new("sinfo")
            .args(["-h", "-o", "%T"])
            .output()
            .is_ok_and(|o| {
                o.status.success()
                    && String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .any(|l| ["idle", "mixed", "allocated"].contains(&l.trim()))
            });
    if !ok {
        assert!(
            !ci(),
            "CI=true but no Slurm cluster answers sinfo: .ci/services.d/30-slurm.sh should have started one (see /var/log/slurm/)"
        );
        skip::skip("a Slurm cluster", "run .ci/services.d/30-slurm.sh as root");
    }
    ok
}

fn possible() -> bool {
    suite_possible() && slurm_ready()
}

/// Jobs named `name` still in the queue.
fn queued(name: &str) -> Vec<String> {
    let o = Command::new("squeue")
        .args(["-h", "-n", name, "-o", "%i %T"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .filter(|l| !l.trim().is_empty())
        .collect()
}

fn slurm_run(out: &Path, extra: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = tare();
    c.args(["suite", "run"])
        .arg(suite_file())
        .args(["--slurm", "--tasks", "2", "--output-dir"])
        .arg(out)
        .args(extra);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn the_example_suite_on_slurm_classifies_like_a_local_run() {
    let _g = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    if !possible() {
        return;
    }
    let dir = scratch("slurm-example");
    let local = dir.join("local");
    let t0 = Instant::now();
    let o = tare()
        .args(["suite", "run"])
        .arg(suite_file())
        .args(["-q", "--output-dir"])
        .arg(&local)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let local_s = t0.elapsed();
    let on = dir.join("slurm");
    let t0 = Instant::now();
    let o = slurm_run(&on, &[], &[]);
    let slurm_s = t0.elapsed();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("submitted Slurm array job"), "{err}");
    eprintln!(
        "example suite: local {:.1} s, one-host Slurm (2 tasks) {:.1} s",
        local_s.as_secs_f64(),
        slurm_s.as_secs_f64()
    );
    // One array job: both shards came from it, and each task measured in its job.
    let script = std::fs::read_to_string(on.join("slurm/job.sh")).unwrap();
    assert!(script.contains("--shard \"$shard/2\" --resume"), "{script}");
    // It can be submitted by hand: its options are #SBATCH lines, the array included.
    assert!(script.starts_with("#!/bin/sh\n#SBATCH "), "{script}");
    assert!(script.contains("\n#SBATCH --array=0-1\n"), "{script}");
    let t = Command::new("sbatch")
        .arg("--test-only")
        .arg(on.join("slurm/job.sh"))
        .output()
        .unwrap();
    assert!(
        t.status.success(),
        "sbatch --test-only job.sh: {}",
        String::from_utf8_lossy(&t.stderr)
    );
    let mut jobs = std::collections::BTreeSet::new();
    for s in ["shard-1-of-2", "shard-2-of-2"] {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(on.join(s).join("suite.json")).unwrap())
                .unwrap();
        let job = meta["slurm"]["job"].as_str().unwrap().to_string();
        jobs.insert(job);
        // The array, this task's index in it, the node and the partition (issue 23).
        let task = &s["shard-".len()..s.find("-of").unwrap()];
        let task: u64 = task.parse::<u64>().unwrap() - 1;
        assert_eq!(meta["slurm"]["array_task"], task.to_string(), "{meta}");
        let array = meta["slurm"]["array_job"].as_str().unwrap();
        assert_eq!(meta["slurm"]["array_index"], format!("{array}_{task}"));
        assert!(
            meta["slurm"]["node"]
                .as_str()
                .is_some_and(|n| !n.is_empty()),
            "{meta}"
        );
        assert!(
            meta["slurm"]["partition"]
                .as_str()
                .is_some_and(|p| !p.is_empty()),
            "{meta}"
        );
        // The cores are the ones Slurm gave the task.
        let cpus = meta["slurm"]["cpus"].as_array().unwrap();
        let slot_cpus = meta["slots"][0]["cpus"].as_array().unwrap();
        assert!(slot_cpus.iter().all(|c| cpus.contains(c)), "{meta}");
        // How it was measured is recorded: below the job's own cgroup when Slurm gives the
        // job one (proctrack/cgroup), else a loud line in the method's warnings.
        let line = meta["slurm"]["measurement"].as_str().unwrap();
        assert!(line.contains("inside Slurm job"), "{line}");
        let warned = meta["method"]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap_or("").contains("inside Slurm job"));
        if meta["slurm"]["cgroup"]
            .as_str()
            .unwrap_or("")
            .contains("job_")
        {
            assert!(line.contains("below the job's cgroup"), "{line}");
            assert!(!warned, "{meta}");
            assert_ne!(meta["method"]["kind"], "rusage");
        } else {
            assert!(line.contains("no cgroup of its own"), "{line}");
            assert!(warned, "the loss is recorded with the method: {meta}");
        }
    }
    assert_eq!(jobs.len(), 2, "one task per shard");
    assert_eq!(
        categories(&on.join("shard-1-of-2")).len() + categories(&on.join("shard-2-of-2")).len(),
        40
    );
    assert_eq!(table_classes(&[&on]), table_classes(&[&local]));
    assert!(queued("tare-compressors").is_empty());
}

#[test]
fn a_task_that_dies_is_submitted_again() {
    let _g = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    if !possible() {
        return;
    }
    let dir = scratch("slurm-retry");
    let on = dir.join("slurm");
    let o = slurm_run(&on, &[], &[("TARE_TEST_SLURM_FAIL_TASK_ONCE", "1")]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("Slurm tasks 1 ended with their shards incomplete"),
        "{err}"
    );
    assert!(err.contains("submitting them again"), "{err}");
    // Slurm's word on how it ended (scontrol without accounting) and the task's last line.
    assert!(err.contains("FAILED, exit 0:9"), "{err}");
    assert!(err.contains("kills itself on its first try"), "{err}");
    assert!(on.join("slurm/test-failed-1").is_dir(), "the knob fired");
    assert_eq!(categories(&on.join("shard-2-of-2")).len(), 20, "{err}");
    assert_eq!(categories(&on.join("shard-1-of-2")).len(), 20);

    // No retries left: one line, exit 3, the finished shard kept.
    let on = dir.join("no-retry");
    let o = slurm_run(
        &on,
        &["--retries", "0", "-q"],
        &[("TARE_TEST_SLURM_FAIL_TASK_ONCE", "0")],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("tare: error: Slurm tasks 0 did not finish"),
        "{err}"
    );
    assert!(err.contains("--resume"), "{err}");
    assert_eq!(categories(&on.join("shard-2-of-2")).len(), 20);
    // --resume finishes it with one more task.
    let o = slurm_run(&on, &["--resume", "-q"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(categories(&on.join("shard-1-of-2")).len(), 20);
}

#[test]
fn ctrl_c_cancels_the_array_and_leaves_no_job() {
    let _g = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    if !possible() {
        return;
    }
    let dir = scratch("slurm-cancel");
    let suite = slow_suite(&dir, "slowcancel");
    let mut child = tare()
        .args(["suite", "run"])
        .arg(&suite)
        .args(["--slurm", "--tasks", "4", "--output-dir"])
        .arg(dir.join("out"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until a task runs.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !queued("tare-slowcancel")
        .iter()
        .any(|l| l.contains("RUNNING"))
    {
        assert!(Instant::now() < deadline, "no task started within a minute");
        std::thread::sleep(Duration::from_millis(300));
    }
    // SAFETY-free: kill(1) the child by its id.
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let t0 = Instant::now();
    let out = loop {
        if let Some(_s) = child.try_wait().unwrap() {
            break child.wait_with_output().unwrap();
        }
        assert!(t0.elapsed() < Duration::from_secs(90), "tare did not stop");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let err = stderr(&out);
    let last = err.trim().lines().last().unwrap();
    assert!(
        last.starts_with("tare: error: interrupted: Slurm job") && last.contains("cancelled"),
        "{err}"
    );
    assert!(
        queued("tare-slowcancel").is_empty(),
        "{:?}",
        queued("tare-slowcancel")
    );
}

/// A suite of four 30-second runs named `name`.
fn slow_suite(dir: &Path, name: &str) -> std::path::PathBuf {
    for i in 0..4 {
        std::fs::write(dir.join(format!("in{i}.txt")), "x").unwrap();
    }
    let suite = dir.join(format!("{name}.toml"));
    std::fs::write(
        &suite,
        format!(
            "name = \"{name}\"\n[limits]\nwall = \"60s\"\n[isolation]\nenabled = false\n\
             [[tool]]\nname = \"sleeper\"\ncommand = \"sleep 30\"\n\
             [[inputs]]\nname = \"in\"\nfiles = [\"in*.txt\"]\n"
        ),
    )
    .unwrap();
    suite
}

#[test]
fn resume_refuses_while_an_earlier_array_still_runs() {
    let _g = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    if !possible() {
        return;
    }
    let dir = scratch("slurm-orphan");
    let suite = slow_suite(&dir, "sloworphan");
    let out = dir.join("out");
    let start = |extra: &[&str]| {
        let mut c = tare();
        c.args(["suite", "run"])
            .arg(&suite)
            .args(["--slurm", "--tasks", "4", "--output-dir"])
            .arg(&out)
            .args(extra);
        c
    };
    let mut follower = start(&[]).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while queued("tare-sloworphan").is_empty() {
        assert!(Instant::now() < deadline, "nothing queued within a minute");
        std::thread::sleep(Duration::from_millis(300));
    }
    // The follower dies without cancelling: its array goes on.
    follower.kill().unwrap();
    let _ = follower.wait();
    assert!(!queued("tare-sloworphan").is_empty());
    let o = start(&["--resume"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("is still queued or running") && err.contains("scancel"),
        "{err}"
    );
    // Clean up as the message says.
    let jobs = std::fs::read_to_string(out.join("slurm/jobs")).unwrap();
    for j in jobs.split_whitespace() {
        let _ = Command::new("scancel").arg(j).status();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !queued("tare-sloworphan").is_empty() {
        assert!(Instant::now() < deadline, "scancel did not empty the queue");
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn an_array_cancelled_by_the_user_is_not_submitted_again() {
    let _g = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    if !possible() {
        return;
    }
    let dir = scratch("slurm-scancel");
    let suite = slow_suite(&dir, "slowscancel");
    let out = dir.join("out");
    let follower = tare()
        .args(["suite", "run"])
        .arg(&suite)
        .args(["--slurm", "--tasks", "2", "--output-dir"])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while queued("tare-slowscancel").is_empty() {
        assert!(Instant::now() < deadline, "nothing queued within a minute");
        std::thread::sleep(Duration::from_millis(300));
    }
    let jobs = std::fs::read_to_string(out.join("slurm/jobs")).unwrap();
    let first: Vec<String> = jobs.split_whitespace().map(str::to_string).collect();
    assert_eq!(first.len(), 1, "{jobs}");
    // The user cancels the whole array.
    assert!(Command::new("scancel")
        .arg(&first[0])
        .status()
        .unwrap()
        .success());
    let t0 = Instant::now();
    let o = follower.wait_with_output().unwrap();
    let err = stderr(&o);
    eprintln!(
        "follower ended {:.1} s after scancel",
        t0.elapsed().as_secs_f64()
    );
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("cancelled") && err.contains("does not submit them again"),
        "{err}"
    );
    let jobs = std::fs::read_to_string(out.join("slurm/jobs")).unwrap();
    assert_eq!(jobs.split_whitespace().count(), 1, "resubmitted: {jobs}");
    assert!(queued("tare-slowscancel").is_empty());
}
