//! JMH's JSON (`-rf json`): an array, one entry per benchmark × mode × parameters, with the
//! settings (forks, iterations, times, JVM) and `primaryMetric.rawData[fork][iteration]` —
//! each measurement iteration's score. Warm-up iterations are not in the file.
//!
//! A score is a time per operation (`avgt`, `ss`, `sample`: `ns/op`, …) or a throughput
//! (`thrpt`: `ops/ms`, …); tare stores time per operation in seconds (a throughput's
//! reciprocal, exact for the iteration's average) and keeps the score as written in
//! `extra.score`. `sample` mode keeps a histogram of single-operation times per iteration: each
//! iteration becomes one run whose time is the histogram's mean, with the histogram (seconds,
//! count) in `extra.histogram`. Secondary metrics (profilers, sample percentiles) go per
//! iteration into `extra.metrics`.

use super::{
    add_metric, benchmark, number, param_string, sample, seconds_per, string, Imported, Input,
};
use crate::results::PROCESS_KEY;
use serde_json::{json, Value};

/// What a score unit means: seconds per op for a time unit, or ops per second (`thrpt`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum ScoreUnit {
    SecondsPerOp(f64),
    OpsPerSecond(f64),
}

fn score_unit(u: &str) -> Option<ScoreUnit> {
    let (a, b) = u.split_once('/')?;
    if b == "op" {
        seconds_per(a).map(ScoreUnit::SecondsPerOp)
    } else if a == "ops" {
        seconds_per(b).map(|s| ScoreUnit::OpsPerSecond(1.0 / s))
    } else {
        None
    }
}

impl ScoreUnit {
    /// Seconds per operation of a score, or None when it has none (a zero throughput).
    fn seconds(self, score: f64) -> Option<f64> {
        match self {
            ScoreUnit::SecondsPerOp(s) => Some(score * s),
            ScoreUnit::OpsPerSecond(f) if score > 0.0 => Some(1.0 / (score * f)),
            ScoreUnit::OpsPerSecond(_) => None,
        }
    }
}

/// A `[fork][iteration]` array of arrays.
fn grid<'v>(v: &'v Value, what: &str) -> anyhow::Result<Vec<&'v [Value]>> {
    v.as_array()
        .ok_or_else(|| anyhow::anyhow!("{what} is not an array of forks"))?
        .iter()
        .enumerate()
        .map(|(f, it)| {
            it.as_array()
                .map(|a| a.as_slice())
                .ok_or_else(|| anyhow::anyhow!("{what}[{f}] is not an array of iterations"))
        })
        .collect()
}

pub fn parse(input: &Input) -> anyhow::Result<Imported> {
    let doc = super::json_of(input)?;
    let entries = doc
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("not a JSON array of JMH results"))?;
    let first = entries.first();
    let get = |k: &str| {
        first
            .and_then(|e| e.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let mut im = Imported {
        tool: "JMH",
        tool_version: get("jmhVersion"),
        invocation: first
            .and_then(|e| e.get("jvm"))
            .and_then(|v| v.as_str())
            .map(|j| vec![j.to_string()])
            .unwrap_or_default(),
        wall_time: "time per operation of each JMH measurement iteration (a throughput's reciprocal in thrpt mode)".into(),
        ..Imported::default()
    };
    for k in ["jdkVersion", "vmName", "vmVersion", "jvm", "jvmArgs"] {
        if let Some(v) = first.and_then(|e| e.get(k)) {
            im.settings.insert(k.into(), v.clone());
        }
    }
    let mut modes = Vec::new();
    for (k, e) in entries.iter().enumerate() {
        let what = format!("[{k}]");
        let name = string(e, "benchmark", &what)?;
        let mode = string(e, "mode", &what)?;
        let pm = e
            .get("primaryMetric")
            .ok_or_else(|| anyhow::anyhow!("{what} has no \"primaryMetric\""))?;
        let unit_s = string(pm, "scoreUnit", &format!("{what}.primaryMetric"))?;
        let unit = score_unit(unit_s).ok_or_else(|| {
            anyhow::anyhow!("{what}.primaryMetric: unknown scoreUnit \"{unit_s}\"")
        })?;
        let mut b = benchmark(name, name);
        b.parameters.insert("mode".into(), mode.into());
        if let Some(Value::Object(p)) = e.get("params") {
            for (n, v) in p {
                b.parameters.insert(n.clone(), param_string(v));
            }
        }
        let mut settings = serde_json::Map::new();
        for key in [
            "threads",
            "forks",
            "warmupIterations",
            "warmupTime",
            "warmupBatchSize",
            "measurementIterations",
            "measurementTime",
            "measurementBatchSize",
            "jvmArgs",
        ] {
            if let Some(v) = e.get(key) {
                settings.insert(key.into(), v.clone());
            }
        }
        b.extra.insert("settings".into(), Value::Object(settings));
        b.extra.insert("score_unit".into(), json!(unit_s));
        b.extra.insert(
            "source_summary".into(),
            json!({
                "score": pm.get("score"),
                "scoreError": pm.get("scoreError"),
                "scoreConfidence": pm.get("scoreConfidence"),
                "scorePercentiles": pm.get("scorePercentiles"),
                "scoreUnit": unit_s,
            }),
        );
        let batch = e
            .get("measurementBatchSize")
            .and_then(|v| v.as_f64())
            .filter(|&n| n >= 1.0);
        let what_pm = format!("{what}.primaryMetric");
        if let Some(h) = pm.get("rawDataHistogram") {
            // sample mode: [fork][iteration][[value, count], ...]
            let ScoreUnit::SecondsPerOp(scale) = unit else {
                anyhow::bail!(
                    "{what_pm}: a histogram of \"{unit_s}\", which is not a time per operation"
                );
            };
            for (f, iters) in grid(h, &format!("{what_pm}.rawDataHistogram"))?
                .into_iter()
                .enumerate()
            {
                for (i, hist) in iters.iter().enumerate() {
                    let loc = format!("{what_pm}.rawDataHistogram[{f}][{i}]");
                    let bins = hist
                        .as_array()
                        .ok_or_else(|| anyhow::anyhow!("{loc} is not an array"))?;
                    let mut seconds = Vec::with_capacity(bins.len());
                    let (mut total, mut count) = (0.0, 0.0);
                    for bin in bins {
                        let pair = bin.as_array().filter(|p| p.len() == 2);
                        let (v, c) = pair
                            .and_then(|p| Some((p[0].as_f64()?, p[1].as_f64()?)))
                            .filter(|(v, c)| {
                                v.is_finite() && *v >= 0.0 && c.is_finite() && *c >= 0.0
                            })
                            .ok_or_else(|| {
                                anyhow::anyhow!("{loc}: {} is not [time, count]", super::short(bin))
                            })?;
                        seconds.push(json!([v * scale, number(c)]));
                        total += v * scale * c;
                        count += c;
                    }
                    if count == 0.0 {
                        continue;
                    }
                    let mut run = sample(b.runs.len(), total / count, None, false);
                    run.extra.insert("fork".into(), json!(f));
                    run.extra.insert(PROCESS_KEY.into(), json!(f));
                    run.extra.insert("iteration".into(), json!(i));
                    run.extra.insert("samples".into(), number(count));
                    run.extra.insert("histogram".into(), Value::Array(seconds));
                    b.runs.push(run);
                }
            }
        } else {
            let raw = pm
                .get("rawData")
                .ok_or_else(|| anyhow::anyhow!("{what_pm} has no \"rawData\""))?;
            for (f, iters) in grid(raw, &format!("{what_pm}.rawData"))?
                .into_iter()
                .enumerate()
            {
                for (i, s) in iters.iter().enumerate() {
                    let score = s
                        .as_f64()
                        .filter(|x| x.is_finite() && *x >= 0.0)
                        .ok_or_else(|| {
                            anyhow::anyhow!(
                                "{what_pm}.rawData[{f}][{i}] is {}, not a score",
                                super::short(s)
                            )
                        })?;
                    let Some(secs) = unit.seconds(score) else {
                        anyhow::bail!("{what_pm}.rawData[{f}][{i}] is a throughput of 0, which has no time per operation");
                    };
                    // Single-shot times one batch, and its score is the batch's time / its
                    // operations (JMH 1.37's SingleShotResult); the other modes do not record
                    // how many operations an iteration ran.
                    let loops = if mode == "ss" { batch } else { None };
                    let mut run = sample(b.runs.len(), secs, loops, false);
                    run.extra.insert("fork".into(), json!(f));
                    run.extra.insert(PROCESS_KEY.into(), json!(f));
                    run.extra.insert("iteration".into(), json!(i));
                    run.extra.insert("score".into(), json!(score));
                    b.runs.push(run);
                }
            }
        }
        super::process_level(
            &mut b,
            "fork",
            true,
            "JMH runs each fork in a fresh JVM: the iterations of one fork share a process (rawData[fork][iteration])",
        );
        // Secondary metrics: one value per (fork, iteration), in the same order as the runs.
        if let Some(Value::Object(sec)) = e.get("secondaryMetrics") {
            for (mname, m) in sec {
                let munit = m.get("scoreUnit").and_then(|u| u.as_str()).unwrap_or("");
                let Some(raw) = m.get("rawData") else {
                    continue;
                };
                let Ok(g) = grid(raw, "secondary") else {
                    continue;
                };
                let values: Vec<Option<f64>> = g
                    .iter()
                    .flat_map(|it| it.iter().map(|v| v.as_f64()))
                    .collect();
                if values.len() != b.runs.len() {
                    im.not_mapped.push(format!(
                        "secondary metric {mname} of {name} has {} values for {} iterations: not mapped",
                        values.len(),
                        b.runs.len()
                    ));
                    continue;
                }
                for (run, v) in b.runs.iter_mut().zip(values) {
                    if let Some(v) = v {
                        add_metric(run, mname, v, munit);
                    }
                }
            }
        }
        if !modes.contains(&mode.to_string()) {
            modes.push(mode.to_string());
        }
        im.benchmarks.push(b);
    }
    im.settings.insert("modes".into(), json!(modes));
    im.not_mapped.extend([
        "JMH's JSON keeps no warm-up iterations, no start time and no machine description".to_string(),
        "the number of operations of an avgt/thrpt/sample iteration is not in the file (no extra.loops)".to_string(),
    ]);
    if modes.iter().any(|m| m == "thrpt") {
        im.not_mapped.push(
            "thrpt scores are stored as their reciprocal (seconds per operation); with threads > 1 that is per operation of all threads together".into(),
        );
    }
    Ok(im)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_units() {
        assert_eq!(score_unit("ns/op"), Some(ScoreUnit::SecondsPerOp(1e-9)));
        assert_eq!(score_unit("ops/ms"), Some(ScoreUnit::OpsPerSecond(1e3)));
        assert_eq!(score_unit("ops/s").unwrap().seconds(4.0), Some(0.25));
        assert_eq!(score_unit("ops/s").unwrap().seconds(0.0), None);
        assert_eq!(score_unit("MB/sec"), None);
    }
}
