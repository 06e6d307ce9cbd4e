//! How the optional meters (`--io`, `--cache`, `--ready`, `--background`, `--memory-sample`)
//! are shown: terminal lines and an HTML block per benchmark. The per-run values and medians
//! they show are `results::facts`', which the CSV columns and the Markdown I/O table of
//! `results::export` read too. Reads results only; what each number means is in docs/meters.md.

use crate::report::html::svg::esc;
use crate::results::facts::{gpu_joules, median_of};
pub use crate::results::facts::{io_medians, IoMedians};
use crate::results::{Benchmark, Run, Session};
use crate::units::{format_bytes, format_time};

fn bytes(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format_bytes(x, None))
}

fn ops(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:.0}"))
}

/// Labelled lines for the terminal block of a benchmark (label, text), and warnings.
pub fn terminal_lines(b: &Benchmark) -> (Vec<(&'static str, String)>, Vec<String>) {
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    if let Some(io) = io_medians(b) {
        let block = if io.block_read.is_some() || io.block_write.is_some() {
            format!(
                "disk read {} ({} ops), written {} ({} ops)",
                bytes(io.block_read),
                ops(io.block_read_ops),
                bytes(io.block_write),
                ops(io.block_write_ops)
            )
        } else {
            "disk: not measured (no blkio or io.stat)".into()
        };
        lines.push((
            "I/O",
            format!(
                "{block}; syscalls read {}, wrote {} (medians)",
                bytes(io.syscall_read),
                bytes(io.syscall_write)
            ),
        ));
        // Data the tree dirtied that neither reached the disk in its name nor stayed dirty
        // was written back by another task (the flusher, a sync elsewhere): not in its numbers.
        let dirtied = median_of(b, |r| {
            r.meters.io.as_ref()?.storage_write_bytes.map(|v| v as f64)
        });
        if let (Some(d), Some(w)) = (dirtied, io.block_write) {
            let left = io.dirty_left_max.unwrap_or(0.0);
            if d >= 1024.0 * 1024.0 && w + left < 0.9 * d {
                warnings.push(format!(
                    "the runs wrote {} but only {} reached the disk in their name ({} left dirty): \
                     the rest was written back by other tasks (the kernel's flusher, a sync \
                     elsewhere) and is not in the disk numbers",
                    format_bytes(d, None),
                    format_bytes(w, None),
                    format_bytes(left, None)
                ));
            }
        }
        if let Some(d) = io.dirty_left_max.filter(|d| *d >= 1024.0 * 1024.0) {
            warnings.push(format!(
                "up to {} written by a run was still dirty in the page cache when it ended: \
                 disk writes after the run are not in its numbers — end the command with sync, \
                 or fsync in the program",
                format_bytes(d, None)
            ));
        }
    }
    let caches: Vec<&crate::results::RunCache> = b
        .runs
        .iter()
        .filter(|r| r.counted)
        .filter_map(|r| r.meters.cache.as_deref())
        .collect();
    if let Some(first) = caches.first() {
        let resident = median_of(b, |r| {
            r.meters.cache.as_ref().map(|c| c.resident_bytes as f64)
        })
        .unwrap_or(0.0);
        lines.push((
            "cache",
            format!(
                "{} ({}): {} of {} of its files resident before each run (median)",
                first.state,
                first.how,
                format_bytes(resident, None),
                format_bytes(first.file_bytes as f64, None)
            ),
        ));
    }
    if let Some(n) = median_of(b, |r| {
        r.meters.memory_timeline.as_ref().map(|t| t.len() as f64)
    }) {
        lines.push((
            "memory/time",
            format!("{n:.0} samples per run (median); plotted in the HTML report"),
        ));
    }
    let names: Vec<String> = b
        .runs
        .iter()
        .filter(|r| r.counted)
        .filter_map(|r| {
            r.meters
                .energy
                .as_ref()?
                .get("domains")?
                .as_array()
                .cloned()
        })
        .flatten()
        .filter_map(|d| d.get("name")?.as_str().map(String::from))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !names.is_empty() {
        let domain = |r: &Run, name: &str, key: &str| -> Option<f64> {
            r.meters.energy.as_ref()?["domains"]
                .as_array()?
                .iter()
                .find(|d| d["name"] == name)?[key]
                .as_f64()
        };
        let parts: Vec<String> = names
            .iter()
            .map(|n| {
                let j = median_of(b, |r| domain(r, n, "joules")).unwrap_or(f64::NAN);
                match median_of(b, |r| domain(r, n, "dynamic_joules")) {
                    Some(d) => format!("{n} {j:.3} J ({d:.3} J above idle)"),
                    None => format!("{n} {j:.3} J"),
                }
            })
            .collect();
        let attributed = b
            .runs
            .iter()
            .filter(|r| r.counted)
            .filter_map(|r| r.meters.energy.as_ref()?["attributed"].as_bool())
            .all(|a| a);
        lines.push((
            "energy",
            format!(
                "{} (medians){}",
                parts.join(", "),
                if attributed {
                    ""
                } else {
                    "; not attributed: other work shared the package"
                }
            ),
        ));
    }
    if let Some(line) = gpu_energy_line(b) {
        lines.push(("gpu energy", line));
    }
    if let Some(s) = b.extra.get("success_rate") {
        let f = |k: &str| s[k].as_f64().unwrap_or(f64::NAN);
        lines.push((
            "success",
            format!(
                "{}/{} runs = {:.1}%   (95% CI {:.1}% … {:.1}%, Wilson)",
                s["successes"],
                s["runs"],
                100.0 * f("rate"),
                100.0 * f("ci_low"),
                100.0 * f("ci_high")
            ),
        ));
    }
    if let Some(t) = median_of(b, |r| r.meters.ready_time) {
        lines.push((
            "ready",
            format!("{} median time to ready", format_time(t, None)),
        ));
    }
    (lines, warnings)
}

/// The benchmark's GPU energy per GPU (medians of its counted runs), with the energy above
/// idle power and a word where the runs were too short for the counter.
fn gpu_energy_line(b: &Benchmark) -> Option<String> {
    let gpus = |r: &Run| -> Vec<serde_json::Value> {
        r.meters
            .energy
            .as_ref()
            .and_then(|e| e.get("gpus")?.as_array().cloned())
            .unwrap_or_default()
    };
    let mut names: Vec<(u64, String)> = b
        .runs
        .iter()
        .filter(|r| r.counted)
        .flat_map(gpus)
        .filter_map(|g| Some((g["index"].as_u64()?, g["name"].as_str()?.to_string())))
        .collect();
    names.sort();
    names.dedup();
    if names.is_empty() {
        return None;
    }
    let field = |r: &Run, index: u64, key: &str| -> Option<f64> {
        gpus(r).iter().find(|g| g["index"] == index)?[key].as_f64()
    };
    let parts: Vec<String> = names
        .iter()
        .map(|(i, name)| {
            let j = median_of(b, |r| field(r, *i, "joules")).unwrap_or(f64::NAN);
            match median_of(b, |r| field(r, *i, "dynamic_joules")) {
                Some(d) => format!("GPU {i} ({name}) {j:.3} J ({d:.3} J above idle)"),
                None => format!("GPU {i} ({name}) {j:.3} J"),
            }
        })
        .collect();
    let coarse = b
        .runs
        .iter()
        .filter(|r| r.counted)
        .any(|r| gpu_joules(r).is_some_and(|(_, c)| c));
    Some(format!(
        "{} (medians){}",
        parts.join(", "),
        if coarse {
            "; runs shorter than 5 counter periods: each to about a period's energy, no verdict"
        } else {
            ""
        }
    ))
}

/// Session-wide notes of the meters (e.g. energy asked for but unavailable).
pub fn session_lines(session: &Session) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(e) = session.extra.get("energy") {
        if e["available"] == false {
            out.push(format!(
                "energy: unavailable ({})",
                e["reason"].as_str().unwrap_or("no RAPL domains")
            ));
        }
        for g in e
            .get("gpus")
            .and_then(|g| g.as_array())
            .into_iter()
            .flatten()
        {
            let period = g["update_period_s"].as_f64();
            out.push(format!(
                "energy: GPU {} ({}): counter updates every {}, idle {}",
                g["index"],
                g["name"].as_str().unwrap_or("?"),
                period.map_or("? (it did not move while idle)".into(), |p| format_time(
                    p, None
                )),
                g["idle_watts"]
                    .as_f64()
                    .map_or("power unknown".into(), |w| format!("{w:.1} W")),
            ));
        }
    }
    for c in session
        .extra
        .get("energy_comparisons")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        let f = |k: &str| c[k].as_f64().unwrap_or(f64::NAN);
        let quantity = c["quantity"]
            .as_str()
            .unwrap_or("package energy (J)")
            .trim_end_matches(" (J)");
        if let Some(why) = c["withheld"].as_str() {
            out.push(format!(
                "energy: {} against {}: no verdict on {quantity} ({why})",
                c["candidate_name"].as_str().unwrap_or("?"),
                c["reference_name"].as_str().unwrap_or("?"),
            ));
            continue;
        }
        out.push(format!(
            "energy: {} uses {:.2}× the {quantity} of {} (95% CI {:.2}–{:.2}{})",
            c["candidate_name"].as_str().unwrap_or("?"),
            f("ratio"),
            c["reference_name"].as_str().unwrap_or("?"),
            f("ratio_ci_low"),
            f("ratio_ci_high"),
            if c["paired"] == true {
                ", paired by round"
            } else {
                ""
            }
        ));
    }
    out
}

/// An HTML block for one benchmark's meters (empty when it has none); `id` makes the plot's
/// id unique in the page.
pub fn html(b: &Benchmark, id: &str) -> String {
    let (lines, warnings) = terminal_lines(b);
    let plot = crate::report::html::plots::memory_timeline(b, &format!("{id}-memory"));
    if lines.is_empty() && plot.is_none() {
        return String::new();
    }
    let mut out = String::new();
    if let Some(svg) = plot {
        out.push_str(r#"<div class="wide">"#);
        out.push_str(&svg);
        out.push_str("</div>");
    }
    out.push_str(r#"<dl class="meta meters">"#);
    for (k, v) in lines {
        out.push_str(&format!("<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v)));
    }
    out.push_str("</dl>");
    for w in warnings {
        out.push_str(&format!(r#"<p class="warn">{}</p>"#, esc(&w)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bench(io: serde_json::Value) -> Benchmark {
        let run = |i: usize| {
            json!({"index": i, "warmup": false, "start_offset": 0.0, "wall_time": 1.0,
                   "user_time": 0.0, "system_time": 0.0, "cpu_time": 0.0, "peak_memory": null,
                   "exit_code": 0, "signal": null, "termination": "exit", "counted": true,
                   "io": io})
        };
        serde_json::from_value(json!({"name": "w", "command": "w", "argv": ["w"],
            "summary": {"wall_time": null, "cpu_time": null, "user_time": null,
                        "system_time": null, "peak_memory": null},
            "stop_reason": "", "runs": [run(0), run(1), run(2)]}))
        .unwrap()
    }

    #[test]
    fn io_line_and_the_two_warnings() {
        let ok = bench(
            json!({"block_write_bytes": 52_432_896u64, "block_read_bytes": 0,
            "storage_write_bytes": 52_428_800u64, "dirty_left_bytes": 0,
            "syscall_write_bytes": 52_428_897u64}),
        );
        let (lines, warnings) = terminal_lines(&ok);
        assert!(lines[0].1.contains("written 52.43 MB"), "{lines:?}");
        assert!(warnings.is_empty(), "{warnings:?}");
        let dirty = bench(
            json!({"block_write_bytes": 0, "storage_write_bytes": 41_943_040u64,
            "dirty_left_bytes": 41_943_040u64}),
        );
        let (_, w) = terminal_lines(&dirty);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("still dirty"));
        let taken = bench(json!({"block_write_bytes": 33_558_528u64,
            "storage_write_bytes": 52_428_800u64, "dirty_left_bytes": 0}));
        let (_, w) = terminal_lines(&taken);
        assert!(
            w.iter().any(|x| x.contains("written back by other tasks")),
            "{w:?}"
        );
    }
}
