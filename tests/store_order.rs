//! The order of a trend and the runs flagged as interfered with (issue 42, items 4 and 5),
//! through the CLI as a user runs it: `tare history add` of synthetic results files (no
//! measuring) into a store, then `show` and `check`.
//!
//! Order: commits of a real git repository made in a temporary directory, one rebased with a
//! committer date older than its parents', added out of order (children before parents, the
//! sessions' start times disagreeing too) come out in ancestry order; commits recorded without
//! parents come out by commit time, whatever the order of their sessions; a commit stored from
//! a hash alone takes its parents from a later session that records them.
//!
//! Interference: a history whose middle commits had every run flagged keeps every point under
//! the default policy (`flag`) and says how many runs were flagged; `--interfered drop` names
//! the commits it left out; `keep` says the runs were counted; a clean history's `check` exits
//! 0 and says nothing about interference under every policy.

mod common;
mod store_support;

use std::path::Path;
use std::process::Command;
use store_support::*;

use common::tare_in as tare;

use common::text;

fn git(dir: &Path, args: &[&str], date: Option<i64>) -> String {
    let mut c = Command::new("git");
    c.args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .current_dir(dir);
    if let Some(t) = date {
        c.env("GIT_AUTHOR_DATE", format!("@{t} +0000"))
            .env("GIT_COMMITTER_DATE", format!("@{t} +0000"));
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Writes the fixture session as measured `i`-th (its start time and seed) to `name`, with
/// `edit` applied.
fn write_session(d: &Path, name: &str, i: usize, edit: &dyn Fn(&mut serde_json::Value)) {
    let s = session_at(&fixture(), i, noise(i));
    let mut v = serde_json::to_value(&s).unwrap();
    edit(&mut v);
    std::fs::write(d.join(name), serde_json::to_vec(&v).unwrap()).unwrap();
}

fn add(d: &Path, name: &str, extra: &[&str]) {
    let mut args = vec!["history", "--store", "h.sqlite", "add", name];
    args.extend_from_slice(extra);
    let o = tare(d, &args);
    assert!(o.status.success(), "{}", text(&o));
}

/// The first series' rows in `show`: the short hashes of `wanted`, in the order shown.
fn shown_order(d: &Path, wanted: &[String]) -> Vec<String> {
    let o = tare(
        d,
        &[
            "history",
            "--store",
            "h.sqlite",
            "show",
            "-b",
            "sleep 0.012",
            "--last",
            "20",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let mut at: Vec<(usize, String)> = wanted
        .iter()
        .map(|h| {
            let short = &h[..10];
            let pos = out
                .lines()
                .position(|l| l.trim_start().starts_with(short))
                .unwrap_or_else(|| panic!("{short} not shown:\n{out}"));
            (pos, short.to_string())
        })
        .collect();
    at.sort();
    at.into_iter().map(|(_, h)| h).collect()
}

#[test]
fn commits_added_out_of_order_come_out_in_ancestry_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"], None);
    // Committer times: c3 was rebased onto c2 keeping an old date (before c0's).
    let t0 = 1_790_000_000;
    let dates = [t0, t0 + 100, t0 + 200, t0 - 5000, t0 + 400];
    let mut hashes = Vec::new();
    for (i, &t) in dates.iter().enumerate() {
        std::fs::write(d.join("f.txt"), format!("{i}\n")).unwrap();
        git(d, &["add", "f.txt"], None);
        git(d, &["commit", "-qm", &format!("change {i}")], Some(t));
        hashes.push(git(d, &["rev-parse", "HEAD"], None));
    }
    // CI jobs finishing out of order: children first; the later a commit, the earlier its
    // session started.
    for &i in &[4usize, 2, 0, 3, 1] {
        let name = format!("r{i}.json");
        write_session(d, &name, 10 - i, &|_| {});
        add(d, &name, &["--commit", &hashes[i]]);
    }
    let want: Vec<String> = hashes.iter().map(|h| h[..10].to_string()).collect();
    assert_eq!(shown_order(d, &hashes), want);
    // The newest commit judged is the last in ancestry (c4), not the latest started session.
    let o = tare(
        d,
        &[
            "history",
            "--store",
            "h.sqlite",
            "show",
            "-b",
            "sleep 0.012",
        ],
    );
    let out = text(&o);
    assert!(
        out.contains(&format!("newest commit {}", &hashes[4][..10])),
        "{out}"
    );
}

#[test]
fn commits_without_parents_come_out_by_commit_time() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Recorded commits without parents (no git here): commit times 0..4 hours, sessions added
    // newest first and started in the opposite order.
    let hashes: Vec<String> = (0..5).map(hash).collect();
    for &i in &[4usize, 2, 0, 3, 1] {
        let name = format!("r{i}.json");
        let h = hashes[i].clone();
        write_session(d, &name, 10 - i, &move |v| {
            v["extra"]["git"] = serde_json::json!({
                "hash": h,
                "time": 1_790_000_000 + 3600 * i as i64,
                "subject": format!("change {i}"),
            });
        });
        add(d, &name, &["--no-git"]);
    }
    let want: Vec<String> = hashes.iter().map(|h| h[..10].to_string()).collect();
    assert_eq!(shown_order(d, &hashes), want);
}

#[test]
fn a_commit_stored_from_a_hash_alone_gets_its_parents_later() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (h0, h1) = (hash(0), hash(1));
    let t0 = 1_800_000_000i64;
    let recorded = |h: String, parents: Vec<String>, t: i64| {
        move |v: &mut serde_json::Value| {
            v["extra"]["git"] = serde_json::json!({"hash": h, "parents": parents, "time": t});
        }
    };
    write_session(d, "r0.json", 0, &recorded(h0.clone(), vec![], t0));
    add(d, "r0.json", &["--no-git"]);
    // h1 given by hand (no repository here): no parents, no time; its session started before
    // h0's commit time, so it comes first.
    write_session(d, "r1.json", 1, &|_| {});
    add(d, "r1.json", &["--commit", &h1]);
    let (s0, s1) = (h0[..10].to_string(), h1[..10].to_string());
    assert_eq!(
        shown_order(d, &[h0.clone(), h1.clone()]),
        [s1.clone(), s0.clone()]
    );
    // A session recording h1 with its parent h0: the commit row gets them, h1 follows h0.
    write_session(
        d,
        "r2.json",
        2,
        &recorded(h1.clone(), vec![h0.clone()], t0 - 50),
    );
    add(d, "r2.json", &["--no-git"]);
    assert_eq!(shown_order(d, &[h0, h1]), [s0, s1]);
}

/// A history of 12 commits on one level; at `flagged` commits every run was flagged as
/// interfered with (the values are unchanged: no change to find).
fn interfered_history(d: &Path, flagged: &[usize]) {
    for i in 0..12 {
        let name = format!("r{i:02}.json");
        let all = flagged.contains(&i);
        write_session(d, &name, i, &move |v| {
            if !all {
                return;
            }
            for b in v["benchmarks"].as_array_mut().unwrap() {
                for r in b["runs"].as_array_mut().unwrap() {
                    r["extra"]["environment"] = serde_json::json!({"interfered": true});
                }
            }
        });
        add(d, &name, &["--commit", &hash(i)]);
    }
}

fn run(d: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut a = vec!["history", "--store", "h.sqlite"];
    a.extend_from_slice(args);
    let o = tare(d, &a);
    (o.status.code(), text(&o))
}

#[test]
fn commits_whose_every_run_interfered_are_kept_by_default_and_named_when_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let flagged = [5usize, 6, 7];
    interfered_history(d, &flagged);
    let short = |i: usize| hash(i)[..10].to_string();
    let show = |policy: Option<&str>| {
        let mut a = vec!["show", "-b", "sleep 0.012", "--last", "12"];
        if let Some(p) = policy {
            a.extend(["--interfered", p]);
        }
        let (code, out) = run(d, &a);
        assert_eq!(code, Some(0), "{out}");
        out
    };
    // Default (flag): every commit stays a point of the series, and the view says so.
    let out = show(None);
    assert!(out.contains("12 commits"), "{out}");
    assert!(
        out.contains(&format!(
            "3 commits whose every run was flagged kept with them: {}, {}, {} (--interfered flag)",
            short(5),
            short(6),
            short(7)
        )),
        "{out}"
    );
    assert!(out.contains("(all 30 interfered: kept)"), "{out}");
    // Drop: the same commits are named as left out.
    let out = show(Some("drop"));
    assert!(
        out.contains(&format!(
            "detection left out 90 runs flagged as interfered with (in 3 commits); 3 commits whose every run was flagged left out: {}, {}, {} (--interfered drop)",
            short(5),
            short(6),
            short(7)
        )),
        "{out}"
    );
    assert!(
        out.contains("(all 30 interfered: commit left out)"),
        "{out}"
    );
    // Keep: counted, and said.
    let out = show(Some("keep"));
    assert!(
        out.contains("90 runs flagged as interfered with (in 3 commits) counted like the others"),
        "{out}"
    );
    // check: the same line per series, and the gate passes (nothing changed level).
    for policy in ["flag", "drop", "keep"] {
        let (code, out) = run(d, &["check", "--interfered", policy]);
        assert_eq!(code, Some(0), "{policy}: {out}");
        assert!(
            out.contains(&format!("(--interfered {policy})")),
            "{policy}: {out}"
        );
    }
    // The Markdown summary and the dashboard say it too.
    let (code, out) = run(
        d,
        &[
            "report",
            "--export-markdown",
            "s.md",
            "--export-html",
            "h.html",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    for f in ["s.md", "h.html"] {
        let t = std::fs::read_to_string(d.join(f)).unwrap();
        assert!(
            t.contains("3 commits whose every run was flagged kept with them"),
            "{f}: {t}"
        );
    }
    // A policy that does not exist: one line saying what to give, exit 2.
    let (code, out) = run(d, &["check", "--interfered", "ignore"]);
    assert_eq!(code, Some(2), "{out}");
}

#[test]
fn a_clean_history_checks_as_before_under_every_policy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    interfered_history(d, &[]);
    for policy in ["flag", "drop", "keep"] {
        let (code, out) = run(d, &["check", "--interfered", policy]);
        assert_eq!(code, Some(0), "{policy}: {out}");
        assert!(!out.contains("interfered"), "{policy}: {out}");
        assert!(out.contains("no new regression alerts"), "{policy}: {out}");
    }
}
