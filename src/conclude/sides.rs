//! Two sides (old and new), each a set of sessions, compared benchmark by benchmark under the
//! one model of a measurement (`levels`): what `tare compare OLD NEW` concludes, and what
//! `tare serve` shows for two commits from the store. Benchmarks are matched by name and
//! parameters. Never prints: notes for the reader come back in [`Conclusion::notes`], refusals
//! as one-line errors.

use super::levels::{self, Metric, Origin};
use crate::results::{Benchmark, Session};
use crate::stats::geomean::GeoMean;
use anyhow::{bail, Result};
use std::collections::BTreeMap;

/// A benchmark's name and parameters.
pub type Key = (String, BTreeMap<String, String>);

pub fn key(b: &Benchmark) -> Key {
    (b.name.clone(), b.parameters.clone())
}

/// The benchmark's name with its parameters (all, or those in `only`).
pub fn full_name(k: &Key, only: Option<&[String]>) -> String {
    let params: Vec<(&String, &String)> =
        k.1.iter()
            .filter(|(n, _)| only.is_none_or(|o| o.contains(n)))
            .collect();
    match params.as_slice() {
        [] => k.0.clone(),
        [(n, v)] if n.as_str() == "parameter" => format!("{}/{v}", k.0),
        ps => format!(
            "{}[{}]",
            k.0,
            ps.iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

/// One side: its sessions and a label for messages.
pub struct Side {
    pub label: String,
    pub sessions: Vec<Session>,
}

impl Side {
    pub fn keys(&self) -> Vec<Key> {
        let mut out: Vec<Key> = Vec::new();
        for b in self.sessions.iter().flat_map(|s| &s.benchmarks) {
            let k = key(b);
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }

    pub fn parts(&self, k: &Key) -> Vec<(Origin, &Benchmark)> {
        self.sessions
            .iter()
            .flat_map(|s| {
                let o = Origin::of(s);
                s.benchmarks
                    .iter()
                    .filter(|b| &key(b) == k)
                    .map(move |b| (o, b))
            })
            .collect()
    }

    pub fn counted(&self, k: &Key) -> usize {
        self.parts(k)
            .iter()
            .map(|(_, b)| b.runs.iter().filter(|r| r.counted).count())
            .sum()
    }
}

/// What comparing two sides concluded.
pub struct Conclusion {
    /// Benchmarks both sides have, in the old side's order, with their display names.
    pub matched: Vec<Key>,
    pub names: Vec<String>,
    pub records: Vec<levels::Comparison>,
    /// Where instructions changed: the functions that moved most, per record.
    pub functions: Vec<Vec<(String, f64)>>,
    /// Benchmarks not compared (in one side only, or without a counted run), in words.
    pub missing: Vec<String>,
    pub model: String,
    pub session_lines: Vec<String>,
    pub geomean: Option<GeoMean>,
    /// The values are counts, not seconds.
    pub is_count: bool,
    /// Things the reader should know (e.g. both sides ran under Valgrind).
    pub notes: Vec<String>,
}

/// Every matched benchmark has the metric on both sides; a time metric compares no runs under
/// Valgrind with runs outside it (their times are Valgrind's, 20–100× the command's).
fn check_metric(
    metric: &Metric,
    old: &Side,
    new: &Side,
    matched: &[Key],
    notes: &mut Vec<String>,
) -> Result<()> {
    for (side, name) in [(old, "old"), (new, "new")] {
        for k in matched {
            let runs = || {
                side.parts(k)
                    .into_iter()
                    .flat_map(|(_, b)| b.runs.iter().filter(|r| r.counted))
            };
            match metric {
                Metric::Counter(e) if !runs().any(|r| metric.value(r).is_some()) => {
                    bail!(
                        "--metric {e}: '{}' in the {name} side ({}) has no run with {e} counted; measure it with `tare run --counters {e}`, or compare --metric time",
                        full_name(k, None),
                        side.label
                    );
                }
                Metric::Energy(kind) if !runs().any(|r| metric.value(r).is_some()) => {
                    let why = match kind {
                        levels::EnergyKind::Gpu if runs().any(|r| levels::gpu_joules(r).is_some()) => {
                            "GPU energy only from runs shorter than 5 of the GPU energy counter's update periods (too coarse to judge); measure longer runs"
                        }
                        levels::EnergyKind::Gpu => {
                            "no GPU energy; measure it with `tare run --energy` on a machine with an NVIDIA GPU"
                        }
                        levels::EnergyKind::Package if runs().any(|r| r.meters.energy.is_some()) => {
                            "no package energy attributed to its runs (pinned to part of a package, or no RAPL); run unpinned or on whole packages"
                        }
                        levels::EnergyKind::Package => {
                            "no package energy; measure it with `tare run --energy` on a machine with RAPL"
                        }
                    };
                    bail!(
                        "--metric {}: '{}' in the {name} side ({}) has {why}, or compare --metric time",
                        metric.name(),
                        full_name(k, None),
                        side.label
                    );
                }
                Metric::PeakMemory if !runs().any(|r| r.peak_memory.is_some()) => {
                    bail!(
                        "--metric peak_memory: '{}' in the {name} side ({}) has no run with peak memory measured (the rusage fallback, cgroup v2 before Linux 5.19 and kernels' samples do not measure it); measure it with `tare run` on cgroup v1 or v2, or compare --metric time",
                        full_name(k, None),
                        side.label
                    );
                }
                Metric::CpuTime | Metric::UserTime | Metric::SystemTime
                    if !runs().any(|r| metric.value(r).is_some_and(|v| v > 0.0)) =>
                {
                    bail!(
                        "--metric {}: '{}' in the {name} side ({}) records no {} (its results file does not carry it); measure it with `tare run`, or compare --metric time",
                        metric.name(),
                        full_name(k, None),
                        side.label,
                        metric.name()
                    );
                }
                _ => {}
            }
        }
    }
    if *metric == Metric::WallTime {
        let valgrind = |side: &Side| {
            side.sessions
                .iter()
                .flat_map(|s| &s.benchmarks)
                .flat_map(|b| &b.runs)
                .any(|r| super::counts::backend_of(r) == Some("valgrind"))
        };
        match (valgrind(old), valgrind(new)) {
            (true, true) => notes.push(
                "both sides ran under Valgrind: their times are Valgrind's (20–100× the commands' own); --metric instructions compares their counts".into(),
            ),
            (o, n) if o != n => {
                bail!(
                    "the {} side ran under Valgrind (--counters-backend valgrind) and the other did not: their times are not comparable; compare --metric instructions (both counted), or measure both alike",
                    if o { "old" } else { "new" }
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// Each pair compared: a counter whose counts repeat on both sides by `counts` (no interval
/// needed), the others together under the process-level model (Holm over them).
fn compare_pairs(
    pairs: &[(levels::Sessions, levels::Sessions)],
    metric: &Metric,
    settings: &levels::Settings,
) -> Vec<levels::Comparison> {
    let exact: Vec<Option<levels::Comparison>> = pairs
        .iter()
        .map(|(o, n)| match metric {
            Metric::Counter(e) => super::counts::compare(o, n, e),
            _ => None,
        })
        .collect();
    let rest: Vec<(levels::Sessions, levels::Sessions)> = pairs
        .iter()
        .zip(&exact)
        .filter(|(_, e)| e.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    let mut modelled = levels::compare_sessions(&rest, settings).into_iter();
    exact
        .into_iter()
        .map(|e| e.unwrap_or_else(|| modelled.next().expect("one record per pair")))
        .collect()
}

/// Compares `new` with `old` by `metric` (`time` or a counter's event). Errors (one line) when a
/// side has no counted run, no benchmark matches, benchmarks are missing from one side and
/// `allow_missing` is false, or the metric cannot be compared.
pub fn compare(
    old: &Side,
    new: &Side,
    metric_name: &str,
    settings: &levels::Settings,
    allow_missing: bool,
) -> Result<Conclusion> {
    // A gate never passes on nothing: a side without one counted run is an error.
    for (side, name) in [(old, "old"), (new, "new")] {
        if side.keys().iter().all(|k| side.counted(k) == 0) {
            bail!(
                "the {name} side ({}) has no counted run (a session stopped before its first run ended?): nothing to compare; measure it again",
                side.label
            );
        }
    }
    let (old_keys, new_keys) = (old.keys(), new.keys());
    let mut matched = Vec::new();
    let mut missing = Vec::new();
    for k in &old_keys {
        if !new_keys.contains(k) {
            missing.push(format!("'{}' is only in old", full_name(k, None)));
        } else if old.counted(k) == 0 || new.counted(k) == 0 {
            let side = if old.counted(k) == 0 { "old" } else { "new" };
            missing.push(format!(
                "'{}' has no counted run in {side}",
                full_name(k, None)
            ));
        } else {
            matched.push(k.clone());
        }
    }
    for k in new_keys.iter().filter(|k| !old_keys.contains(k)) {
        missing.push(format!("'{}' is only in new", full_name(k, None)));
    }
    if matched.is_empty() {
        bail!(
            "no benchmark of {} matches one of {} by name and parameters; name them alike with --name",
            old.label,
            new.label
        );
    }
    if !missing.is_empty() && !allow_missing {
        bail!(
            "{}{}: the two sides do not hold the same benchmarks; pass --allow-missing to compare those both have",
            missing[0],
            if missing.len() > 1 {
                format!(" (and {} more)", missing.len() - 1)
            } else {
                String::new()
            }
        );
    }
    let metric = Metric::parse(metric_name);
    let mut notes = Vec::new();
    check_metric(&metric, old, new, &matched, &mut notes)?;
    let mut units_seen = Vec::new();
    let pairs: Vec<(levels::Sessions, levels::Sessions)> = matched
        .iter()
        .map(|k| {
            let (o, n) = (old.parts(k), new.parts(k));
            for (origin, b) in o.iter().chain(&n) {
                units_seen.push(levels::unit(b, *origin));
            }
            (
                levels::side_sessions_of(&o, &metric),
                levels::side_sessions_of(&n, &metric),
            )
        })
        .collect();
    let mut records = compare_pairs(&pairs, &metric, settings);
    if metric == Metric::PeakMemory {
        // More memory is the regression a gate catches, as "slower" is for times; the words
        // say what it is.
        for c in &mut records {
            c.words = c
                .words
                .replace("× slower", "× larger")
                .replace("× faster", "× smaller");
        }
    }
    // Names show the parameters that tell benchmarks apart (Criterion's sort/100 and
    // sort/1000), not those every benchmark shares.
    let varying: Vec<String> = {
        let mut values: BTreeMap<&String, Vec<&String>> = BTreeMap::new();
        for (_, p) in &matched {
            for (n, v) in p {
                let e = values.entry(n).or_default();
                if !e.contains(&v) {
                    e.push(v);
                }
            }
        }
        values
            .into_iter()
            .filter(|(n, v)| v.len() > 1 || matched.iter().any(|(_, p)| !p.contains_key(*n)))
            .map(|(n, _)| n.clone())
            .collect()
    };
    let names: Vec<String> = matched
        .iter()
        .map(|k| full_name(k, Some(&varying)))
        .collect();
    // Kernels' counts are per loop, measured in invocations; commands' per run.
    let (per, unit) = if units_seen.iter().all(|u| u == "invocation") {
        ("loop", "invocation")
    } else {
        ("run", "run")
    };
    let model = match &metric {
        Metric::WallTime => levels::model_line(&units_seen, &records, settings.test),
        Metric::Energy(_)
        | Metric::CpuTime
        | Metric::UserTime
        | Metric::SystemTime
        | Metric::PeakMemory => format!(
            "{} per run; {}",
            metric.name(),
            levels::model_line(&units_seen, &records, settings.test)
        ),
        Metric::Counter(e) => format!(
            "{e} per {per}; where each side's counts repeat within {}%, a change of {}% or more is a change in work (the interval: the range of the ratios of all {unit}s); else {}",
            super::counts::REPEAT * 100.0,
            super::counts::WORK_CHANGE * 100.0,
            levels::model_line(&units_seen, &records, settings.test)
        ),
    };
    // Where instructions changed, the functions that moved most (Valgrind's runs keep their
    // busiest functions).
    let functions = records
        .iter()
        .zip(&matched)
        .map(|(c, k)| {
            if metric == Metric::Counter("instructions".into())
                && matches!(c.outcome, levels::Outcome::Slower | levels::Outcome::Faster)
            {
                let o: Vec<&Benchmark> = old.parts(k).into_iter().map(|(_, b)| b).collect();
                let n: Vec<&Benchmark> = new.parts(k).into_iter().map(|(_, b)| b).collect();
                super::counts::functions_moved(&o, &n, 5)
            } else {
                Vec::new()
            }
        })
        .collect();
    let session_lines = levels::session_lines(&records);
    // The geometric mean's interval is built from 95% intervals: the comparisons' own are at
    // 1 − α/m (issue 43), so each is brought to 95% on the log scale first (by the normal
    // quantiles the geometric mean uses; for a t interval this leaves it a little wider).
    let items: Vec<(f64, Option<(f64, f64)>)> = records
        .iter()
        .map(|c| (c.ratio, c.ci.map(|ci| at_95(ci, c.confidence))))
        .collect();
    let geomean = crate::stats::geomean::geomean(&items, 0.95);
    Ok(Conclusion {
        matched,
        names,
        records,
        functions,
        missing,
        model,
        session_lines,
        geomean,
        is_count: !metric.is_time(),
        notes,
    })
}

/// An interval `(lo, hi)` at `confidence` rescaled on the log scale to 95% (normal quantiles);
/// as it is where the confidence is 95%, or not in (0, 1) (a count's whole range).
fn at_95((lo, hi): (f64, f64), confidence: f64) -> (f64, f64) {
    use statrs::distribution::{ContinuousCDF, Normal};
    let z = |c: f64| Normal::new(0.0, 1.0).map(|n| n.inverse_cdf(0.5 + c / 2.0));
    if !(confidence > 0.0 && confidence < 1.0) || (confidence - 0.95).abs() < 1e-12 || lo <= 0.0 {
        return (lo, hi);
    }
    let (Ok(z95), Ok(zc)) = (z(0.95), z(confidence)) else {
        return (lo, hi);
    };
    let (mid, half) = (
        (hi.ln() + lo.ln()) / 2.0,
        (hi.ln() - lo.ln()) / 2.0 * z95 / zc,
    );
    ((mid - half).exp(), (mid + half).exp())
}

#[cfg(test)]
mod tests {
    use super::at_95;

    #[test]
    fn an_adjusted_interval_is_brought_to_95_percent_for_the_geometric_mean() {
        // 1.06–1.142 at 98.75% (4 comparisons) is about 1.069–1.133 at 95%; a 95% interval
        // and a count's whole range (confidence 1) stay as they are.
        let (lo, hi) = at_95((1.060, 1.142), 1.0 - 0.05 / 4.0);
        assert!(
            (lo - 1.0685).abs() < 1e-3 && (hi - 1.1330).abs() < 1e-3,
            "{lo} {hi}"
        );
        assert!(((lo * hi).sqrt() - (1.060f64 * 1.142).sqrt()).abs() < 1e-12);
        assert_eq!(at_95((1.0, 2.0), 0.95), (1.0, 2.0));
        assert_eq!(at_95((1.0, 2.0), 1.0), (1.0, 2.0));
    }
}
