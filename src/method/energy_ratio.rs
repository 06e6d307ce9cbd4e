//! Energy compared like time (`--energy` with several commands): each benchmark's package
//! energy and GPU energy per run against the reference's — ratio of medians with a 95%
//! bootstrap CI, paired by round when interleaved — in `Session.extra["energy_comparisons"]`.
//! Only runs whose package energy was attributed count (a package shared with other work is
//! not the run's); GPU energy of runs too short for the counter's resolution (`coarse`) is
//! not compared, and the record says so.

use crate::conclude::levels::{gpu_joules, package_joules, EnergyKind};
use crate::results::{Benchmark, Run};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn value(kind: EnergyKind, r: &Run) -> Option<f64> {
    match kind {
        EnergyKind::Package => package_joules(r),
        EnergyKind::Gpu => gpu_joules(r).map(|(j, _)| j),
    }
}

fn by_round(b: &Benchmark, kind: EnergyKind) -> BTreeMap<usize, f64> {
    b.runs
        .iter()
        .filter(|r| r.counted)
        .filter_map(|r| Some((r.round?, value(kind, r)?)))
        .collect()
}

/// Every benchmark against `reference` on energy (empty when fewer than two have energy).
pub fn compare(benches: &[Benchmark], reference: usize, paired: bool, seed: u64) -> Vec<Value> {
    let mut out = compare_kind(benches, reference, paired, seed, EnergyKind::Package);
    out.extend(compare_kind(
        benches,
        reference,
        paired,
        seed,
        EnergyKind::Gpu,
    ));
    out
}

fn compare_kind(
    benches: &[Benchmark],
    reference: usize,
    paired: bool,
    seed: u64,
    kind: EnergyKind,
) -> Vec<Value> {
    let Some(refb) = benches.get(reference) else {
        return Vec::new();
    };
    let quantity = match kind {
        EnergyKind::Package => "package energy (J)",
        EnergyKind::Gpu => "GPU energy (J)",
    };
    let coarse = |b: &Benchmark| {
        b.runs
            .iter()
            .filter(|r| r.counted)
            .any(|r| gpu_joules(r).is_some_and(|(_, c)| c))
    };
    let mut out = Vec::new();
    for (i, b) in benches.iter().enumerate() {
        if i == reference {
            continue;
        }
        let mut record = json!({
            "quantity": quantity,
            "reference": reference,
            "candidate": i,
            "reference_name": refb.name,
            "candidate_name": b.name,
        });
        if kind == EnergyKind::Gpu && (coarse(refb) || coarse(b)) {
            record["withheld"] = json!(format!(
                "runs shorter than {} of the GPU energy counter's update periods: each run's GPU energy is known to about a period's worth; measure longer runs",
                crate::machine::gpu_energy::COARSE_PERIODS
            ));
            out.push(record);
            continue;
        }
        let (x, y, is_paired) = {
            let (ra, rb) = (by_round(refb, kind), by_round(b, kind));
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
                        .filter_map(|r| value(kind, r))
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
        for (k, v) in [
            ("ratio", json!(iv.estimate)),
            ("ratio_ci_low", json!(iv.low)),
            ("ratio_ci_high", json!(iv.high)),
            ("confidence", json!(0.95)),
            ("paired", json!(is_paired)),
        ] {
            record[k] = v;
        }
        out.push(record);
    }
    out
}
