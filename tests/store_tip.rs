//! The newest commit judged when it is checked (issue 42): `tare history check` on stores
//! filled with `tare history add` of synthetic results files (deterministic values, no
//! measuring), as a user runs it. A 20% step at the newest commit on a 3-commit baseline fails
//! the gate for wall time and CPU time and is named in the terminal and the Markdown summary;
//! the alert it raises is the one alert of that level shift when more commits come; 2 commits
//! of baseline say what is missing and pass; identical commits raise nothing.

mod common;
mod store_support;

use std::path::Path;
use store_support::*;

use common::tare_in as tare;

use common::text;

/// Adds commit `i` with wall and CPU times scaled by `level` times (`noisy`) a deterministic
/// noise of about 0.5% (a different one for CPU time).
fn add(d: &Path, i: usize, level: f64, noisy: bool) {
    let (w, c) = if noisy {
        (noise(i), noise(i + 100))
    } else {
        (1.0, 1.0)
    };
    let s = session_scaled(&fixture(), i, level * w, level * c);
    let name = format!("r{i:02}.json");
    std::fs::write(d.join(&name), serde_json::to_vec(&s).unwrap()).unwrap();
    let o = tare(
        d,
        &[
            "history",
            "--store",
            "h.sqlite",
            "add",
            &name,
            "--commit",
            &hash(i),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
}

fn check(d: &Path, metric: &str) -> (Option<i32>, String, String) {
    let o = tare(
        d,
        &[
            "history",
            "--store",
            "h.sqlite",
            "check",
            "--metric",
            metric,
            "--export-markdown",
            "summary.md",
        ],
    );
    let md = std::fs::read_to_string(d.join("summary.md")).unwrap();
    (o.status.code(), text(&o), md)
}

fn short(i: usize) -> String {
    hash(i)[..10].to_string()
}

#[test]
fn a_step_at_the_newest_commit_fails_the_gate_for_wall_and_cpu_time() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..3 {
        add(d, i, 1.0, true);
    }
    add(d, 3, 1.2, true);
    for metric in ["wall_time", "cpu_time"] {
        let (code, t, md) = check(d, metric);
        assert_eq!(code, Some(1), "{metric}: {t}");
        // Named in the terminal: benchmark, metric, commit, ratio and interval.
        for b in ["sleep 0.01", "sleep 0.012"] {
            let line = t
                .lines()
                .find(|l| l.starts_with(&format!("{b} {metric} on ")))
                .unwrap_or_else(|| panic!("{metric}: no line of {b}: {t}"));
            assert!(
                line.contains(&format!("newest commit {}: regression: 1.", short(3)))
                    && line.contains("% interval")
                    && line.contains("against the 3 commits before it"),
                "{line}"
            );
            let ratio: f64 = line.split(": regression: ").nth(1).unwrap()[..5]
                .parse()
                .unwrap();
            assert!((ratio - 1.2).abs() < 0.02, "{line}");
        }
        assert!(t.contains("new alert #"), "{t}");
        // And in the Markdown summary (the pull-request comment).
        assert!(
            md.contains("**The newest commit is a regression in 2 series.**"),
            "{md}"
        );
        assert!(
            md.contains(&format!("| sleep 0.01 | {metric} |"))
                && md.contains(&format!("`{}`", short(3)))
                && md.contains("interval"),
            "{md}"
        );
        // Known now: the alert is not new, the gate passes; it still says so.
        let (code, t, _) = check(d, metric);
        assert_eq!(code, Some(0), "{metric}: {t}");
        assert!(
            t.contains(&format!("newest commit {}: regression", short(3))),
            "{t}"
        );
    }
}

#[test]
fn the_alert_raised_at_the_newest_commit_is_the_one_alert_of_its_level_shift() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..12 {
        add(d, i, 1.0, true);
    }
    add(d, 12, 1.2, true);
    let (code, t, _) = check(d, "wall_time");
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains("against the 10 commits before it"), "{t}");
    // The level stays: the tips after the step match its alert (the gate passes), and the
    // change point found once enough commits follow updates it rather than adding a second.
    for i in 13..18 {
        add(d, i, 1.2, true);
        let (code, t, _) = check(d, "wall_time");
        assert_eq!(code, Some(0), "commit {i}: {t}");
    }
    if let Ok(keep) = std::env::var("TIP_DEBUG") {
        let _ = std::fs::copy(d.join("h.sqlite"), keep);
    }
    let o = tare(d, &["history", "--store", "h.sqlite", "alerts", "--all"]);
    let t = text(&o);
    let wall: Vec<&str> = t.lines().filter(|l| l.contains("wall_time")).collect();
    assert_eq!(wall.len(), 2, "{t}");
    assert!(
        wall.iter()
            .all(|l| l.contains(&format!("regression at {}", short(12)))
                && l.contains(" new ")
                && l.contains("(95% CI ")
                && l.contains("found by the change-point search")),
        "{t}"
    );
}

#[test]
fn two_commits_of_baseline_say_what_is_missing_and_pass() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    add(d, 0, 1.0, true);
    add(d, 1, 1.0, true);
    add(d, 2, 1.2, true);
    let (code, t, md) = check(d, "wall_time");
    assert_eq!(code, Some(0), "{t}");
    assert!(
        t.contains(&format!(
            "newest commit {}: not judged: 2 commits of baseline; 3 needed",
            short(2)
        )),
        "{t}"
    );
    assert!(md.contains("2 commits of baseline; 3 needed"), "{md}");
    let o = tare(d, &["history", "--store", "h.sqlite", "show"]);
    assert!(
        text(&o).contains("2 commits of baseline; 3 needed"),
        "{}",
        text(&o)
    );
}

#[test]
fn identical_commits_raise_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..6 {
        add(d, i, 1.0, false);
    }
    for metric in ["wall_time", "cpu_time"] {
        let (code, t, md) = check(d, metric);
        assert_eq!(code, Some(0), "{t}");
        assert!(
            t.contains(
                "judged the newest commit of 2 series against the commits before it: no regression"
            ),
            "{t}"
        );
        assert!(!md.contains("The newest commit is a regression"), "{md}");
        assert!(md.contains("1.000× (1.000–1.000)"), "{md}");
    }
    let o = tare(d, &["history", "--store", "h.sqlite", "alerts", "--all"]);
    assert!(text(&o).contains("no alerts"), "{}", text(&o));
}
