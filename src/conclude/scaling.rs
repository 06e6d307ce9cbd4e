//! Scaling of parameter scans: how time grows with each numeric parameter (issue 30).
//!
//! A scan is a set of benchmarks of one session that differ only in one numeric parameter: the
//! same kernel and implementation (`tare kernels`) or the same command (`tare run`) with every
//! other parameter fixed, at least [`MIN_VALUES`] distinct positive values spanning a factor of
//! at least [`MIN_SPAN`]. Each scan is fitted by [`stats::scaling`](crate::stats::scaling)
//! on the per-process values of its counted samples (a run of `tare run` is one process; the
//! samples of a `tare kernels` invocation are one, its value their median), with the bootstrap
//! over processes within each value.
//!
//! Pure: reads the session, returns records; [`record`] stores them in
//! `session.extra["scaling"]`. Never prints.

use super::levels::{self, Origin};
use crate::results::{Benchmark, Session};
pub use crate::results::{ScanRecord, SCALING_KEY as EXTRA_KEY};
use crate::stats::scaling::{self as fit, PowerModel, Scaling};
use std::collections::BTreeMap;

/// Fewest distinct values of a parameter that make a scan.
pub const MIN_VALUES: usize = 3;
/// Smallest ratio of the largest to the smallest value.
pub const MIN_SPAN: f64 = 4.0;
/// Bootstrap resamples of the exponent's interval.
pub const RESAMPLES: usize = 2000;
/// Confidence of the intervals.
pub const CONFIDENCE: f64 = 0.95;

fn numeric(v: &str) -> Option<f64> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x > 0.0)
}

/// What makes two benchmarks the same thing at different values of `p`: the kernel and
/// implementation, else the command with the value written as `{p}`.
fn family(b: &Benchmark, p: &str) -> String {
    if let Some(k) = super::kernels::kernel_record(b) {
        return format!("kernel {} / {}", k.kernel, k.implementation);
    }
    match b.parameters.get(p) {
        Some(v) if !v.is_empty() => b.command.replace(v.as_str(), &format!("{{{p}}}")),
        _ => b.command.clone(),
    }
}

/// One scan: parameter, the fixed parameters, family, benchmark indices.
type Scan = (String, BTreeMap<String, String>, String, Vec<usize>);

/// The scans of a session.
fn scans(s: &Session) -> Vec<Scan> {
    let names: std::collections::BTreeSet<&String> = s
        .benchmarks
        .iter()
        .flat_map(|b| b.parameters.keys())
        .collect();
    let mut out = Vec::new();
    for p in names {
        // Benchmarks with the same other parameters; one scan when each value occurs once,
        // else split by family (several commands scanned over the same values).
        let mut by_fixed: BTreeMap<(String, BTreeMap<String, String>), Vec<usize>> =
            BTreeMap::new();
        for (i, b) in s.benchmarks.iter().enumerate() {
            if b.parameters.get(p).and_then(|v| numeric(v)).is_none() {
                continue;
            }
            let mut fixed = b.parameters.clone();
            fixed.remove(p);
            let kernel = super::kernels::kernel_record(b)
                .map(|_| family(b, p))
                .unwrap_or_default();
            by_fixed.entry((kernel, fixed)).or_default().push(i);
        }
        for ((_, fixed), idx) in by_fixed {
            let value = |i: &usize| numeric(&s.benchmarks[*i].parameters[p]).unwrap_or(0.0);
            let mut values: Vec<f64> = idx.iter().map(value).collect();
            values.sort_by(f64::total_cmp);
            let unique = values.windows(2).all(|w| w[0] != w[1]);
            let groups: Vec<Vec<usize>> = if unique {
                vec![idx]
            } else {
                let mut fam: BTreeMap<String, Vec<usize>> = BTreeMap::new();
                for i in idx {
                    fam.entry(family(&s.benchmarks[i], p)).or_default().push(i);
                }
                fam.into_values().collect()
            };
            for mut g in groups {
                g.sort_by(|a, b| value(a).total_cmp(&value(b)));
                let vs: Vec<f64> = g.iter().map(value).collect();
                let distinct = vs.windows(2).all(|w| w[0] != w[1]);
                if !distinct || vs.len() < MIN_VALUES || vs[vs.len() - 1] < MIN_SPAN * vs[0] {
                    continue;
                }
                let fam = family(&s.benchmarks[g[0]], p);
                out.push((p.clone(), fixed.clone(), fam, g));
            }
        }
    }
    out
}

/// The scaling of every scan of a session (empty when there is none).
pub fn analyse(s: &Session) -> Vec<ScanRecord> {
    let origin = Origin::of(s);
    let all = scans(s);
    let mut per_parameter: BTreeMap<&str, usize> = BTreeMap::new();
    for (p, ..) in &all {
        *per_parameter.entry(p.as_str()).or_default() += 1;
    }
    let mut out = Vec::new();
    for (p, fixed, fam, idx) in &all {
        let groups: Vec<(f64, Vec<f64>)> = idx
            .iter()
            .map(|&i| {
                let b = &s.benchmarks[i];
                (
                    numeric(&b.parameters[p]).unwrap_or(f64::NAN),
                    levels::process_values(&levels::groups(b, origin)),
                )
            })
            .collect();
        let Some(fit) = fit::scaling(&groups, CONFIDENCE, RESAMPLES, s.seed) else {
            continue;
        };
        let cpu_fit = if origin == Origin::Run {
            let cpu: Vec<(f64, Vec<f64>)> = idx
                .iter()
                .zip(&groups)
                .map(|(&i, (n, _))| {
                    let runs = super::summary::counted(&s.benchmarks[i].runs);
                    (*n, runs.map(|r| r.cpu_time).filter(|t| *t > 0.0).collect())
                })
                .collect();
            fit::scaling(&cpu, CONFIDENCE, RESAMPLES, s.seed)
        } else {
            None
        };
        let b0 = &s.benchmarks[idx[0]];
        let label = match super::kernels::kernel_record(b0) {
            Some(k) => format!("{}/{}", k.kernel, k.implementation),
            None => fam.clone(),
        };
        let mut rec = ScanRecord {
            parameter: p.clone(),
            label,
            fixed: fixed.clone(),
            benchmarks: idx.clone(),
            unit: levels::unit(b0, origin),
            fit,
            line: String::new(),
            cpu_fit,
            cpu_line: None,
        };
        let named = per_parameter[p.as_str()] > 1 || !fixed.is_empty();
        rec.line = line(&rec, &rec.fit, named, None);
        rec.cpu_line = rec
            .cpu_fit
            .as_ref()
            .map(|f| line(&rec, f, named, Some("CPU time")));
        out.push(rec);
    }
    out
}

/// `scaling in size: O(n), time ∝ n^1.02 [0.97, 1.06] above 612 µs (O(n) fit error 2.1%)`.
/// `named`: say which scan (several scans of one parameter, or other parameters fixed);
/// `metric`: the metric when not wall time ("CPU time").
pub fn line(r: &ScanRecord, f: &Scaling, named: bool, metric: Option<&str>) -> String {
    let mut s = format!("scaling in {}", r.parameter);
    if named {
        let mut what = r.label.clone();
        for (k, v) in &r.fixed {
            what.push_str(&format!(", {k}={v}"));
        }
        s.push_str(&format!(" ({what})"));
    }
    if let Some(m) = metric {
        s.push_str(&format!(", {m}"));
    }
    s.push_str(&format!(
        ": {}, time ∝ n^{:.2}",
        f.class.class.big_o(),
        f.power.exponent
    ));
    match f.exponent_ci {
        Some((lo, hi)) => s.push_str(&format!(" [{lo:.2}, {hi:.2}]")),
        None => s.push_str(" (no interval: one process per value)"),
    }
    if f.power.model == PowerModel::Offset && f.power.constant > 0.0 {
        s.push_str(&format!(
            " above {}",
            crate::units::format_time(f.power.constant, None)
        ));
    }
    s.push_str(&format!(
        " (fit error {:.1}%, {} values, {} {}s)",
        100.0 * f.class.rms,
        f.points.len(),
        f.points.iter().map(|p| p.processes).sum::<usize>(),
        r.unit
    ));
    s
}

/// Stores the scans in `session.extra["scaling"]` (nothing when there is none). Called at the
/// end of `tare run` (`method::analyse`); for `tare kernels`, call it after
/// `conclude::kernels::conclude`.
pub fn record(session: &mut Session) {
    let scans = analyse(session);
    if scans.is_empty() {
        session.extra.remove(EXTRA_KEY);
    } else if let Ok(v) = serde_json::to_value(&scans) {
        session.extra.insert(EXTRA_KEY.into(), v);
    }
}

/// The scans recorded in a session (empty when none or unreadable).
pub fn recorded(session: &Session) -> Vec<ScanRecord> {
    ScanRecord::of(session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Run, Termination};

    fn run(i: usize, wall: f64) -> Run {
        Run {
            index: i,
            round: None,
            warmup: false,
            start_offset: 0.0,
            wall_time: wall,
            user_time: 0.0,
            system_time: 0.0,
            cpu_time: 0.0,
            peak_memory: None,
            exit_code: Some(0),
            signal: None,
            termination: Termination::Exit,
            involuntary_context_switches: None,
            counted: true,
            meters: Default::default(),
            extra: Default::default(),
        }
    }

    fn bench(command: &str, params: &[(&str, &str)], walls: &[f64]) -> Benchmark {
        Benchmark {
            name: command.into(),
            command: command.into(),
            argv: Vec::new(),
            parameters: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            summary: Default::default(),
            stop_reason: String::new(),
            runs: walls.iter().enumerate().map(|(i, w)| run(i, *w)).collect(),
            diagnostics: Vec::new(),
            extra: Default::default(),
        }
    }

    fn session(benchmarks: Vec<Benchmark>) -> Session {
        use crate::results::{LimitsRecord, MeasurementMethod, MethodKind};
        Session {
            schema_version: 1,
            tare_version: "test".into(),
            invocation: Vec::new(),
            started_at: String::new(),
            machine: Default::default(),
            method: MeasurementMethod {
                kind: MethodKind::Rusage,
                cpu_time: String::new(),
                peak_memory: String::new(),
                wall_time: String::new(),
                warnings: Vec::new(),
            },
            cores: None,
            limits: LimitsRecord::default(),
            environment: Default::default(),
            seed: 7,
            benchmarks,
            comparisons: Vec::new(),
            complete: true,
            extra: Default::default(),
        }
    }

    /// Noisy runs of `a + c n^k` (a deterministic ±3% pattern).
    fn walls(n: f64, a: f64, c: f64, k: f64) -> Vec<f64> {
        (0..9)
            .map(|i| (a + c * n.powf(k)) * (1.0 + 0.03 * ((i * 7 % 9) as f64 - 4.0) / 4.0))
            .collect()
    }

    #[test]
    fn finds_scans_and_fits_them() {
        let mut bs = Vec::new();
        for cmd in ["lin {size}", "sq {size}"] {
            for n in ["10", "30", "100", "300", "1000"] {
                let nf: f64 = n.parse().unwrap();
                let w = if cmd.starts_with("lin") {
                    walls(nf, 5e-4, 1e-5, 1.0)
                } else {
                    walls(nf, 5e-4, 1e-8, 2.0)
                };
                bs.push(bench(&cmd.replace("{size}", n), &[("size", n)], &w));
            }
        }
        // Not a scan: two values only.
        bs.push(bench("other 1", &[("m", "1")], &[1.0, 1.1]));
        bs.push(bench("other 8", &[("m", "8")], &[2.0, 2.1]));
        let mut s = session(bs);
        record(&mut s);
        let scans = recorded(&s);
        assert_eq!(scans.len(), 2, "{scans:?}");
        let lin = &scans[0];
        assert_eq!(lin.label, "lin {size}");
        assert_eq!(lin.benchmarks, [0, 1, 2, 3, 4]);
        assert_eq!(lin.fit.class.class, fit::Class::Linear);
        let (lo, hi) = lin.fit.exponent_ci.unwrap();
        assert!(lo < 1.0 && 1.0 < hi, "{lo} {hi}");
        assert!(lin
            .line
            .starts_with("scaling in size (lin {size}): O(n), time ∝ n^1.0"));
        assert!(lin.line.contains("5 values, 45 runs"), "{}", lin.line);
        let sq = &scans[1];
        assert_eq!(sq.fit.class.class, fit::Class::Square);
        let (lo, hi) = sq.fit.exponent_ci.unwrap();
        assert!(lo < 2.0 && 2.0 < hi, "{lo} {hi}");
    }

    /// A kernel benchmark: `invocations` processes of 5 samples each, per-loop times `t(n)`
    /// with a per-invocation offset (samples of one process share it).
    fn kernel_bench(imp: &str, n: &str, t: f64) -> Benchmark {
        let mut b = bench(&format!("sum/{imp}"), &[("size", n)], &[]);
        let k = crate::results::KernelRecord {
            kernel: "sum".into(),
            implementation: imp.into(),
            ..Default::default()
        };
        b.extra.insert(
            crate::results::KERNEL_KEY.into(),
            serde_json::to_value(k).unwrap(),
        );
        for inv in 0..6usize {
            for pos in 0..5usize {
                let w = t * (1.0 + 0.02 * (inv as f64 - 2.5) + 0.001 * pos as f64);
                let mut r = run(inv * 5 + pos, w);
                r.extra.insert(
                    crate::results::SAMPLE_KEY.into(),
                    serde_json::json!({"invocation": inv, "position": pos, "loops": 1, "ns": 1}),
                );
                b.runs.push(r);
            }
        }
        b
    }

    #[test]
    fn kernel_scans_group_samples_by_invocation() {
        let mut bs = Vec::new();
        for imp in ["c", "py"] {
            for n in ["64", "256", "1024", "4096"] {
                let nf: f64 = n.parse().unwrap();
                let t = if imp == "c" {
                    1e-9 * nf
                } else {
                    1e-7 * nf * nf
                };
                bs.push(kernel_bench(imp, n, t));
            }
        }
        let scans = analyse(&session(bs));
        assert_eq!(scans.len(), 2, "{scans:?}");
        assert_eq!(scans[0].label, "sum/c");
        assert_eq!(scans[0].unit, "invocation");
        // Six invocations per value: the processes, not the 30 samples.
        assert!(scans[0].fit.points.iter().all(|p| p.processes == 6));
        assert_eq!(scans[0].fit.class.class, fit::Class::Linear);
        assert_eq!(scans[1].fit.class.class, fit::Class::Square);
        assert!(
            scans[1].line.starts_with("scaling in size (sum/py): O(n²)"),
            "{}",
            scans[1].line
        );
        assert!(scans[0].cpu_fit.is_none());
    }

    #[test]
    fn too_narrow_or_non_numeric_is_no_scan() {
        let bs = vec![
            bench("a 2", &[("n", "2")], &[1.0, 1.1]),
            bench("a 3", &[("n", "3")], &[1.5, 1.6]),
            bench("a 4", &[("n", "4")], &[2.0, 2.1]),
            bench("b x", &[("w", "x")], &[1.0]),
            bench("b y", &[("w", "y")], &[1.0]),
            bench("b z", &[("w", "z")], &[1.0]),
        ];
        let mut s = session(bs);
        record(&mut s);
        assert!(analyse(&s).is_empty());
        assert!(!s.extra.contains_key(EXTRA_KEY));
    }
}
