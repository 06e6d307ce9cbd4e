//! Importers: read what other harnesses wrote (hyperfine, Google Benchmark, JMH, `go test
//! -bench`, Criterion, pytest-benchmark, pyperf) into tare's [`Session`], so `tare compare`,
//! `tare report` and the store work on them. Not for: measuring, or writing other tools'
//! formats (see `export`).
//!
//! One module per format, its parser in the table [`IMPORTERS`] beside its harness's descriptor
//! (`crate::harness`: names, spellings, how the file is recognised, detection order).
//! Every raw sample the tool kept becomes a [`Run`]: `wall_time` is the time of ONE iteration
//! (operation) in seconds, so samples of different batch sizes compare; where the tool timed a
//! batch of iterations, `extra.loops` holds the batch size and `extra.elapsed` the batch's
//! seconds (`wall_time = elapsed / loops`). The tool's own summary is kept beside, converted to
//! seconds, in `Benchmark.extra["source_summary"]`; its name, version and settings, and every
//! part of the file that has no place in tare's model, in `Session.extra["import"]`.

mod criterion;
mod gbench;
mod gotest;
mod hyperfine;
mod jmh;
mod pyperf;
mod pytest_benchmark;

use super::model::{
    Benchmark, LimitsRecord, MachineInfo, MeasurementMethod, MethodKind, MetricSummary, Run,
    Session, Summary, PROCESS_KEY, PROCESS_LEVEL_KEY, SCHEMA_VERSION,
};
use crate::error::usage;
use crate::harness::{self, Descriptor};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// A format tare can import: an outside harness whose descriptor (`crate::harness`) says
/// how its file is recognised, and which this module has a parser for. Its name is the
/// harness's (on the command line and in `Session.extra["import"]["format"]`).
#[derive(Clone, Copy)]
pub struct Format(pub &'static Descriptor);

impl Format {
    /// The name used on the command line and in `Session.extra["import"]["format"]`.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// Every format, in the order auto-detection tries them.
    pub fn all() -> impl Iterator<Item = Format> {
        crate::harness::imported().map(Format)
    }

    /// `--format`'s values (each with its spellings and what it reads), for clap.
    pub fn parser() -> impl clap::builder::TypedValueParser<Value = Format> {
        use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
        PossibleValuesParser::new(Format::all().map(|f| {
            PossibleValue::new(f.name())
                .aliases(f.0.aliases.iter().copied())
                .help(f.0.import.as_ref().map_or("", |i| i.reads))
        }))
        .map(|s| s.parse::<Format>().expect("a value clap accepted"))
    }

    /// `NAME (WHAT IT READS), …`: the formats with the files they are, for help.
    pub fn list() -> String {
        crate::harness::list(crate::harness::imported(), |h| {
            h.import.as_ref().map_or("", |i| i.reads)
        })
    }

    fn detect(self, input: &Input) -> bool {
        self.0.import.as_ref().is_some_and(|i| (i.detect)(input))
    }

    fn parse(self, input: &Input) -> anyhow::Result<Imported> {
        let parse = IMPORTERS
            .iter()
            .find(|(h, _)| h.name == self.0.name)
            .map(|(_, p)| *p)
            .expect("every imported harness has a parser");
        parse(input)
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Format {}

impl std::hash::Hash for Format {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.name.hash(h)
    }
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Format({})", self.name())
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        crate::harness::find(s)
            .filter(|h| h.import.is_some())
            .map(Format)
            .ok_or_else(|| {
                format!(
                    "unknown import format '{s}' (known: {})",
                    Format::all()
                        .map(|f| f.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }
}

/// What an importer reads: the path and, for a file, its bytes (and its JSON, if it is JSON).
pub use crate::harness::Input;

/// A parser of one format into what it holds.
type Parse = fn(&Input) -> anyhow::Result<Imported>;

/// The parsers, each beside its harness's descriptor (which says how it is recognised); the
/// order of detection is `crate::harness::ALL`'s.
const IMPORTERS: &[(&Descriptor, Parse)] = &[
    (&harness::criterion::HARNESS, criterion::parse),
    (&harness::hyperfine::HARNESS, hyperfine::parse),
    (&harness::gbench::HARNESS, gbench::parse),
    (&harness::jmh::HARNESS, jmh::parse),
    (&harness::pytest_benchmark::HARNESS, pytest_benchmark::parse),
    (&harness::pyperf::HARNESS, pyperf::parse),
    (&harness::gotest::HARNESS, gotest::parse),
];

/// The format another harness's file is in, recognised by content (None: no importer knows
/// it). For messages of commands that read tare results and were given another tool's file.
pub fn recognise(bytes: &[u8]) -> Option<Format> {
    let json = serde_json::from_slice::<Value>(bytes).ok();
    let input = Input {
        path: Path::new(""),
        bytes: Some(bytes),
        json: json.as_ref(),
    };
    Format::all().find(|f| f.detect(&input))
}

/// What one importer read, before it becomes a [`Session`].
#[derive(Debug, Default)]
pub struct Imported {
    /// The tool's name as people know it ("hyperfine", "Google Benchmark", ...).
    pub tool: &'static str,
    /// The tool's version, when the file records it.
    pub tool_version: Option<String>,
    /// RFC 3339 time the tool started, when the file records it.
    pub started_at: Option<String>,
    /// The command that produced the file, when the file records it.
    pub invocation: Vec<String>,
    pub machine: MachineInfo,
    /// The tool's settings (repetitions, iteration time, timer, ...), as the tool names them.
    pub settings: Map<String, Value>,
    /// Other session-level records of the tool (a commit, a context), kept as they are.
    pub context: Map<String, Value>,
    pub benchmarks: Vec<Benchmark>,
    /// Parts of the file that have no place in tare's model, each in one line.
    pub not_mapped: Vec<String>,
    /// Whether the tool measured CPU time per iteration (Google Benchmark does).
    pub measures_cpu: bool,
    /// How the tool measured wall time, in words.
    pub wall_time: String,
}

/// Reads `path` (a file, or Criterion's directory) written by another harness. With `format`
/// None the format is recognised by content. Errors are one line naming the file and what is
/// wrong with it.
pub fn load(path: &Path, format: Option<Format>) -> anyhow::Result<Session> {
    let meta = std::fs::metadata(path).map_err(|e| {
        usage(format!(
            "cannot import {}: {e}; check the path",
            path.display()
        ))
    })?;
    let bytes = if meta.is_dir() {
        None
    } else {
        // Garbage is refused from its first block: a gzip header, a NUL byte, an array of
        // numbers, each said as for a whole file.
        let head_check = |head: &[u8]| {
            let why = match head {
                [0x1f, 0x8b, ..] => Some(
                    describe(&Input {
                        path,
                        bytes: Some(head),
                        json: None,
                    })
                    .to_string(),
                ),
                _ => crate::results::input::json_document_head(head)
                    .or_else(|| crate::results::input::binary_head(head)),
            };
            match why {
                Some(why) => Err(usage(format!(
                    "cannot import {}: it is {why}",
                    path.display()
                ))),
                None => Ok(()),
            }
        };
        Some(
            crate::results::input::read_checked(path, "import", head_check).map_err(|e| {
                let m = format!("{e:#}");
                match m.split_once(crate::results::input::NOT_A_DOCUMENT) {
                    Some((_, why)) => usage(format!(
                        "cannot import {}: it is not a document tare reads: {why}",
                        path.display()
                    )),
                    None => e,
                }
            })?,
        )
    };
    let json = bytes
        .as_deref()
        .and_then(|b| serde_json::from_slice::<Value>(b).ok());
    let input = Input {
        path,
        bytes: bytes.as_deref(),
        json: json.as_ref(),
    };
    let format = match format {
        Some(f) => f,
        None => Format::all().find(|f| f.detect(&input)).ok_or_else(|| {
            usage(format!(
                "cannot import {}: {}",
                path.display(),
                unknown(&input)
            ))
        })?,
    };
    let imported = format.parse(&input).map_err(|e| {
        usage(format!(
            "cannot import {} as {}: {}",
            path.display(),
            format,
            one_line(&e)
        ))
    })?;
    check_times(&imported).map_err(|e| {
        usage(format!(
            "cannot import {} as {}: {e}",
            path.display(),
            format
        ))
    })?;
    if imported.benchmarks.is_empty() {
        return Err(usage(format!(
            "cannot import {} as {}: it holds no benchmark results",
            path.display(),
            format
        )));
    }
    Ok(session(path, meta.modified().ok(), format, imported))
}

/// The longest time per iteration tare accepts from another tool: a year. Longer (or not
/// finite) is a damaged file, and would overflow the summaries.
const MAX_SECONDS: f64 = 365.0 * 86400.0;

/// Every sample's times are finite, non-negative and at most [`MAX_SECONDS`].
fn check_times(im: &Imported) -> Result<(), String> {
    for b in &im.benchmarks {
        for r in &b.runs {
            for (what, v) in [("time", r.wall_time), ("CPU time", r.cpu_time)] {
                if !(v.is_finite() && (0.0..=MAX_SECONDS).contains(&v)) {
                    return Err(format!(
                        "sample {} of '{}' has a {what} per iteration of {v} s, which no measurement gives",
                        r.index, b.name
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    e.chain()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(": ")
        .replace('\n', " ")
}

/// What an unrecognised input is, and what to do.
fn unknown(input: &Input) -> String {
    if input
        .json
        .is_some_and(|v| v.get("schema_version").is_some() && v.get("tare_version").is_some())
    {
        return "it is tare's own results, which need no import: give it to `tare compare` or `tare report` as it is".into();
    }
    format!(
        "{} that no importer recognises; name the format with --format ({})",
        describe(input),
        Format::all()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// What an unrecognised input is, in a few words.
fn describe(input: &Input) -> &'static str {
    match (input.bytes, input.json) {
        (None, _) => "a directory without Criterion data (no */new/sample.json)",
        (Some([0x1f, 0x8b, ..]), _) => {
            "gzip-compressed data (decompress it first, e.g. with gunzip)"
        }
        (Some(b), _) if b.iter().all(|c| c.is_ascii_whitespace()) => "an empty file",
        (Some(_), Some(_)) => "JSON",
        (Some(_), None) if input.text().is_some() => "text",
        (Some(_), None) => "binary data",
    }
}

fn session(
    path: &Path,
    modified: Option<std::time::SystemTime>,
    format: Format,
    mut im: Imported,
) -> Session {
    let started_at = im.started_at.clone().unwrap_or_else(|| {
        im.not_mapped.push(
            "the start time is not in the file: started_at is the file's modification time".into(),
        );
        modified
            .map(|t| humantime::format_rfc3339_seconds(t).to_string())
            .unwrap_or_default()
    });
    // A sample of 0 s (below the tool's timer resolution) is kept but not counted: tare's
    // readers refuse counted runs of 0 s, which no measurement of a whole run gives.
    let mut zero = 0;
    for r in im.benchmarks.iter_mut().flat_map(|b| b.runs.iter_mut()) {
        if r.counted && r.wall_time == 0.0 {
            r.counted = false;
            r.extra.insert("zero_time".into(), json!(true));
            zero += 1;
        }
    }
    if zero > 0 {
        im.not_mapped.push(format!(
            "{zero} samples of 0 s (below the tool's timer resolution) are kept but not counted (extra.zero_time)"
        ));
    }
    for b in &mut im.benchmarks {
        b.summary = summarize(&b.runs, im.measures_cpu);
        if b.stop_reason.is_empty() {
            b.stop_reason = format!("imported from {}", im.tool);
        }
    }
    let version = im
        .tool_version
        .clone()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    let mut record = Map::new();
    record.insert("format".into(), json!(format.name()));
    record.insert("tool".into(), json!(im.tool));
    record.insert("tool_version".into(), json!(im.tool_version));
    record.insert("source".into(), json!(path.display().to_string()));
    record.insert("settings".into(), Value::Object(im.settings));
    if !im.context.is_empty() {
        record.insert("context".into(), Value::Object(im.context));
    }
    record.insert("not_mapped".into(), json!(im.not_mapped));
    let mut extra = BTreeMap::new();
    extra.insert("import".into(), Value::Object(record));
    Session {
        schema_version: SCHEMA_VERSION,
        tare_version: env!("CARGO_PKG_VERSION").into(),
        invocation: im.invocation,
        started_at,
        machine: im.machine,
        method: MeasurementMethod {
            kind: MethodKind::Imported,
            cpu_time: if im.measures_cpu {
                format!("CPU time per iteration as measured by {}{version}", im.tool)
            } else {
                format!("not measured by {} (recorded as 0)", im.tool)
            },
            peak_memory: format!("not measured by {}", im.tool),
            wall_time: im.wall_time,
            warnings: vec![format!(
                "imported from {}{version} ({}): measured by that tool, not by tare; what could not be mapped is listed in extra.import.not_mapped",
                im.tool,
                path.display()
            )],
        },
        cores: None,
        limits: LimitsRecord::default(),
        environment: BTreeMap::new(),
        seed: 0,
        benchmarks: im.benchmarks,
        comparisons: Vec::new(),
        complete: true,
        extra,
    }
}

/// Several imported sessions as one: benchmarks with the same name and parameters (more trials
/// of one benchmark) get all their runs, renumbered, each with `extra.source` (the index of
/// its file); `extra.import` becomes `{"sources": [each file's record]}`; the earliest start
/// and the first file's machine and method are kept.
pub fn merge(mut sessions: Vec<Session>) -> Option<Session> {
    if sessions.len() <= 1 {
        return sessions.pop();
    }
    let mut records = Vec::new();
    let mut warnings = Vec::new();
    let mut started: Vec<String> = Vec::new();
    let mut merged: Vec<Benchmark> = Vec::new();
    let mut rest = sessions.split_off(1);
    let mut out = sessions.pop()?;
    rest.insert(0, out.clone());
    for (k, s) in rest.into_iter().enumerate() {
        records.push(s.extra.get("import").cloned().unwrap_or(Value::Null));
        warnings.extend(s.method.warnings);
        started.push(s.started_at);
        for mut b in s.benchmarks {
            for r in &mut b.runs {
                r.extra.insert("source".into(), json!(k));
            }
            match merged
                .iter_mut()
                .find(|m| m.name == b.name && m.parameters == b.parameters)
            {
                Some(m) => {
                    let base = m.runs.len();
                    for mut r in b.runs {
                        r.index += base;
                        m.runs.push(r);
                    }
                }
                None => merged.push(b),
            }
        }
    }
    for b in &mut merged {
        // CPU time is summarized where the first file with this benchmark measured it.
        let cpu = b.summary.cpu_time.is_some();
        b.summary = summarize(&b.runs, cpu);
    }
    out.benchmarks = merged;
    out.started_at = started
        .into_iter()
        .filter(|s| !s.is_empty())
        .min()
        .unwrap_or_default();
    out.method.warnings = warnings;
    out.extra
        .insert("import".into(), json!({ "sources": records }));
    Some(out)
}

/// Summaries of the counted runs: wall time always, CPU time only where the tool measured it.
fn summarize(runs: &[Run], cpu: bool) -> Summary {
    let col =
        |f: fn(&Run) -> f64| -> Vec<f64> { runs.iter().filter(|r| r.counted).map(f).collect() };
    let metric = |v: Vec<f64>| crate::stats::describe(&v).map(MetricSummary::from);
    Summary {
        wall_time: metric(col(|r| r.wall_time)),
        cpu_time: if cpu {
            metric(col(|r| r.cpu_time))
        } else {
            None
        },
        peak_memory: metric(
            runs.iter()
                .filter(|r| r.counted)
                .filter_map(|r| r.peak_memory.map(|m| m as f64))
                .collect(),
        ),
        ..Summary::default()
    }
}

// ---- helpers shared by the importers ----

/// A new benchmark with no runs yet.
pub(crate) fn benchmark(name: impl Into<String>, command: impl Into<String>) -> Benchmark {
    Benchmark {
        name: name.into(),
        command: command.into(),
        argv: Vec::new(),
        parameters: BTreeMap::new(),
        summary: Summary::default(),
        stop_reason: String::new(),
        runs: Vec::new(),
        diagnostics: Vec::new(),
        extra: BTreeMap::new(),
    }
}

/// One sample: `per_iteration` seconds for one iteration; `loops` iterations timed together
/// (None when the tool does not say). Counted unless it is a warm-up.
pub(crate) fn sample(index: usize, per_iteration: f64, loops: Option<f64>, warmup: bool) -> Run {
    let mut extra = BTreeMap::new();
    if let Some(n) = loops {
        extra.insert("loops".into(), number(n));
        extra.insert("elapsed".into(), json!(per_iteration * n));
    }
    Run {
        warmup,
        counted: !warmup,
        extra,
        ..Run::sample(index, per_iteration, 0.0)
    }
}

/// Records what one process is in this format (`Benchmark.extra["process_level"]`), and for a
/// format that records no process (`recorded` false), puts every run in process 0 of its file.
pub(crate) fn process_level(b: &mut Benchmark, unit: &str, recorded: bool, note: &str) {
    let level = super::model::ProcessLevel {
        unit: unit.into(),
        recorded,
        note: note.into(),
    };
    if !recorded {
        for r in &mut b.runs {
            r.extra.insert(PROCESS_KEY.into(), json!(0));
        }
    }
    b.extra.insert(
        PROCESS_LEVEL_KEY.into(),
        serde_json::to_value(level).expect("a process level serializes"),
    );
}

/// The note of formats that record no process.
pub(crate) const ONE_PROCESS_PER_FILE: &str = "the format does not record which process took each sample: the whole file is taken as one process (give several files, one per process, to compare across processes)";

/// A JSON number, as an integer when it is one.
pub(crate) fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// Adds one named per-run metric (`extra.metrics.NAME = {value, unit}`).
pub(crate) fn add_metric(run: &mut Run, name: &str, value: f64, unit: &str) {
    let metrics = run
        .extra
        .entry("metrics".into())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = metrics {
        m.insert(name.into(), json!({"value": value, "unit": unit}));
    }
}

/// Seconds in one `unit` of time: ns, us (µs), ms, s, min, hr/h, day.
pub(crate) fn seconds_per(unit: &str) -> Option<f64> {
    Some(match unit.trim() {
        "ns" | "nanoseconds" => 1e-9,
        "us" | "µs" | "μs" | "microseconds" => 1e-6,
        "ms" | "milliseconds" => 1e-3,
        "s" | "sec" | "second" | "seconds" => 1.0,
        "min" | "m" | "minutes" => 60.0,
        "hr" | "h" | "hours" => 3600.0,
        "day" | "d" | "days" => 86400.0,
        _ => return None,
    })
}

/// A finite, non-negative number at `v[key]`, or an error naming `what`.
pub(crate) fn num(v: &Value, key: &str, what: &str) -> anyhow::Result<f64> {
    match v.get(key) {
        Some(x) => x
            .as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| anyhow::anyhow!("{what}: \"{key}\" is {x}, not a non-negative number")),
        None => anyhow::bail!("{what} has no \"{key}\""),
    }
}

/// A string at `v[key]`, or an error naming `what`.
pub(crate) fn string<'v>(v: &'v Value, key: &str, what: &str) -> anyhow::Result<&'v str> {
    match v.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(x) => anyhow::bail!("{what}: \"{key}\" is {}, not a string", short(x)),
        None => anyhow::bail!("{what} has no \"{key}\""),
    }
}

/// An array at `v[key]`, or an error naming `what`.
pub(crate) fn array<'v>(v: &'v Value, key: &str, what: &str) -> anyhow::Result<&'v [Value]> {
    match v.get(key) {
        Some(Value::Array(a)) => Ok(a),
        Some(x) => anyhow::bail!("{what}: \"{key}\" is {}, not an array", short(x)),
        None => anyhow::bail!("{what} has no \"{key}\""),
    }
}

/// A JSON value, cut to a few characters for an error message.
pub(crate) fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

/// The JSON value the importer must have, or an error saying what the file is instead.
pub(crate) fn json_of<'a>(input: &Input<'a>) -> anyhow::Result<&'a Value> {
    match input.json {
        Some(v) => Ok(v),
        None => match input.bytes {
            None => anyhow::bail!("it is a directory, not a JSON file"),
            Some(b) => match serde_json::from_slice::<Value>(b) {
                Ok(_) => unreachable!("parsed JSON is passed in"),
                Err(e) => anyhow::bail!("not JSON ({e})"),
            },
        },
    }
}

/// A scalar JSON value as a parameter string (strings without quotes).
pub(crate) fn param_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_by_name_and_alias() {
        for f in Format::all() {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
        }
        assert_eq!(
            "google-benchmark".parse::<Format>().unwrap(),
            Format(&harness::gbench::HARNESS)
        );
        assert_eq!(
            "benchfmt".parse::<Format>().unwrap(),
            Format(&harness::gotest::HARNESS)
        );
        let e = "csv".parse::<Format>().unwrap_err();
        assert!(
            e.contains("unknown import format 'csv'") && e.contains("pyperf"),
            "{e}"
        );
    }

    #[test]
    fn every_imported_harness_has_one_parser_in_detection_order() {
        let parsers: Vec<&str> = IMPORTERS.iter().map(|(h, _)| h.name).collect();
        let formats: Vec<&str> = Format::all().map(Format::name).collect();
        assert_eq!(parsers, formats);
    }

    #[test]
    fn time_units() {
        assert_eq!(seconds_per("ns"), Some(1e-9));
        assert_eq!(seconds_per("us"), Some(1e-6));
        assert_eq!(seconds_per("min"), Some(60.0));
        assert_eq!(seconds_per("furlong"), None);
    }
}
