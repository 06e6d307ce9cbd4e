//! The terminal summary of `tare kernels`, as dense as benchstat's: one table line per kernel
//! and parameters (name · reference · other · change · interval · verdict; or value ± interval
//! for a single program), its columns aligned and no wider than the terminal; then one line per
//! withheld-verdict reason, the checksum agreement, the suite lines, and the notes that bear on
//! a verdict in full, the others counted in one line (`--verbose`: every note, and under each
//! table line the old long words of each implementation).

use crate::conclude::kernels as ck;
use crate::results::{Benchmark, ComparisonRecord, KernelRecord, Session};
use crate::units;
use std::fmt::Write as _;

/// The width the table must fit: `COLUMNS` where set, else the terminal's where standard
/// output is one, else 100.
pub fn terminal_width() -> usize {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|n| *n >= 20)
    {
        return n;
    }
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        let mut ws = libc::winsize {
            ws_row: 0,
            ws_col: 0,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCGWINSZ writes one `winsize` into the struct it is given, which lives
        // for the call; descriptor 1 is this process's standard output.
        let rc = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) };
        if rc == 0 && ws.ws_col >= 20 {
            return usize::from(ws.ws_col);
        }
    }
    100
}

/// One implementation's value: the mean of its processes' means (or one process's median)
/// with the relative half-width of its 95% interval.
struct Value {
    /// Seconds a loop.
    at: f64,
    half: f64,
    /// Processes behind it.
    n: usize,
    /// The long words (`--verbose`): "1.10 ms/loop ± 43% (95% CI of ...)".
    words: String,
}

fn value_of(b: &Benchmark) -> Option<Value> {
    let medians: Vec<f64> = ck::invocations(b)
        .iter()
        .filter(|i| i.error.is_none())
        .filter_map(|i| i.mean.or(i.median))
        .collect();
    // The time and the rates beside it come from one statistic: the mean over processes where
    // there are two or more, else the one process's median.
    if let Some(p) = ck::process_spread(&medians) {
        let words = format!(
            "{}/loop ± {} (95% CI of the mean over {} processes{})",
            units::format_time(p.mean, Some(p.half * p.mean)),
            units::format_percent(p.half),
            p.n,
            ck::next_session(&medians)
                .map(|x| next_session_words(&x, p.mean))
                .unwrap_or_default()
        );
        return Some(Value {
            at: p.mean,
            half: p.half,
            n: p.n,
            words,
        });
    }
    let m = b.summary.wall_time.as_ref()?;
    let half = (m.median_ci_high - m.median_ci_low) / 2.0;
    let rel = if m.median > 0.0 { half / m.median } else { 0.0 };
    Some(Value {
        at: m.median,
        half: rel,
        n: medians.len().max(1),
        words: format!(
            "{}/loop ± {} (95% CI of the median of one process's samples)",
            units::format_time(m.median, Some(half)),
            units::format_percent(rel)
        ),
    })
}

/// "1.10 ms ±43%": digits one place below the interval's width, so two values the ratio tells
/// apart are not printed alike ("8 ns" beside "7 ns").
fn value_cell(v: &Value) -> String {
    format!(
        "{} ±{}",
        units::format_time(v.at, Some(v.half * v.at / 10.0)),
        units::format_percent(v.half)
    )
}

/// The rate a kernel's time per loop comes to (bytes or items a second, all threads), with
/// digits as [`value_cell`]'s.
fn rate_cell(k: &KernelRecord, v: &Value) -> String {
    if v.at <= 0.0 {
        return String::new();
    }
    let t = f64::from(k.threads.max(1));
    let res = |r: f64| Some(r * v.half / 10.0);
    match (k.bytes_per_loop, k.items_per_loop) {
        (Some(bytes), _) => {
            let r = t * bytes / v.at;
            format!("{}/s", units::format_bytes(r, res(r)))
        }
        (None, Some(items)) => format!("{} items/s", units::format_count(t * items / v.at)),
        _ => String::new(),
    }
}

/// A signed percentage with two significant digits: "+9.0%", "−45%".
fn signed_percent(f: f64) -> String {
    let p = f * 100.0;
    if !p.is_finite() {
        return "n/a".into();
    }
    let s = if p.abs() < 9.95 {
        format!("{p:+.1}%")
    } else {
        format!("{p:+.0}%")
    };
    s.replace('-', "−")
}

/// A ratio `r` as a change: "+9.0%", "−46%"; as a factor ("0.31×", "158×") where it or
/// `other` (the other end of its interval) is 2× or more either way, where percentages grow
/// unreadable.
fn change_cell(r: f64, other: f64) -> String {
    let far = |x: f64| !(0.5..2.0).contains(&x);
    if far(r) || far(other) {
        if r < 0.01 {
            return "<0.01×".into();
        }
        let digits = if r >= 100.0 {
            0
        } else if r >= 10.0 {
            1
        } else if r >= 0.1 {
            2
        } else {
            3
        };
        format!("{r:.digits$}×")
    } else {
        signed_percent(r - 1.0)
    }
}

/// The verdict cell: the verdict's word, or "?" and the short reason it was withheld.
fn verdict_cell(c: &ComparisonRecord) -> String {
    let on = if c.metric != "wall_time" {
        format!(" on {}", c.metric)
    } else {
        String::new()
    };
    if let Some(why) = ck::withheld(c) {
        return format!("? {}", short_reason(why));
    }
    match c.verdict.as_str() {
        "slower" | "faster" => format!("{}{on}", c.verdict),
        "equal-within-noise" => format!("= within noise{on}"),
        "no-significant-difference" => format!("~{on}"),
        v => v.to_string(),
    }
}

/// A withheld verdict's reason up to its parenthesis, without "inconclusive: " ("4
/// invocations").
fn short_reason(why: &str) -> &str {
    let head = why.split_once(" (").map_or(why, |(s, _)| s);
    let head = head.split_once(';').map_or(head, |(s, _)| s);
    head.strip_prefix("inconclusive: ").unwrap_or(head)
}

/// A withheld verdict's reason with its parenthesis, without the comparison's own interval
/// that follows ("inconclusive: 4 invocations (a verdict needs at least 5 processes a side; -i
/// 5 or more)"): one line says it for every kernel it withheld.
fn reason_head(why: &str) -> &str {
    match why.find(" (") {
        Some(open) => {
            let mut depth = 0usize;
            for (i, ch) in why[open..].char_indices() {
                match ch {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            return &why[..open + i + 1];
                        }
                    }
                    _ => {}
                }
            }
            why
        }
        None => why.split_once(';').map_or(why, |(s, _)| s),
    }
}

/// Cuts `s` to `w` characters, keeping its start and end ("blur rad…size=64").
fn fit(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w || w < 4 {
        return s.to_string();
    }
    let tail = (w - 1) / 2;
    let head = w - 1 - tail;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

/// Kernel and parameters, as the groups of the table: benchmarks of one kernel and parameters,
/// the reference first.
fn groups(s: &Session) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let key = |b: &Benchmark| {
        (
            ck::kernel_record(b).map(|k| k.kernel).unwrap_or_default(),
            b.parameters.clone(),
        )
    };
    for (i, b) in s.benchmarks.iter().enumerate() {
        match groups
            .iter_mut()
            .find(|g| key(&s.benchmarks[g[0]]) == key(b))
        {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

fn group_name(b: &Benchmark) -> String {
    let k = ck::kernel_record(b).unwrap_or_default();
    let params: Vec<String> = b
        .parameters
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if params.is_empty() {
        k.kernel
    } else {
        format!("{} {}", k.kernel, params.join(" "))
    }
}

/// Aligned columns: the first left-aligned and cut to fit `width`, the last left-aligned, the
/// others right-aligned.
fn layout(rows: &[Vec<String>], width: usize) -> Vec<String> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut w = vec![0usize; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let total: usize = w.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
    if total > width && cols > 1 {
        w[0] = w[0].saturating_sub(total - width).max(16.min(w[0]));
    }
    rows.iter()
        .map(|r| {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                if i == 0 {
                    let _ = write!(line, "{:<1$}", fit(c, w[0]), w[0]);
                } else if i + 1 == cols {
                    line.push_str(c);
                } else {
                    let _ = write!(line, "{c:>0$}", w[i]);
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

/// The width of `rows` laid out: columns' widest cells and two spaces between.
fn table_width(rows: &[Vec<String>]) -> usize {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .sum::<usize>()
        + 2 * cols.saturating_sub(1)
}

/// Rows made to fit `width` before names are cut: the rate column (`rate_col`; the ratio says
/// its change) goes first, then the reasons of withheld verdicts leave their cells ("?", the
/// reason stays in full below the table), then the values' "±".
fn narrowed(mut rows: Vec<Vec<String>>, width: usize, rate_col: Option<usize>) -> Vec<Vec<String>> {
    if table_width(&rows) > width {
        if let Some(c) = rate_col {
            for r in &mut rows {
                if c < r.len() {
                    r.remove(c);
                }
            }
        }
    }
    if table_width(&rows) > width {
        for r in rows.iter_mut().skip(1) {
            if let Some(last) = r.last_mut().filter(|c| c.starts_with("? ")) {
                *last = "?".into();
            }
        }
    }
    if table_width(&rows) > width {
        // Then the values' "±" (the change's interval stays).
        for c in rows.iter_mut().skip(1).flat_map(|r| r.iter_mut().skip(1)) {
            if let Some((value, _)) = c.split_once(" ±") {
                *c = value.to_string();
            }
        }
    }
    rows
}

/// The terminal summary (see the module's words), fitted to [`terminal_width`].
pub fn summary(s: &Session, verbose: bool) -> String {
    summary_in(s, verbose, terminal_width())
}

/// [`summary`] for a terminal `width` characters wide.
pub fn summary_in(s: &Session, verbose: bool, width: usize) -> String {
    let mut out = String::new();
    let groups = groups(s);
    let labels: Vec<String> = {
        let mut l: Vec<String> = Vec::new();
        for b in &s.benchmarks {
            let k = ck::kernel_record(b).unwrap_or_default();
            if !l.contains(&k.implementation) {
                l.push(k.implementation);
            }
        }
        l
    };
    let compared = groups.iter().any(|g| g.len() > 1);
    let many = labels.len() > 2;
    let has_rate = s.benchmarks.iter().any(|b| {
        ck::kernel_record(b)
            .is_some_and(|k| k.bytes_per_loop.is_some() || k.items_per_loop.is_some())
    });
    // Rows: cells, then the long words under them (--verbose) and the counts line.
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut under: Vec<Vec<String>> = Vec::new();
    let mut withheld: Vec<(String, usize)> = Vec::new();
    let mut confidence: Vec<f64> = Vec::new();
    let header: Vec<String> = if compared {
        let mut h = vec!["kernel".to_string()];
        if many {
            h.push("impl".into());
        }
        h.push(labels[0].clone());
        h.push(if many {
            "value".into()
        } else {
            labels[1].clone()
        });
        if has_rate {
            h.push(if many {
                "rate".into()
            } else {
                format!("{} rate", labels[1])
            });
        }
        h.extend(["change".into(), "CI".into(), "verdict".into()]);
        h
    } else {
        let mut h = vec!["kernel".to_string(), "time/loop".into()];
        if has_rate {
            h.push("rate".into());
        }
        h.push("processes".into());
        h
    };
    rows.push(header);
    under.push(Vec::new());
    for g in &groups {
        let name = group_name(&s.benchmarks[g[0]]);
        let reference = &s.benchmarks[g[0]];
        let rk = ck::kernel_record(reference).unwrap_or_default();
        let rv = value_of(reference);
        let long = |i: usize, vs: &str| detail_line(&s.benchmarks[i], vs);
        if !compared {
            let cell = rv.as_ref().map_or("no counted sample".into(), value_cell);
            let mut r = vec![name, cell];
            if has_rate {
                r.push(rv.as_ref().map(|v| rate_cell(&rk, v)).unwrap_or_default());
            }
            r.push(rv.as_ref().map_or("0".into(), |v| v.n.to_string()));
            rows.push(r);
            under.push(
                [
                    verbose.then(|| long(g[0], "")),
                    threads_line(reference),
                    counts_line(reference),
                ]
                .into_iter()
                .flatten()
                .collect(),
            );
            continue;
        }
        let mut lines = vec![verbose.then(|| long(g[0], "reference"))];
        lines.push(threads_line(reference));
        lines.push(counts_line(reference));
        let others: Vec<usize> = if g.len() > 1 {
            g[1..].to_vec()
        } else {
            vec![g[0]]
        };
        for (n, &i) in others.iter().enumerate() {
            let b = &s.benchmarks[i];
            let k = ck::kernel_record(b).unwrap_or_default();
            let alone = i == g[0];
            let v = if alone { None } else { value_of(b) };
            let c = (!alone).then(|| ck::comparison_of(s, g[0], i)).flatten();
            let mut r = vec![if n == 0 { name.clone() } else { String::new() }];
            if many {
                r.push(if alone {
                    String::new()
                } else {
                    k.implementation.clone()
                });
            }
            r.push(if n == 0 || !many {
                rv.as_ref().map_or("—".into(), value_cell)
            } else {
                String::new()
            });
            r.push(v.as_ref().map_or("—".into(), value_cell));
            if has_rate {
                let (kk, vv) = if alone {
                    (&rk, rv.as_ref())
                } else {
                    (&k, v.as_ref())
                };
                r.push(vv.map(|v| rate_cell(kk, v)).unwrap_or_default());
            }
            match c {
                Some(c) => {
                    r.push(change_cell(c.ratio, c.ratio));
                    r.push(format!(
                        "{}…{}",
                        change_cell(c.ratio_ci_low, c.ratio_ci_high),
                        change_cell(c.ratio_ci_high, c.ratio_ci_low)
                    ));
                    r.push(verdict_cell(c));
                    confidence.push(c.confidence);
                    if let Some(why) = ck::withheld(c).map(reason_head) {
                        match withheld.iter_mut().find(|(w, _)| w == why) {
                            Some((_, n)) => *n += 1,
                            None => withheld.push((why.to_string(), 1)),
                        }
                    }
                    if !alone {
                        let vs = format!(
                            "{:.3}× [{:.3}, {:.3}] {}{}{}",
                            c.ratio,
                            c.ratio_ci_low,
                            c.ratio_ci_high,
                            c.verdict,
                            if c.metric != "wall_time" {
                                format!(" on {} per loop", c.metric)
                            } else {
                                String::new()
                            },
                            ck::withheld(c)
                                .or_else(|| ck::not_significant(c))
                                .map(|w| format!(" ({w})"))
                                .unwrap_or_default()
                        );
                        lines.push(verbose.then(|| long(i, &vs)));
                    }
                }
                None => {
                    r.extend([String::new(), String::new()]);
                    r.push(
                        if alone {
                            "only one program"
                        } else {
                            "not compared"
                        }
                        .into(),
                    );
                    if !alone {
                        lines.push(verbose.then(|| long(i, "not compared")));
                    }
                }
            }
            if !alone {
                lines.push(threads_line(b));
                lines.push(counts_line(b));
            }
            rows.push(r);
            under.push(if n + 1 == others.len() {
                std::mem::take(&mut lines).into_iter().flatten().collect()
            } else {
                Vec::new()
            });
        }
    }
    let rate_col = has_rate.then(|| rows[0].len() - if compared { 4 } else { 2 });
    for (line, extra) in layout(&narrowed(rows, width, rate_col), width)
        .into_iter()
        .zip(&under)
    {
        let _ = writeln!(out, "{line}");
        for e in extra {
            let _ = writeln!(out, "    {e}");
        }
    }
    // What the columns are.
    if compared {
        confidence.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
        let level = match confidence.as_slice() {
            [c] => format!(" at {}%", percent_level(*c)),
            _ => String::new(),
        };
        let adjusted = if confidence.iter().any(|c| (c - 0.95).abs() > 1e-9) {
            format!(", adjusted for {} comparisons", s.comparisons.len())
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "values: mean of the processes' means ± 95% CI; change: against {} (%, or × from 2× either way), CI{level}{adjusted}",
            labels[0]
        );
    }
    for (why, n) in &withheld {
        let _ = writeln!(out, "? {why}: {}", units::plural(*n, "kernel"));
    }
    checksum_line(&mut out, s, &groups);
    for r in crate::conclude::suite::recorded(s) {
        let _ = writeln!(out, "{}", r.line);
    }
    notes(&mut out, s, &groups, verbose);
    if let Some(line) = go_line(s) {
        let _ = writeln!(out, "{line}");
    }
    for scan in crate::results::ScanRecord::of(s) {
        let _ = writeln!(out, "{}", scan.line);
    }
    out
}

/// The long words of one implementation (`--verbose`): its value and what its "±" is, rates,
/// invocations × samples × loops, and `vs` (its comparison's words).
fn detail_line(b: &Benchmark, vs: &str) -> String {
    let k = ck::kernel_record(b).unwrap_or_default();
    let v = value_of(b);
    let time = v
        .as_ref()
        .map_or("no counted sample".to_string(), |v| v.words.clone());
    let thr = throughput_words(&k, v.as_ref().map(|v| v.at).filter(|t| *t > 0.0));
    let counted = b.runs.iter().filter(|r| r.counted).count();
    format!(
        "{:<10} {time}{thr}  ({} invocations, {counted} samples, N={}{})  {vs}",
        k.implementation,
        ck::invocations(b).len(),
        k.loops,
        if k.loops_fixed { " fixed" } else { "" },
    )
    .trim_end()
    .to_string()
}

/// A threaded kernel's time is each thread's: "c: time per thread (2 threads; total 2.1M
/// loops/s)" under its line.
/// `--loops N` says so under the line too: "c: N=7 fixed loops a sample".
fn threads_line(b: &Benchmark) -> Option<String> {
    let k = ck::kernel_record(b)?;
    let mut w = Vec::new();
    if k.threads > 1 {
        let v = value_of(b)?;
        w.push(format!(
            "time{}",
            throughput_words(&k, Some(v.at).filter(|t| *t > 0.0))
        ));
    }
    if k.loops_fixed {
        w.push(format!("N={} fixed loops a sample", k.loops));
    }
    (!w.is_empty()).then(|| format!("{}: {}", k.implementation, w.join("; ")))
}

/// "checksum agrees across implementations: 32768.03 (blur size=64), ..." (up to 3 kernels
/// named, else counted).
fn checksum_line(out: &mut String, s: &Session, groups: &[Vec<usize>]) {
    let agreed: Vec<(String, f64)> = groups
        .iter()
        .filter(|g| g.len() > 1)
        .filter_map(|g| {
            ck::agreed_checksum(&s.benchmarks, g).map(|c| (group_name(&s.benchmarks[g[0]]), c))
        })
        .collect();
    match agreed.as_slice() {
        [] => {}
        [(_, c)] => {
            let _ = writeln!(out, "checksum agrees across implementations: {c}");
        }
        list if list.len() <= 3 => {
            let each: Vec<String> = list.iter().map(|(n, c)| format!("{c} ({n})")).collect();
            let _ = writeln!(
                out,
                "checksum agrees across implementations: {}",
                each.join(", ")
            );
        }
        list => {
            let _ = writeln!(
                out,
                "checksum agrees across implementations in {} kernels",
                list.len()
            );
        }
    }
}

/// Notes said in full whatever the verdict: the compared values may not be the same work, or
/// not the kernel's (a body optimized away, samples the clock cannot resolve, loops that reuse
/// state loop 1 left).
const ALWAYS: [&str; 5] = [
    "checksum-missing",
    "first-loop",
    "metric-disagrees",
    "linearity",
    "unresolved-samples",
];

/// A verdict whose interval stays this factor clear of 1 is not changed by what a note
/// says (interference, speed modes, processes that differ move values by tens of percent at
/// most, and the interval already holds them): its notes are counted, not printed.
const MARGIN: f64 = 1.1;

/// Notes: failures, [`ALWAYS`]'s kinds, a kernel's own value left unsettled where no other
/// program has it, and the notes that can change a verdict ("slower", "faster") of a kernel
/// that has one whose interval reaches within [`MARGIN`] of 1, in full; the rest counted in
/// one line. `verbose`: all in full.
fn notes(out: &mut String, s: &Session, groups: &[Vec<usize>], verbose: bool) {
    let decided = |i: usize| {
        let g = groups.iter().find(|g| g.contains(&i));
        g.is_some_and(|g| {
            g[1..].iter().any(|&c| {
                ck::comparison_of(s, g[0], c).is_some_and(|c| {
                    matches!(c.verdict.as_str(), "slower" | "faster")
                        && c.ratio_ci_low < MARGIN
                        && c.ratio_ci_high > 1.0 / MARGIN
                })
            })
        })
    };
    let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut on = std::collections::BTreeSet::new();
    for (i, b) in s.benchmarks.iter().enumerate() {
        let full = verbose || decided(i);
        let alone = groups.iter().any(|g| g == &[i]);
        if b.stop_reason.starts_with("inconclusive") {
            if full || alone {
                let _ = writeln!(out, "tare: note: {}: {}", b.name, b.stop_reason);
            } else {
                *kinds.entry("inconclusive").or_default() += 1;
                on.insert(b.name.as_str());
            }
        }
        for d in &b.diagnostics {
            let shown =
                verbose || ALWAYS.contains(&d.kind.as_str()) || (full && d.changes_a_conclusion());
            if !shown {
                *kinds.entry(d.kind.as_str()).or_default() += 1;
                on.insert(b.name.as_str());
                continue;
            }
            if d.message.starts_with(&b.name) {
                let _ = writeln!(out, "tare: note: {}", d.message);
            } else {
                let _ = writeln!(out, "tare: note: {}: {}", b.name, d.message);
            }
        }
        for inv in ck::invocations(b) {
            if let Some(e) = &inv.error {
                let _ = writeln!(
                    out,
                    "tare: note: {}: invocation {} failed: {e}",
                    b.name,
                    inv.index + 1
                );
            }
        }
    }
    if !kinds.is_empty() {
        let n: usize = kinds.values().sum();
        let list: Vec<String> = kinds.iter().map(|(k, c)| format!("{k} {c}")).collect();
        let _ = writeln!(
            out,
            "tare: {} on {} ({}) — --verbose shows them; all are in the JSON export",
            units::plural(n, "note"),
            units::plural(on.len(), "benchmark"),
            list.join(", ")
        );
    }
}

/// A session with Go `testing.B` benchmarks (`tare native-worker go`): once, how its b.N
/// differs from `go test -bench`'s default mode — b.N is tare's calibrated N
/// (`-test.benchtime=Nx`), millions fewer than Go's own for a short body, so what a run pays
/// once (`b.RunParallel`'s goroutines) weighs more (docs/native-workers.md). `None` otherwise.
fn go_line(s: &Session) -> Option<String> {
    let loops: Vec<u64> = s
        .benchmarks
        .iter()
        .filter_map(ck::kernel_record)
        .filter(|k| ck::native_harness(&k.client) == Some("go"))
        .map(|k| k.loops)
        .collect();
    let (lo, hi) = (*loops.iter().min()?, *loops.iter().max()?);
    let n = if lo == hi {
        units::format_count(lo as f64)
    } else {
        format!(
            "{}–{}",
            units::format_count(lo as f64),
            units::format_count(hi as f64)
        )
    };
    Some(format!(
        "tare: go: b.N = tare's N ({n}, -test.benchtime=Nx), not go test -bench's 1 s b.N: short b.RunParallel bodies read 1.15–1.8× its values (docs/native-workers.md)"
    ))
}

/// The next-session part of a kernel's "±" (after the interval of the mean), for a kernel
/// whose processes' mean is `mean` (s/loop). Where the thirds widened it, the interval is
/// `tare compare`'s, symmetric on the log scale (÷ and × the same factor), so it is printed as
/// a range, not a "±".
fn next_session_words(x: &ck::NextSession, mean: f64) -> String {
    if x.thirds >= x.half && x.thirds > x.predicted {
        let f = 1.0 + x.half;
        return format!(
            "; next session {}–{}, widened from ± {}: the thirds of this session differ, and `tare compare` against a next session alike would see no change within this",
            units::format_time(mean / f, None),
            units::format_time(mean * f, None),
            units::format_percent(x.predicted)
        );
    }
    let mut w = format!("; next session ± {}", units::format_percent(x.half));
    if !x.modes.is_empty() {
        let at: Vec<String> = x
            .modes
            .iter()
            .map(|m| units::format_time(*m, None))
            .collect();
        w.push_str(&format!(
            ", widened from ± {} to reach the {} modes of the processes' values, at {}: the machine has speed modes",
            units::format_percent(x.predicted),
            x.modes.len(),
            at.join(", ")
        ));
    }
    w
}

/// A confidence level as a percentage: "95", "97.5", "98.3".
fn percent_level(c: f64) -> String {
    let p = c * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}")
    } else {
        format!("{p:.1}")
    }
}

/// The rates beside a kernel's time per loop, from that same time (`per_loop`, seconds):
/// bytes or items a second, and for threaded kernels the loops of all threads together (the
/// time per loop is each thread's; T threads run T × N loops in a sample's time).
fn throughput_words(k: &KernelRecord, per_loop: Option<f64>) -> String {
    let Some(t_loop) = per_loop else {
        return String::new();
    };
    let t = f64::from(k.threads.max(1));
    let thr = match (k.bytes_per_loop, k.items_per_loop) {
        (Some(bytes), _) => format!("  {}/s", units::format_bytes(t * bytes / t_loop, None)),
        (None, Some(items)) => format!("  {} items/s", units::format_count(t * items / t_loop)),
        _ => String::new(),
    };
    if k.threads > 1 {
        format!(
            " per thread ({} threads; total {} loops/s{thr})",
            k.threads,
            units::format_count(t / t_loop)
        )
    } else {
        thr
    }
}

/// The counts of a kernel's timed region per loop (`--counters`), from its summary.
fn counts_line(b: &crate::results::Benchmark) -> Option<String> {
    let c = b.extra.get(crate::conclude::counts::SUMMARY_KEY)?;
    let events = c["events"].as_array()?;
    let parts: Vec<String> = events
        .iter()
        .filter_map(|e| {
            Some(format!(
                "{} {}",
                e["event"].as_str()?,
                units::format_thousands((e["median"].as_f64()? * 10.0).round() / 10.0)
            ))
        })
        .collect();
    let repeats = events.iter().all(|e| e["repeats"] == true);
    let spread = events
        .iter()
        .filter_map(|e| e["spread"].as_f64())
        .fold(0.0, f64::max);
    let method = b
        .runs
        .iter()
        .find_map(|r| {
            r.extra
                .get(crate::method::kernels::COUNT_METHOD_KEY)?
                .as_str()
        })
        .unwrap_or(crate::method::kernels::REGION_METHOD);
    let times = if method == crate::method::kernels::REGION_METHOD {
        "times above are under Valgrind"
    } else {
        "counted in invocations of their own; times above are without Valgrind"
    };
    Some(format!(
        "per loop ({method}, Valgrind): {} ({}; {times})",
        parts.join("   "),
        if repeats {
            format!("samples agree within {:.4}%", spread * 100.0)
        } else {
            format!("samples differ by up to {:.3}%", spread * 100.0)
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::{change_cell, fit, layout, signed_percent, throughput_words};
    use crate::results::KernelRecord;

    #[test]
    fn the_table_fits_the_width_and_keeps_the_ends_of_names() {
        let rows = vec![
            vec!["kernel".into(), "old".into(), "verdict".into()],
            vec![
                "blur radius=3 size=64 border=reflect".into(),
                "1.10 ms ±43%".into(),
                "~".into(),
            ],
        ];
        let wide = layout(&rows, 200);
        assert!(
            wide[1].starts_with("blur radius=3 size=64 border=reflect  "),
            "{wide:?}"
        );
        // Columns aligned (in characters: "±" is two bytes): the verdict starts under its header.
        assert_eq!(
            wide[0].find("verdict"),
            wide[1].chars().position(|c| c == '~')
        );
        let narrow = layout(&rows, 40);
        assert!(narrow.iter().all(|l| l.chars().count() <= 40), "{narrow:?}");
        assert!(
            narrow[1].contains('…') && narrow[1].contains("reflect"),
            "{narrow:?}"
        );
        // Narrower than a 16-character name and the other columns: the line overflows rather
        // than cutting names to nothing.
        let tiny = layout(&rows, 20);
        assert!(tiny[1].starts_with("blur rad…reflect  "), "{tiny:?}");
        assert_eq!(fit("abcdefghij", 5), "ab…ij");
        assert_eq!(fit("abc", 5), "abc");
    }

    #[test]
    fn changes_are_signed_with_two_digits() {
        assert_eq!(signed_percent(0.0902), "+9.0%");
        assert_eq!(signed_percent(-0.458), "−46%");
        assert_eq!(signed_percent(1.19), "+119%");
        assert_eq!(change_cell(1.045, 1.045), "+4.5%");
        // An interval reaching 2× either way is printed in factors, both ends alike.
        assert_eq!(change_cell(0.29, 3.74), "0.29×");
        assert_eq!(change_cell(157.6, 157.6), "158×");
        assert_eq!(change_cell(0.0003, 1673.0), "<0.01×");
    }

    #[test]
    fn rates_come_from_the_time_on_the_line() {
        // 4 bytes a loop at 4.9 ns a loop is 816 MB/s, whatever the samples' own median was.
        let k = KernelRecord {
            bytes_per_loop: Some(4.0),
            threads: 1,
            ..Default::default()
        };
        assert_eq!(throughput_words(&k, Some(4.9e-9)), "  816.3 MB/s");
        assert_eq!(throughput_words(&k, None), "");
        // Threaded: the time is each thread's; the rates are of all threads together.
        let k = KernelRecord {
            items_per_loop: Some(1.0),
            threads: 4,
            ..Default::default()
        };
        let w = throughput_words(&k, Some(1e-6));
        assert!(w.starts_with(" per thread (4 threads; total 4"), "{w}");
        assert!(w.contains("items/s"), "{w}");
    }
}
