//! `--background` for real: the thesis's read-under-write experiment. A reader with direct
//! I/O is measured alone and with a writer (direct I/O too) running beside it, interleaved;
//! the slowdown's paired bootstrap CI must exclude 1, and the writer must be gone afterwards.

mod common;
use common::{survivors, tare};

use serde_json::Value;

#[test]
fn a_background_writer_slows_a_reader_and_the_ci_excludes_one() {
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![5u8; 64 << 20]).unwrap();
    let sink = dir.path().join("bg-tare-writer-4471");
    let j = dir.path().join("r.json");
    let writer = format!(
        "while :; do dd if=/dev/zero of={} bs=1M count=100 oflag=direct 2>/dev/null; done",
        sink.display()
    );
    let reader = format!("dd if={} of=/dev/null bs=1M iflag=direct", data.display());
    // 20 rounds: with 10, a 2-core CI machine at load 15 gave 1.51× with CI 0.99–2.12. Other
    // load on the machine (a parallel build) can still drown the effect in one session
    // (1.71×, CI 0.96–2.12 at load 5): up to three sessions, the CI must exclude 1 in one.
    let session = || {
        let out = tare()
            .args(["run", "--style", "basic", "--warmup", "1", "--runs", "20"])
            .args(["--background", &writer, "--export-json"])
            .arg(&j)
            .arg(&reader)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
        assert!(doc["benchmarks"][0]["name"]
            .as_str()
            .unwrap()
            .ends_with("[background=off]"));
        for r in doc["benchmarks"][1]["runs"].as_array().unwrap() {
            assert_eq!(r["background"], true, "{r}");
        }
        for r in doc["benchmarks"][0]["runs"].as_array().unwrap() {
            assert_eq!(r["background"], false, "{r}");
        }
        let c = &doc["comparisons"][0];
        let (ratio, lo, hi) = (
            c["ratio"].as_f64().unwrap(),
            c["ratio_ci_low"].as_f64().unwrap(),
            c["ratio_ci_high"].as_f64().unwrap(),
        );
        eprintln!(
            "read under write: slowdown {ratio:.2}× (95% CI {lo:.2}–{hi:.2}), paired {}",
            c["paired"]
        );
        assert_eq!(c["paired"], true);
        (lo, hi, stdout)
    };
    let mut last = session();
    for _ in 0..2 {
        if last.0 > 1.0 {
            break;
        }
        last = session();
    }
    let (lo, hi, stdout) = last;
    assert!(
        lo > 1.0,
        "slowdown CI {lo}–{hi} does not exclude 1 in three sessions\n{stdout}"
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(survivors("bg-tare-writer-4471").is_empty());
}

/// The `off` level waits the same lead with no co-runner: both levels' runs start after the
/// same pause, so they differ by the co-runner alone (a pause alone made runs 1.3–1.6× slower
/// under load in an A/A). Four runs of 0.4 s leads take 1.6 s at least; without the off side's
/// pause, 0.8 s.
#[test]
fn the_off_level_waits_the_same_lead() {
    let t = std::time::Instant::now();
    let out = tare()
        .args(["run", "--style", "none", "--warmup", "0", "--runs", "2"])
        .args(["--background", "true", "--background-lead", "400ms", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let took = t.elapsed().as_secs_f64();
    assert!(
        took >= 1.6,
        "4 runs with a 0.4 s lead each took {took:.2} s"
    );
}
