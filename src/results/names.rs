//! Benchmark names that tell benchmarks apart (`true`, `true (2)`): what `tare run` gives two
//! identical commands and what the store keeps two benchmarks of one name in one session as.
//!
//! For: naming. Not for: parsing commands (`plan::command`) or storing (`store::ingest`).

use std::collections::BTreeMap;

/// Names that tell benchmarks apart: the second benchmark of a name (and parameters) is
/// `NAME (2)`, the third `NAME (3)`, … — the first number whose name no other benchmark has —
/// as hyperfine's JSON keeps two runs of one command. `items` are each benchmark's name and
/// parameters; a name already apart is kept.
pub fn names_apart(items: &[(&str, &BTreeMap<String, String>)]) -> Vec<String> {
    let mut taken: std::collections::HashSet<(String, &BTreeMap<String, String>)> =
        items.iter().map(|(n, p)| (n.to_string(), *p)).collect();
    let mut seen: std::collections::HashSet<(String, &BTreeMap<String, String>)> =
        Default::default();
    let mut out = Vec::with_capacity(items.len());
    for &(name, params) in items {
        if seen.insert((name.to_string(), params)) {
            out.push(name.to_string());
            continue;
        }
        let fresh = (2..)
            .map(|k| format!("{name} ({k})"))
            .find(|n| !taken.contains(&(n.clone(), params)))
            .unwrap_or_default();
        taken.insert((fresh.clone(), params));
        seen.insert((fresh.clone(), params));
        out.push(fresh);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_apart_number_the_repeats() {
        let none = BTreeMap::new();
        let mut one = BTreeMap::new();
        one.insert("n".to_string(), "1".to_string());
        let items = [
            ("true", &none),
            ("true", &none),
            ("true (2)", &none),
            ("true", &none),
            ("true", &one),
            ("false", &none),
        ];
        assert_eq!(
            names_apart(&items),
            ["true", "true (3)", "true (2)", "true (4)", "true", "false"]
        );
    }
}
