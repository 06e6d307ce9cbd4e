//! `tare compare`: verdicts and exit codes on saved results with known distributions.

mod common;
use common::tare;

use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A real results file as template (so every field is what tare writes).
fn template(dir: &Path) -> Value {
    let p = dir.join("t.json");
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "2",
            "-n",
            "bench",
            "--export-json",
            p.to_str().unwrap(),
            "true",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Writes a results file whose 40 wall times are lognormal around `median` with 1% spread.
fn results(dir: &Path, name: &str, tpl: &Value, median: f64, seed: u64) -> PathBuf {
    results_with(dir, name, tpl, median, seed, 40, 0.01)
}

/// `n` wall times lognormal around `median` with `spread` (σ of the log).
fn results_with(
    dir: &Path,
    name: &str,
    tpl: &Value,
    median: f64,
    seed: u64,
    n: usize,
    spread: f64,
) -> PathBuf {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut doc = tpl.clone();
    let run = doc["benchmarks"][0]["runs"][0].clone();
    let runs: Vec<Value> = (0..n)
        .map(|i| {
            // Box–Muller normal draw.
            let (u1, u2): (f64, f64) = (rng.gen::<f64>().max(1e-12), rng.gen());
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            let mut r = run.clone();
            r["index"] = i.into();
            r["wall_time"] = (median * (spread * z).exp()).into();
            r
        })
        .collect();
    doc["benchmarks"][0]["runs"] = Value::Array(runs);
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(&doc).unwrap()).unwrap();
    p
}

fn compare(old: &Path, new: &Path, extra: &[&str]) -> (i32, String) {
    let out = tare()
        .arg("compare")
        .arg(old)
        .arg(new)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn exit_codes_follow_the_verdict_and_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = template(dir.path());
    let base = results(dir.path(), "base.json", &tpl, 0.100, 1);
    let same = results(dir.path(), "same.json", &tpl, 0.100, 2);
    let slow20 = results(dir.path(), "slow20.json", &tpl, 0.120, 3);
    let slow3 = results(dir.path(), "slow3.json", &tpl, 0.103, 4);
    let fast = results(dir.path(), "fast.json", &tpl, 0.080, 5);

    let (code, out) = compare(&base, &same, &["--fail-if-slower", "5%"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("slower:"), "{out}");

    let (code, out) = compare(&base, &slow20, &["--fail-if-slower", "5%"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("× slower") && out.contains("+20."), "{out}");

    // Significantly slower, but by less than the threshold.
    let (code, out) = compare(&base, &slow3, &["--fail-if-slower", "10%"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("slower"), "{out}");

    // Without a threshold a regression is reported but does not fail.
    let (code, _) = compare(&base, &slow20, &[]);
    assert_eq!(code, 0);

    let (code, out) = compare(&base, &fast, &["--fail-if-slower", "5%"]);
    assert_eq!(code, 0);
    assert!(out.contains("faster"), "{out}");
}

#[test]
fn bad_input_is_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = template(dir.path());
    let base = results(dir.path(), "base.json", &tpl, 0.1, 1);
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{not json").unwrap();
    let (code, out) = compare(&base, &junk, &[]);
    assert_eq!(code, 2);
    assert!(out.contains("is not a tare results file"), "{out}");
    let (code, out) = compare(&base, &dir.path().join("missing.json"), &[]);
    assert_eq!(code, 2, "{out}");
    let mut other = tpl.clone();
    other["benchmarks"][0]["name"] = "something else".into();
    let o = dir.path().join("other.json");
    std::fs::write(&o, serde_json::to_string(&other).unwrap()).unwrap();
    let (code, out) = compare(&base, &o, &[]);
    assert_eq!(code, 2);
    assert!(out.contains("matches"), "{out}");
}

fn tare_in(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = tare().args(args).current_dir(dir).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(rel)
}

/// Issue 22: the process is the unit. Two pytest-benchmark files (each one pytest process)
/// whose rounds differ by 14% — the A/A "1.1439× faster, p < 0.0001" — are one
/// process a side: inconclusive, and the gate does not fire on iterations alone.
#[test]
fn one_process_per_side_gives_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(data("pytest-benchmark/bench.json")).unwrap())
            .unwrap();
    std::fs::write(dir.path().join("a.json"), doc.to_string()).unwrap();
    for b in doc["benchmarks"].as_array_mut().unwrap() {
        for x in b["stats"]["data"].as_array_mut().unwrap() {
            *x = (x.as_f64().unwrap() * 1.14).into();
        }
    }
    std::fs::write(dir.path().join("b.json"), doc.to_string()).unwrap();
    for (src, out) in [("a.json", "old.json"), ("b.json", "new.json")] {
        let (code, text) = tare_in(dir.path(), &["import", src, "-o", out]);
        assert_eq!(code, 0, "{text}");
    }
    let (code, out) = tare_in(
        dir.path(),
        &["compare", "old.json", "new.json", "--fail-if-slower", "5%"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("× slower"), "{out}");
    assert!(out.contains("inconclusive: one process per side"), "{out}");
    assert!(
        out.contains("model: unit: process (file); 1 vs 1 processes"),
        "{out}"
    );
}

/// The model line names the unit and the counts; a difference that is not significant says
/// why (here: the CI includes 1).
#[test]
fn the_model_and_the_reason_are_printed() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = template(dir.path());
    let base = results_with(dir.path(), "base.json", &tpl, 0.1, 1, 12, 0.05);
    let same = results_with(dir.path(), "same.json", &tpl, 0.1, 2, 12, 0.05);
    let (code, out) = compare(&base, &same, &["--fail-if-slower", "5%"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("unit: process (run); 12 vs 12 processes"),
        "{out}"
    );
    assert!(
        out.contains("no significant difference (CI") && out.contains("includes 1"),
        "{out}"
    );
}

/// Sides of several files or a directory (each file its processes), `--old`/`--new`, and
/// names with their parameters: Criterion's vec_sum/64 and vec_sum/1024 do not collide.
#[test]
fn sides_of_several_files_and_full_names() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = template(dir.path());
    std::fs::create_dir(dir.path().join("old")).unwrap();
    std::fs::create_dir(dir.path().join("new")).unwrap();
    // Five sessions a side, each a process of 3 runs... here each run is a process (tare
    // run): 5 files × 3 runs = 15 processes a side.
    for k in 0..5 {
        results_with(
            &dir.path().join("old"),
            &format!("{k}.json"),
            &tpl,
            0.100,
            k,
            3,
            0.01,
        );
        results_with(
            &dir.path().join("new"),
            &format!("{k}.json"),
            &tpl,
            0.120,
            10 + k,
            3,
            0.01,
        );
    }
    let (code, out) = tare_in(
        dir.path(),
        &["compare", "old", "new", "--fail-if-slower", "5%"],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("15 vs 15 processes"), "{out}");
    let (code, out) = tare_in(
        dir.path(),
        &[
            "compare",
            "--old",
            "old/0.json",
            "--old",
            "old/1.json",
            "--new",
            "new/0.json",
            "--new",
            "new/1.json",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("6 vs 6 processes") && out.contains("slower"),
        "{out}"
    );
    let (code, out) = tare_in(dir.path(), &["compare", "old/0.json"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no new side"), "{out}");

    let (code, text) = tare_in(
        dir.path(),
        &[
            "import",
            data("criterion/criterion").to_str().unwrap(),
            "-o",
            "crit.json",
        ],
    );
    assert_eq!(code, 0, "{text}");
    let (code, out) = tare_in(dir.path(), &["compare", "crit.json", "crit.json"]);
    assert_eq!(code, 0, "{out}");
    let names: Vec<&str> = out
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        names.contains(&"vec_sum/64") && names.contains(&"vec_sum/1024"),
        "{out}"
    );
}

/// Gates never pass on nothing: a side with no counted run, or a benchmark in one side only,
/// exits 2 with the reason (`--allow-missing` accepts the latter).
#[test]
fn gates_never_pass_on_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = template(dir.path());
    let base = results(dir.path(), "base.json", &tpl, 0.1, 1);
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&base).unwrap()).unwrap();
    for r in doc["benchmarks"][0]["runs"].as_array_mut().unwrap() {
        r["counted"] = false.into();
        r["warmup"] = true.into();
    }
    doc["complete"] = false.into();
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, doc.to_string()).unwrap();
    let (code, out) = compare(&base, &empty, &["--fail-if-slower", "5%"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("no counted run") && out.trim().lines().count() == 1,
        "{out}"
    );

    // A second benchmark only in new.
    let mut two: Value = serde_json::from_slice(&std::fs::read(&base).unwrap()).unwrap();
    let mut extra = two["benchmarks"][0].clone();
    extra["name"] = "added".into();
    two["benchmarks"].as_array_mut().unwrap().push(extra);
    let new = dir.path().join("two.json");
    std::fs::write(&new, two.to_string()).unwrap();
    let (code, out) = compare(&base, &new, &["--fail-if-slower", "5%"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("'added' is only in new") && out.contains("--allow-missing"),
        "{out}"
    );
    let (code, out) = compare(&base, &new, &["--fail-if-slower", "5%", "--allow-missing"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("'added' is only in new"), "{out}");
}

/// A results file whose runs (in time order) have exactly these wall times.
fn results_of(dir: &Path, name: &str, tpl: &Value, times: &[f64]) -> PathBuf {
    let mut doc = tpl.clone();
    let run = doc["benchmarks"][0]["runs"][0].clone();
    let runs: Vec<Value> = times
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut r = run.clone();
            r["index"] = i.into();
            r["wall_time"] = (*t).into();
            r
        })
        .collect();
    doc["benchmarks"][0]["runs"] = Value::Array(runs);
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(&doc).unwrap()).unwrap();
    p
}

/// Issue 22, the session level: one session a side whose old session moved 8% over its
/// course (three steps of three runs, as a VM's speed moves in episodes of seconds); the new
/// session sits 6% above the old one's median. The process-level test alone called it slower
/// (the gate fired); each session's mean is now as uncertain as one of its thirds', and the
/// line says what the verdict rests on. A 30% slower session still fires the gate.
#[test]
fn one_session_a_side_is_as_uncertain_as_its_thirds() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = template(dir.path());
    let jitter = |i: usize| 1.0 + 0.001 * (i % 3) as f64;
    let old: Vec<f64> = (0..9)
        .map(|i| 0.1 * (1.0 + 0.04 * (i / 3) as f64) * jitter(i))
        .collect();
    let near: Vec<f64> = (0..9).map(|i| 0.1 * 1.1 * jitter(i)).collect();
    let far: Vec<f64> = (0..9).map(|i| 0.1 * 1.3 * jitter(i)).collect();
    let old = results_of(dir.path(), "old.json", &tpl, &old);
    let near = results_of(dir.path(), "near.json", &tpl, &near);
    let far = results_of(dir.path(), "far.json", &tpl, &far);
    let (code, out) = compare(&old, &near, &["--fail-if-slower", "5%"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("as uncertain as one of its thirds'"), "{out}");
    assert!(
        out.contains("CI and t test (2 df) from each session's thirds"),
        "{out}"
    );
    assert!(out.contains("includes 1"), "{out}");
    assert!(out.contains("9 vs 9 processes in 1 vs 1 sessions"), "{out}");
    let (code, out) = compare(&old, &far, &["--fail-if-slower", "5%"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("× slower"), "{out}");
}

/// Issue 22, the session level: four sessions a side whose medians differ by several
/// percent while their runs agree within 0.2% (a machine whose state moves between
/// sessions). Pooled, 24 vs 24 processes made a verdict of this A/A; the session is the
/// unit now, and 4 vs 4 sessions that overlap give none.
#[test]
fn sessions_that_differ_are_the_unit() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = template(dir.path());
    let (old_dir, new_dir) = (dir.path().join("old"), dir.path().join("new"));
    std::fs::create_dir_all(&old_dir).unwrap();
    std::fs::create_dir_all(&new_dir).unwrap();
    for (d, levels) in [
        (&old_dir, [1.00, 1.06, 0.97, 1.03]),
        (&new_dir, [1.07, 1.01, 1.09, 1.04]),
    ] {
        for (i, l) in levels.iter().enumerate() {
            let times: Vec<f64> = (0..6)
                .map(|j| 0.1 * l * (1.0 + 0.002 * ((j * 7 + i) % 5) as f64))
                .collect();
            results_of(d, &format!("s{i}.json"), &tpl, &times);
        }
    }
    let (code, out) = compare(&old_dir, &new_dir, &["--fail-if-slower", "2%"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("— session, as sessions differ"), "{out}");
    assert!(
        out.contains("24 vs 24 processes in 4 vs 4 sessions"),
        "{out}"
    );
    assert!(out.contains("no significant difference"), "{out}");
    assert!(out.contains("4 vs 4 sessions)"), "{out}");
}

/// Issue 42: every run records CPU time and peak memory, and `compare` gates on them. Real
/// runs: a Python loop 100× longer (CPU time; CPU time under load on this VM moves by ±30%), and a string 2.5× larger (peak memory); the
/// same file against itself is no verdict.
#[test]
fn cpu_time_and_peak_memory_gate() {
    let d = tempfile::tempdir().unwrap();
    let run = |name: &str, code: &str| {
        let (c, out) = tare_in(
            d.path(),
            &[
                "run",
                "--runs",
                "12",
                "--style",
                "none",
                "--export-json",
                name,
                "-n",
                "prog",
                "--",
                "python3",
                "-c",
                code,
            ],
        );
        assert_eq!(c, 0, "{out}");
    };
    // 100× the loop: under a load of 6 on 2 vCPUs a 20× loop once came out 2.1× in CPU time
    // with a one-session-a-side interval of 0.77–5.98 (the thirds' t has 2 degrees of freedom).
    run("cpu-a.json", "sum(range(200_000))");
    run("cpu-b.json", "sum(range(20_000_000))");
    run("mem-a.json", "b = b'x' * (40 << 20)");
    run("mem-b.json", "b = b'x' * (100 << 20)");
    let gate = |a: &str, b: &str, metric: &str| {
        tare_in(
            d.path(),
            &[
                "compare",
                a,
                b,
                "--metric",
                metric,
                "--fail-if-slower",
                "5%",
            ],
        )
    };
    let (code, out) = gate("cpu-a.json", "cpu-b.json", "cpu_time");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("slower") && out.contains("ms"), "{out}");
    let (code, out) = gate("mem-a.json", "mem-b.json", "peak_memory");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("2.") && out.contains("× larger") && out.contains(" MB"),
        "{out}"
    );
    for metric in ["cpu_time", "peak_memory", "user_time"] {
        let (code, out) = gate("cpu-a.json", "cpu-a.json", metric);
        assert_eq!(code, 0, "{metric}: {out}");
    }
}

/// A bare number for a percentage option says what was given and what to write (issue 43).
#[test]
fn a_bare_number_for_a_percentage_says_what_to_write() {
    for (flag, value, expected) in [
        (
            "--fail-if-slower",
            "5",
            "--fail-if-slower 5: write a percentage such as 5%, or a fraction such as 0.05",
        ),
        (
            "--noise-threshold",
            "2",
            "--noise-threshold 2: write a percentage such as 2%, or a fraction such as 0.02",
        ),
        (
            "--fail-if-slower",
            "150%",
            "--fail-if-slower 150%: write a percentage above 0% and below 100% such as 5%, or a fraction such as 0.05",
        ),
    ] {
        let out = tare()
            .args(["compare", "old.json", "new.json", flag, value])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(expected), "{flag} {value}: {err}");
    }
}

/// Issue 43: pytest-benchmark imported, 3 processes (files) a side, 10% more work. The rank
/// test cannot reject with 3 vs 3 at any change (its smallest p is 0.1), so Welch's t on the
/// logs of the per-process values draws the interval and the verdict, at the level adjusted
/// for the benchmarks compared: the line says slower exactly where its interval excludes 1.
#[test]
fn three_processes_a_side_are_tested_by_welch_on_logs() {
    let dir = tempfile::tempdir().unwrap();
    let doc: Value =
        serde_json::from_slice(&std::fs::read(data("pytest-benchmark/bench.json")).unwrap())
            .unwrap();
    for side in ["old", "new"] {
        std::fs::create_dir(dir.path().join(side)).unwrap();
    }
    for (k, jitter) in [1.0, 1.012, 0.991].into_iter().enumerate() {
        for (side, work) in [("old", 1.0), ("new", 1.10)] {
            let mut d = doc.clone();
            for b in d["benchmarks"].as_array_mut().unwrap() {
                for x in b["stats"]["data"].as_array_mut().unwrap() {
                    *x = (x.as_f64().unwrap() * work * jitter).into();
                }
            }
            let src = format!("{side}{k}.src.json");
            std::fs::write(dir.path().join(&src), d.to_string()).unwrap();
            let (code, text) = tare_in(
                dir.path(),
                &["import", &src, "-o", &format!("{side}/{k}.json")],
            );
            assert_eq!(code, 0, "{text}");
        }
    }
    let (code, out) = tare_in(
        dir.path(),
        &[
            "compare",
            "old",
            "new",
            "--fail-if-slower",
            "5%",
            "--export-json",
            "c.json",
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Welch's t on log per-process values"), "{out}");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("c.json")).unwrap()).unwrap();
    let cs = doc["comparisons"].as_array().unwrap();
    assert!(!cs.is_empty(), "{doc}");
    let m = cs.len();
    for c in cs {
        let (lo, hi) = (c["ci"][0].as_f64().unwrap(), c["ci"][1].as_f64().unwrap());
        let verdict = c["verdict"].as_str().unwrap();
        assert_eq!(lo > 1.0 || hi < 1.0, verdict == "slower", "{c}");
        assert_eq!(verdict, "slower", "{c}");
        assert!((c["confidence"].as_f64().unwrap() - (1.0 - 0.05 / m as f64)).abs() < 1e-9);
        let words = c["words"].as_str().unwrap();
        assert!(words.contains("Welch's t on logs"), "{words}");
        assert!(out.contains(words), "{out}");
    }
}
