//! Energy compared like time (`--energy` with several commands): each benchmark's package
//! energy per run against the reference's — ratio of medians with a 95% bootstrap CI, paired
//! by round when interleaved — in `Session.extra["energy_comparisons"]`. Only runs whose energy
//! was attributed count (a package shared with other work is not the run's).

use crate::results::{Benchmark, Run};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The run's energy: the sum of its `package-N` domains (or `psys` when there is no package
/// domain), in joules; `None` when not measured or not attributed.
pub fn run_joules(r: &Run) -> Option<f64> {
    let e = r.meters.energy.as_ref()?;
    if e["attributed"] != true {
        return None;
    }
    let domains = e["domains"].as_array()?;
    let sum = |pred: &dyn Fn(&str) -> bool| -> Option<f64> {
        let xs: Vec<f64> = domains
            .iter()
            .filter(|d| d["name"].as_str().is_some_and(pred))
            .filter_map(|d| d["joules"].as_f64())
            .collect();
        (!xs.is_empty()).then(|| xs.iter().sum())
    };
    sum(&|n| n.starts_with("package-")).or_else(|| sum(&|n| n == "psys"))
}

fn by_round(b: &Benchmark) -> BTreeMap<usize, f64> {
    b.runs
        .iter()
        .filter(|r| r.counted)
        .filter_map(|r| Some((r.round?, run_joules(r)?)))
        .collect()
}

/// Every benchmark against `reference` on energy (empty when fewer than two have energy).
pub fn compare(benches: &[Benchmark], reference: usize, paired: bool, seed: u64) -> Vec<Value> {
    let Some(refb) = benches.get(reference) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, b) in benches.iter().enumerate() {
        if i == reference {
            continue;
        }
        let (x, y, is_paired) = {
            let (ra, rb) = (by_round(refb), by_round(b));
            let common: Vec<usize> = ra.keys().filter(|k| rb.contains_key(k)).copied().collect();
            if paired && common.len() >= 2 {
                (
                    common.iter().map(|k| ra[k]).collect::<Vec<_>>(),
                    common.iter().map(|k| rb[k]).collect::<Vec<_>>(),
                    true,
                )
            } else {
                let all = |b: &Benchmark| -> Vec<f64> {
                    b.runs
                        .iter()
                        .filter(|r| r.counted)
                        .filter_map(run_joules)
                        .collect()
                };
                (all(refb), all(b), false)
            }
        };
        let Some(iv) =
            crate::stats::bootstrap_ratio_of_medians(&x, &y, is_paired, 0.95, 10_000, seed)
        else {
            continue;
        };
        out.push(json!({
            "quantity": "package energy (J)",
            "reference": reference,
            "candidate": i,
            "reference_name": refb.name,
            "candidate_name": b.name,
            "ratio": iv.estimate,
            "ratio_ci_low": iv.low,
            "ratio_ci_high": iv.high,
            "confidence": 0.95,
            "paired": is_paired,
        }));
    }
    out
}
