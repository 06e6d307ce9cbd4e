//! Criterion.rs's data directory (`target/criterion`, or `CRITERION_HOME`): per benchmark a
//! directory with `new/benchmark.json` (ids, throughput per iteration), `new/sample.json`
//! (each sample's iteration count `iters` and total time `times` in ns), `new/estimates.json`
//! and `new/tukey.json`; `base/` holds a saved baseline, `change/` the comparison with it.

use super::{Descriptor, Drive, Import, Input};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub const HARNESS: Descriptor = Descriptor {
    name: "criterion",
    aliases: &[],
    tool: "Criterion.rs",
    import: Some(Import {
        reads: "the target/criterion directory",
        detect,
    }),
    drive: Some(Drive {
        target: "a Criterion.rs bench target",
        args: "the bench executable",
        client: "tare-native-criterion",
        lang: "rust",
        python: false,
        bench: true,
    }),
};

/// Directories are searched this deep for `new/sample.json` (group/function/value/new).
pub const MAX_DEPTH: usize = 6;

/// A directory with a benchmark's directory at or below it, or a file of a benchmark's `new/`.
pub fn detect(input: &Input) -> bool {
    match input.bytes {
        None => !bench_dirs(input.path, MAX_DEPTH).is_empty(),
        Some(_) => bench_dir_of_file(input.path).is_some(),
    }
}

/// For a file inside `…/new/` (`benchmark.json`, `sample.json`, `estimates.json`,
/// `tukey.json`), the benchmark's directory.
pub fn bench_dir_of_file(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let parent = path.parent()?;
    let ok = matches!(name, BENCHMARK | SAMPLE | "estimates.json" | "tukey.json")
        && parent.file_name()? == "new"
        && parent.join(SAMPLE).is_file();
    ok.then(|| parent.parent().map(Path::to_path_buf))?
}

/// The raw samples' file in a benchmark's `new/`.
pub const SAMPLE: &str = "sample.json";
/// The ids and throughput's file in a benchmark's `new/`.
pub const BENCHMARK: &str = "benchmark.json";
/// `sample.json`'s arrays: each sample's iterations, and its total time (ns).
pub const ITERS: &str = "iters";
pub const TIMES: &str = "times";

/// Whether `dir` is a benchmark's directory: it has `new/sample.json`.
pub fn is_bench_dir(dir: &Path) -> bool {
    dir.join("new").join(SAMPLE).is_file()
}

/// Benchmark directories (those with `new/sample.json`) at or below `dir`, at most
/// `max_depth` levels down, sorted; `new`, `base`, `change` and `report` are not entered.
pub fn bench_dirs(dir: &Path, max_depth: usize) -> Vec<PathBuf> {
    fn walk(d: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        if is_bench_dir(d) {
            out.push(d.to_path_buf());
        }
        if depth == 0 {
            return;
        }
        let Ok(entries) = std::fs::read_dir(d) else {
            return;
        };
        let mut subs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .filter(|p| {
                !matches!(
                    p.file_name().and_then(|n| n.to_str()),
                    Some("new" | "base" | "change" | "report")
                )
            })
            .collect();
        subs.sort();
        for s in subs {
            walk(&s, depth - 1, out);
        }
    }
    let mut out = Vec::new();
    walk(dir, max_depth, &mut out);
    out
}

/// The bytes (`Bytes`, `BytesDecimal`) and items (`Elements`) per iteration that a
/// `benchmark.json`'s `throughput` declares.
pub fn throughput(benchmark: &Value) -> (Option<f64>, Option<f64>) {
    let per = |k: &str| benchmark["throughput"][k].as_f64();
    (
        per("Bytes").or_else(|| per("BytesDecimal")),
        per("Elements"),
    )
}
