//! The self-contained HTML table page: one row per input, a column group per tool
//! configuration (status, CPU time, wall time, memory: medians over repetitions with their
//! spread), summary rows, a diff-only switch, and inline SVG plots.
//!
//! Numbers: SI units, one unit per column group, digits limited by the precision of each
//! value (seed 003 §7.2–7.3). Not for: the full report with comparisons (another module).

use super::model::{Spread, Table};
use super::svg;
use super::view::{Metric, View};
use crate::report::html::svg::esc;
use crate::suite::classify::Category;
use std::fmt::Write;

/// A unit chosen for a whole column group, from a typical value.
#[derive(Clone, Copy)]
struct Unit {
    scale: f64,
    name: &'static str,
}

fn time_unit(typical: f64) -> Unit {
    let (scale, name) = crate::units::time_scale(typical);
    Unit { scale, name }
}

fn bytes_unit(typical: f64) -> Unit {
    let (scale, name) = crate::units::bytes_scale(typical);
    Unit { scale, name }
}

/// A value in `unit` without the unit, its digits limited by `resolution` (base units).
fn number(v: f64, unit: Unit, resolution: f64) -> String {
    let s = crate::units::format_scaled(v, unit.scale, unit.name, Some(resolution));
    s.trim_end_matches(unit.name).trim_end().to_string()
}

/// The cell text of a spread: median, and ±half-range in % when repetitions differ.
fn spread_cell(s: Option<Spread>, unit: Unit, floor: f64) -> String {
    let Some(s) = s else {
        return "<td class=\"num\"></td>".into();
    };
    let res = s.half_range().max(floor);
    let title = format!(
        "median {} {u}, min {} {u}, max {} {u}",
        number(s.median, unit, floor),
        number(s.min, unit, floor),
        number(s.max, unit, floor),
        u = unit.name
    );
    let pct = if s.median > 0.0 && s.half_range() > 0.0 {
        format!(
            " <small>±{}</small>",
            crate::units::format_percent(s.half_range() / s.median)
        )
    } else {
        String::new()
    };
    format!(
        "<td class=\"num\" title=\"{}\">{}{pct}</td>",
        esc(&title),
        number(s.median, unit, res)
    )
}

const CSS: &str = "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;font-size:13px}\
th,td{border:1px solid #ddd;padding:2px 6px}th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}\
td.correct{color:#187a18}td.wrong{color:#fff;background:#c0392b}td.timeout,td.out-of-memory{color:#b36b00}\
td.error{color:#8e44ad}td.unknown,td.missing{color:#666}tfoot td{background:#fafafa;font-weight:bold}\
body.diff tr.same{display:none}small{color:#888}.plots svg{margin:0.5em 1em 0.5em 0;border:1px solid #eee}";

/// Options of the page.
#[derive(Debug, Clone)]
pub struct PageOptions {
    pub title: String,
    /// Shown column positions to plot against each other, if any.
    pub scatter: Option<(usize, usize)>,
    pub metric: Metric,
}

/// Renders the whole page.
pub fn render(t: &Table, v: &View, opts: &PageOptions) -> String {
    let mut h = String::with_capacity(256 + v.rows.len() * v.columns.len() * 120);
    let _ = write!(
        h,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>",
        esc(&opts.title)
    );
    let _ = write!(
        h,
        "<h1>{}</h1><p>{} runs from {}; {} inputs shown. Times and memory are medians over repetitions; ± is half the range. Status is the majority of repetitions.{}</p>",
        esc(&opts.title),
        t.records,
        esc(&t.sources.join(", ")),
        v.rows.len(),
        if t.skipped_lines > 0 {
            format!(" {} unreadable lines skipped (partial last line of an interrupted suite).", t.skipped_lines)
        } else {
            String::new()
        }
    );
    h.push_str("<p><label><input type=\"checkbox\" onchange=\"document.body.classList.toggle('diff',this.checked)\"> only rows where the status differs</label></p>");
    // One unit per column group and metric, from the column's typical (median) value.
    let units: Vec<(Unit, Unit, Unit)> = (0..v.columns.len())
        .map(|ci| {
            let typical = |f: &dyn Fn(&super::model::CellSummary) -> Option<f64>| {
                Spread::of(
                    v.rows
                        .iter()
                        .filter_map(|(_, c)| c[ci].as_ref().and_then(f))
                        .collect(),
                )
                .map_or(1.0, |s| s.median)
            };
            (
                time_unit(typical(&|c| c.cpu.map(|s| s.median))),
                time_unit(typical(&|c| c.wall.map(|s| s.median))),
                bytes_unit(typical(&|c| c.memory.map(|s| s.median))),
            )
        })
        .collect();
    h.push_str("<table><thead><tr><th rowspan=\"2\">Input</th><th rowspan=\"2\">Expected</th>");
    for &c in &v.columns {
        let _ = write!(h, "<th colspan=\"4\">{}</th>", esc(&t.columns[c].label));
    }
    h.push_str("</tr><tr>");
    for (cpu, wall, mem) in &units {
        let _ = write!(
            h,
            "<th>status</th><th>CPU ({})</th><th>wall ({})</th><th>memory ({})</th>",
            cpu.name, wall.name, mem.name
        );
    }
    h.push_str("</tr></thead><tbody>");
    for ((ri, cells), same) in v.rows.iter().zip(&v.same) {
        let row = &t.rows[*ri];
        let _ = write!(
            h,
            "<tr{}><td>{}</td><td>{}</td>",
            if *same { " class=\"same\"" } else { "" },
            esc(&format!("{}/{}", row.set, row.input)),
            esc(row.expected.as_deref().unwrap_or(""))
        );
        for (cell, (cpu_u, wall_u, mem_u)) in cells.iter().zip(&units) {
            match cell {
                None => h.push_str("<td></td><td></td><td></td><td></td>"),
                Some(c) => {
                    let status = &t.statuses[c.status as usize];
                    let agree = if c.agreeing < c.reps {
                        format!(" <small>({}/{})</small>", c.agreeing, c.reps)
                    } else {
                        String::new()
                    };
                    let _ = write!(
                        h,
                        "<td class=\"{}\">{}{agree}</td>",
                        c.category.as_str(),
                        esc(status)
                    );
                    h.push_str(&spread_cell(c.cpu, *cpu_u, 1e-3));
                    h.push_str(&spread_cell(c.wall, *wall_u, 1e-3));
                    h.push_str(&spread_cell(c.memory, *mem_u, 4096.0));
                }
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody><tfoot>");
    for cat in Category::ALL {
        if v.summaries.iter().all(|s| !s.counts.contains_key(&cat)) {
            continue;
        }
        let _ = write!(h, "<tr><td colspan=\"2\">{}</td>", cat.as_str());
        for s in &v.summaries {
            let _ = write!(
                h,
                "<td colspan=\"4\" class=\"num\">{}</td>",
                s.counts.get(&cat).copied().unwrap_or(0)
            );
        }
        h.push_str("</tr>");
    }
    let summary_row = |h: &mut String, name: &str, f: &dyn Fn(usize) -> String| {
        let _ = write!(h, "<tr><td colspan=\"2\">{name}</td>");
        for ci in 0..v.summaries.len() {
            let _ = write!(h, "<td colspan=\"4\" class=\"num\">{}</td>", f(ci));
        }
        h.push_str("</tr>");
    };
    summary_row(&mut h, "score", &|ci| format!("{}", v.summaries[ci].score));
    summary_row(&mut h, "CPU time, total", &|ci| {
        crate::units::format_time(v.summaries[ci].cpu_total, None)
    });
    summary_row(&mut h, "wall time, total", &|ci| {
        crate::units::format_time(v.summaries[ci].wall_total, None)
    });
    summary_row(&mut h, "CPU time, median of correct", &|ci| {
        v.summaries[ci]
            .cpu_median_correct
            .map_or(String::new(), |x| crate::units::format_time(x, None))
    });
    summary_row(&mut h, "memory, median", &|ci| {
        v.summaries[ci]
            .memory_median
            .map_or(String::new(), |x| crate::units::format_bytes(x, None))
    });
    h.push_str("</tfoot></table>");
    h.push_str("<div class=\"plots\"><h2>Plots</h2>");
    if let Some((a, b)) = opts.scatter {
        if a < v.columns.len() && b < v.columns.len() {
            let pts = v.pairs(a, b, opts.metric);
            h.push_str(&svg::scatter(
                &pts,
                &t.columns[v.columns[a]].label,
                &t.columns[v.columns[b]].label,
                opts.metric.name(),
            ));
        }
    }
    let (plain, scored) = v.quantiles(t, opts.metric);
    h.push_str(&svg::quantile(
        &plain,
        "n-th fastest correct result",
        opts.metric.name(),
    ));
    h.push_str(&svg::quantile(
        &scored,
        "accumulated score (starts at the penalties of wrong results)",
        opts.metric.name(),
    ));
    h.push_str("</div></body></html>\n");
    h
}
