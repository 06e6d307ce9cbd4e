//! `tare import` on files made by the real tools (`tests/data/import/<tool>/`, made by
//! `scripts/make_import_fixtures.sh`): for each tool the number of benchmarks and samples, the
//! samples' values against the raw numbers in the file, and the summary recomputed from the
//! imported samples against the summary the tool itself wrote (to within its rounding);
//! units (seconds), loops and elapsed per batch, the tool's metadata, and what is recorded as
//! not mapped. Then the CLI: import → `tare compare` / `tare report` on the result.

mod common;
#[path = "common/skip.rs"]
mod skip;

use serde_json::Value;
use std::path::{Path, PathBuf};
use tare::results::import::{load, Format};
use tare::results::{Benchmark, MethodKind, Session};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(rel)
}

fn json(rel: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(rel)).unwrap()).unwrap()
}

/// Loads with auto-detection, and checks that it is the same as naming the format (by its
/// name in the harnesses' table).
fn import(rel: &str, format: &str) -> Session {
    let format: Format = format.parse().unwrap();
    let auto = load(&fixture(rel), None).unwrap_or_else(|e| panic!("{rel}: {e:#}"));
    let named = load(&fixture(rel), Some(format)).unwrap();
    assert_eq!(
        auto, named,
        "{rel}: auto-detected differently from --format {format}"
    );
    assert_eq!(auto.method.kind, MethodKind::Imported);
    assert_eq!(auto.extra["import"]["format"], format.name());
    // Every imported session is one tare's readers accept.
    tare::results::read::check_session(&auto).unwrap();
    auto
}

fn walls(b: &Benchmark) -> Vec<f64> {
    b.runs
        .iter()
        .filter(|r| r.counted)
        .map(|r| r.wall_time)
        .collect()
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[track_caller]
fn close(a: f64, b: f64, rel: f64) {
    assert!(
        (a - b).abs() <= rel * b.abs().max(1e-300),
        "{a} vs {b} (relative tolerance {rel})"
    );
}

fn not_mapped(s: &Session) -> String {
    s.extra["import"]["not_mapped"].to_string()
}

fn bench<'a>(s: &'a Session, name: &str) -> &'a Benchmark {
    s.benchmarks
        .iter()
        .find(|b| b.name == name)
        .unwrap_or_else(|| panic!("no benchmark {name}"))
}

#[test]
fn hyperfine_runs_and_summary() {
    let s = import("hyperfine/two-commands.json", "hyperfine");
    let doc = json("hyperfine/two-commands.json");
    assert_eq!(s.benchmarks.len(), 2);
    for (b, r) in s.benchmarks.iter().zip(doc["results"].as_array().unwrap()) {
        assert_eq!(b.name, r["command"].as_str().unwrap());
        let times: Vec<f64> = r["times"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_f64().unwrap())
            .collect();
        assert_eq!(walls(b), times, "every run, in order, in seconds");
        assert_eq!(b.runs.len(), 12);
        assert!(b
            .runs
            .iter()
            .all(|r| r.exit_code == Some(0) && !r.extra.contains_key("loops")));
        // hyperfine's own mean, median and standard deviation, from the same runs.
        let w = b.summary.wall_time.as_ref().unwrap();
        close(w.mean, r["mean"].as_f64().unwrap(), 1e-12);
        close(w.median, r["median"].as_f64().unwrap(), 1e-12);
        close(w.stddev, r["stddev"].as_f64().unwrap(), 1e-9);
        close(w.min, r["min"].as_f64().unwrap(), 0.0);
        close(w.max, r["max"].as_f64().unwrap(), 0.0);
        // User and system time are only means: in the source summary, not per run.
        assert_eq!(b.extra["source_summary"]["user"], r["user"]);
        assert!(b.summary.cpu_time.is_none() && b.summary.user_time.is_none());
        assert_eq!(b.argv[0], "gzip");
    }
    assert_eq!(s.extra["import"]["tool"], "hyperfine");
    assert!(not_mapped(&s).contains("user and system time"));
    assert!(not_mapped(&s).contains("warm-up"));

    let scan = import("hyperfine/parameter-scan.json", "hyperfine");
    let levels: Vec<&str> = scan
        .benchmarks
        .iter()
        .map(|b| b.parameters["level"].as_str())
        .collect();
    assert_eq!(levels, ["1", "2", "3"]);

    let failing = import("hyperfine/ignored-failure.json", "hyperfine");
    let runs = &failing.benchmarks[0].runs;
    assert_eq!(runs.len(), 5);
    assert!(
        runs.iter().all(|r| r.exit_code == Some(1) && r.counted),
        "hyperfine -i counted them"
    );
}

#[test]
fn google_benchmark_repetitions_and_aggregates() {
    let s = import("gbench/repetitions.json", "gbench");
    let doc = json("gbench/repetitions.json");
    let entries = doc["benchmarks"].as_array().unwrap();
    assert_eq!(s.benchmarks.len(), 3);
    for b in &s.benchmarks {
        let reps: Vec<&Value> = entries
            .iter()
            .filter(|e| e["run_name"] == b.name.as_str() && e["run_type"] == "iteration")
            .collect();
        assert_eq!(b.runs.len(), 3);
        assert_eq!(reps.len(), 3);
        let scale = match reps[0]["time_unit"].as_str().unwrap() {
            "ns" => 1e-9,
            "us" => 1e-6,
            u => panic!("unit {u} in the fixture"),
        };
        for (r, e) in b.runs.iter().zip(&reps) {
            close(r.wall_time, e["real_time"].as_f64().unwrap() * scale, 1e-12);
            close(r.cpu_time, e["cpu_time"].as_f64().unwrap() * scale, 1e-12);
            assert_eq!(r.extra["loops"], e["iterations"]);
            close(
                r.extra["elapsed"].as_f64().unwrap(),
                e["real_time"].as_f64().unwrap() * scale * e["iterations"].as_f64().unwrap(),
                1e-12,
            );
            assert_eq!(r.extra["repetition"], e["repetition_index"]);
        }
        // The tool's aggregates against the summary of the imported repetitions.
        let agg = |name: &str, field: &str| {
            entries
                .iter()
                .find(|e| e["run_name"] == b.name.as_str() && e["aggregate_name"] == name)
                .unwrap()[field]
                .as_f64()
                .unwrap()
                * scale
        };
        let w = b.summary.wall_time.as_ref().unwrap();
        let c = b.summary.cpu_time.as_ref().unwrap();
        close(w.mean, agg("mean", "real_time"), 1e-9);
        close(w.median, agg("median", "real_time"), 1e-9);
        close(w.stddev, agg("stddev", "real_time"), 1e-6);
        close(c.mean, agg("mean", "cpu_time"), 1e-9);
        close(c.median, agg("median", "cpu_time"), 1e-9);
        close(
            b.extra["source_summary"]["mean"]["real_time"]
                .as_f64()
                .unwrap(),
            agg("mean", "real_time"),
            1e-12,
        );
    }
    let copy = bench(&s, "BM_StringCopy/64");
    assert_eq!(
        copy.runs[0].extra["metrics"]["bytes_per_second"]["unit"],
        "B/s"
    );
    let acc = bench(&s, "BM_Accumulate");
    assert_eq!(acc.runs[0].extra["metrics"]["elements"]["value"], 1000.0);
    assert_eq!(s.started_at, doc["context"]["date"].as_str().unwrap());
    assert_eq!(
        s.machine.hostname,
        doc["context"]["host_name"].as_str().unwrap()
    );
    assert_eq!(
        s.machine.logical_cpus as u64,
        doc["context"]["num_cpus"].as_u64().unwrap()
    );
    assert_eq!(s.extra["import"]["tool"], "Google Benchmark");
    assert!(not_mapped(&s).contains("does not record its version"));

    // Only the aggregates: no samples, and it says so.
    let agg = import("gbench/aggregates-only.json", "gbench");
    assert_eq!(agg.benchmarks.len(), 3);
    assert!(agg.benchmarks.iter().all(|b| b.runs.is_empty()
        && b.summary.wall_time.is_none()
        && b.extra["source_summary"]["median"].is_object()));
    assert!(not_mapped(&agg).contains("only aggregates"));

    let single = import("gbench/single.json", "gbench");
    assert!(single.benchmarks.iter().all(|b| b.runs.len() == 1));
}

#[test]
fn jmh_iterations_per_fork() {
    let s = import("jmh/avgt-thrpt.json", "jmh");
    let doc = json("jmh/avgt-thrpt.json");
    assert_eq!(s.benchmarks.len(), 4);
    for (b, e) in s.benchmarks.iter().zip(doc.as_array().unwrap()) {
        let pm = &e["primaryMetric"];
        let raw: Vec<f64> = pm["rawData"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|f| f.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()))
            .collect();
        assert_eq!(b.runs.len(), 6, "2 forks × 3 iterations");
        assert_eq!(raw.len(), 6);
        assert_eq!(b.parameters["mode"], e["mode"].as_str().unwrap());
        assert_eq!(b.parameters["size"], e["params"]["size"].as_str().unwrap());
        let scores: Vec<f64> = b
            .runs
            .iter()
            .map(|r| r.extra["score"].as_f64().unwrap())
            .collect();
        assert_eq!(scores, raw);
        assert_eq!(b.runs[3].extra["fork"], 1);
        let score = pm["score"].as_f64().unwrap();
        let p50 = pm["scorePercentiles"]["50.0"].as_f64().unwrap();
        match pm["scoreUnit"].as_str().unwrap() {
            "ns/op" => {
                // Seconds per operation: the tool's score is the mean of its iterations.
                let w = b.summary.wall_time.as_ref().unwrap();
                close(w.mean, score * 1e-9, 1e-12);
                close(w.median, p50 * 1e-9, 1e-12);
            }
            "ops/ms" => {
                for (r, x) in b.runs.iter().zip(&raw) {
                    close(r.wall_time, 1.0 / (x * 1e3), 1e-12);
                }
                let back: Vec<f64> = walls(b).iter().map(|w| 1.0 / w / 1e3).collect();
                close(mean(&back), score, 1e-12);
                close(median(&back), p50, 1e-12);
            }
            u => panic!("unit {u} in the fixture"),
        }
    }
    assert_eq!(s.extra["import"]["tool_version"], "1.37");
    assert_eq!(
        s.extra["import"]["settings"]["jdkVersion"],
        doc[0]["jdkVersion"]
    );
    assert!(not_mapped(&s).contains("warm-up"));
    assert!(not_mapped(&s).contains("thrpt scores are stored as their reciprocal"));

    // Sample mode: a histogram per iteration, whose overall mean is the tool's score.
    let s = import("jmh/sample.json", "jmh");
    let doc = json("jmh/sample.json");
    let b = &s.benchmarks[0];
    assert_eq!(b.runs.len(), 2);
    let (mut total, mut count) = (0.0, 0.0);
    for r in &b.runs {
        let (mut t, mut c) = (0.0, 0.0);
        for bin in r.extra["histogram"].as_array().unwrap() {
            t += bin[0].as_f64().unwrap() * bin[1].as_f64().unwrap();
            c += bin[1].as_f64().unwrap();
        }
        close(r.wall_time, t / c, 1e-12);
        assert_eq!(r.extra["samples"].as_f64().unwrap(), c);
        total += t;
        count += c;
    }
    close(
        total / count,
        doc[0]["primaryMetric"]["score"].as_f64().unwrap() * 1e-6,
        1e-9,
    );
    assert_eq!(b.runs[1].extra["metrics"]["p0.50"]["unit"], "us/op");

    // Single shot with the GC profiler: one batch per iteration, secondary metrics per run.
    let s = import("jmh/single-shot-gc.json", "jmh");
    let doc = json("jmh/single-shot-gc.json");
    let b = &s.benchmarks[0];
    assert_eq!(b.runs.len(), 5);
    close(
        b.summary.wall_time.as_ref().unwrap().mean,
        doc[0]["primaryMetric"]["score"].as_f64().unwrap() * 1e-9,
        1e-12,
    );
    let norm = &doc[0]["secondaryMetrics"]["gc.alloc.rate.norm"]["rawData"][0];
    for (i, r) in b.runs.iter().enumerate() {
        assert_eq!(r.extra["loops"], 1);
        assert_eq!(r.extra["metrics"]["gc.alloc.rate.norm"]["value"], norm[i]);
        assert_eq!(r.extra["metrics"]["gc.alloc.rate.norm"]["unit"], "B/op");
    }
}

#[test]
fn go_bench_lines() {
    let s = import("go/bench.txt", "go");
    let text = std::fs::read_to_string(fixture("go/bench.txt")).unwrap();
    let lines: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("Benchmark"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 12);
    assert_eq!(s.benchmarks.len(), 3);
    let runs: Vec<_> = s.benchmarks.iter().flat_map(|b| &b.runs).collect();
    assert_eq!(runs.len(), 12);
    for f in &lines {
        let name = f[0].rsplit_once('-').unwrap().0;
        let b = bench(&s, name);
        assert_eq!(b.parameters["gomaxprocs"], f[0].rsplit_once('-').unwrap().1);
        assert_eq!(b.parameters["pkg"], "example.com/tarefixture");
        let n: f64 = f[1].parse().unwrap();
        let ns: f64 = f[2].parse().unwrap();
        assert_eq!(f[3], "ns/op");
        let r = b
            .runs
            .iter()
            .find(|r| {
                r.extra["loops"].as_f64() == Some(n) && (r.wall_time - ns * 1e-9).abs() < 1e-15
            })
            .unwrap_or_else(|| panic!("no run for {f:?}"));
        close(r.extra["elapsed"].as_f64().unwrap(), n * ns * 1e-9, 1e-12);
        if name.starts_with("BenchmarkJoin") {
            let bytes: f64 = f[6].parse().unwrap();
            assert_eq!(r.extra["metrics"]["B/op"]["value"].as_f64(), Some(bytes));
            assert_eq!(r.extra["metrics"]["allocs/op"]["value"].as_f64(), Some(1.0));
            assert!(r.extra["metrics"]["MB/s"].is_object());
        }
    }
    assert_eq!(s.machine.cpu_model, "AMD EPYC");
    assert_eq!(s.extra["import"]["settings"]["goos"], "linux");
    assert!(not_mapped(&s).contains("no Go version"));
}

#[test]
fn criterion_samples_with_iteration_counts() {
    let s = import("criterion/criterion", "criterion");
    assert_eq!(s.benchmarks.len(), 3);
    for b in &s.benchmarks {
        let dir = fixture("criterion/criterion").join(&b.command).join("new");
        let read = |f: &str| -> Value {
            serde_json::from_slice(&std::fs::read(dir.join(f)).unwrap()).unwrap()
        };
        let sample = read("sample.json");
        let est = read("estimates.json");
        let iters = sample["iters"].as_array().unwrap();
        let times = sample["times"].as_array().unwrap();
        assert_eq!(b.runs.len(), iters.len());
        assert_eq!(b.runs.len(), 10);
        for ((r, n), t) in b.runs.iter().zip(iters).zip(times) {
            assert_eq!(r.extra["loops"].as_f64(), n.as_f64());
            close(
                r.extra["elapsed"].as_f64().unwrap(),
                t.as_f64().unwrap() * 1e-9,
                1e-12,
            );
            close(
                r.wall_time,
                t.as_f64().unwrap() / n.as_f64().unwrap() * 1e-9,
                1e-12,
            );
        }
        // Criterion's point estimates of the mean and median are those of the samples'
        // times per iteration.
        let w = b.summary.wall_time.as_ref().unwrap();
        close(
            w.mean,
            est["mean"]["point_estimate"].as_f64().unwrap() * 1e-9,
            1e-9,
        );
        close(
            w.median,
            est["median"]["point_estimate"].as_f64().unwrap() * 1e-9,
            1e-9,
        );
        close(
            w.stddev,
            est["std_dev"]["point_estimate"].as_f64().unwrap() * 1e-9,
            1e-9,
        );
        close(
            b.extra["source_summary"]["mean"]["point_estimate"]
                .as_f64()
                .unwrap(),
            w.mean,
            1e-9,
        );
        assert_eq!(b.extra["tukey_fences"].as_array().unwrap().len(), 4);
    }
    let v64 = s
        .benchmarks
        .iter()
        .find(|b| {
            b.name == "vec_sum" && b.parameters.get("parameter").map(String::as_str) == Some("64")
        })
        .unwrap();
    assert_eq!(v64.extra["throughput"]["Elements"], 64);
    assert_eq!(v64.extra["sampling_mode"], "Linear");
    assert!(not_mapped(&s).contains("change/estimates.json"));

    // One benchmark's directory, or one of its files, is one benchmark.
    let one = import("criterion/criterion/vec_sum/64", "criterion");
    assert_eq!(one.benchmarks.len(), 1);
    assert_eq!(one.benchmarks[0].runs, v64.runs);
    let file = import("criterion/criterion/sum_100/new/sample.json", "criterion");
    assert_eq!(file.benchmarks[0].name, "sum_100");
}

#[test]
fn pytest_benchmark_rounds() {
    let s = import("pytest-benchmark/bench.json", "pytest-benchmark");
    let doc = json("pytest-benchmark/bench.json");
    let entries = doc["benchmarks"].as_array().unwrap();
    assert_eq!(s.benchmarks.len(), 4);
    for (b, e) in s.benchmarks.iter().zip(entries) {
        let st = &e["stats"];
        assert_eq!(b.runs.len() as u64, st["rounds"].as_u64().unwrap());
        let data: Vec<f64> = st["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(walls(b), data);
        let w = b.summary.wall_time.as_ref().unwrap();
        close(w.mean, st["mean"].as_f64().unwrap(), 1e-9);
        close(w.median, st["median"].as_f64().unwrap(), 1e-9);
        close(w.stddev, st["stddev"].as_f64().unwrap(), 1e-9);
        close(w.min, st["min"].as_f64().unwrap(), 0.0);
        close(w.max, st["max"].as_f64().unwrap(), 0.0);
        for r in &b.runs {
            assert_eq!(r.extra["loops"], st["iterations"]);
        }
        assert_eq!(b.command, e["fullname"].as_str().unwrap());
    }
    let pedantic = bench(&s, "test_sums.py::test_pedantic");
    assert_eq!(pedantic.runs[0].extra["loops"], 20);
    assert_eq!(pedantic.runs.len(), 7);
    let joins: Vec<_> = s
        .benchmarks
        .iter()
        .filter(|b| b.name == "test_sums.py::test_join")
        .map(|b| b.parameters["n"].clone())
        .collect();
    assert_eq!(joins, ["10", "1000"]);
    assert_eq!(s.extra["import"]["tool_version"], doc["version"]);
    assert_eq!(s.started_at, doc["datetime"].as_str().unwrap());
    assert_eq!(
        s.machine.hostname,
        doc["machine_info"]["node"].as_str().unwrap()
    );
    assert_eq!(
        s.extra["import"]["context"]["commit_info"],
        doc["commit_info"]
    );
}

/// "Mean +- std dev: 110 us +- 38 us" → seconds.
fn pyperf_stat(text: &str, label: &str) -> f64 {
    let line = text.lines().find(|l| l.starts_with(label)).unwrap();
    let rest = line[label.len()..].trim();
    let mut it = rest.split_whitespace();
    let v: f64 = it.next().unwrap().parse().unwrap();
    let unit = match it.next().unwrap() {
        "ns" => 1e-9,
        "us" => 1e-6,
        "ms" => 1e-3,
        "sec" => 1.0,
        u => panic!("unit {u}"),
    };
    v * unit
}

#[test]
fn pyperf_values_and_warmups() {
    let s = import("pyperf/timeit.json", "pyperf");
    let doc = json("pyperf/timeit.json");
    let stats = std::fs::read_to_string(fixture("pyperf/timeit.stats.txt")).unwrap();
    assert_eq!(s.benchmarks.len(), 1);
    let b = &s.benchmarks[0];
    assert_eq!(b.name, "sum_range");
    let runs = doc["benchmarks"][0]["runs"].as_array().unwrap();
    let values: usize = runs
        .iter()
        .filter_map(|r| r["values"].as_array())
        .map(Vec::len)
        .sum();
    let warmups: usize = runs
        .iter()
        .filter_map(|r| r["warmups"].as_array())
        .map(Vec::len)
        .sum();
    assert_eq!(walls(b).len(), values);
    assert_eq!(values, 9, "3 processes × 3 values");
    assert_eq!(
        b.runs.iter().filter(|r| r.warmup && !r.counted).count(),
        warmups
    );
    // pyperf's own summary (pyperf stats: three significant digits).
    let w = b.summary.wall_time.as_ref().unwrap();
    close(w.mean, pyperf_stat(&stats, "Mean +- std dev:"), 0.006);
    close(w.median, pyperf_stat(&stats, "Median +- MAD:"), 0.006);
    close(w.min, pyperf_stat(&stats, "Minimum:"), 0.006);
    close(w.max, pyperf_stat(&stats, "Maximum:"), 0.006);
    assert!(stats.contains(&format!("Total number of values: {values}")));
    // Loops: each value timed `loops` iterations together ("Raw value" = value × loops).
    let loops = doc["metadata"]["loops"].as_f64().unwrap();
    assert!(stats.contains(&format!("Loop iterations per value: {loops}")));
    let counted: Vec<_> = b.runs.iter().filter(|r| r.counted).collect();
    assert!(counted
        .iter()
        .all(|r| r.extra["loops"].as_f64() == Some(loops)));
    let raw_min = counted
        .iter()
        .map(|r| r.extra["elapsed"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    close(raw_min, pyperf_stat(&stats, "Raw value minimum:"), 0.006);
    assert_eq!(
        counted[0].extra["process"], 1,
        "process 0 is the calibration run"
    );
    assert!(counted[0].extra["process_max_rss"].as_u64().unwrap() > 1_000_000);
    assert_eq!(
        s.extra["import"]["tool_version"],
        doc["metadata"]["perf_version"]
    );
    // The first run's date ("2026-11-22 23:12:01.882896", local time) in RFC 3339.
    let date = runs[0]["metadata"]["date"].as_str().unwrap();
    assert_eq!(s.started_at, format!("{}Z", date[..19].replace(' ', "T")));
    assert_eq!(
        s.machine.hostname,
        doc["metadata"]["hostname"].as_str().unwrap()
    );

    let suite = import("pyperf/suite.json", "pyperf");
    let stats = std::fs::read_to_string(fixture("pyperf/suite.stats.txt")).unwrap();
    let names: Vec<&str> = suite.benchmarks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["sorted", "join"]);
    for b in &suite.benchmarks {
        let section = stats.split(&format!("\n{}\n", b.name)).nth(1).unwrap();
        let w = b.summary.wall_time.as_ref().unwrap();
        close(w.mean, pyperf_stat(section, "Mean +- std dev:"), 0.006);
        close(w.median, pyperf_stat(section, "Median +- MAD:"), 0.006);
        assert_eq!(w.n, 4);
    }
}

#[test]
fn detection_is_by_content_not_name() {
    let dir = tempfile::tempdir().unwrap();
    for (rel, format) in [
        ("hyperfine/two-commands.json", "hyperfine"),
        ("gbench/repetitions.json", "gbench"),
        ("jmh/avgt-thrpt.json", "jmh"),
        ("go/bench.txt", "go"),
        ("pytest-benchmark/bench.json", "pytest-benchmark"),
        ("pyperf/timeit.json", "pyperf"),
    ] {
        let renamed = dir.path().join("results.data");
        std::fs::copy(fixture(rel), &renamed).unwrap();
        let s = load(&renamed, None).unwrap();
        assert_eq!(s.extra["import"]["format"], format, "{rel}");
    }
}

#[test]
fn several_files_merge_trials_of_one_benchmark() {
    let out = common::tare()
        .args(["import"])
        .arg(fixture("go/bench.txt"))
        .arg(fixture("go/bench-again.txt"))
        .arg("-o")
        .arg(std::env::temp_dir().join(format!("tare-import-merge-{}.json", std::process::id())))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = std::env::temp_dir().join(format!("tare-import-merge-{}.json", std::process::id()));
    let s = tare::results::read::load_session(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(s.benchmarks.len(), 3);
    for b in &s.benchmarks {
        assert_eq!(b.runs.len(), 8, "4 lines from each file");
        let idx: Vec<usize> = b.runs.iter().map(|r| r.index).collect();
        assert_eq!(idx, (0..8).collect::<Vec<_>>());
        assert_eq!(b.runs[5].extra["source"], 1);
    }
    assert_eq!(s.extra["import"]["sources"].as_array().unwrap().len(), 2);
}

#[test]
fn imported_results_compare_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = common::tare()
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let f = |rel: &str| fixture(rel).display().to_string();
    for (src, out) in [
        ("go/bench.txt", "old.json"),
        ("go/bench-again.txt", "new.json"),
        ("criterion/criterion", "crit.json"),
        ("gbench/repetitions.json", "gb.json"),
        ("jmh/avgt-thrpt.json", "jmh.json"),
        ("pyperf/suite.json", "pyperf.json"),
        ("pytest-benchmark/bench.json", "pytest.json"),
        ("hyperfine/two-commands.json", "hf.json"),
    ] {
        let (code, stdout, stderr) = run(&["import", &f(src), "-o", out]);
        assert_eq!(code, Some(0), "{src}: {stderr}");
        assert!(
            stderr.contains("tare: imported") && stdout.contains("median/iter"),
            "{stderr}{stdout}"
        );
        assert_eq!(stderr.lines().count(), 2, "{stderr}");
    }
    // The file written is what `--export-json` would write for the same session.
    let written = std::fs::read_to_string(dir.path().join("crit.json")).unwrap();
    let session = load(&fixture("criterion/criterion"), None).unwrap();
    assert_eq!(written, tare::results::export::to_json(&session).unwrap());
    let (code, stdout, stderr) = run(&["compare", "old.json", "new.json"]);
    assert!(matches!(code, Some(0 | 1)), "{stderr}");
    assert!(
        stdout.contains("BenchmarkJoin/n=10") && stdout.contains("BenchmarkSum"),
        "{stdout}"
    );
    for file in [
        "crit.json",
        "gb.json",
        "jmh.json",
        "pyperf.json",
        "pytest.json",
        "hf.json",
    ] {
        let (code, stdout, stderr) = run(&["report", "--terminal", "--style", "basic", file]);
        assert_eq!(code, Some(0), "{file}: {stderr}");
        assert!(stdout.contains("another harness"), "{file}: {stdout}");
    }
    let (code, _, stderr) = run(&["report", "crit.json", "--html", "crit.html"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(dir.path().join("crit.html").exists());
}

#[test]
fn merged_summaries_keep_what_each_tool_measured() {
    let gb = |rel: &str| load(&fixture(rel), None).unwrap();
    let merged = tare::results::import::merge(vec![
        gb("gbench/repetitions.json"),
        gb("gbench/single.json"),
        gb("hyperfine/two-commands.json"),
    ])
    .unwrap();
    assert_eq!(merged.benchmarks.len(), 5);
    let copy = bench(&merged, "BM_StringCopy/64");
    assert_eq!(copy.runs.len(), 4, "3 repetitions and 1");
    let cpu = copy.summary.cpu_time.as_ref().unwrap();
    assert_eq!(cpu.n, 4);
    let cpus: Vec<f64> = copy.runs.iter().map(|r| r.cpu_time).collect();
    assert!((cpu.mean - mean(&cpus)).abs() < 1e-15);
    assert_eq!(copy.runs[3].extra["source"], 1);
    let hf = bench(&merged, "gzip -1 -c /etc/services");
    assert!(hf.summary.cpu_time.is_none() && hf.summary.wall_time.as_ref().unwrap().n == 12);
    assert_eq!(merged.extra["import"]["sources"][2]["tool"], "hyperfine");
}

/// The distinct processes (`Run.extra["process"]`) of a benchmark's counted samples, and the
/// unit its `process_level` names (issue 22).
fn processes(b: &Benchmark) -> (std::collections::BTreeSet<String>, String, bool) {
    let ids = b
        .runs
        .iter()
        .filter(|r| r.counted)
        .map(|r| {
            r.extra
                .get("process")
                .unwrap_or_else(|| panic!("{}: a sample without extra.process", b.name))
                .to_string()
        })
        .collect();
    let level = &b.extra["process_level"];
    (
        ids,
        level["unit"].as_str().unwrap().to_string(),
        level["recorded"].as_bool().unwrap(),
    )
}

#[test]
fn importers_keep_the_process_level() {
    // hyperfine: each run is its own process.
    let s = import("hyperfine/two-commands.json", "hyperfine");
    for b in &s.benchmarks {
        let (ids, unit, recorded) = processes(b);
        assert_eq!((unit.as_str(), recorded), ("run", true));
        assert_eq!(ids.len(), walls(b).len(), "{}", b.name);
    }
    // JMH: one process per fork.
    let doc = json("jmh/avgt-thrpt.json");
    let s = import("jmh/avgt-thrpt.json", "jmh");
    for (b, e) in s.benchmarks.iter().zip(doc.as_array().unwrap()) {
        let (ids, unit, _) = processes(b);
        assert_eq!(unit, "fork");
        let forks = e["primaryMetric"]["rawData"].as_array().unwrap().len();
        assert_eq!(ids.len(), forks, "{}", b.name);
        assert!(forks >= 2, "the fixture has several forks");
    }
    // pyperf: one process per worker run that has values.
    let doc = json("pyperf/suite.json");
    let s = import("pyperf/suite.json", "pyperf");
    for (b, e) in s
        .benchmarks
        .iter()
        .zip(doc["benchmarks"].as_array().unwrap())
    {
        let (ids, unit, _) = processes(b);
        assert_eq!(unit, "worker");
        let workers = e["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r.get("values").is_some())
            .count();
        assert_eq!(ids.len(), workers, "{}", b.name);
    }
    // go test: the -count 4 lines of one `go test` run are one process...
    let s = import("go/bench.txt", "go");
    for b in &s.benchmarks {
        let (ids, unit, _) = processes(b);
        assert_eq!(unit, "test binary");
        assert_eq!(ids.len(), 1, "{}: {ids:?}", b.name);
        assert_eq!(walls(b).len(), 4);
    }
    // ...and two runs one after the other are two.
    let dir = tempfile::tempdir().unwrap();
    let both = dir.path().join("both.txt");
    let text = std::fs::read_to_string(fixture("go/bench.txt")).unwrap()
        + &std::fs::read_to_string(fixture("go/bench-again.txt")).unwrap();
    std::fs::write(&both, text).unwrap();
    let s = load(&both, Some("go".parse().unwrap())).unwrap();
    for b in &s.benchmarks {
        assert_eq!(processes(b).0.len(), 2, "{}", b.name);
    }
    // Formats that record no process: one per file, said so.
    for (rel, format) in [
        ("gbench/repetitions.json", "gbench"),
        ("pytest-benchmark/bench.json", "pytest-benchmark"),
        ("criterion/criterion", "criterion"),
    ] {
        let s = import(rel, format);
        for b in s.benchmarks.iter().filter(|b| !walls(b).is_empty()) {
            let (ids, unit, recorded) = processes(b);
            assert_eq!((unit.as_str(), recorded), ("file", false), "{rel}");
            assert_eq!(ids.len(), 1, "{rel}");
            assert!(
                b.extra["process_level"]["note"]
                    .as_str()
                    .unwrap()
                    .contains("does not record"),
                "{rel}"
            );
        }
    }
}

#[test]
fn real_hyperfine_runs_are_processes() {
    if !std::process::Command::new("hyperfine")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skip::skip("hyperfine", "apt-get install hyperfine");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hf.json");
    let st = std::process::Command::new("hyperfine")
        .args(["-N", "--runs", "5", "--warmup", "1", "--export-json"])
        .arg(&out)
        .arg("true")
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let s = load(&out, None).unwrap();
    let (ids, unit, _) = processes(&s.benchmarks[0]);
    assert_eq!((ids.len(), unit.as_str()), (5, "run"));
}
