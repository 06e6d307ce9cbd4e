//! pyperf's JSON (`-o FILE`, a suite or one benchmark): `metadata` common to all, and
//! `benchmarks[]`, each with its own `metadata` (name, unit, loops, inner_loops) and `runs[]` —
//! one per worker process — with `warmups` (`[loops, value]` pairs), `values` and the run's
//! metadata (date, duration, mem_max_rss, …). A value is the time of one inner iteration in
//! seconds (the worker timed `loops × inner_loops` of them together). The calibration runs
//! hold only warm-ups. Run metadata overrides the benchmark's, which overrides the common.

use super::{benchmark, number, sample, Imported, Input};
use crate::harness::pyperf;
use serde_json::{json, Value};

pub fn parse(input: &Input) -> anyhow::Result<Imported> {
    let doc = super::json_of(input)?;
    let entries = super::array(doc, "benchmarks", "the document")?;
    let common = pyperf::metadata(doc);
    let first_meta = |k: &str| -> Option<Value> {
        common.get(k).cloned().or_else(|| {
            entries
                .iter()
                .find_map(|b| b.pointer(&format!("/metadata/{k}")).cloned())
        })
    };
    let text = |v: Option<Value>| v.and_then(|v| v.as_str().map(str::to_string));
    let mut im = Imported {
        tool: "pyperf",
        tool_version: text(first_meta("perf_version")),
        wall_time: "time per inner iteration of each pyperf value (its timer, e.g. perf_counter)"
            .into(),
        ..Imported::default()
    };
    im.machine.hostname = text(first_meta("hostname")).unwrap_or_default();
    im.machine.cpu_model = text(first_meta("cpu_model_name")).unwrap_or_default();
    im.machine.logical_cpus = first_meta("cpu_count")
        .and_then(|v| v.as_u64())
        .unwrap_or(0) as usize;
    im.machine.os = text(first_meta("platform")).unwrap_or_default();
    if let Some(c) = text(first_meta("command")) {
        im.invocation = shell_words::split(&c).unwrap_or_else(|_| vec![c]);
    }
    im.settings = common.clone();
    let mut other_units = Vec::new();
    let mut first_date: Option<String> = None;
    for (k, e) in entries.iter().enumerate() {
        let what = format!("benchmarks[{k}]");
        let mut meta = common.clone();
        meta.extend(pyperf::metadata(e));
        let name = meta
            .get("name")
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .unwrap_or_else(|| format!("benchmark {k}"));
        let unit = pyperf::unit(&meta);
        if unit != "second" {
            other_units.push(format!("{name} ({unit})"));
            continue;
        }
        let mut b = benchmark(name.clone(), name);
        let runs = super::array(e, "runs", &what)?;
        for (r, run) in runs.iter().enumerate() {
            let rwhat = format!("{what}.runs[{r}]");
            let mut rmeta = meta.clone();
            rmeta.extend(pyperf::metadata(run));
            let loops = pyperf::loops(&rmeta).unwrap_or(1) as f64;
            let inner = pyperf::inner_loops(&rmeta) as f64;
            if first_date.is_none() {
                first_date = rmeta
                    .get("date")
                    .and_then(|v| v.as_str())
                    .map(str::to_string);
            }
            let keep = |run: &mut crate::results::Run| {
                run.extra
                    .insert(crate::results::PROCESS_KEY.into(), json!(r));
                if let Some(rss) = rmeta.get("mem_max_rss") {
                    run.extra.insert("process_max_rss".into(), rss.clone());
                }
            };
            if let Some(w) = run.get("warmups") {
                let w = w
                    .as_array()
                    .ok_or_else(|| anyhow::anyhow!("{rwhat}.warmups is not an array"))?;
                for (i, pair) in w.iter().enumerate() {
                    let (l, v) = pair
                        .as_array()
                        .filter(|p| p.len() == 2)
                        .and_then(|p| Some((p[0].as_f64()?, p[1].as_f64()?)))
                        .filter(|(l, v)| *l >= 1.0 && v.is_finite() && *v >= 0.0)
                        .ok_or_else(|| {
                            anyhow::anyhow!(
                                "{rwhat}.warmups[{i}] is {}, not [loops, seconds]",
                                super::short(pair)
                            )
                        })?;
                    let mut s = sample(b.runs.len(), v, Some(l * inner), true);
                    keep(&mut s);
                    b.runs.push(s);
                }
            }
            if let Some(vals) = run.get("values") {
                let vals = vals
                    .as_array()
                    .ok_or_else(|| anyhow::anyhow!("{rwhat}.values is not an array"))?;
                for (i, x) in vals.iter().enumerate() {
                    let v = x
                        .as_f64()
                        .filter(|v| v.is_finite() && *v >= 0.0)
                        .ok_or_else(|| {
                            anyhow::anyhow!(
                                "{rwhat}.values[{i}] is {}, not seconds",
                                super::short(x)
                            )
                        })?;
                    let mut s = sample(b.runs.len(), v, Some(loops * inner), false);
                    keep(&mut s);
                    b.runs.push(s);
                }
            }
        }
        super::process_level(
            &mut b,
            "worker",
            true,
            "each pyperf run is a worker process: its values share a process (runs[i])",
        );
        let bmeta = pyperf::metadata(e);
        if !bmeta.is_empty() {
            b.extra.insert("metadata".into(), Value::Object(bmeta));
        }
        b.extra.insert(
            "loops".into(),
            number(meta.get("loops").and_then(|v| v.as_f64()).unwrap_or(1.0)),
        );
        im.benchmarks.push(b);
    }
    // pyperf writes local time without a zone ("2026-11-22 23:12:01.882896"): read as UTC.
    im.started_at = first_date.map(|d| match humantime::parse_rfc3339_weak(&d) {
        Ok(t) => humantime::format_rfc3339_seconds(t).to_string(),
        Err(_) => d,
    });
    if !other_units.is_empty() {
        im.not_mapped.push(format!(
            "benchmarks whose unit is not seconds not mapped: {}",
            other_units.join(", ")
        ));
    }
    im.not_mapped.push(
        "pyperf's runs are worker processes: each value is a run here (extra.process says which); warm-ups and calibration values are warm-up runs, not counted".into(),
    );
    im.not_mapped
        .push("pyperf's dates are local time without a time zone".into());
    Ok(im)
}
