//! hyperfine's `--export-json`: `results[]`, one per command, with every run's wall time
//! (`times`, seconds) and exit code; user and system time only as means, so tare records
//! them in the source summary, not per run.

use super::{array, benchmark, num, param_string, sample, string, Imported, Input};
use crate::results::{Termination, PROCESS_KEY};
use serde_json::{json, Map, Value};

pub fn parse(input: &Input) -> anyhow::Result<Imported> {
    let doc = super::json_of(input)?;
    let results = array(doc, "results", "the document")?;
    let mut im = Imported {
        tool: "hyperfine",
        wall_time: "wall-clock time of each run as measured by hyperfine (its shell's startup subtracted unless -N)".into(),
        ..Imported::default()
    };
    let mut memory = false;
    for (k, r) in results.iter().enumerate() {
        let what = format!("results[{k}]");
        let command = string(r, "command", &what)?;
        let times = array(r, "times", &what)?;
        let codes = r.get("exit_codes").and_then(|c| c.as_array());
        let mem = r.get("memory_usage_byte").and_then(|c| c.as_array());
        let mut b = benchmark(command, command);
        b.argv = shell_words::split(command).unwrap_or_default();
        if let Some(Value::Object(p)) = r.get("parameters") {
            for (name, v) in p {
                b.parameters.insert(name.clone(), param_string(v));
            }
        }
        for (i, t) in times.iter().enumerate() {
            let wall = t
                .as_f64()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{what}.times[{i}] is {}, not a time in seconds",
                        super::short(t)
                    )
                })?;
            let mut run = sample(i, wall, None, false);
            run.extra.insert(PROCESS_KEY.into(), json!(i));
            match codes.and_then(|c| c.get(i)) {
                Some(Value::Number(n)) => run.exit_code = n.as_i64().map(|c| c as i32),
                // hyperfine writes null when a run was ended by a signal.
                Some(Value::Null) => run.termination = Termination::Signal,
                _ => {}
            }
            if let Some(m) = mem.and_then(|m| m.get(i)).and_then(|m| m.as_u64()) {
                run.peak_memory = Some(m);
                memory = true;
            }
            b.runs.push(run);
        }
        let mut summary = Map::new();
        for key in ["mean", "stddev", "median", "min", "max", "user", "system"] {
            if let Some(x) = r.get(key).filter(|x| !x.is_null()) {
                summary.insert(key.into(), x.clone());
            }
        }
        super::process_level(
            &mut b,
            "run",
            true,
            "hyperfine starts the command afresh for every run: each run is its own process",
        );
        // Checked so that a damaged summary is an error, not a silent zero.
        num(r, "mean", &what)?;
        b.extra
            .insert("source_summary".into(), Value::Object(summary));
        im.benchmarks.push(b);
    }
    im.not_mapped.extend([
        "hyperfine records user and system time only as means per command: they are in source_summary, and per run they are 0".to_string(),
        "hyperfine does not keep its warm-up runs, its version or its command line in the JSON".to_string(),
    ]);
    if !memory {
        im.not_mapped
            .push("no peak memory per run (memory_usage_byte) in this file".into());
    }
    im.settings.insert(
        "runs_per_command".into(),
        json!(results
            .iter()
            .map(|r| r
                .get("times")
                .and_then(|t| t.as_array())
                .map_or(0, |t| t.len()))
            .collect::<Vec<_>>()),
    );
    Ok(im)
}
