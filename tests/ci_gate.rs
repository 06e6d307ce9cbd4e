//! The CI gate run the way a runner runs it (issue 42, item 6): `scripts/ci-gate.sh` — the one
//! script `examples/ci/github-actions.yml` and `examples/ci/gitlab-ci.yml` call — in a real git
//! repository with the environment GitHub Actions (GITHUB_SHA, GITHUB_REF, GITHUB_BASE_REF,
//! GITHUB_STEP_SUMMARY, CI=true) or GitLab CI (CI_COMMIT_SHA,
//! CI_MERGE_REQUEST_TARGET_BRANCH_NAME) sets. Pushes to main build the history; pull requests
//! are judged on GitHub's merge commit (or GitLab's branch commit) against main's history up to
//! the merge base, never the branch's own earlier commits. The results are synthetic files
//! (deterministic values, as tests/store_tip.rs), but for one job that runs a real shell
//! benchmark through the script.
//!
//! Checked: a 25% slower pull request fails (exit 1) and its summary names the regression, and
//! still fails when the job is run again until its alert is acknowledged; its second commit is
//! judged against main, not against its first; an unchanged one passes (exit 0) with a summary
//! that says so; a too-short history says what is missing in the summary, never a silent pass.

mod common;
#[path = "serve_support/mod.rs"]
mod serve_support;
mod store_support;

use std::path::Path;
use std::process::Command;
use store_support::*;

fn git(d: &Path, args: &[&str], time: i64) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(d)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .env("GIT_AUTHOR_DATE", format!("{time} +0000"))
        .env("GIT_COMMITTER_DATE", format!("{time} +0000"))
        .output()
        .expect("git");
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A commit of the benchmark (a shell loop of `n` steps) on the branch checked out.
fn commit(d: &Path, n: usize, msg: &str, time: i64) -> String {
    std::fs::write(
        d.join("bench.sh"),
        format!("# {msg}\ni=0; while [ $i -lt {n} ]; do i=$((i+1)); done\n"),
    )
    .unwrap();
    git(d, &["add", "bench.sh"], time);
    git(d, &["commit", "-q", "-m", msg], time);
    git(d, &["rev-parse", "HEAD"], time)
}

/// Results of job `i` (its session), wall and CPU times at `level` × a noise of about 0.5%.
fn results(out: &Path, i: usize, level: f64) -> String {
    let s = session_scaled(&fixture(), i, level * noise(i), level * noise(i + 100));
    let f = out.join(format!("r{i:02}.json"));
    std::fs::write(&f, serde_json::to_vec(&s).unwrap()).unwrap();
    f.to_string_lossy().into_owned()
}

/// What one CI job left: the gate's exit code, its output, the summary file and (GitHub) the
/// step summary.
struct Job {
    code: Option<i32>,
    out: String,
    summary: String,
    step_summary: String,
}

/// Runs the gate script in `repo` as a runner does: `env` is the runner's, `args` the job's.
fn job(repo: &Path, work: &Path, env: &[(&str, &str)], args: &[&str]) -> Job {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/ci-gate.sh");
    let step = work.join("step-summary.md");
    let _ = std::fs::remove_file(&step);
    let summary = repo.join("tare-summary.md");
    let _ = std::fs::remove_file(&summary);
    let mut c = Command::new("bash");
    c.arg(script).args(args).current_dir(repo);
    for (k, _) in std::env::vars() {
        if k.starts_with("GITHUB_")
            || k.starts_with("CI_")
            || k.starts_with("TARE_")
            || k == "GITLAB_CI"
        {
            c.env_remove(&k);
        }
    }
    c.env("CI", "true")
        .env("NO_COLOR", "1")
        .env(
            "TARE",
            std::env::var_os("TARE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_tare").into()),
        )
        .env("TARE_STORE", work.join("history.sqlite"))
        .env("TMPDIR", work);
    let github = env.iter().any(|(k, _)| k.starts_with("GITHUB_"));
    if github {
        c.env("GITHUB_ACTIONS", "true")
            .env("GITHUB_STEP_SUMMARY", &step);
    } else {
        c.env("GITLAB_CI", "true");
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    Job {
        code: o.status.code(),
        out: common::text(&o),
        summary: std::fs::read_to_string(&summary).unwrap_or_default(),
        step_summary: std::fs::read_to_string(&step).unwrap_or_default(),
    }
}

fn short(h: &str) -> &str {
    &h[..10]
}

/// A push to main on GitHub Actions.
fn push(sha: &str) -> Vec<(&str, &str)> {
    vec![
        ("GITHUB_SHA", sha),
        ("GITHUB_REF", "refs/heads/main"),
        ("GITHUB_REF_NAME", "main"),
        ("GITHUB_EVENT_NAME", "push"),
    ]
}

/// A pull request's job on GitHub Actions: GITHUB_SHA is the merge commit GitHub made.
fn pull_request<'a>(merge: &'a str, head: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("GITHUB_SHA", merge),
        ("GITHUB_REF", "refs/pull/1/merge"),
        ("GITHUB_REF_NAME", "1/merge"),
        ("GITHUB_BASE_REF", "main"),
        ("GITHUB_HEAD_REF", head),
        ("GITHUB_EVENT_NAME", "pull_request"),
    ]
}

/// GitHub's test merge of `branch` into main, as refs/pull/N/merge: a detached merge commit.
fn merge_commit(d: &Path, branch: &str, time: i64) -> String {
    git(d, &["checkout", "-q", "--detach", "main"], time);
    git(
        d,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            &format!("Merge {branch}"),
            branch,
        ],
        time,
    );
    let h = git(d, &["rev-parse", "HEAD"], time);
    git(d, &["checkout", "-q", "main"], time);
    h
}

/// A webhook receiver on 127.0.0.1: the bodies of the POSTs it got, answered 200.
fn receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", l.local_addr().unwrap());
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = got.clone();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let mut r = BufReader::new(c);
            let (mut line, mut len) = (String::new(), 0);
            while r.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0; len];
            let _ = r.read_exact(&mut body);
            keep.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&body).into_owned());
            let _ = r
                .get_mut()
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (url, got)
}

#[test]
fn the_gate_script_fails_a_slower_pull_request_and_passes_an_unchanged_one() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, work) = (dir.path().join("repo"), dir.path().join("work"));
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let t0 = 1_790_000_000;
    git(&repo, &["init", "-q", "-b", "main"], t0);

    // Nothing to judge is a usage error, not a pass.
    let j = job(&repo, &work, &[], &[]);
    assert_eq!(j.code, Some(2), "{}", j.out);

    // Thresholds kept with the code (in main's first commit): a change of sleep 0.012's wall
    // time alerts from 30% on.
    std::fs::create_dir_all(repo.join(".tare")).unwrap();
    std::fs::write(
        repo.join(".tare/thresholds.toml"),
        "[[threshold]]\nbenchmark = \"sleep 0.012\"\nmetric = \"wall_*\"\nmin_effect = \"30%\"\n",
    )
    .unwrap();
    git(&repo, &["add", ".tare/thresholds.toml"], t0);

    // Pushes to main: the first jobs say what is missing, in the log and in the summary.
    let mut main = Vec::new();
    for i in 0..4 {
        let sha = commit(&repo, 1000, &format!("main {i}"), t0 + 3600 * i as i64);
        let r = results(&work, i, 1.0);
        // The first job also runs a real benchmark through the script (tare run).
        let args: Vec<&str> = if i == 0 {
            vec![
                "--results",
                &r,
                "--",
                "-r",
                "3",
                "-n",
                "loop",
                "sh bench.sh",
            ]
        } else {
            vec!["--results", &r]
        };
        let j = job(&repo, &work, &push(&sha), &args);
        assert_eq!(j.code, Some(0), "main {i}: {}", j.out);
        assert!(
            j.summary.contains(&format!("Commit `{}`", short(&sha)))
                && j.summary
                    .contains("judged against the commits of `main` before it"),
            "{}",
            j.summary
        );
        assert_eq!(j.step_summary, j.summary, "GITHUB_STEP_SUMMARY");
        if i < 3 {
            let missing = format!(
                "{i} commit{} of baseline; 3 needed",
                if i == 1 { "" } else { "s" }
            );
            assert!(
                j.summary.contains("is not judged in")
                    && j.summary.contains("(too little history, not a pass)")
                    && j.summary.contains(&missing),
                "main {i}: {}",
                j.summary
            );
            assert!(j.out.contains(&missing), "{}", j.out);
        } else {
            assert!(
                j.summary.contains(
                    "**No regression**: this commit is within its baseline in the 2 series judged"
                ),
                "{}",
                j.summary
            );
        }
        if i == 0 {
            // The real run was stored at this commit too: its series says what it misses.
            assert!(j.summary.contains("| loop | wall_time |"), "{}", j.summary);
        }
        main.push(sha);
    }

    // A pull request that makes the benchmark 25% slower, judged on GitHub's merge commit.
    git(&repo, &["checkout", "-q", "-b", "slow", &main[3]], t0);
    commit(&repo, 1250, "slower loop", t0 + 3600 * 4);
    git(&repo, &["checkout", "-q", "main"], t0);
    let m1 = merge_commit(&repo, "slow", t0 + 3600 * 5);
    let r = results(&work, 10, 1.25);
    let (hook, posted) = receiver();
    let mut env = pull_request(&m1, "slow");
    env.extend([
        ("TARE_GATE_WEBHOOK", hook.as_str()),
        ("GITHUB_SERVER_URL", "http://ci.example"),
        ("GITHUB_REPOSITORY", "acme/app"),
        ("GITHUB_RUN_ID", "42"),
    ]);
    let j = job(&repo, &work, &env, &["--results", &r]);
    assert_eq!(j.code, Some(1), "{}", j.out);
    // The webhook got the one new alert, in the documented shape.
    let bodies = posted.lock().unwrap().clone();
    assert_eq!(bodies.len(), 1, "{bodies:?}\n{}", j.out);
    let a: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(a["event"], "tare.alert", "{a}");
    assert_eq!(a["benchmark"], "sleep 0.01", "{a}");
    assert_eq!(a["metric"], "wall_time", "{a}");
    assert_eq!(a["commit"], m1.as_str(), "{a}");
    assert_eq!(a["before"], main[3].as_str(), "{a}");
    assert_eq!(a["verdict"], "regression", "{a}");
    assert_eq!(a["status"], "new", "{a}");
    assert_eq!(
        a["link"], "http://ci.example/acme/app/actions/runs/42",
        "{a}"
    );
    let change = a["change"].as_f64().unwrap();
    assert!((change - 1.25).abs() < 0.03, "{a}");
    assert!(a["interval"]["low"].as_f64().unwrap() > 1.0, "{a}");
    assert_eq!(a["interval"]["name"], "98% interval", "{a}");
    assert!(a["alert"].as_i64().is_some(), "{a}");
    assert!(
        j.out.contains("webhook: 1 of 1 new alert(s) delivered"),
        "{}",
        j.out
    );
    for s in [&j.summary, &j.step_summary] {
        assert!(
            s.contains(&format!(
                "Commit `{}` on a branch: judged against the history of `main` up to their merge base `{}`",
                short(&m1),
                short(&main[3])
            )) && s.contains("**This commit is a regression in 1 series.**")
                && s.contains("| sleep 0.01 | wall_time |")
                && s.contains(&format!("`{}`", short(&m1))),
            "{s}"
        );
        // sleep 0.012 is as slow, but below the 30% of its threshold: named, not alerted.
        assert!(
            s.contains("below the series' alert threshold (not alerts) in 1 series")
                && s.contains("- sleep 0.012 · wall_time · ")
                && s.contains("below its threshold of 30%")
                && !s.contains("| sleep 0.012 | wall_time | vm | `"),
            "{s}"
        );
    }
    assert!(
        j.out
            .contains("regression below its alert threshold of 30%"),
        "{}",
        j.out
    );
    assert!(j.out.contains("regression: 1.2"), "{}", j.out);
    // The job run again (the same results: already stored) stays red: its alert is new.
    let again = job(&repo, &work, &env, &["--results", &r]);
    assert_eq!(again.code, Some(1), "{}", again.out);
    // No new alert this time: nothing posted.
    assert_eq!(posted.lock().unwrap().len(), 1, "{}", again.out);

    // A second push to the pull request: judged against main's history, not against its
    // first commit (which, counted, would have widened the baseline).
    git(&repo, &["checkout", "-q", "slow"], t0);
    commit(&repo, 1251, "slower loop, again", t0 + 3600 * 6);
    git(&repo, &["checkout", "-q", "main"], t0);
    let m2 = merge_commit(&repo, "slow", t0 + 3600 * 7);
    let r = results(&work, 11, 1.25);
    let j = job(&repo, &work, &pull_request(&m2, "slow"), &["--results", &r]);
    assert_eq!(j.code, Some(1), "{}", j.out);
    assert!(
        j.out.contains("against the 4 commits before it"),
        "the baseline is main's 4 commits: {}",
        j.out
    );
    // Accepted: its alerts (one a series) acknowledged, the job passes and says so.
    let ids: Vec<String> = j
        .out
        .split(" — alert #")
        .skip(1)
        .filter_map(|r| r.split_whitespace().next().map(String::from))
        .collect();
    assert_eq!(ids.len(), 1, "{}", j.out);
    for id in &ids {
        let o = common::tare()
            .args(["history", "--store"])
            .arg(work.join("history.sqlite"))
            .args(["alert", id, "acknowledged"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", common::text(&o));
    }
    let j = job(&repo, &work, &pull_request(&m2, "slow"), &["--results", &r]);
    assert_eq!(j.code, Some(0), "{}", j.out);
    assert!(
        j.out.contains("alerts acknowledged or dismissed"),
        "{}",
        j.out
    );

    // GitLab: a merge request's branch commit, unchanged, passes and says so...
    git(&repo, &["checkout", "-q", "-b", "docs", &main[3]], t0);
    std::fs::write(repo.join("README"), "docs\n").unwrap();
    git(&repo, &["add", "README"], t0 + 3600 * 8);
    git(&repo, &["commit", "-q", "-m", "docs"], t0 + 3600 * 8);
    let d1 = git(&repo, &["rev-parse", "HEAD"], t0);
    // A webhook that is down: a warning, never the gate's outcome.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/hook", l.local_addr().unwrap())
    };
    let gitlab = |sha: &str, branch: &str, i: usize, level: f64| {
        let r = results(&work, i, level);
        job(
            &repo,
            &work,
            &[
                ("CI_COMMIT_SHA", sha),
                ("CI_COMMIT_REF_NAME", branch),
                ("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", branch),
                ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main"),
                ("CI_DEFAULT_BRANCH", "main"),
                ("CI_JOB_URL", "http://ci.example/jobs/7"),
                ("TARE_GATE_WEBHOOK", &down),
            ],
            &["--results", &r],
        )
    };
    let j = gitlab(&d1, "docs", 12, 1.0);
    assert_eq!(j.code, Some(0), "{}", j.out);
    assert!(
        j.summary.contains(&format!(
            "Commit `{}` on a branch: judged against the history of `main` up to their merge base `{}`",
            short(&d1),
            short(&main[3])
        )) && j.summary.contains("**No regression**")
            && !j.summary.contains("is a regression"),
        "{}",
        j.summary
    );
    assert!(
        j.step_summary.is_empty(),
        "no GITHUB_STEP_SUMMARY on GitLab"
    );
    // ... and a 50% slower one fails, naming the regression (above both thresholds).
    git(&repo, &["checkout", "-q", "-b", "slow-mr", &main[3]], t0);
    let g1 = commit(&repo, 1300, "slower loop (MR)", t0 + 3600 * 9);
    let j = gitlab(&g1, "slow-mr", 13, 1.5);
    assert_eq!(j.code, Some(1), "{}", j.out);
    assert!(
        j.out.contains("tare: warning: webhook http://127.0.0.1:")
            && j.out.contains("not delivered")
            && j.out.contains("webhook: 0 of 2 new alert(s) delivered"),
        "{}",
        j.out
    );
    assert!(
        j.summary
            .contains("**This commit is a regression in 2 series.**")
            && j.summary.contains(&format!("`{}`", short(&g1))),
        "{}",
        j.summary
    );
}

#[test]
fn the_gate_script_uploads_to_a_server_and_gates_on_its_check() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, work) = (dir.path().join("repo"), dir.path().join("work"));
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let store = work.join("served.sqlite").to_string_lossy().into_owned();
    let token = serve_support::new_token(&store, "ci");
    let server = serve_support::Server::start(&store, &[]);
    let t0 = 1_790_000_000;
    git(&repo, &["init", "-q", "-b", "main"], t0);
    for i in 0..5 {
        let sha = commit(&repo, 1000 + i, &format!("main {i}"), t0 + 3600 * i as i64);
        let level = if i == 4 { 1.25 } else { 1.0 };
        let r = results(&work, 20 + i, level);
        let mut env = push(&sha);
        // A server and its token, no store: upload, then the server's check.
        env.extend([
            ("TARE_SERVER", server.url.as_str()),
            ("TARE_TOKEN", token.as_str()),
            ("TARE_STORE", ""),
        ]);
        let j = job(&repo, &work, &env, &["--results", &r]);
        let want = if i == 4 { 1 } else { 0 };
        assert_eq!(j.code, Some(want), "main {i}: {}", j.out);
        assert_eq!(j.step_summary, j.summary);
        if i == 4 {
            assert!(
                j.summary.contains("**New regression alerts**")
                    && j.summary.contains(&format!("\"commit\":\"{sha}\"")),
                "{}",
                j.summary
            );
        } else {
            assert!(
                j.summary.contains("**No new regression alert**"),
                "{}",
                j.summary
            );
        }
    }
}
