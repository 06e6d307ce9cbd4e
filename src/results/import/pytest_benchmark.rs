//! pytest-benchmark's JSON (`--benchmark-json`, or a `--benchmark-save` file with
//! `--benchmark-save-data`): `machine_info`, `commit_info`, `datetime`, `version` and
//! `benchmarks[]` with `options`, `params` and `stats` — the tool's summary and, in `data`, the
//! time per iteration of every round (each round ran `stats.iterations` iterations).

use super::{benchmark, param_string, sample, string, Imported, Input};
use crate::harness::pytest_benchmark as pb;
use serde_json::{json, Value};

pub fn parse(input: &Input) -> anyhow::Result<Imported> {
    let doc = super::json_of(input)?;
    let entries = super::array(doc, "benchmarks", "the document")?;
    let mi = doc.get("machine_info").cloned().unwrap_or(Value::Null);
    let s = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(|x| x.as_str())
            .unwrap_or("")
            .to_string()
    };
    let mut im = Imported {
        tool: "pytest-benchmark",
        tool_version: doc
            .get("version")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        started_at: doc
            .get("datetime")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        wall_time:
            "time per iteration of each pytest-benchmark round (its timer, e.g. perf_counter)"
                .into(),
        ..Imported::default()
    };
    im.machine.hostname = s(&mi, "/node");
    im.machine.cpu_model = s(&mi, "/cpu/brand_raw");
    im.machine.logical_cpus = mi
        .pointer("/cpu/count")
        .and_then(|c| c.as_u64())
        .unwrap_or(0) as usize;
    im.machine.kernel = s(&mi, "/release");
    im.machine.os = s(&mi, "/system");
    for (k, v) in [
        ("machine_info", mi.clone()),
        (
            "commit_info",
            doc.get("commit_info").cloned().unwrap_or(Value::Null),
        ),
    ] {
        if !v.is_null() {
            // The CPU flags list is long and says nothing about the results.
            let mut v = v;
            if let Some(Value::Object(cpu)) = v.get_mut("cpu") {
                cpu.remove("flags");
            }
            im.context.insert(k.into(), v);
        }
    }
    let mut no_data = Vec::new();
    for (k, e) in entries.iter().enumerate() {
        let what = format!("benchmarks[{k}]");
        let fullname = e
            .get("fullname")
            .and_then(|v| v.as_str())
            .map(Ok)
            .unwrap_or_else(|| string(e, "name", &what))?;
        let stats = e
            .get("stats")
            .filter(|s| s.is_object())
            .ok_or_else(|| anyhow::anyhow!("{what} has no \"stats\" object"))?;
        let params = e.get("params").and_then(|p| p.as_object());
        // With parameters, the name's "[…]" suffix repeats them: drop it, keep them as parameters.
        let name = match (params, e.get("param").and_then(|p| p.as_str())) {
            (Some(_), Some(p)) => fullname.strip_suffix(&format!("[{p}]")).unwrap_or(fullname),
            _ => fullname,
        };
        let mut b = benchmark(name, fullname);
        if let Some(p) = params {
            for (n, v) in p {
                b.parameters.insert(n.clone(), param_string(v));
            }
        }
        let iterations = stats
            .get(pb::ITERATIONS)
            .and_then(|v| v.as_f64())
            .filter(|n| *n >= 1.0);
        match stats.get(pb::DATA) {
            Some(Value::Array(data)) => {
                for (i, x) in data.iter().enumerate() {
                    let t = x
                        .as_f64()
                        .filter(|t| t.is_finite() && *t >= 0.0)
                        .ok_or_else(|| {
                            anyhow::anyhow!(
                                "{what}.stats.data[{i}] is {}, not a time",
                                super::short(x)
                            )
                        })?;
                    b.runs.push(sample(i, t, iterations, false));
                }
            }
            Some(other) => {
                anyhow::bail!("{what}.stats.data is {}, not an array", super::short(other))
            }
            None => no_data.push(fullname.to_string()),
        }
        super::process_level(
            &mut b,
            "file",
            false,
            &format!(
                "pytest-benchmark runs all rounds in the pytest process; {}",
                super::ONE_PROCESS_PER_FILE
            ),
        );
        let mut summary = stats.clone();
        if let Value::Object(m) = &mut summary {
            m.remove(pb::DATA);
        }
        b.extra.insert("source_summary".into(), summary);
        for key in ["group", "options", "extra_info"] {
            if let Some(v) = e.get(key).filter(|v| !v.is_null()) {
                b.extra.insert(key.into(), v.clone());
            }
        }
        im.benchmarks.push(b);
    }
    if let Some(o) = entries.first().and_then(|e| e.get("options")) {
        im.settings.insert("options".into(), o.clone());
    }
    if !no_data.is_empty() {
        im.not_mapped.push(format!(
            "no raw data (stats.data) for {}: saved without --benchmark-save-data; only the summary is kept",
            no_data.join(", ")
        ));
    }
    im.not_mapped
        .push("pytest-benchmark keeps no warm-up rounds and no per-round start times".into());
    im.settings
        .insert("benchmarks".into(), json!(entries.len()));
    Ok(im)
}
