//! `tare::stats::one_way_random_effects` against statsmodels/scipy reference values
//! (`scripts/variance_reference.py`, committed in `tests/data/stats/variance.json`).

use serde_json::Value;
use tare::stats::one_way_random_effects;

fn fs(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

#[track_caller]
fn close(got: f64, want: f64, rel: f64, what: &str) {
    assert!(
        (got - want).abs() <= rel * want.abs() + 1e-300,
        "{what}: got {got:e}, want {want:e}"
    );
}

#[test]
fn anova_matches_statsmodels_and_scipy() {
    let doc: Value =
        serde_json::from_str(include_str!("data/stats/variance.json")).expect("valid JSON");
    let cases = doc["cases"].as_array().expect("cases");
    assert!(cases.len() >= 5);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let groups: Vec<Vec<f64>> = c["groups"].as_array().unwrap().iter().map(fs).collect();
        let slices: Vec<&[f64]> = groups.iter().map(Vec::as_slice).collect();
        let v = one_way_random_effects(&slices).expect(name);
        let num = |k: &str| c[k].as_f64().unwrap();
        close(
            v.ss_between,
            num("ss_between"),
            1e-9,
            &format!("{name} ssb"),
        );
        close(v.ss_within, num("ss_within"), 1e-9, &format!("{name} ssw"));
        close(
            v.ms_between,
            num("ms_between"),
            1e-9,
            &format!("{name} msb"),
        );
        close(v.ms_within, num("ms_within"), 1e-9, &format!("{name} msw"));
        close(v.f, num("f"), 1e-9, &format!("{name} F"));
        close(v.p_value, num("p_value"), 1e-6, &format!("{name} p"));
        close(v.n0, num("n0"), 1e-12, &format!("{name} n0"));
        close(
            v.var_within,
            num("var_within"),
            1e-9,
            &format!("{name} var_within"),
        );
        close(
            v.var_between_raw,
            num("var_between_raw"),
            1e-9,
            &format!("{name} var_between"),
        );
        if let Some(reml) = c.get("reml_var_between").and_then(Value::as_f64) {
            // REML is a numerical optimum; equal to the ANOVA estimator for balanced data.
            close(v.var_between, reml, 1e-3, &format!("{name} REML between"));
            let w = c["reml_var_within"].as_f64().unwrap();
            close(v.var_within, w, 1e-3, &format!("{name} REML within"));
        }
    }
}

#[test]
fn comparison_over_setups_matches_scipy() {
    let doc: Value =
        serde_json::from_str(include_str!("data/stats/variance_compare.json")).expect("valid JSON");
    for c in doc["cases"].as_array().expect("cases") {
        let name = c["name"].as_str().unwrap();
        let ratios = fs(&c["ratios"]);
        let num = |k: &str| c[k].as_f64().unwrap();
        let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
        let t = tare::stats::one_sample_t(&logs, 0.0).expect(name);
        close(t.statistic, num("t"), 1e-9, &format!("{name} t"));
        close(t.p_value, num("p_value"), 1e-6, &format!("{name} p"));
        let iv = tare::stats::bootstrap_mean(&ratios, 0.95, 20_000, 3).expect(name);
        close(iv.estimate, num("mean"), 1e-12, &format!("{name} mean"));
        // Different random streams: the bounds agree within Monte Carlo error.
        let se = num("standard_error");
        for (got, want) in [(iv.low, num("ci_low")), (iv.high, num("ci_high"))] {
            assert!(
                (got - want).abs() <= 0.25 * se,
                "{name}: bound {got} vs scipy {want} (se {se})"
            );
        }
    }
    assert!(tare::stats::one_sample_t(&[1.0], 0.0).is_none());
    assert_eq!(
        tare::stats::one_sample_t(&[0.0, 0.0], 0.0).unwrap().p_value,
        1.0
    );
    assert!(tare::stats::bootstrap_mean(&[1.0], 0.95, 10, 1).is_none());
}
