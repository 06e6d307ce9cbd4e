//! The text of `go test -bench` (the benchfmt format): configuration lines `key: value`
//! (goos, goarch, pkg, cpu, …) that hold for the lines after them, and result lines
//! `BenchmarkName[-GOMAXPROCS] N value unit [value unit]…`. Each result line is one run of N
//! iterations; `ns/op` (or `sec/op`) gives the time per iteration, other units (B/op,
//! allocs/op, MB/s, custom) go into `extra.metrics`. Other lines (PASS, ok, logs) are skipped.
//! Hand-written: the format is a few lines of grammar and no maintained Rust crate reads it.

use super::{add_metric, benchmark, seconds_per, Imported, Input};
use crate::harness::gotest;
use crate::results::PROCESS_KEY;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};

/// One parsed result line.
struct Line<'a> {
    name: &'a str,
    procs: Option<&'a str>,
    n: f64,
    values: Vec<(f64, &'a str)>,
}

/// Some(result) for a line that starts like a benchmark result; None for any other line.
fn result_line(line: &str) -> Option<Result<Line<'_>, String>> {
    let l = gotest::line(line)?;
    let (name, procs) = l.name_procs();
    Some(l.pairs().map(|values| Line {
        name,
        procs,
        n: l.n as f64,
        values,
    }))
}

/// Seconds per operation of a time unit such as `ns/op` or `sec/op`.
fn time_per_op(unit: &str) -> Option<f64> {
    let (t, op) = unit.split_once('/')?;
    (op == "op").then_some(())?;
    seconds_per(t)
}

pub fn parse(input: &Input) -> anyhow::Result<Imported> {
    let text = input
        .text()
        .ok_or_else(|| anyhow::anyhow!("not UTF-8 text"))?;
    let mut im = Imported {
        tool: "go test -bench",
        wall_time: "time per iteration (ns/op) of each result line of `go test -bench`".into(),
        ..Imported::default()
    };
    let mut config: BTreeMap<String, String> = BTreeMap::new();
    let mut index: HashMap<(String, String, String), usize> = HashMap::new();
    let mut without_time = Vec::new();
    let mut lines = 0;
    // Test-binary runs (processes): each `go test` run of a package ends with PASS/FAIL and
    // `ok`; its -count lines are iterations within one process. A configuration block after
    // results (concatenated outputs) starts a new one too.
    let mut process = 0usize;
    let mut results_in_process = false;
    for (no, line) in text.lines().enumerate() {
        if ends_binary_run(line) || (config_line(line).is_some() && results_in_process) {
            if results_in_process {
                process += 1;
            }
            results_in_process = false;
        }
        if let Some((k, v)) = config_line(line) {
            config.insert(k.to_string(), v.trim().to_string());
            continue;
        }
        let Some(r) = result_line(line) else { continue };
        let r = r.map_err(|e| anyhow::anyhow!("line {}: {e}", no + 1))?;
        lines += 1;
        results_in_process = true;
        let pkg = config.get("pkg").cloned().unwrap_or_default();
        let procs = r.procs.unwrap_or("").to_string();
        let key = (pkg.clone(), r.name.to_string(), procs.clone());
        let i = *index.entry(key).or_insert_with(|| {
            let mut b = benchmark(r.name, r.name);
            if !pkg.is_empty() {
                b.parameters.insert("pkg".into(), pkg.clone());
            }
            if !procs.is_empty() {
                b.parameters.insert("gomaxprocs".into(), procs.clone());
            }
            let cfg: Map<String, Value> =
                config.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            b.extra.insert("configuration".into(), Value::Object(cfg));
            im.benchmarks.push(b);
            im.benchmarks.len() - 1
        });
        let b = &mut im.benchmarks[i];
        let time = r
            .values
            .iter()
            .find_map(|(v, u)| time_per_op(u).map(|s| v * s));
        let Some(per_op) = time else {
            without_time.push(format!("line {}", no + 1));
            continue;
        };
        let mut run = super::sample(b.runs.len(), per_op, Some(r.n), false);
        run.extra.insert("line".into(), json!(no + 1));
        run.extra.insert(PROCESS_KEY.into(), json!(process));
        for (v, u) in &r.values {
            if time_per_op(u).is_none() {
                add_metric(&mut run, u, *v, u);
            }
        }
        b.runs.push(run);
    }
    if lines == 0 {
        anyhow::bail!("no benchmark result lines (`BenchmarkName N value ns/op`)");
    }
    im.benchmarks.retain(|b| !b.runs.is_empty());
    for b in &mut im.benchmarks {
        super::process_level(
            b,
            "test binary",
            true,
            "each `go test` run (a test binary, ended by PASS/ok) is one process; its -count lines are iterations within it",
        );
    }
    if !without_time.is_empty() {
        im.not_mapped.push(format!(
            "result lines without a time per op (ns/op) not mapped: {}",
            without_time.join(", ")
        ));
    }
    if let Some(cpu) = config.get("cpu") {
        im.machine.cpu_model = cpu.clone();
    }
    im.settings = config.into_iter().map(|(k, v)| (k, json!(v))).collect();
    im.not_mapped
        .push("`go test -bench` output has no Go version, start time or command line".into());
    Ok(im)
}

/// The line that ends one test binary's output: `PASS`, `FAIL`, `ok  pkg 1.2s`, `FAIL pkg`.
fn ends_binary_run(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or("");
    matches!(first, "PASS" | "FAIL" | "ok")
}

/// A benchfmt configuration line: `key: value`, the key without spaces or upper case first.
fn config_line(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    let ok = !k.is_empty()
        && k.starts_with(|c: char| c.is_lowercase())
        && !k.contains(char::is_whitespace)
        && (v.is_empty() || v.starts_with(' '));
    ok.then_some((k, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines() {
        let l = result_line("BenchmarkJoin/n=10-2   185742   699.6 ns/op   32 B/op")
            .unwrap()
            .unwrap();
        assert_eq!(
            (l.name, l.procs, l.n),
            ("BenchmarkJoin/n=10", Some("2"), 185742.0)
        );
        assert_eq!(l.values, vec![(699.6, "ns/op"), (32.0, "B/op")]);
        assert!(result_line("Benchmarking is fun").is_none());
        assert!(result_line("BenchmarkX-2 --- FAIL: x").is_none());
        assert!(result_line("BenchmarkX-2  10  12").unwrap().is_err());
        assert!(config_line("goos: linux").is_some());
        assert!(config_line("ok  \texample.com/x\t1.6s").is_none());
        assert_eq!(time_per_op("sec/op"), Some(1.0));
    }
}
