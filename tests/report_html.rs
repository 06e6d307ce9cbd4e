//! The HTML report, the SVG export and `tare report`, checked from the outside: the summary
//! table's numbers against the results file, every plot present with its id and class, user
//! strings escaped, no external URL, odd input handled, errors on bad files.
//!
//! Not for: how the page looks in a browser (see `tests/report_browser.rs`).

mod common;
use common::tare;
use std::path::{Path, PathBuf};
use tare::report::html::{self, Metric};
use tare::results::{
    Benchmark, LimitsRecord, MachineInfo, MeasurementMethod, MethodKind, MetricSummary, Run,
    Session, Summary, Termination,
};
use tare::units;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/results")
        .join(name)
}

fn load(name: &str) -> Session {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The inner HTML of the first element starting with `open` up to the matching `close`.
fn between<'a>(s: &'a str, open: &str, close: &str) -> &'a str {
    let a = s.find(open).unwrap_or_else(|| panic!("no {open}")) + open.len();
    let z = s[a..]
        .find(close)
        .unwrap_or_else(|| panic!("no {close} after {open}"))
        + a;
    &s[a..z]
}

/// Text content: tags removed, entities of the escaper decoded, whitespace trimmed.
fn text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
        .trim()
        .to_string()
}

/// Rows of a table body: per row, per cell, (data-v attribute, text).
fn rows(table: &str) -> Vec<Vec<(Option<String>, String)>> {
    let body = between(table, "<tbody>", "</tbody>");
    body.split("<tr>")
        .filter(|r| !r.trim().is_empty())
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|cell| {
                    let open_end = cell.find('>').unwrap();
                    let attrs = &cell[..open_end];
                    let v = attrs.find("data-v=\"").map(|i| {
                        let rest = &attrs[i + 8..];
                        rest[..rest.find('"').unwrap()].to_string()
                    });
                    let inner = &cell[open_end + 1..cell.rfind("</td>").unwrap()];
                    (v, text(inner))
                })
                .collect()
        })
        .collect()
}

fn headers(table: &str) -> Vec<String> {
    let head = between(table, "<thead>", "</thead>");
    head.split("<th")
        .skip(1)
        .map(|h| text(&format!("<th{h}")))
        .collect()
}

fn scale_of(unit: &str) -> f64 {
    match unit {
        "s" => 1.0,
        "ms" => 1e3,
        "µs" => 1e6,
        "ns" => 1e9,
        other => panic!("unexpected unit {other}"),
    }
}

/// A value as the table prints it: `units::format_scaled` without the unit and without a
/// leading zero before the decimal point.
fn as_printed(v: f64, unit: &str, resolution: Option<f64>) -> String {
    let s = units::format_scaled(v, scale_of(unit), unit, resolution);
    let s = s.strip_suffix(unit).unwrap().trim_end().to_string();
    match s.strip_prefix("0.") {
        Some(rest) => format!(".{rest}"),
        None => s,
    }
}

fn resolution(m: &MetricSummary) -> Option<f64> {
    let r = (m.median_ci_high - m.median_ci_low) / 2.0;
    (m.median_ci_exact && r > 0.0).then_some(r)
}

#[test]
fn summary_table_numbers_match_the_results_file() {
    for name in ["compare.json", "plain.json", "hashes.json"] {
        let s = load(name);
        let page = html::render_html(&[(name.to_string(), s.clone())]);
        let table = between(
            &page,
            r#"<table class="summary sortable" id="summary-0">"#,
            "</table>",
        );
        let heads = headers(table);
        assert_eq!(heads[2].trim_end_matches(" ⇅"), heads[2]);
        let unit = between(&heads[2], "median (", ")").to_string();
        assert_eq!(heads[3], format!("95% CI ({unit})"));
        let rs = rows(table);
        assert_eq!(rs.len(), s.benchmarks.len());
        for (b, row) in s.benchmarks.iter().zip(&rs) {
            let m = b.summary.wall_time.as_ref().unwrap();
            assert_eq!(row[1].1, b.name, "name cell");
            // Median: raw value for sorting, and the digits its CI supports.
            let raw: f64 = row[2].0.as_deref().unwrap().parse().unwrap();
            assert_eq!(raw, m.median);
            assert_eq!(
                row[2].1,
                as_printed(m.median, &unit, resolution(m)),
                "median of {}",
                b.name
            );
            // CI: low – high with the same digits.
            let want_ci = format!(
                "{}–{}",
                as_printed(m.median_ci_low, &unit, resolution(m)),
                as_printed(m.median_ci_high, &unit, resolution(m))
            );
            assert_eq!(row[3].1, want_ci, "CI of {}", b.name);
            // CV as a percentage.
            assert_eq!(format!("{}%", row[5].1), units::format_percent(m.cv));
            // Runs: counted runs first.
            let counted = b.runs.iter().filter(|r| r.counted).count();
            assert!(row[6].1.starts_with(&counted.to_string()), "{}", row[6].1);
            // Stop reason is shown.
            assert!(
                row.iter().any(|c| c.1 == b.stop_reason),
                "stop reason of {}",
                b.name
            );
        }
    }
}

#[test]
fn verdicts_and_diagnostics_are_shown() {
    let s = load("compare.json");
    let page = html::render_html(&[("compare.json".into(), s.clone())]);
    let table = between(&page, r#"id="summary-0">"#, "</table>");
    let rs = rows(table);
    let vs_col = headers(table)
        .iter()
        .position(|h| h == "vs reference")
        .unwrap();
    assert!(rs[0][vs_col].1.contains("reference"));
    for c in &s.comparisons {
        let cell = &rs[c.candidate][vs_col].1;
        assert!(cell.contains(&format!("{:.2}×", c.ratio)), "{cell}");
        let word = c.verdict.replace('-', " ");
        assert!(cell.contains(&word), "{cell} lacks {word}");
        assert!(text(&page).contains(&c.words));
    }
    for b in &s.benchmarks {
        for d in &b.diagnostics {
            assert!(text(&page).contains(&d.message), "{}", d.message);
            assert!(text(&page).contains(&d.suggestion));
            for k in d.evidence.as_object().unwrap().keys() {
                assert!(page.contains(k.as_str()), "evidence key {k}");
            }
        }
    }
    // Machine, method and stop rule.
    for needle in [
        s.machine.cpu_model.as_str(),
        s.machine.kernel.as_str(),
        s.method.cpu_time.as_str(),
        "cgroup v1",
        "stop rule",
    ] {
        assert!(text(&page).contains(needle), "{needle}");
    }
    assert!(text(&page).contains("runs >= 25 & ci(median) < 1% <demo>"));
    assert!(text(&page).contains(&s.seed.to_string()));
}

#[test]
fn every_plot_is_present_with_id_and_class() {
    let s = load("compare.json");
    let page = html::render_html(&[("compare.json".into(), s.clone())]);
    let mut expected: Vec<(String, &str)> = Vec::new();
    for i in 0..s.benchmarks.len() {
        for kind in ["hist", "box", "seq", "precision"] {
            expected.push((format!("f0-b{i}-{kind}"), kind));
        }
    }
    expected.push(("f0-b2-setups".into(), "setups"));
    expected.push(("f0-forest".into(), "forest"));
    expected.push(("f0-paired-0-1".into(), "paired"));
    expected.push(("f0-paired-0-2".into(), "paired"));
    for (id, kind) in &expected {
        let tag = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" class="plot plot-{kind}""#
        );
        assert!(page.contains(&tag), "missing {tag}");
    }
    assert_eq!(page.matches("<svg ").count(), expected.len());
    assert_eq!(page.matches("</svg>").count(), expected.len());
    // The run sequence of benchmark 0 draws the environment strips.
    let seq = between(&page, r#"id="f0-b0-seq""#, "</svg>");
    assert!(seq.contains("temperature before run"));
    assert!(seq.contains("CPU time of other processes"));
    assert!(seq.contains("CPU frequency before run (MHz)"));
    // Setups plot names its setups.
    let setups = between(&page, r#"id="f0-b2-setups""#, "</svg>");
    for k in 0..4 {
        assert!(setups.contains(&format!("setup {k}")));
    }
}

#[test]
fn user_strings_are_escaped() {
    let s = load("compare.json");
    let page = html::render_html(&[("a <b>&\"c\".json".into(), s)]);
    assert_eq!(
        page.matches("<script").count(),
        1,
        "only the report's own script"
    );
    assert!(!page.contains("<10ms>"));
    assert!(page.contains("sleep &lt;10ms&gt; &amp; &quot;co&quot;"));
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert!(page.contains("a &lt;b&gt;&amp;&quot;c&quot;.json"));
    assert!(!page.contains("<b>&"));
}

#[test]
fn the_report_references_no_external_url() {
    let page = html::render_html(&[
        ("compare.json".into(), load("compare.json")),
        ("plain.json".into(), load("plain.json")),
    ]);
    let cleaned = page.replace(r#"xmlns="http://www.w3.org/2000/svg""#, "");
    for bad in ["http://", "https://", "//cdn", "<link", "@import", "url("] {
        assert!(!cleaned.contains(bad), "found {bad}");
    }
    for attr in ["src=\"", "href=\""] {
        for (i, _) in page.match_indices(attr) {
            let v = &page[i + attr.len()..];
            let v = &v[..v.find('"').unwrap()];
            assert!(v.starts_with('#'), "{attr}{v}");
        }
    }
}

#[test]
fn several_files_are_compared_side_by_side() {
    let a = load("plain.json");
    let page = html::render_html(&[
        ("before.json".into(), a.clone()),
        ("after.json".into(), a.clone()),
    ]);
    let table = between(
        &page,
        r#"<table class="files sortable" id="files-table">"#,
        "</table>",
    );
    let heads = headers(table);
    assert!(
        heads.contains(&"before.json".to_string()) && heads.contains(&"after.json".to_string())
    );
    let rs = rows(table);
    assert_eq!(rs.len(), a.benchmarks.len());
    for row in &rs {
        assert_eq!(row.last().unwrap().1, "1.00×");
    }
    // Both sessions get their own section and plots.
    assert!(page.contains(r#"id="f1-b0-hist""#));
    // Different benchmarks: union of rows, blanks where a file lacks one.
    let page = html::render_html(&[("a".into(), a), ("b".into(), load("compare.json"))]);
    let table = between(&page, r#"id="files-table">"#, "</table>");
    assert_eq!(rows(table).len(), 5);
    assert!(table.contains("—"));
}

fn method() -> MeasurementMethod {
    MeasurementMethod {
        kind: MethodKind::Rusage,
        cpu_time: "rusage".into(),
        peak_memory: "maxrss".into(),
        wall_time: "monotonic".into(),
        warnings: vec!["no cgroup <here>".into()],
    }
}

fn run(index: usize, wall: f64, counted: bool) -> Run {
    Run {
        index,
        round: None,
        warmup: false,
        start_offset: 0.0,
        wall_time: wall,
        user_time: wall / 2.0,
        system_time: 0.0,
        cpu_time: wall / 2.0,
        peak_memory: None,
        exit_code: Some(if counted { 0 } else { 1 }),
        signal: None,
        termination: Termination::Exit,
        involuntary_context_switches: None,
        counted,
        extra: Default::default(),
        meters: Default::default(),
    }
}

fn bench(name: &str, runs: Vec<Run>, summary: Summary) -> Benchmark {
    Benchmark {
        name: name.into(),
        command: name.into(),
        argv: vec![name.into()],
        parameters: Default::default(),
        summary,
        stop_reason: String::new(),
        runs,
        diagnostics: vec![],
        extra: Default::default(),
    }
}

#[test]
fn odd_sessions_do_not_panic() {
    let one = MetricSummary {
        n: 1,
        median: 0.5,
        median_ci_low: 0.5,
        median_ci_high: 0.5,
        median_ci_exact: false,
        mean: 0.5,
        stddev: 0.0,
        cv: 0.0,
        min: 0.5,
        max: 0.5,
        q1: 0.5,
        q3: 0.5,
        iqr: 0.0,
        p5: 0.5,
        p95: 0.5,
    };
    let session = Session {
        schema_version: 1,
        tare_version: "0".into(),
        invocation: vec![],
        started_at: String::new(),
        machine: MachineInfo::default(),
        method: method(),
        cores: None,
        limits: LimitsRecord::default(),
        environment: Default::default(),
        seed: 0,
        benchmarks: vec![
            bench("no runs", vec![], Summary::default()),
            bench(
                "one run",
                vec![run(0, 0.5, true)],
                Summary {
                    wall_time: Some(one),
                    ..Summary::default()
                },
            ),
            bench(
                "failed only",
                vec![run(0, 0.1, false), run(1, f64::NAN, false)],
                Summary::default(),
            ),
            bench(
                "nan",
                vec![
                    run(0, f64::NAN, true),
                    run(1, f64::INFINITY, true),
                    run(2, 1.0, true),
                ],
                Summary::default(),
            ),
            bench(
                "equal",
                (0..10).map(|i| run(i, 0.25, true)).collect(),
                Summary::default(),
            ),
        ],
        comparisons: vec![],
        complete: false,
        extra: Default::default(),
    };
    let sessions = vec![("odd".to_string(), session)];
    for metric in [Metric::WallTime, Metric::CpuTime, Metric::PeakMemory] {
        let page = html::render_html_for(&sessions, &metric);
        assert!(page.ends_with("</html>"));
        assert!(page.contains("no counted runs"));
        let markup = &page[..page.find("<script>").unwrap()];
        if let Some(i) = markup.find("NaN") {
            panic!(
                "NaN leaked into the page: {}",
                &markup[i.saturating_sub(300)..i + 3]
            );
        }
        assert!(!page.contains("inf\""), "infinity leaked into an attribute");
    }
    let page = html::render_html(&sessions);
    assert!(page.contains("did not finish"));
    assert!(page.contains("rusage FALLBACK"));
    assert!(page.contains("no cgroup &lt;here&gt;"));
    assert!(page.contains("too few runs"));
    assert!(html::render_html(&[]).contains("No results"));
    let text = tare::report::text_plots::report(&sessions, false);
    assert!(text.contains("Benchmark 5: equal"));
}

#[test]
fn svg_files_are_standalone_and_uniquely_named() {
    let sessions = vec![("compare.json".to_string(), load("compare.json"))];
    let files = html::svg_files(&sessions, &Metric::WallTime);
    assert_eq!(
        files.len(),
        html::all_plots(&sessions, &Metric::WallTime).len()
    );
    let mut names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), files.len());
    assert!(
        names.contains(&"compare-1-sleep-10ms-co-hist.svg"),
        "{names:?}"
    );
    for (name, doc) in &files {
        assert!(name.ends_with(".svg") && !name.contains('/'));
        assert!(doc.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\""
        ));
        assert!(doc.trim_end().ends_with("</svg>"));
        assert_eq!(doc.matches("<svg").count(), 1);
    }
}

#[test]
fn cli_writes_html_svg_and_terminal_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let svgs = dir.path().join("svg");
    let st = tare()
        .args(["report", "--html"])
        .arg(&out)
        .arg("--export-svg")
        .arg(&svgs)
        .arg(fixture("compare.json"))
        .arg(fixture("plain.json"))
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(page.contains(r#"id="files-table""#));
    assert!(std::fs::read_dir(&svgs).unwrap().count() >= 20);

    let st = tare()
        .args(["report", "--terminal", "--style", "basic"])
        .arg(fixture("compare.json"))
        .output()
        .unwrap();
    assert!(st.status.success());
    let text = String::from_utf8(st.stdout).unwrap();
    assert!(text.contains("run sequence"));
    assert!(text.contains("histogram"));
    assert!(text.chars().any(|c| ('▁'..='█').contains(&c)));
    assert!(text.contains("1.24× slower") || text.contains("slower than"));
    assert!(!text.contains('\x1b'), "no color when piped");
}

#[test]
fn cli_errors_are_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"hello": 1}"#).unwrap();
    let missing = dir.path().join("missing.json");
    for (path, want) in [
        (&missing, "cannot read results file"),
        (&bad, "is not a tare results file"),
        (&other, "is not a tare results file"),
    ] {
        let st = tare().arg("report").arg(path).output().unwrap();
        assert_eq!(st.status.code(), Some(2));
        let err = String::from_utf8(st.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.contains(want) && err.contains(&path.display().to_string()),
            "{err}"
        );
        assert!(
            err.contains("tare run --export-json"),
            "says what to do: {err}"
        );
    }
}
