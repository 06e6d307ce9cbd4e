//! Google Benchmark's JSON (`--benchmark_out_format=json`): a `context` (date, host, CPUs,
//! caches, library version) and `benchmarks[]`, where each `run_type: "iteration"` entry is
//! one repetition (`iterations` loops, `real_time` and `cpu_time` per iteration in
//! `time_unit`) and `run_type: "aggregate"` entries are the tool's mean/median/stddev/cv.

use super::{add_metric, benchmark, num, sample, seconds_per, string, Imported, Input};
use crate::harness::gbench as gb;
use crate::results::Termination;
use serde_json::{json, Value};
use std::collections::HashMap;

pub fn parse(input: &Input) -> anyhow::Result<Imported> {
    let doc = super::json_of(input)?;
    let ctx = doc
        .get("context")
        .filter(|c| c.is_object())
        .ok_or_else(|| anyhow::anyhow!("no \"context\" object (not Google Benchmark JSON)"))?;
    let entries = super::array(doc, "benchmarks", "the document")?;
    let mut im = Imported {
        tool: "Google Benchmark",
        tool_version: ctx
            .get("library_version")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        started_at: ctx.get("date").and_then(|v| v.as_str()).map(str::to_string),
        invocation: ctx
            .get("executable")
            .and_then(|v| v.as_str())
            .map(|e| vec![e.to_string()])
            .unwrap_or_default(),
        measures_cpu: true,
        wall_time: "real time per iteration as measured by Google Benchmark (or the benchmark's manual time)".into(),
        ..Imported::default()
    };
    im.machine.hostname = str_of(ctx, "host_name");
    im.machine.logical_cpus = ctx.get("num_cpus").and_then(|v| v.as_u64()).unwrap_or(0) as usize;
    for key in [
        "mhz_per_cpu",
        "cpu_scaling_enabled",
        "caches",
        "load_avg",
        "library_build_type",
        "json_schema_version",
    ] {
        if let Some(v) = ctx.get(key) {
            im.context.insert(key.into(), v.clone());
        }
    }
    if im.tool_version.is_none() {
        im.not_mapped
            .push("this Google Benchmark version does not record its version in the JSON".into());
    }
    if ctx.get("library_build_type").and_then(|v| v.as_str()) == Some("debug") {
        im.not_mapped.push(
            "the Google Benchmark library was a debug build (context.library_build_type); kept in context"
                .into(),
        );
    }
    let mut benches: HashMap<String, usize> = HashMap::new(); // run name → im.benchmarks[i]
    let mut aggregates_only = Vec::new();
    let mut complexity = Vec::new();
    for (k, e) in entries.iter().enumerate() {
        let what = format!("benchmarks[{k}]");
        let name = string(e, "name", &what)?;
        let run_name = e.get("run_name").and_then(|v| v.as_str()).unwrap_or(name);
        if e.get("big_o").is_some() || e.get("rms").is_some() {
            complexity.push(name.to_string());
            continue;
        }
        let idx = match benches.get(run_name) {
            Some(&i) => i,
            None => {
                let mut b = benchmark(run_name, run_name);
                b.extra.insert("source_summary".into(), json!({}));
                if let Some(t) = e.get("threads") {
                    b.extra.insert("threads".into(), t.clone());
                }
                im.benchmarks.push(b);
                benches.insert(run_name.into(), im.benchmarks.len() - 1);
                im.benchmarks.len() - 1
            }
        };
        let b = &mut im.benchmarks[idx];
        let unit = gb::time_unit(e);
        let scale = seconds_per(unit)
            .ok_or_else(|| anyhow::anyhow!("{what}: unknown time_unit \"{unit}\""))?;
        if gb::run_type(e) == "aggregate" {
            let agg = string(e, "aggregate_name", &what)?;
            let percentage = e.get("aggregate_unit").and_then(|v| v.as_str()) == Some("percentage");
            let factor = if percentage { 1.0 } else { scale };
            let real = num(e, "real_time", &what)? * factor;
            let cpu = num(e, "cpu_time", &what)? * factor;
            if let Some(Value::Object(s)) = b.extra.get_mut("source_summary") {
                s.insert(agg.into(), json!({"real_time": real, "cpu_time": cpu}));
            }
            continue;
        }
        let iterations = num(e, "iterations", &what)?;
        let real = num(e, "real_time", &what)? * scale;
        let cpu = num(e, "cpu_time", &what)? * scale;
        let mut run = sample(b.runs.len(), real, Some(iterations), false);
        run.cpu_time = cpu;
        if let Some(r) = e.get("repetition_index") {
            run.extra.insert("repetition".into(), r.clone());
        }
        if let Some(why) = gb::error(e) {
            run.counted = false;
            run.termination = Termination::Failed;
            run.extra.insert("error".into(), why.clone());
        }
        if let Some(l) = e.get("label") {
            run.extra.insert("label".into(), l.clone());
        }
        if let Value::Object(fields) = e {
            for (key, v) in fields {
                if gb::is_field(key, &[gb::RUN_FIELDS, gb::COMPLEXITY_FIELDS]) {
                    continue;
                }
                if let Some(x) = v.as_f64() {
                    let unit = match key.as_str() {
                        "bytes_per_second" => "B/s",
                        "items_per_second" => "items/s",
                        _ => "",
                    };
                    add_metric(&mut run, key, x, unit);
                }
            }
        }
        b.runs.push(run);
    }
    for b in &mut im.benchmarks {
        super::process_level(
            b,
            "file",
            false,
            &format!(
                "Google Benchmark runs all repetitions in one process; {}",
                super::ONE_PROCESS_PER_FILE
            ),
        );
    }
    for b in &im.benchmarks {
        if b.runs.is_empty() {
            aggregates_only.push(b.name.clone());
        }
    }
    if !aggregates_only.is_empty() {
        im.not_mapped.push(format!(
            "only aggregates, no repetitions, for {} (--benchmark_report_aggregates_only): no samples; the aggregates are in source_summary",
            aggregates_only.join(", ")
        ));
    }
    if !complexity.is_empty() {
        im.not_mapped.push(format!(
            "complexity fits (big O, RMS) not mapped: {}",
            complexity.join(", ")
        ));
    }
    im.not_mapped
        .push("user and system time are not split by Google Benchmark: cpu_time only".into());
    Ok(im)
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(|x| x.as_str())
        .unwrap_or_default()
        .to_string()
}
