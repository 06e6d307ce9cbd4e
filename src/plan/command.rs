//! Commands as the user writes them: parameter substitution, word splitting without a shell,
//! and the expansion of parameter lists and scans into one benchmark per combination.

use std::collections::BTreeMap;

/// One parameter's values: `--parameter-list NAME a,b,c` or a numeric scan.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    pub name: String,
    pub values: Vec<String>,
}

/// Values of a numeric scan from `min` to `max` (inclusive) in steps of `step`.
/// Integers print without a decimal point; the number of decimals follows the step.
pub fn scan_values(name: &str, min: f64, max: f64, step: f64) -> Result<Vec<String>, String> {
    if !(min.is_finite() && max.is_finite() && step.is_finite()) || step <= 0.0 {
        return Err(format!(
            "invalid --parameter-scan {name}: bounds and step must be numbers, step > 0"
        ));
    }
    if max < min {
        return Err(format!(
            "invalid --parameter-scan {name}: MIN {min} is greater than MAX {max}"
        ));
    }
    let span = ((max - min) / step + 1e-9).floor();
    if !span.is_finite() || span >= 100_000.0 {
        return Err(format!(
            "--parameter-scan {name} would make more than 100000 benchmarks; use a larger --parameter-step"
        ));
    }
    let count = span as u64 + 1;
    if count > 100_000 {
        return Err(format!(
            "--parameter-scan {name} would make {count} benchmarks; use a larger --parameter-step"
        ));
    }
    let decimals = decimals_of(step).max(decimals_of(min));
    Ok((0..count)
        .map(|i| format!("{:.*}", decimals, min + i as f64 * step))
        .collect())
}

fn decimals_of(x: f64) -> usize {
    let s = format!("{x}");
    s.split_once('.').map_or(0, |(_, d)| d.len().min(9))
}

/// Parses `a,b,c` into values; empty values are refused.
pub fn list_values(name: &str, list: &str) -> Result<Vec<String>, String> {
    let values: Vec<String> = list.split(',').map(|v| v.to_string()).collect();
    if values.iter().any(|v| v.is_empty()) {
        return Err(format!(
            "invalid --parameter-list {name} '{list}': empty value (use a,b,c)"
        ));
    }
    Ok(values)
}

/// Checks a parameter name: letters, digits and underscores, not starting with a digit.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid parameter name '{name}': use letters, digits and _"
        ))
    }
}

/// The most benchmarks a cross product of parameters may make.
pub const MAX_COMBINATIONS: usize = 100_000;

/// Refuses a cross product of parameters larger than [`MAX_COMBINATIONS`] before it is built.
pub fn check_combinations(params: &[Parameter]) -> Result<(), String> {
    let n = params
        .iter()
        .fold(1usize, |n, p| n.saturating_mul(p.values.len()));
    if n > MAX_COMBINATIONS {
        return Err(format!(
            "the parameters make {} combinations (more than {MAX_COMBINATIONS}); give fewer values",
            if n == usize::MAX {
                "too many".to_string()
            } else {
                n.to_string()
            }
        ));
    }
    Ok(())
}

/// All combinations (cross product) of the parameters, in the order given; one empty
/// combination when there are no parameters.
pub fn combinations(params: &[Parameter]) -> Vec<BTreeMap<String, String>> {
    let mut out = vec![BTreeMap::new()];
    for p in params {
        let mut next = Vec::with_capacity(out.len() * p.values.len());
        for combo in &out {
            for v in &p.values {
                let mut c = combo.clone();
                c.insert(p.name.clone(), v.clone());
                next.push(c);
            }
        }
        out = next;
    }
    out
}

/// Replaces every `{NAME}` of a parameter in `template` with its value.
pub fn substitute(template: &str, values: &BTreeMap<String, String>) -> String {
    let mut s = template.to_string();
    for (k, v) in values {
        s = s.replace(&format!("{{{k}}}"), v);
    }
    s
}

/// Splits a command into words like a POSIX shell would (quotes, backslashes), without
/// starting one.
pub fn split_words(command: &str) -> Result<Vec<String>, String> {
    let words = shell_words::split(command)
        .map_err(|e| format!("cannot split command '{command}': {e}; check its quotes"))?;
    if words.is_empty() {
        return Err("empty command: give a program to run".to_string());
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_and_lists() {
        assert_eq!(scan_values("n", 1.0, 3.0, 1.0).unwrap(), ["1", "2", "3"]);
        assert_eq!(
            scan_values("x", 0.0, 0.5, 0.25).unwrap(),
            ["0.00", "0.25", "0.50"]
        );
        assert!(scan_values("x", 3.0, 1.0, 1.0).is_err());
        assert!(scan_values("x", 0.0, 1.0, 0.0).is_err());
        assert_eq!(list_values("a", "x,y").unwrap(), ["x", "y"]);
        assert!(list_values("a", "x,,y").is_err());
    }

    #[test]
    fn cross_product_and_substitution() {
        let ps = vec![
            Parameter {
                name: "a".into(),
                values: vec!["1".into(), "2".into()],
            },
            Parameter {
                name: "b".into(),
                values: vec!["x".into(), "y".into(), "z".into()],
            },
        ];
        let combos = combinations(&ps);
        assert_eq!(combos.len(), 6);
        assert_eq!(substitute("run {a} {b} {c}", &combos[5]), "run 2 z {c}");
    }

    #[test]
    fn word_splitting() {
        assert_eq!(
            split_words("echo 'a b' \"c\\\"d\"").unwrap(),
            ["echo", "a b", "c\"d"]
        );
        assert!(split_words("echo 'unterminated").is_err());
        assert!(split_words("   ").is_err());
        assert!(check_name("n1").is_ok());
        assert!(check_name("1n").is_err());
    }
}
