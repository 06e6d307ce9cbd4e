//! The HTML page of a report: head with the inline stylesheet, the side-by-side table for
//! several files, per session the summary table, comparisons, per-benchmark plots and
//! diagnostics, and the machine and method metadata; a small script for sorting and filtering.
//!
//! For: assembling one self-contained file (no external resource; works from `file://`;
//! readable with JavaScript off). Not for: drawing plots (`plots/`) or building tables
//! (`table.rs`).

use super::data::{self, Metric};
use super::plots::{p_text, Plot, PlotKind};
use super::svg::esc;
use super::table::{self, bench_anchor};
use crate::results::{Benchmark, Diagnostic, MethodKind, Session};
use crate::units;
use std::fmt::Write;

const CSS: &str = r#"
:root{--ink:#1f2328;--muted:#656d76;--line:#d8dee4;--soft:#f6f8fa;--primary:#2f6fb3;--warn:#c92a2a;--good:#2b8a3e}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--ink);background:#fff}
main{max-width:1320px;margin:0 auto;padding:20px 28px 48px}
header.top{border-bottom:1px solid var(--line);padding-bottom:10px;margin-bottom:14px}
h1{font-size:22px;margin:0 0 2px}h1 span{color:var(--muted);font-weight:400}
h2{font-size:18px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:22px 0 6px}
.muted{color:var(--muted)}.warn{color:var(--warn)}.ok{color:var(--good)}
a{color:var(--primary);text-decoration:none}a:hover{text-decoration:underline}
code,pre{font-family:ui-monospace,"SFMono-Regular","DejaVu Sans Mono",Menlo,monospace;font-size:12.5px}
pre{background:var(--soft);padding:8px 10px;border-radius:6px;overflow:auto;margin:4px 0}
.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:6px 0 4px;font-variant-numeric:tabular-nums}
th,td{padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top;text-align:left}
th{background:var(--soft);font-weight:600;font-size:12.5px;white-space:nowrap}
th.group{text-align:center;border-left:2px solid var(--line)}th.gstart,td.gstart{border-left:2px solid var(--line)}
th.sort{cursor:pointer;user-select:none}th.sort:after{content:" ⇅";color:#b0b8c1;font-size:11px}
th[aria-sort=ascending]:after{content:" ▲";color:var(--primary)}th[aria-sort=descending]:after{content:" ▼";color:var(--primary)}
td.num{text-align:right;white-space:nowrap}td.num .i{display:inline-block;text-align:right}td.num .f{display:inline-block;text-align:left}
td.ci .sep{padding:0 4px;color:var(--muted)}td.none{color:#b0b8c1;text-align:center}
td.stop{font-size:12px;color:var(--muted);max-width:180px}td.warn{font-size:12.5px;max-width:190px}td.name{font-weight:600;min-width:150px;max-width:320px;overflow-wrap:anywhere}
tbody tr:hover{background:#f9fbfd}
.badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:11.5px;font-weight:600;white-space:nowrap}
.v-faster{background:#d3f9d8;color:#2b8a3e}.v-slower{background:#ffe3e3;color:#c92a2a}.v-equal{background:#e7f5ff;color:#1864ab}
.v-nsd{background:#f1f3f5;color:#495057}.v-ref{background:#fff3bf;color:#7c5e10}
.nw{white-space:nowrap}.ratio{font-weight:600}.ratio.slower{color:var(--warn)}.ratio.faster{color:var(--good)}
input.filter{font:inherit;padding:4px 8px;border:1px solid var(--line);border-radius:6px;width:260px;margin:4px 0}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:10px 18px;margin-top:8px}
.col{display:flex;flex-direction:column;gap:10px;min-width:0}
.plots svg,.wide svg{width:100%;height:auto;display:block;border:1px solid #eef0f2;border-radius:6px}
.wide{max-width:960px}.plots.pairs{grid-template-columns:repeat(auto-fill,minmax(300px,400px))}
.bench{border-top:1px solid var(--line);margin-top:18px}
.facts{color:var(--muted);margin:2px 0}.facts b{color:var(--ink)}
.diag{border-left:3px solid #f08c00;background:#fff9db;padding:6px 10px;margin:6px 0;border-radius:0 6px 6px 0}
.diag .kind{font-weight:700;margin-right:6px}.diag .sugg{color:var(--muted)}
.chips span{display:inline-block;background:#fff;border:1px solid #f1d48a;border-radius:4px;padding:0 5px;margin:2px 4px 0 0;font-size:12px}
.banner{background:#fff5f5;border:1px solid #ffc9c9;color:#a61e1e;padding:6px 12px;border-radius:6px;margin:6px 0}.banner.note{background:#fff9db;border-color:#ffe066;color:#7c5e10}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:3px 16px;margin:6px 0}dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;overflow-wrap:anywhere}
nav.toc{font-size:13px;color:var(--muted)}nav.toc a{margin-right:10px}
footer{margin-top:36px;color:var(--muted);font-size:12px}
@media print{.plots{grid-template-columns:1fr 1fr}input.filter{display:none}}
"#;

const JS: &str = r#"
(function(){
  function key(cell,num){var v=cell?cell.getAttribute('data-v'):'';if(v===null)v=cell.textContent;
    if(num){var x=parseFloat(v);return isNaN(x)?null:x;}return v===''?null:v.toLowerCase();}
  document.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('th[data-col]').forEach(function(th){
      th.classList.add('sort');th.tabIndex=0;
      function go(){
        var col=+th.getAttribute('data-col'),num=th.getAttribute('data-sort')==='num';
        var dir=th.getAttribute('aria-sort')==='ascending'?-1:1;
        t.querySelectorAll('th[aria-sort]').forEach(function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',dir===1?'ascending':'descending');
        var tb=t.tBodies[0],rows=Array.prototype.slice.call(tb.rows);
        rows.sort(function(a,b){var x=key(a.cells[col],num),y=key(b.cells[col],num);
          if(x===null&&y===null)return 0;if(x===null)return 1;if(y===null)return -1;
          if(num)return (x-y)*dir;return x.localeCompare(y)*dir;});
        rows.forEach(function(r){tb.appendChild(r);});
      }
      th.addEventListener('click',go);
      th.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){e.preventDefault();go();}});
    });
  });
  document.querySelectorAll('input.filter').forEach(function(inp){
    inp.hidden=false;var t=document.getElementById(inp.getAttribute('data-table'));if(!t)return;
    inp.addEventListener('input',function(){var q=inp.value.toLowerCase();
      Array.prototype.forEach.call(t.tBodies[0].rows,function(r){r.hidden=q!==''&&r.textContent.toLowerCase().indexOf(q)<0;});});
  });
})();
"#;

fn dl(out: &mut String, rows: &[(&str, String)]) {
    out.push_str(r#"<dl class="meta">"#);
    for (k, v) in rows {
        let _ = write!(out, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    }
    out.push_str("</dl>");
}

fn extra_str(s: &Session, key: &str) -> Option<String> {
    s.extra.get(key).map(|v| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// Warnings about the machine recorded at the start (`Session.extra["machine_warnings"]`).
fn machine_warnings(s: &Session) -> Vec<String> {
    match s.extra.get("machine_warnings") {
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Machine, method, limits and how the session was run.
fn metadata(s: &Session) -> String {
    let mut out = String::new();
    let m = &s.machine;
    let mut rows: Vec<(&str, String)> = vec![
        ("host", esc(&m.hostname)),
        (
            "CPU",
            format!(
                "{} — {} logical CPUs, {} physical cores",
                esc(&m.cpu_model),
                m.logical_cpus,
                m.physical_cores
            ),
        ),
        (
            "memory",
            esc(&units::format_bytes(m.memory_bytes as f64, None)),
        ),
        (
            "OS, kernel",
            format!("{}, Linux {}", esc(&m.os), esc(&m.kernel)),
        ),
        (
            "virtualization",
            esc(m.virtualization.as_deref().unwrap_or("none detected")),
        ),
    ];
    let method = match s.method.kind {
        MethodKind::CgroupV1 => "cgroup v1",
        MethodKind::CgroupV2 => "cgroup v2",
        MethodKind::Rusage => "rusage (FALLBACK: no cgroup)",
        MethodKind::Imported => "another harness (imported)",
        MethodKind::Unknown => "unknown (recovered from a damaged journal)",
    };
    rows.push(("measured with", esc(method)));
    rows.push(("CPU time", esc(&s.method.cpu_time)));
    rows.push(("peak memory", esc(&s.method.peak_memory)));
    rows.push(("wall time", esc(&s.method.wall_time)));
    rows.push((
        "cores",
        match &s.cores {
            Some(c) if !c.is_empty() => esc(&c
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")),
            _ => "not pinned".into(),
        },
    ));
    let l = &s.limits;
    let mut limits: Vec<String> = Vec::new();
    if let Some(v) = l.cpu_time {
        limits.push(format!("CPU time {}", units::format_time(v, None)));
    }
    if let Some(v) = l.wall_time {
        limits.push(format!("wall time {}", units::format_time(v, None)));
    }
    if let Some(v) = l.memory {
        limits.push(format!("memory {}", units::format_bytes(v as f64, None)));
    }
    if let Some(v) = l.pids {
        limits.push(format!("{v} tasks"));
    }
    rows.push((
        "limits",
        if limits.is_empty() {
            "none".into()
        } else {
            esc(&limits.join(", "))
        },
    ));
    if let Some(r) = extra_str(s, "stop_rule") {
        rows.push(("stop rule", format!("<code>{}</code>", esc(&r))));
    }
    if let Some(o) = extra_str(s, "order") {
        rows.push(("order", esc(&o)));
    }
    rows.push(("seed", s.seed.to_string()));
    rows.push((
        "invocation",
        format!("<code>{}</code>", esc(&shell_words::join(&s.invocation))),
    ));
    rows.push(("started", esc(&s.started_at)));
    rows.push(("tare", esc(&s.tare_version)));
    let env_names: Vec<String> = s
        .environment
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("{k}={v}"),
            None => k.clone(),
        })
        .collect();
    rows.push((
        "environment",
        if env_names.is_empty() {
            "empty".into()
        } else {
            format!(
                "<details><summary>{} variables{}</summary><pre>{}</pre></details>",
                env_names.len(),
                if s.environment.values().all(|v| v.is_none()) {
                    " (names only)"
                } else {
                    ""
                },
                esc(&env_names.join("\n"))
            )
        },
    ));
    for (k, v) in &s.extra {
        if k == "stop_rule" || k == "order" || k == "machine_warnings" {
            continue;
        }
        rows.push((k.as_str(), format!("<code>{}</code>", esc(&v.to_string()))));
    }
    dl(&mut out, &rows);
    out
}

/// One diagnostic: kind, message, suggestion and its evidence (scalars as chips, the whole
/// value as JSON).
fn diagnostic(d: &Diagnostic) -> String {
    let mut out = format!(
        r#"<div class="diag"><span class="kind">{}</span>{}<div class="sugg">{}</div>"#,
        esc(&d.kind),
        esc(&d.message),
        esc(&d.suggestion)
    );
    if let Some(o) = d.evidence.as_object() {
        let chips: Vec<String> = o
            .iter()
            .filter(|(_, v)| !v.is_object() && !v.is_array())
            .map(|(k, v)| format!("<span>{} = {}</span>", esc(k), esc(&scalar(v))))
            .collect();
        if !chips.is_empty() {
            let _ = write!(out, r#"<div class="chips">{}</div>"#, chips.join(""));
        }
    }
    if !d.evidence.is_null() {
        let pretty = serde_json::to_string_pretty(&d.evidence).unwrap_or_default();
        let _ = write!(
            out,
            "<details><summary>evidence</summary><pre>{}</pre></details>",
            esc(&pretty)
        );
    }
    out.push_str("</div>");
    out
}

/// A JSON scalar for people: strings bare, fractions with four significant digits.
fn scalar(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x == 0.0 || !x.is_finite() {
                x.to_string()
            } else if x.abs() < 1e-3 || x.abs() >= 1e6 {
                format!("{x:.3e}")
            } else {
                let d = (3 - x.abs().log10().floor() as i32).max(0) as usize;
                let s = format!("{x:.d$}");
                if s.contains('.') {
                    s.trim_end_matches('0').trim_end_matches('.').to_string()
                } else {
                    s
                }
            }
        }
        other => other.to_string(),
    }
}

fn facts(b: &Benchmark, metric: &Metric) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(m) = metric.summary(&b.summary) {
        let (sc, u) = metric.scale(m.median);
        let r = data::resolution(m);
        let f = |v: f64| units::format_scaled(v, sc, u, r);
        let ci = if m.median_ci_exact {
            format!(" [{} – {}]", f(m.median_ci_low), f(m.median_ci_high))
        } else {
            " (too few runs for a 95% CI)".into()
        };
        parts.push(format!("median <b>{}</b>{}", esc(&f(m.median)), esc(&ci)));
        parts.push(format!("CV {}", esc(&units::format_percent(m.cv))));
    } else {
        parts.push(r#"<span class="warn">no counted runs</span>"#.into());
    }
    let counted = b.runs.iter().filter(|r| r.counted).count();
    let warm = b.runs.iter().filter(|r| r.warmup).count();
    let excl = b.runs.iter().filter(|r| !r.counted && !r.warmup).count();
    let mut runs = format!("{counted} counted runs");
    if warm > 0 {
        let _ = write!(runs, " + {warm} warm-up");
    }
    if excl > 0 {
        let _ = write!(runs, r#" + <span class="warn">{excl} excluded</span>"#);
    }
    parts.push(runs);
    if !b.stop_reason.is_empty() {
        parts.push(format!("stopped: {}", esc(&b.stop_reason)));
    }
    format!(r#"<p class="facts">{}</p>"#, parts.join(" · "))
}

fn plot_grid(out: &mut String, plots: &[&Plot], class: &str) {
    if plots.is_empty() {
        return;
    }
    let _ = write!(out, r#"<div class="{class}">"#);
    for p in plots {
        let _ = write!(
            out,
            r#"<figure class="fig" style="margin:0">{}</figure>"#,
            p.svg
        );
    }
    out.push_str("</div>");
}

fn session_section(fi: usize, label: &str, s: &Session, metric: &Metric, all: &[Plot]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<section class="session" id="f{fi}"><h2>{}</h2>"#,
        esc(label)
    );
    let _ = write!(
        out,
        r#"<p class="muted">{} benchmark(s) · started {} on {} · tare {}</p>"#,
        s.benchmarks.len(),
        esc(&s.started_at),
        esc(&s.machine.hostname),
        esc(&s.tare_version)
    );
    if !s.complete {
        out.push_str(r#"<div class="banner">This session did not finish (interrupted or recovered from a journal): some benchmarks may have fewer runs than planned.</div>"#);
    }
    if s.method.kind == MethodKind::Rusage {
        out.push_str(r#"<div class="banner">Measured with the rusage FALLBACK: CPU time and peak memory may miss processes that were not waited for.</div>"#);
    }
    for w in &s.method.warnings {
        let _ = write!(out, r#"<div class="banner">{}</div>"#, esc(w));
    }
    for w in machine_warnings(s) {
        let _ = write!(out, r#"<div class="banner note">{}</div>"#, esc(&w));
    }
    let _ = write!(
        out,
        r#"<input type="search" class="filter" data-table="summary-{fi}" placeholder="Filter benchmarks…" aria-label="filter benchmarks" hidden>"#
    );
    let _ = write!(
        out,
        r#"<div class="scroll">{}</div>"#,
        table::summary_table(fi, s, metric)
    );

    out.push_str(&super::head_to_head::section(fi, s));
    let session_plots: Vec<&Plot> = all
        .iter()
        .filter(|p| p.file == fi && matches!(p.kind, PlotKind::Forest | PlotKind::Paired))
        .collect();
    let comps: Vec<_> = s
        .comparisons
        .iter()
        .filter(|c| c.metric == metric.key())
        .collect();
    if !comps.is_empty() {
        out.push_str("<h3>Comparisons</h3><ul>");
        for c in &comps {
            let _ = write!(
                out,
                r#"<li>{} {} <span class="muted">({} test{}, {}; adjusted {})</span></li>"#,
                table::verdict_badge(c),
                esc(&c.words),
                esc(&c.test),
                if c.paired { ", paired rounds" } else { "" },
                p_text(c.p_value),
                p_text(c.p_adjusted)
            );
        }
        out.push_str("</ul>");
        let forest: Vec<&Plot> = session_plots
            .iter()
            .copied()
            .filter(|p| p.kind == PlotKind::Forest)
            .collect();
        plot_grid(&mut out, &forest, "wide");
        let paired: Vec<&Plot> = session_plots
            .iter()
            .copied()
            .filter(|p| p.kind == PlotKind::Paired)
            .collect();
        if !paired.is_empty() {
            out.push_str(r#"<p class="muted">Paired rounds: each point is one interleaved round; the grey diagonal means equal, the dashed line is the median ratio.</p>"#);
            plot_grid(&mut out, &paired, "plots pairs");
        }
    }

    let scans = crate::results::ScanRecord::of(s);
    let scaling: Vec<&Plot> = all
        .iter()
        .filter(|p| p.file == fi && p.kind == PlotKind::Scaling)
        .collect();
    if !scans.is_empty() && !scaling.is_empty() {
        let _ = write!(out, r#"<h3 id="f{fi}-scaling">Scaling</h3><ul>"#);
        for r in &scans {
            let _ = write!(out, r#"<li class="scaling-line">{}</li>"#, esc(&r.line));
            if let Some(l) = &r.cpu_line {
                let _ = write!(out, r#"<li class="scaling-line muted">{}</li>"#, esc(l));
            }
        }
        out.push_str("</ul>");
        out.push_str(r#"<p class="muted">Median wall time per parameter value (95% interval over processes) on log–log axes; the line is the fitted power law, a constant plus c·n^k.</p>"#);
        plot_grid(&mut out, &scaling, "plots");
    }

    for (bi, b) in s.benchmarks.iter().enumerate() {
        let anchor = bench_anchor(fi, bi);
        let _ = write!(
            out,
            r#"<section class="bench" id="{anchor}"><h3>{}. {}</h3><p><code>{}</code></p>"#,
            bi + 1,
            esc(&data::display_name(b)),
            esc(&b.command)
        );
        out.push_str(&facts(b, metric));
        out.push_str(&crate::report::meters::html(b, &anchor));
        // Two columns that stack independently: distribution plots left, plots over run
        // order right.
        let mine = |kinds: &[PlotKind]| -> Vec<&Plot> {
            all.iter()
                .filter(|p| p.file == fi && p.bench == Some(bi) && kinds.contains(&p.kind))
                .collect()
        };
        out.push_str(r#"<div class="plots">"#);
        plot_grid(
            &mut out,
            &mine(&[PlotKind::Histogram, PlotKind::Box, PlotKind::Setups]),
            "col",
        );
        plot_grid(
            &mut out,
            &mine(&[PlotKind::Sequence, PlotKind::Precision]),
            "col",
        );
        out.push_str("</div>");
        let _ = write!(out, r#"<div id="{anchor}-diag">"#);
        if b.diagnostics.is_empty() {
            out.push_str(r#"<p class="ok">No warnings about this sample.</p>"#);
        } else {
            for d in &b.diagnostics {
                out.push_str(&diagnostic(d));
            }
        }
        out.push_str("</div></section>");
    }

    out.push_str("<h3>Machine and method</h3>");
    out.push_str(&metadata(s));
    out.push_str("</section>");
    out
}

/// The whole page.
pub fn page(sessions: &[(String, Session)], metric: &Metric) -> String {
    let all = super::all_plots(sessions, metric);
    let labels: Vec<String> = sessions.iter().map(|(l, _)| l.clone()).collect();
    let mut out = String::with_capacity(1 << 16);
    let _ = write!(
        out,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="generator" content="tare {}"><title>tare report — {}</title><style>{CSS}</style></head><body><main>"#,
        esc(env!("CARGO_PKG_VERSION")),
        esc(&labels.join(", "))
    );
    let _ = write!(
        out,
        r#"<header class="top"><h1>tare report <span>{}</span></h1><nav class="toc">"#,
        esc(&labels.join(" · "))
    );
    if sessions.len() > 1 {
        out.push_str(r##"<a href="#files">side by side</a>"##);
    }
    for (fi, (l, _)) in sessions.iter().enumerate() {
        let _ = write!(out, r##"<a href="#f{fi}">{}</a>"##, esc(l));
    }
    out.push_str(&format!(
        r#"</nav><p class="muted" style="margin:4px 0 0">Numbers are {} over counted runs (warm-up and failed runs excluded); intervals are 95%; digits follow precision.</p></header>"#,
        esc(metric.name())
    ));
    if sessions.is_empty() {
        out.push_str("<p>No results.</p>");
    }
    if sessions.len() > 1 {
        out.push_str(r#"<section id="files"><h2>Side by side</h2><p class="muted">Benchmarks matched by name and parameters; “vs first” is the ratio of medians to the first file (no interval: the files were measured separately).</p>"#);
        out.push_str(r#"<input type="search" class="filter" data-table="files-table" placeholder="Filter benchmarks…" aria-label="filter benchmarks" hidden>"#);
        let _ = write!(
            out,
            r#"<div class="scroll">{}</div></section>"#,
            table::files_table(sessions, metric)
        );
    }
    for (fi, (label, s)) in sessions.iter().enumerate() {
        out.push_str(&session_section(fi, label, s, metric, &all));
    }
    let _ = write!(
        out,
        r#"<footer>Generated by tare {} from stored results. Plots are SVG; every number in them is in the results file.</footer></main><script>{JS}</script></body></html>"#,
        esc(env!("CARGO_PKG_VERSION"))
    );
    out
}
