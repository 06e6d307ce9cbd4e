//! `--cache cold,warm` for real: a 200 MB file read cold and warm in one interleaved session;
//! the cold reads are slower and the recorded resident bytes (mincore, taken just before each
//! run) show the two states. Cold needs root (drop_caches) or works per file (fadvise).

mod common;
use common::tare;

use serde_json::Value;

/// As root, cold is the whole machine's `drop_caches`: a test that drops would empty another's
/// warm files between its read and its count. The tests here take turns.
static PAGE_CACHE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    PAGE_CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn cold_reads_are_slower_and_residency_shows_the_state() {
    let _turn = turn();
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let f = dir.path().join("big");
    std::fs::write(&f, vec![3u8; 200 << 20]).unwrap();
    let j = dir.path().join("r.json");
    let out = tare()
        .args(["run", "--style", "basic", "--warmup", "0", "--runs", "3"])
        .args(["--cache", "cold,warm", "--cache-file"])
        .arg(&f)
        .arg("--export-json")
        .arg(&j)
        .arg(format!("cat {}", f.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("cache"), "{stdout}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let bench = |i: usize| doc["benchmarks"][i].clone();
    let (cold, warm) = (bench(0), bench(1));
    assert!(cold["name"].as_str().unwrap().ends_with("[cache=cold]"));
    assert!(warm["name"].as_str().unwrap().ends_with("[cache=warm]"));
    let size = (200u64 << 20) as f64;
    for r in cold["runs"].as_array().unwrap() {
        let res = r["cache"]["resident_bytes"].as_f64().unwrap();
        let file_bytes = r["cache"]["file_bytes"].as_f64().unwrap();
        assert!(file_bytes >= size, "{r}");
        assert!(
            res < 0.1 * size,
            "cold run started with {res} bytes resident"
        );
        assert_eq!(r["cache"]["state"], "cold");
    }
    for r in warm["runs"].as_array().unwrap() {
        let res = r["cache"]["resident_bytes"].as_f64().unwrap();
        assert!(
            res > 0.9 * size,
            "warm run started with {res} bytes resident"
        );
        assert_eq!(r["cache"]["how"], "read");
    }
    let med = |b: &Value| b["summary"]["wall_time"]["median"].as_f64().unwrap();
    eprintln!(
        "cold median {:.4} s, warm median {:.4} s, ratio {:.2}; how {}",
        med(&cold),
        med(&warm),
        med(&cold) / med(&warm),
        cold["runs"][0]["cache"]["how"]
    );
    assert!(
        med(&cold) > med(&warm),
        "cold {} warm {}",
        med(&cold),
        med(&warm)
    );
    // Interleaved and compared: the warm variant gets a verdict against the cold reference.
    assert!(!doc["comparisons"].as_array().unwrap().is_empty());
}

#[test]
fn unknown_cache_state_is_one_line() {
    let _turn = turn();
    let out = tare()
        .args(["run", "--cache", "tepid", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("tare: error: --cache: unknown state 'tepid'"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn per_file_drop_without_root_empties_the_named_file() {
    let _turn = turn();
    use tare::method::cache::{prepare_as, resident_bytes};
    use tare::plan::meters::{CachePlan, CacheState};
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let f = dir.path().join("d");
    std::fs::write(&f, vec![9u8; 32 << 20]).unwrap();
    let warm = CachePlan {
        state: CacheState::Warm,
        files: vec![f.clone()],
    };
    let w = prepare_as(&warm, false).unwrap();
    assert_eq!(w.file_bytes, 32 << 20);
    assert!(
        w.resident_bytes as f64 > 0.9 * (32u64 << 20) as f64,
        "{w:?}"
    );
    let cold = CachePlan {
        state: CacheState::Cold,
        ..warm
    };
    let c = prepare_as(&cold, false).unwrap();
    assert_eq!(c.how, "fadvise");
    eprintln!(
        "fadvise: {} of {} bytes resident after",
        c.resident_bytes, c.file_bytes
    );
    assert!(
        (c.resident_bytes as f64) < 0.1 * (32u64 << 20) as f64,
        "{c:?}"
    );
    assert_eq!(resident_bytes(&f).unwrap().0, c.resident_bytes);
}

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/fake_worker.py");

/// `tare kernels --cache cold,warm --background CMD`: the same factors as `tare run`'s, through
/// the same action and meter: each program measured at every level as a program of its own,
/// the cache state set before every sample (one sample a request, so the count of times it was
/// set is the invocation's sample count), its residency and the co-runner's reading in each
/// invocation's record.
#[test]
fn kernels_take_the_same_factors_per_sample_and_per_invocation() {
    let _turn = turn();
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let f = dir.path().join("data");
    std::fs::write(&f, vec![5u8; 4 << 20]).unwrap();
    let j = dir.path().join("k.json");
    let out = tare()
        .args(["kernels", FAKE, "--filter", "^spin$", "-r", "2"])
        .args(["--max-samples", "6", "--cache", "cold,warm", "--cache-file"])
        .arg(&f)
        .args(["--background", "sleep 30", "--background-lead", "10ms"])
        .arg("--export-json")
        .arg(&j)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let names: Vec<&str> = doc["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "spin/python [cache=cold] [background=off]",
            "spin/python [cache=cold] [background=on]",
            "spin/python [cache=warm] [background=off]",
            "spin/python [cache=warm] [background=on]"
        ]
    );
    let size = (4u64 << 20) as f64;
    for b in doc["benchmarks"].as_array().unwrap() {
        let name = b["name"].as_str().unwrap();
        let invocations = b["extra"]["invocations"].as_array().unwrap();
        assert_eq!(invocations.len(), 2, "{name}");
        for inv in invocations {
            let m = &inv["meters"];
            let resident = m["cache.resident_bytes"].as_f64().unwrap();
            assert!(
                m["cache.file_bytes"].as_f64().unwrap() >= size,
                "{name}: {m}"
            );
            if name.contains("cache=cold") {
                assert!(resident < 0.1 * size, "{name}: {m}");
            } else {
                assert!(resident >= size, "{name}: {m}");
            }
            // Set before each sample (6 measured, and the warm-ups).
            let set = m["cache.times_set"].as_f64().unwrap();
            assert!(set >= 6.0, "{name}: set {set} times: {m}");
            if name.contains("background=on") {
                assert_eq!(m["background.ran_throughout"], 1.0, "{name}: {m}");
            } else {
                assert!(m.get("background.ran_throughout").is_none(), "{name}: {m}");
            }
        }
    }
    // Pairs share a process: refused in one line.
    let out = tare()
        .args(["kernels", FAKE, "--baseline", "spin", "--cache", "cold"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--baseline") && err.lines().count() == 1,
        "{err}"
    );
}

/// `--cache-file` names a file: a FIFO (which would hold the warm read until a writer came) and
/// a character device (which could be read forever), both made in a temporary directory, are
/// refused in one line before any run; a symlink to a file is followed.
#[test]
fn cache_files_that_are_not_files_are_refused() {
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let fifo = dir.path().join("fifo");
    let dev = dir.path().join("zero");
    let file = dir.path().join("f");
    let link = dir.path().join("link");
    std::fs::write(&file, b"x").unwrap();
    std::os::unix::fs::symlink(&file, &link).unwrap();
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // The null device's numbers (1, 3) on a node of our own; root only, as CI runs.
    let made_dev = std::process::Command::new("mknod")
        .arg(&dev)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    let mut bad = vec![fifo];
    if made_dev {
        bad.push(dev);
    }
    let warm_with = |f: &std::path::Path| {
        tare()
            .args(["run", "--style", "none", "-r", "2", "--cache", "warm"])
            .arg("--cache-file")
            .arg(f)
            .arg("true")
            .output()
            .unwrap()
    };
    for f in bad {
        let out = warm_with(&f);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", f.display());
        assert!(
            err.contains("not a regular file") && err.trim_end().lines().count() == 1,
            "{err}"
        );
    }
    let out = warm_with(&link);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
