//! Reading the reference files of ratio statistics (`tests/data/stats/*_ratio.json`, written
//! by `scripts/*_ratio_reference.py` with scipy): each case has `name`, `x` (old), `y` (new),
//! `confidence` and the values scipy gave (`ratio`, `low`, `high`, `p`, `df`).

use serde_json::Value;

/// One case: its name, old and new values, confidence, and the case itself.
pub struct Case {
    pub name: String,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub confidence: f64,
    pub want: Value,
}

/// The cases of a reference file's text; at least `least` of them.
pub fn cases(json: &str, least: usize) -> Vec<Case> {
    let v: Value = serde_json::from_str(json).unwrap();
    let fs = |x: &Value| -> Vec<f64> { serde_json::from_value(x.clone()).unwrap() };
    let cases: Vec<Case> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            name: c["name"].as_str().unwrap().to_string(),
            x: fs(&c["x"]),
            y: fs(&c["y"]),
            confidence: c["confidence"].as_f64().unwrap(),
            want: c.clone(),
        })
        .collect();
    assert!(cases.len() >= least, "{} cases", cases.len());
    cases
}

/// Every case of a ratio reference file (at least `least`) through `f`, its ratio, interval,
/// p-value and degrees of freedom equal to scipy's.
pub fn check_ratio(
    json: &str,
    least: usize,
    f: impl Fn(&[f64], &[f64], f64) -> Option<super::RatioTest>,
) {
    for c in cases(json, least) {
        let got = f(&c.x, &c.y, c.confidence).unwrap_or_else(|| panic!("{}: no ratio", c.name));
        c.assert_matches(&[
            ("ratio", got.ratio),
            ("low", got.low),
            ("high", got.high),
            ("p", got.p_value),
            ("df", got.df),
        ]);
    }
}

impl Case {
    /// Each `(field, got)` equals the case's field within 1e-9 relative.
    pub fn assert_matches(&self, got: &[(&str, f64)]) {
        for (what, g) in got {
            let w = self.want[*what].as_f64().unwrap();
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1e-12) + 1e-12,
                "{} {what}: {g} vs scipy {w}",
                self.name
            );
        }
    }
}
