//! Property tests of every parser of user input (issue 12): durations, sizes, percentages,
//! stop rules, parameter lists and scans, command words, CPU lists, setup factors and ranges,
//! perf events, suite TOML and names, results JSON, suite records and journals. For any input
//! they return a value or a one-line error — never a panic, a hang or a value outside what
//! tare accepts. `scripts/fuzz.sh` runs them for a fixed time with many more cases.
//!
//! The nasty inputs found by hand live in `tests/data/nasty/` and are replayed end to end by
//! `tests/robust_inputs.rs`; here they seed the generators.

use proptest::prelude::*;
use std::path::Path;
use tare::plan::{command, stop};
use tare::results::{journal, read, Session};
use tare::units::{self, MAX_BYTES, MAX_DURATION};

/// Strings that look like what users type for numbers, with units and junk around them.
fn numberish() -> impl Strategy<Value = String> {
    let num = prop_oneof![
        any::<f64>().prop_map(|f| f.to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<u64>().prop_map(|i| i.to_string()),
        (any::<f64>(), -400i32..400).prop_map(|(m, e)| format!("{m}e{e}")),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("1e30".to_string()),
        Just("-0".to_string()),
        Just(String::new()),
    ];
    let unit = prop_oneof![
        Just(""),
        Just("s"),
        Just("ms"),
        Just("us"),
        Just("ns"),
        Just("m"),
        Just("h"),
        Just("d"),
        Just("y"),
        Just("years"),
        Just("%"),
        Just("B"),
        Just("kB"),
        Just("MiB"),
        Just("GB"),
        Just("TiB"),
        Just("°C"),
        Just(":"),
        Just(" "),
    ];
    (num, unit, num_tail()).prop_map(|(n, u, t)| format!("{n}{u}{t}"))
}

fn num_tail() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just(String::new()),
        1 => any::<u32>().prop_map(|n| format!("{n}s")),
        1 => "\\PC{0,8}",
    ]
}

/// Anything at all, including control characters and invalid-looking Unicode.
fn junk() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,40}",
        ".{0,40}",
        proptest::collection::vec(any::<char>(), 0..40).prop_map(|v| v.into_iter().collect()),
    ]
}

fn stop_word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("runs".to_string()),
        Just("time".to_string()),
        Just("ci(median)".to_string()),
        Just("ci(ratio)".to_string()),
        Just("cv".to_string()),
        any::<i64>().prop_map(|n| format!("cv({n})")),
        Just("and".to_string()),
        Just("or".to_string()),
        Just("not".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("<".to_string()),
        Just("<=".to_string()),
        Just(">".to_string()),
        Just(">=".to_string()),
        Just("==".to_string()),
        numberish(),
    ]
}

fn session() -> Session {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nasty/session.json"),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A journal of `session`: header line, then one line per run (as `tare run` writes it).
fn journal_lines(s: &Session) -> Vec<Vec<u8>> {
    let mut header = serde_json::to_value(s).unwrap();
    for b in header["benchmarks"].as_array_mut().unwrap() {
        b["runs"] = serde_json::json!([]);
    }
    header["type"] = "session".into();
    let mut lines = vec![serde_json::to_vec(&header).unwrap()];
    for (i, b) in s.benchmarks.iter().enumerate() {
        for r in &b.runs {
            lines.push(
                serde_json::to_vec(&serde_json::json!({"type": "run", "benchmark": i, "run": r}))
                    .unwrap(),
            );
        }
    }
    lines
}

fn total_runs(s: &Session) -> usize {
    s.benchmarks.iter().map(|b| b.runs.len()).sum()
}

proptest! {
    #![proptest_config(ProptestConfig {
        // scripts/fuzz.sh raises this through PROPTEST_CASES.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn durations_are_positive_and_bounded(s in prop_oneof![numberish(), junk()]) {
        if let Ok(d) = units::parse_duration(&s) {
            prop_assert!(!d.is_zero() && d <= MAX_DURATION, "{s:?} → {d:?}");
        } else if let Err(e) = units::parse_duration(&s) {
            prop_assert!(!e.contains('\n') || s.contains('\n'), "{e}");
        }
    }

    #[test]
    fn durations_of_plain_seconds_round_trip(secs in 1e-6f64..8.0e6) {
        let d = units::parse_duration(&secs.to_string()).unwrap();
        prop_assert!((d.as_secs_f64() - secs).abs() <= 1e-9 * secs.max(1.0));
    }

    #[test]
    fn sizes_are_at_least_a_byte_and_bounded(s in prop_oneof![numberish(), junk()]) {
        match units::parse_bytes(&s) {
            Ok(b) => prop_assert!((1..=MAX_BYTES).contains(&b), "{s:?} → {b}"),
            Err(e) => prop_assert!(!e.contains('\n') || s.contains('\n'), "{e}"),
        }
    }

    #[test]
    fn fractions_are_between_0_and_1(s in prop_oneof![numberish(), junk()]) {
        if let Ok(v) = units::parse_fraction(&s) {
            prop_assert!(v > 0.0 && v < 1.0, "{s:?} → {v}");
        }
    }

    #[test]
    fn stop_rules_parse_or_refuse_and_print_back(words in proptest::collection::vec(stop_word(), 0..24)) {
        let text = words.join(" ");
        if let Ok(rule) = stop::parse(&text) {
            let printed = rule.to_string();
            let again = stop::parse(&printed);
            prop_assert!(again.is_ok(), "{text:?} printed as {printed:?} does not parse: {again:?}");
            prop_assert_eq!(again.unwrap().to_string(), printed);
        }
    }

    #[test]
    fn stop_rules_of_junk_never_panic(s in junk()) {
        let _ = stop::parse(&s);
    }

    #[test]
    fn deeply_nested_stop_rules_are_refused_not_a_stack_overflow(n in 0usize..2_000, not in any::<bool>()) {
        let text = if not {
            format!("{}runs >= 1", "not ".repeat(n))
        } else {
            format!("{}runs >= 1{}", "(".repeat(n), ")".repeat(n))
        };
        let r = stop::parse(&text);
        prop_assert_eq!(r.is_ok(), n <= 32, "{} levels", n);
    }

    #[test]
    fn long_stop_rules_are_refused_or_evaluable(n in 1usize..600) {
        let text = vec!["runs >= 1"; n].join(" and ");
        if let Ok(rule) = stop::parse(&text) {
            let _ = rule.to_string();
        }
    }

    #[test]
    fn parameter_scans_are_bounded(min in any::<f64>(), max in any::<f64>(), step in any::<f64>()) {
        if let Ok(v) = command::scan_values("x", min, max, step) {
            prop_assert!(!v.is_empty() && v.len() <= command::MAX_COMBINATIONS);
        }
    }

    #[test]
    fn parameter_lists_and_names_never_panic(name in junk(), list in junk()) {
        let _ = command::check_name(&name);
        if let Ok(v) = command::list_values(&name, &list) {
            prop_assert!(v.iter().all(|x| !x.is_empty()));
        }
    }

    #[test]
    fn cross_products_are_bounded(sizes in proptest::collection::vec(0usize..2_000, 0..6)) {
        let params: Vec<command::Parameter> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| command::Parameter { name: format!("p{i}"), values: vec!["v".into(); n] })
            .collect();
        let n: u128 = sizes.iter().map(|&s| s as u128).product();
        prop_assert_eq!(command::check_combinations(&params).is_ok(), n <= command::MAX_COMBINATIONS as u128);
    }

    #[test]
    fn command_words_never_panic(s in junk()) {
        let _ = command::split_words(&s);
    }

    #[test]
    fn cpu_lists_are_bounded(s in prop_oneof![junk(), "[0-9,: /-]{0,30}"]) {
        if let Ok(v) = tare::machine::topology::parse_cpu_list(&s) {
            prop_assert!(v.len() <= 64 * (1 << 20));
        }
    }

    #[test]
    fn setup_factors_ranges_and_events_never_panic(s in prop_oneof![junk(), numberish()]) {
        let _ = tare::setup::Factor::parse_list(&s);
        let _ = tare::setup::Range::parse(&s);
        let _ = tare::method::counters::parse_events(&s);
        let _ = tare::method::counters::parse_perf_csv(&s);
    }

    #[test]
    fn suite_names_never_escape_the_results_directory(name in prop_oneof![junk(), "[./a]{0,6}"]) {
        if tare::suite::def::check_name("suite", &name).is_ok() {
            let p = Path::new("results").join(&name);
            prop_assert!(p.parent() == Some(Path::new("results")), "{name:?}");
            prop_assert!(!name.contains(".."));
        }
    }

    #[test]
    fn suite_files_parse_or_refuse_in_one_line(
        field in prop_oneof![
            Just("name"), Just("repetitions"), Just("[limits]\nwall"), Just("[limits]\ncpu"),
            Just("[limits]\nmemory"), Just("[resources]\ncores"), Just("[limits]\npids")
        ],
        value in prop_oneof![
            numberish().prop_map(|v| format!("{v:?}")),
            any::<i64>().prop_map(|v| v.to_string()),
            any::<f64>().prop_map(|v| format!("{v:?}")),
            junk().prop_map(|v| format!("{v:?}")),
        ],
    ) {
        let text = format!(
            "{field} = {value}\n[[tool]]\nname = \"t\"\ncommand = \"true {{input}}\"\n[[inputs]]\nname = \"i\"\nfiles = [\"*.txt\"]\n"
        );
        if let Err(e) = tare::suite::def::parse(&text, Path::new("s.toml")) {
            // One line, unless it quotes a value that has a line break (tare prints errors
            // with line breaks turned into spaces).
            prop_assert!(!format!("{e:#}").contains('\n') || value.contains("\\n"), "{e:#}");
        }
    }

    #[test]
    fn suite_toml_junk_never_panics(s in junk()) {
        let _ = tare::suite::def::parse(&s, Path::new("s.toml"));
    }

    #[test]
    fn results_json_is_refused_when_impossible(
        field in prop_oneof![Just("wall_time"), Just("cpu_time"), Just("user_time"), Just("system_time")],
        value in any::<f64>(),
        version in any::<u32>(),
    ) {
        let mut v = serde_json::to_value(session()).unwrap();
        v["schema_version"] = version.into();
        v["benchmarks"][0]["runs"][1][field] = serde_json::json!(value);
        // JSON has no NaN or infinity: serde_json writes null, which does not parse as a time.
        if let Ok(s) = serde_json::from_value::<Session>(v) {
            let ok = read::check_session(&s).is_ok();
            let sane = version == 1 && value.is_finite() && value >= 0.0
                && !(field == "wall_time" && value == 0.0);
            prop_assert_eq!(ok, sane);
        }
    }

    #[test]
    fn what_a_file_is_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = read::what_is(&bytes);
    }

    #[test]
    fn journals_keep_every_valid_run(
        damage in proptest::collection::vec((any::<proptest::sample::Index>(), 0u8..4, any::<u8>()), 0..6),
    ) {
        let s = session();
        let lines = journal_lines(&s);
        let mut out: Vec<Vec<u8>> = lines.clone();
        let mut damaged = std::collections::BTreeSet::new();
        for (at, kind, byte) in &damage {
            let i = at.index(out.len());
            match kind {
                // Invalid bytes in the middle of a line.
                0 => {
                    let l = &mut out[i];
                    let p = l.len() / 2;
                    l.splice(p..p, [0xff, 0xfe, *byte | 0x80]);
                    damaged.insert(i);
                }
                // A torn line (cut short).
                1 => {
                    let l = &mut out[i];
                    l.truncate(l.len() / 2);
                    damaged.insert(i);
                }
                // A duplicated line.
                2 => {
                    let l = out[i].clone();
                    out.insert(i + 1, l);
                    damaged = damaged.into_iter().map(|d| if d > i { d + 1 } else { d }).collect();
                }
                // An empty line.
                _ => {
                    out.insert(i, Vec::new());
                    damaged = damaged.into_iter().map(|d| if d >= i { d + 1 } else { d }).collect();
                }
            }
        }
        let bytes = out.join(&b'\n');
        match journal::recover_bytes(&bytes, "j") {
            Ok(r) => {
                let n = total_runs(&r.session);
                prop_assert!(n <= total_runs(&s), "{n} runs from {}", total_runs(&s));
                // Every run whose line survived intact is kept.
                let intact: std::collections::HashSet<&Vec<u8>> = out
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !damaged.contains(i))
                    .map(|(_, l)| l)
                    .collect();
                let expected = lines[1..].iter().filter(|l| intact.contains(l)).count();
                prop_assert_eq!(n, expected);
            }
            Err(_) => {
                // Only when no intact header is left.
                prop_assert!(!out.contains(&lines[0]));
            }
        }
    }

    #[test]
    fn journal_junk_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = journal::recover_bytes(&bytes, "j");
    }

    #[test]
    fn suite_records_of_junk_are_bad_lines_not_errors(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("results.jsonl");
        std::fs::write(&p, &bytes).unwrap();
        let r = tare::suite::record::for_each(&p, |_| {});
        prop_assert!(r.is_ok(), "{r:?}");
    }
}
