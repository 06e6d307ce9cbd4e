//! `--host` against a real OpenSSH server: the test makes a network namespace, a veth pair
//! with addresses, a host key, a client key and an sshd config, and starts
//! `/usr/sbin/sshd -f CONFIG` inside the namespace (`nsenter --net`, so the cgroup mounts stay
//! visible to the remote tare — `ip netns exec` would remount /sys). The remote tare is the
//! binary under test (`--remote-tare`). Everything is removed at the end, also on failure.
//!
//! Checks: a `tare run --host` session measured over there (cgroups, the remote's inventory
//! recorded, exports written here); a missing or different remote tare and an unreachable
//! host are one line each; cutting the connection mid-session (killing the session's sshd)
//! keeps every finished run in the local journal, ends with one error line, and leaves no
//! remote process; `tare suite run --host` streams the example suite's records here.
//!
//! Needs root, sshd (openssh-server), ssh, ssh-keygen, ip and nsenter. Skipped with a message
//! when one is missing, except under CI=true (`.ci/services.d/31-sshd.sh` installs them).

mod remote_support;

use remote_support::sshd::{must, Sshd};
use remote_support::*;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn bin() -> String {
    env!("CARGO_BIN_EXE_tare").to_string()
}

#[test]
fn run_on_a_host_over_ssh() {
    if !Sshd::possible() {
        return;
    }
    let s = Sshd::start();
    let out = s.dir.join("r.json");
    let o = tare()
        .args([
            "run",
            "--host",
            "tare-remote",
            &s.ssh_option(),
            "--remote-tare",
            &bin(),
        ])
        .args(["--runs", "5", "-n", "remote-sleep", "--export-json"])
        .arg(&out)
        .arg("sleep 0.05")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("remote-sleep"),
        "the summary is printed here: {stdout}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc["benchmarks"][0]["runs"].as_array().unwrap().len(), 5);
    // Measured over there, with its cgroups (root, cgroup v1 visible through nsenter --net).
    assert_ne!(doc["method"]["kind"], "rusage", "{}", doc["method"]);
    let remote = &doc["extra"]["remote"];
    assert_eq!(remote["host"], "tare-remote");
    assert_eq!(remote["transport"], "ssh");
    assert_eq!(
        remote["tare"],
        format!("tare {}", env!("CARGO_PKG_VERSION"))
    );
    assert!(remote["inventory"].is_object(), "{remote}");
    // The journal was removed once the export held the runs.
    assert!(!s.dir.join("r.json.journal").exists());
    let cpu = doc["benchmarks"][0]["runs"][0]["cpu_time"].as_f64();
    assert!(cpu.is_some(), "runs carry CPU time");
}

#[test]
fn a_missing_or_different_remote_tare_and_an_unreachable_host_are_one_line() {
    if !Sshd::possible() {
        return;
    }
    let s = Sshd::start();
    let one_line = |o: &std::process::Output, want: &[&str]| {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
        let e = stderr(o);
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(e.starts_with("tare: error: "), "{e}");
        for w in want {
            assert!(e.contains(w), "{w}: {e}");
        }
    };
    let o = tare()
        .args(["run", "--host", "tare-remote", &s.ssh_option()])
        .args(["--remote-tare", "/nonexistent/tare", "--runs", "2", "true"])
        .output()
        .unwrap();
    one_line(&o, &["not installed on tare-remote", "--remote-tare"]);
    let fake = s.dir.join("old-tare");
    std::fs::write(&fake, "#!/bin/sh\necho 'tare 0.0.1'\n").unwrap();
    must(&format!("chmod +x {}", fake.display()));
    let o = tare()
        .args([
            "run",
            "--host",
            "tare-remote",
            &s.ssh_option(),
            "--remote-tare",
        ])
        .arg(&fake)
        .args(["--runs", "2", "true"])
        .output()
        .unwrap();
    one_line(
        &o,
        &["tare 0.0.1", env!("CARGO_PKG_VERSION"), "--remote-tare"],
    );
    // Nothing listens on port 2: refused at once.
    let o = tare()
        .args([
            "suite",
            "run",
            "x.toml",
            "--host",
            "tare-remote",
            &s.ssh_option(),
        ])
        .args(["--ssh-option=-p2", "--remote-tare", &bin()])
        .output()
        .unwrap();
    one_line(&o, &["cannot reach tare-remote"]);
}

#[test]
fn a_cut_connection_keeps_every_finished_run() {
    if !Sshd::possible() {
        return;
    }
    let s = Sshd::start();
    let out = s.dir.join("cut.json");
    let journal = s.dir.join("cut.json.journal");
    let child = tare()
        .args([
            "run",
            "--host",
            "tare-remote",
            &s.ssh_option(),
            "--remote-tare",
            &bin(),
        ])
        .args(["--runs", "200", "-n", "cut", "--export-json"])
        .arg(&out)
        .arg("sleep 0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until three runs have come back, then drop the connection.
    let deadline = Instant::now() + Duration::from_secs(60);
    let runs_in = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("{\"type\":\"run\""))
            .count()
    };
    while runs_in(&journal) < 3 {
        assert!(
            Instant::now() < deadline,
            "no runs came back within a minute"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    s.cut();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("tare: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert_eq!(err.trim().lines().last(), Some(errors[0]), "{err}");
    assert!(
        errors[0].contains("connection to tare-remote broke"),
        "{err}"
    );
    assert!(errors[0].contains("tare recover"), "{err}");
    let kept = runs_in(&journal);
    assert!((3..200).contains(&kept), "{kept}");
    assert!(
        errors[0].contains(&format!("{kept} finished runs are kept")),
        "the message counts what the journal holds: {err}"
    );
    // Nothing of the session is left over there: only the listening sshd.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left: Vec<_> = s
            .processes()
            .into_iter()
            .filter(|(p, _)| *p != s.listener())
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left over there: {left:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The journal rebuilds into results holding exactly those runs.
    let rec = s.dir.join("recovered.json");
    let o = tare()
        .arg("recover")
        .arg(&journal)
        .arg("--export-json")
        .arg(&rec)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    assert_eq!(doc["benchmarks"][0]["runs"].as_array().unwrap().len(), kept);
    assert_eq!(doc["extra"]["remote"]["host"], "tare-remote");
}

#[test]
fn a_suite_on_a_host_streams_its_records_here() {
    if !Sshd::possible() || !suite_possible() {
        return;
    }
    let s = Sshd::start();
    let local = s.dir.join("local-run");
    let o = tare()
        .args(["suite", "run"])
        .arg(suite_file())
        .args(["-q", "--output-dir"])
        .arg(&local)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let here = s.dir.join("from-remote");
    let o = tare()
        .args(["suite", "run"])
        .arg(suite_file())
        .args([
            "--host",
            "tare-remote",
            &s.ssh_option(),
            "--remote-tare",
            &bin(),
        ])
        .arg(format!("--remote-dir={}", s.dir.display()))
        .args(["-q", "--output-dir"])
        .arg(&here)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(categories(&here), categories(&local));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(here.join("suite.json")).unwrap()).unwrap();
    assert_eq!(meta["remote"]["host"], "tare-remote");
    assert!(meta["machine"]["fingerprint"].is_string());
    // Over there, in --remote-dir, the suite's own output.
    assert!(s.dir.join("tare-remote/from-remote/results.jsonl").exists());
    assert_eq!(table_classes(&[&here]), table_classes(&[&local]));

    // Shards over ssh land in shard directories here, and the table merges them.
    let sharded = s.dir.join("sharded");
    for shard in ["1/2", "2/2"] {
        let o = tare()
            .args(["suite", "run"])
            .arg(suite_file())
            .args([
                "--host",
                "tare-remote",
                &s.ssh_option(),
                "--remote-tare",
                &bin(),
            ])
            .arg(format!("--remote-dir={}", s.dir.display()))
            .args(["-q", "--shard", shard, "--output-dir"])
            .arg(&sharded)
            .output()
            .unwrap();
        assert!(o.status.success(), "--shard {shard}: {}", stderr(&o));
    }
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sharded.join("shard-2-of-2/suite.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["shard"]["index"], 2);
    assert_eq!(meta["remote"]["host"], "tare-remote");
    assert_eq!(table_classes(&[&sharded]), table_classes(&[&local]));
}

#[test]
fn ctrl_c_here_stops_the_session_there_and_keeps_the_runs() {
    if !Sshd::possible() {
        return;
    }
    let s = Sshd::start();
    let out = s.dir.join("int.json");
    let journal = s.dir.join("int.json.journal");
    let child = tare()
        .args([
            "run",
            "--host",
            "tare-remote",
            &s.ssh_option(),
            "--remote-tare",
            &bin(),
        ])
        .args(["--runs", "200", "-n", "int", "--export-json"])
        .arg(&out)
        .arg("sleep 0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let runs_in = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("{\"type\":\"run\""))
            .count()
    };
    while runs_in(&journal) < 2 {
        assert!(
            Instant::now() < deadline,
            "no runs came back within a minute"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    must(&format!("kill -INT {}", child.id()));
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let err = stderr(&o);
    let last = err.trim().lines().last().unwrap_or("");
    assert!(last.starts_with("tare: error: interrupted"), "{err}");
    assert!(last.contains("tare recover"), "{err}");
    assert_eq!(err.matches("tare: error:").count(), 1, "{err}");
    assert!(runs_in(&journal) >= 2);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left: Vec<_> = s
            .processes()
            .into_iter()
            .filter(|(p, _)| *p != s.listener())
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left over there: {left:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_dropped_link_keeps_every_finished_run() {
    if !Sshd::possible() {
        return;
    }
    let s = Sshd::start();
    let out = s.dir.join("link.json");
    let journal = s.dir.join("link.json.journal");
    let child = tare()
        .args([
            "run",
            "--host",
            "tare-remote",
            &s.ssh_option(),
            "--remote-tare",
            &bin(),
        ])
        .args(["--runs", "400", "-n", "link", "--export-json"])
        .arg(&out)
        .arg("sleep 0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let runs_in = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("{\"type\":\"run\""))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while runs_in(&journal) < 3 {
        assert!(
            Instant::now() < deadline,
            "no runs came back within a minute"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    s.drop_link();
    let t0 = Instant::now();
    // ssh's keep-alives (5 s × 3) notice the silence; bounded wait.
    let o = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("tare: error:").count(), 1, "{err}");
    let last = err.trim().lines().last().unwrap();
    assert!(last.contains("connection to tare-remote broke"), "{err}");
    let kept = runs_in(&journal);
    assert!(
        kept >= 3 && last.contains(&format!("{kept} finished runs are kept")),
        "{err}"
    );
    // Over there, sshd's keep-alives end the session, and the remote tare with it (the
    // session's sshd itself may linger while the kernel retransmits into the void: not ours).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left: Vec<_> = s
            .processes()
            .into_iter()
            .filter(|(_, name)| name != "sshd")
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left over there: {left:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A remote side that answers with an endless line (no newline) is cut at the stream's line
/// bound with one error line, instead of filling this side's memory (issue 23).
#[test]
fn an_endless_line_from_the_other_side_is_cut_at_the_bound() {
    if !Sshd::possible() {
        return;
    }
    let s = Sshd::start();
    let fake = s.dir.join("endless-tare");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$1\" in --version) echo 'tare {}';; machine) yes x | tr -d '\\n';; *) yes x | tr -d '\\n';; esac\n",
            env!("CARGO_PKG_VERSION")
        ),
    )
    .unwrap();
    must(&format!("chmod +x {}", fake.display()));
    let t = Instant::now();
    let o = std::process::Command::new("/usr/bin/time")
        .args(["-f", "maxrss_kb=%M"])
        .arg(env!("CARGO_BIN_EXE_tare"))
        .args([
            "run",
            "--host",
            "tare-remote",
            &s.ssh_option(),
            "--remote-tare",
        ])
        .arg(&fake)
        .args(["--runs", "2", "true"])
        .output()
        .unwrap();
    let e = stderr(&o);
    assert!(
        t.elapsed() < Duration::from_secs(120),
        "took {:?}",
        t.elapsed()
    );
    assert_ne!(o.status.code(), Some(0), "{e}");
    assert!(e.contains("longer than 67108864 bytes"), "{e}");
    let rss: u64 = e
        .lines()
        .find_map(|l| l.strip_prefix("maxrss_kb="))
        .and_then(|v| v.trim().parse().ok())
        .expect("/usr/bin/time's line");
    assert!(rss < 1 << 20, "tare held {rss} kB for a 64 MiB bound");
}
