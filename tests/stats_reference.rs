//! `tare::stats` against reference values computed by numpy / scipy / statsmodels /
//! pymannkendall (`scripts/stats_reference.py`, committed JSON in `tests/data/stats/`).

use serde_json::Value;
use tare::stats::*;

fn load(text: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(text).expect("valid JSON");
    v["cases"].as_array().expect("cases").clone()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn fs(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(f).collect()
}

/// |got − want| ≤ rel·|want| + abs.
#[track_caller]
fn close(got: f64, want: f64, rel: f64, abs: f64, what: &str) {
    assert!(
        (got - want).abs() <= rel * want.abs() + abs,
        "{what}: got {got:e}, want {want:e} (diff {:e})",
        (got - want).abs()
    );
}

const REL: f64 = 1e-9;

#[test]
fn quantiles_match_numpy() {
    for c in load(include_str!("data/stats/quantile.json")) {
        let s = sorted_without_nan(&fs(&c["x"]));
        for (p, want) in fs(&c["p"]).into_iter().zip(fs(&c["expected"])) {
            let got = quantile(&s, p).unwrap();
            close(got, want, 1e-12, 0.0, &format!("{} p={p}", c["name"]));
        }
    }
}

#[test]
fn describe_matches_numpy_and_scipy() {
    for c in load(include_str!("data/stats/describe.json")) {
        let name = c["name"].as_str().unwrap().to_string();
        let x = fs(&c["x"]);
        let d = describe(&x).unwrap();
        assert_eq!(d.n as u64, c["n"].as_u64().unwrap(), "{name}");
        assert_eq!(
            d.median_ci_exact,
            c["median_ci_exact"].as_bool().unwrap(),
            "{name}"
        );
        for (got, key) in [
            (d.median, "median"),
            (d.median_ci_low, "median_ci_low"),
            (d.median_ci_high, "median_ci_high"),
            (d.mean, "mean"),
            (d.min, "min"),
            (d.max, "max"),
            (d.q1, "q1"),
            (d.q3, "q3"),
            (d.p5, "p5"),
            (d.p95, "p95"),
        ] {
            close(got, f(&c[key]), 1e-12, 0.0, &format!("{name} {key}"));
        }
        for (got, key) in [(d.stddev, "stddev"), (d.cv, "cv"), (d.iqr, "iqr")] {
            close(got, f(&c[key]), REL, 1e-15, &format!("{name} {key}"));
        }
        let s = sorted_without_nan(&x);
        for (conf, want) in c["median_ci"].as_object().unwrap() {
            let conf: f64 = conf.parse().unwrap();
            let got = median_ci(&s, conf);
            match want {
                Value::Null => assert_eq!(got, None, "{name} median_ci({conf})"),
                w => {
                    let w = fs(w);
                    assert_eq!(got, Some((w[0], w[1])), "{name} median_ci({conf})");
                }
            }
        }
        match &c["relative_halfwidth"] {
            Value::Null => assert_eq!(relative_median_ci_halfwidth(&x), None, "{name}"),
            w => close(
                relative_median_ci_halfwidth(&x).unwrap(),
                f(w),
                1e-12,
                0.0,
                &format!("{name} relative halfwidth"),
            ),
        }
    }
}

#[test]
fn median_ci_ranks_match_scipy_binomial() {
    for c in load(include_str!("data/stats/median_ci_ranks.json")) {
        let n = c["n"].as_u64().unwrap() as usize;
        let conf = f(&c["confidence"]);
        let want = c["k"].as_u64().map(|k| k as usize);
        assert_eq!(median_ci_rank(n, conf), want, "n={n} confidence={conf}");
        if let Some(cov) = c["coverage"].as_f64() {
            assert!(cov >= conf, "coverage {cov} < {conf} for n={n}");
        }
    }
}

fn method(s: &str) -> MannWhitneyMethod {
    match s {
        "auto" => MannWhitneyMethod::Auto,
        "exact" => MannWhitneyMethod::Exact,
        "asymptotic" => MannWhitneyMethod::Asymptotic,
        _ => panic!("unknown method {s}"),
    }
}

#[test]
fn mann_whitney_matches_scipy_exact_and_asymptotic() {
    let mut regimes = std::collections::BTreeSet::new();
    for c in load(include_str!("data/stats/mann_whitney.json")) {
        let m = c["method"].as_str().unwrap();
        let what = format!("{} {m}", c["name"]);
        let (a, b) = (fs(&c["a"]), fs(&c["b"]));
        let r = mann_whitney_u_with(&a, &b, method(m)).unwrap();
        close(r.statistic, f(&c["statistic"]), 1e-12, 0.0, &what);
        close(r.p_value, f(&c["p_value"]), REL, 1e-15, &what);
        if m == "auto" {
            assert_eq!(mann_whitney_u(&a, &b), Some(r), "{what}");
        }
        regimes.insert(m.to_string());
    }
    assert_eq!(regimes.len(), 3);
}

#[test]
fn welch_matches_scipy() {
    for c in load(include_str!("data/stats/welch.json")) {
        let r = welch_t_test(&fs(&c["a"]), &fs(&c["b"])).unwrap();
        close(r.statistic, f(&c["statistic"]), REL, 0.0, "welch t");
        close(r.p_value, f(&c["p_value"]), REL, 1e-15, "welch p");
    }
}

#[test]
fn kruskal_matches_scipy() {
    for c in load(include_str!("data/stats/kruskal.json")) {
        let groups: Vec<Vec<f64>> = c["groups"].as_array().unwrap().iter().map(fs).collect();
        let refs: Vec<&[f64]> = groups.iter().map(|g| g.as_slice()).collect();
        let r = kruskal_wallis(&refs).unwrap();
        close(r.statistic, f(&c["statistic"]), REL, 1e-14, "kruskal H");
        close(r.p_value, f(&c["p_value"]), REL, 1e-15, "kruskal p");
    }
}

#[test]
fn holm_matches_statsmodels() {
    for c in load(include_str!("data/stats/holm.json")) {
        let got = holm(&fs(&c["p"]));
        for (g, w) in got.into_iter().zip(fs(&c["expected"])) {
            close(g, w, 1e-12, 0.0, "holm");
        }
    }
}

#[test]
fn min_runs_matches_scipy_exact_test() {
    for c in load(include_str!("data/stats/min_runs.json")) {
        let alpha = f(&c["alpha"]);
        let n = c["n"].as_u64().unwrap() as usize;
        assert_eq!(min_runs_for_significance(alpha), n, "alpha={alpha}");
    }
}

#[test]
fn tukey_outliers_match_numpy_fences() {
    for c in load(include_str!("data/stats/outliers.json")) {
        let o = tukey_outliers(&fs(&c["x"])).unwrap();
        close(o.q1, f(&c["q1"]), 1e-12, 0.0, "q1");
        close(o.q3, f(&c["q3"]), 1e-12, 0.0, "q3");
        close(o.iqr, f(&c["iqr"]), 1e-12, 1e-15, "iqr");
        let want: Vec<(usize, String)> = c["indices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p[0].as_u64().unwrap() as usize,
                    p[1].as_str().unwrap().into(),
                )
            })
            .collect();
        let got: Vec<(usize, String)> = o
            .indices
            .iter()
            .map(|(i, k)| (*i, format!("{k:?}")))
            .collect();
        assert_eq!(got, want);
        let count = |k: &str| want.iter().filter(|(_, s)| s == k).count();
        assert_eq!(o.low_severe, count("LowSevere"));
        assert_eq!(o.low_mild, count("LowMild"));
        assert_eq!(o.high_mild, count("HighMild"));
        assert_eq!(o.high_severe, count("HighSevere"));
        assert_eq!(o.total(), want.len());
    }
}

#[test]
fn mann_kendall_matches_pymannkendall() {
    for c in load(include_str!("data/stats/mann_kendall.json")) {
        let name = c["name"].as_str().unwrap();
        let t = mann_kendall(&fs(&c["x"])).unwrap();
        close(t.s, f(&c["s"]), 0.0, 0.0, name);
        close(t.var_s, f(&c["var_s"]), REL, 0.0, name);
        close(t.z, f(&c["z"]), REL, 1e-15, name);
        close(t.p_value, f(&c["p_value"]), REL, 1e-15, name);
        close(t.tau, f(&c["tau"]), REL, 1e-15, name);
        close(t.sen_slope, f(&c["sen_slope"]), REL, 1e-15, name);
        // Without ties, tau-a (pymannkendall's Tau) equals scipy's kendalltau (tau-b) vs index.
        let x = fs(&c["x"]);
        let mut s = x.clone();
        s.sort_by(f64::total_cmp);
        s.dedup();
        if s.len() == x.len() {
            close(t.tau, f(&c["scipy_kendalltau_b"]), REL, 1e-15, name);
        }
    }
}

#[test]
fn autocorrelation_matches_statsmodels() {
    for c in load(include_str!("data/stats/autocorr.json")) {
        let name = c["name"].as_str().unwrap();
        let a = lag1_autocorrelation(&fs(&c["x"])).unwrap();
        close(a.r1, f(&c["r1"]), REL, 1e-15, name);
        close(a.ljung_box_q, f(&c["ljung_box_q"]), REL, 1e-15, name);
        close(a.p_value, f(&c["p_value"]), REL, 1e-15, name);
    }
}

#[test]
fn kde_and_modes_match_scipy_gaussian_kde() {
    for c in load(include_str!("data/stats/kde.json")) {
        let name = c["name"].as_str().unwrap();
        let x = fs(&c["x"]);
        let h = silverman_bandwidth(&x).unwrap();
        close(h, f(&c["bandwidth"]), REL, 0.0, name);
        let grid = fs(&c["grid"]);
        let dens = gaussian_kde(&x, h, &grid).unwrap();
        for (g, w) in dens.iter().zip(fs(&c["density"])) {
            close(*g, w, 1e-8, 1e-12, name);
        }
        let m = modes(&x).unwrap();
        let want = fs(&c["modes"]);
        assert_eq!(
            m.modes.len(),
            want.len(),
            "{name}: {:?} vs {want:?}",
            m.modes
        );
        for (g, w) in m.modes.iter().zip(&want) {
            close(*g, *w, 1e-9, 1e-12, name);
        }
        assert_eq!(m.multimodal, want.len() > 1, "{name}");
        close(
            m.bimodality_coefficient.unwrap(),
            f(&c["bimodality_coefficient"]),
            1e-8,
            0.0,
            name,
        );
    }
}

/// scipy's bootstrap uses numpy's RNG, so resamples cannot match; the percentile interval must
/// agree within Monte Carlo error (20 000 scipy resamples, 20 000 here): each end within 5% of
/// scipy's interval width.
#[test]
fn bootstrap_agrees_with_scipy_percentile_and_bca_intervals() {
    for c in load(include_str!("data/stats/bootstrap.json")) {
        let paired = c["paired"].as_bool().unwrap();
        let method = match c["method"].as_str().unwrap() {
            "percentile" => BootstrapMethod::Percentile,
            "BCa" => BootstrapMethod::Bca,
            m => panic!("unknown method {m}"),
        };
        let (a, b) = (fs(&c["a"]), fs(&c["b"]));
        let r = bootstrap_ratio_of_medians_with(&a, &b, paired, 0.95, 20_000, 7, method).unwrap();
        close(r.estimate, f(&c["estimate"]), 1e-12, 0.0, "estimate");
        let acc = bca_acceleration(&a, &b, paired).unwrap();
        close(acc, f(&c["acceleration"]), 1e-8, 1e-11, "BCa acceleration");
        let (lo, hi) = (f(&c["low"]), f(&c["high"]));
        let width = hi - lo;
        let what = format!(
            "{method:?} paired={paired} n={}: got [{}, {}], scipy [{lo}, {hi}]",
            a.len(),
            r.low,
            r.high
        );
        eprintln!("{what}");
        assert!((r.low - lo).abs() < 0.05 * width, "{what}");
        assert!((r.high - hi).abs() < 0.05 * width, "{what}");
    }
}

#[test]
fn warmup_matches_textbook_mser5_and_scipy_mann_whitney() {
    for c in load(include_str!("data/stats/warmup.json")) {
        let name = c["name"].as_str().unwrap();
        let w = warmup_transient(&fs(&c["x"])).unwrap();
        let want = |k: &str| c[k].as_u64().unwrap() as usize;
        assert_eq!(w.mser_truncation, want("mser_truncation"), "{name}");
        assert_eq!(w.suggested_warmup, want("suggested_warmup"), "{name}");
        match c["p_value"].as_f64() {
            None => assert_eq!(w.p_value, None, "{name}"),
            Some(p) => close(w.p_value.unwrap(), p, REL, 1e-15, name),
        }
        match c["prefix_median"].as_f64() {
            None => assert_eq!(w.prefix_median, None, "{name}"),
            Some(m) => close(w.prefix_median.unwrap(), m, 1e-12, 0.0, name),
        }
        close(w.rest_median, f(&c["rest_median"]), 1e-12, 0.0, name);
    }
}
