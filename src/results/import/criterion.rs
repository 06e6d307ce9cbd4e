//! Criterion's data directory (`target/criterion`): per benchmark a directory with
//! `new/benchmark.json` (ids, throughput), `new/sample.json` (each sample's iteration count
//! `iters` and total time `times` in ns), `new/estimates.json` (the tool's bootstrap estimates,
//! ns per iteration) and `new/tukey.json` (outlier fences). Each sample becomes a run of
//! `iters` loops. `base/` (a copy of a saved baseline) is not read; `change/` (the comparison
//! with the baseline) is reported as not mapped.
//!
//! The input may be `target/criterion`, `target`, a group's directory, one benchmark's
//! directory, or any of the JSON files in `new/`.

use super::{benchmark, number, Imported, Input};
use crate::harness::criterion as crit;
use serde_json::{json, Value};
use std::path::Path;

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let bytes = crate::results::input::read(path, "Criterion file")?;
    serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: not JSON ({e})", path.display()))
}

/// Numbers of an array field, each finite and non-negative.
fn numbers(v: &Value, key: &str, file: &Path) -> anyhow::Result<Vec<f64>> {
    super::array(v, key, &file.display().to_string())?
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_f64()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{}: {key}[{i}] is {}, not a non-negative number",
                        file.display(),
                        super::short(x)
                    )
                })
        })
        .collect()
}

pub fn parse(input: &Input) -> anyhow::Result<Imported> {
    let dirs = match input.bytes {
        None => crit::bench_dirs(input.path, crit::MAX_DEPTH),
        Some(_) => crit::bench_dir_of_file(input.path).into_iter().collect(),
    };
    if dirs.is_empty() {
        anyhow::bail!(
            "no Criterion benchmark data (a directory with new/sample.json) at or below it; give target/criterion"
        );
    }
    let mut im = Imported {
        tool: "Criterion",
        wall_time: "time per iteration of each Criterion sample (its total time / its iterations)"
            .into(),
        ..Imported::default()
    };
    let mut changes = Vec::new();
    let mut latest: Option<std::time::SystemTime> = None;
    let mut modes = Vec::new();
    for dir in &dirs {
        let new = dir.join("new");
        let sample_path = new.join(crit::SAMPLE);
        let sample = read_json(&sample_path)?;
        let iters = numbers(&sample, crit::ITERS, &sample_path)?;
        let times = numbers(&sample, crit::TIMES, &sample_path)?;
        if iters.len() != times.len() {
            anyhow::bail!(
                "{}: {} iters but {} times",
                sample_path.display(),
                iters.len(),
                times.len()
            );
        }
        let meta_path = new.join(crit::BENCHMARK);
        let meta = read_json(&meta_path).ok();
        let rel = dir
            .strip_prefix(input.path)
            .unwrap_or(dir)
            .display()
            .to_string();
        let field = |k: &str| {
            meta.as_ref()
                .and_then(|m| m.get(k))
                .and_then(|v| v.as_str())
        };
        let full_id = field("full_id").map(str::to_string).unwrap_or(rel);
        let group = field("group_id").map(str::to_string);
        let name = match (&group, field("function_id")) {
            (Some(g), Some(f)) => format!("{g}/{f}"),
            (Some(g), None) => g.clone(),
            (None, _) => full_id.clone(),
        };
        let mut b = benchmark(name, full_id.clone());
        if let Some(v) = field("value_str") {
            b.parameters.insert("parameter".into(), v.into());
        }
        if let Some(t) = meta
            .as_ref()
            .and_then(|m| m.get("throughput"))
            .filter(|t| !t.is_null())
        {
            b.extra.insert("throughput".into(), t.clone());
        }
        if meta.is_none() {
            im.not_mapped.push(format!(
                "{}: missing or not JSON; the name is the directory's",
                meta_path.display()
            ));
        }
        for (k, (n, t)) in iters.iter().zip(&times).enumerate() {
            if *n <= 0.0 {
                anyhow::bail!("{}: iters[{k}] is 0", sample_path.display());
            }
            b.runs.push(super::sample(k, t / n * 1e-9, Some(*n), false));
        }
        super::process_level(
            &mut b,
            "file",
            false,
            &format!(
                "Criterion takes all samples of a benchmark in one process; {}",
                super::ONE_PROCESS_PER_FILE
            ),
        );
        if let Some(m) = sample.get("sampling_mode").and_then(|m| m.as_str()) {
            b.extra.insert("sampling_mode".into(), json!(m));
            if !modes.contains(&m.to_string()) {
                modes.push(m.to_string());
            }
        }
        // The tool's estimates, ns → s.
        if let Ok(est) = read_json(&new.join("estimates.json")) {
            let mut s = serde_json::Map::new();
            if let Value::Object(o) = &est {
                for (k, e) in o {
                    let scaled =
                        |x: Option<&Value>| x.and_then(|v| v.as_f64()).map(|v| json!(v * 1e-9));
                    s.insert(
                        k.clone(),
                        json!({
                            "point_estimate": scaled(e.get("point_estimate")),
                            "lower_bound": scaled(e.pointer("/confidence_interval/lower_bound")),
                            "upper_bound": scaled(e.pointer("/confidence_interval/upper_bound")),
                            "confidence_level": e.pointer("/confidence_interval/confidence_level"),
                            "standard_error": scaled(e.get("standard_error")),
                        }),
                    );
                }
            }
            b.extra.insert("source_summary".into(), Value::Object(s));
        }
        if let Ok(Value::Array(f)) = read_json(&new.join("tukey.json")) {
            let fences: Vec<Value> = f
                .iter()
                .filter_map(|x| x.as_f64())
                .map(|x| number(x * 1e-9))
                .collect();
            b.extra.insert("tukey_fences".into(), json!(fences));
        }
        if dir.join("change").join("estimates.json").is_file() {
            changes.push(b.command.clone());
        }
        if let Ok(t) = std::fs::metadata(&sample_path).and_then(|m| m.modified()) {
            latest = Some(latest.map_or(t, |l| l.max(t)));
        }
        im.benchmarks.push(b);
    }
    im.settings.insert("sampling_modes".into(), json!(modes));
    im.started_at = latest.map(|t| humantime::format_rfc3339_seconds(t).to_string());
    im.not_mapped.push(
        "Criterion's files keep no version, start time (started_at is the newest sample.json's modification time), machine, warm-up or settings".into(),
    );
    if !changes.is_empty() {
        im.not_mapped.push(format!(
            "change/estimates.json (Criterion's comparison with the previous run) not mapped for {}",
            changes.join(", ")
        ));
    }
    Ok(im)
}
