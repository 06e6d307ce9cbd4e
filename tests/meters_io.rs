//! `--io` for real: bytes written and read at the block layer for the whole tree (a child doing
//! the work), the syscall-level counts, dirty data left behind, and the gap to independent
//! counts of the same work (the kernel's per-task counters read by the shell itself, and the
//! disk's own `/sys/block/*/stat`). Root and a cgroup v1 blkio hierarchy are needed for the
//! block-layer numbers; without them the tests say so and pass.

mod common;
#[path = "common/skip.rs"]
mod skip;
use common::{is_root, tare};

use serde_json::Value;
use std::path::Path;

const MB: f64 = 1e6;

/// The tests of this file run one at a time: a `--cache cold` run syncs the whole machine,
/// and a sync by another task writes back a run's dirty pages outside its group (measured: a
/// parallel drop_caches left 32 of the 50 MiB charged to the writer).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Root, a v1 blkio hierarchy and a temporary directory on a block device (not tmpfs).
fn usable() -> bool {
    let ok = is_root() && has_blkio() && disk_sectors_written(&std::env::temp_dir()).is_some();
    if !ok {
        skip::skip("root, a cgroup v1 blkio hierarchy and TMPDIR on a disk", "run the tests as root (sudo -E cargo test) on a cgroup v1 machine, TMPDIR on a block device");
    }
    ok
}

fn has_blkio() -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .map(|m| {
            m.lines().any(|l| {
                l.contains(" cgroup ")
                    && l.split(' ')
                        .nth(3)
                        .is_some_and(|o| o.split(',').any(|x| x == "blkio"))
            })
        })
        .unwrap_or(false)
}

fn run_json(args: &[&str], json: &Path) -> (Value, String) {
    let out = tare()
        .args(["run", "--style", "basic", "--warmup", "0"])
        .args(args)
        .arg("--export-json")
        .arg(json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "tare failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (v, stdout)
}

fn io_of(run: &Value, key: &str) -> f64 {
    run["io"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("run has no io.{key}: {run}"))
}

/// Sectors written of the disk holding `path`, from /sys/block/*/stat (field 7).
fn disk_sectors_written(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let want = format!("{maj}:{min}");
    for e in std::fs::read_dir("/sys/block").ok()?.flatten() {
        if std::fs::read_to_string(e.path().join("dev")).ok()?.trim() == want {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            return stat.split_whitespace().nth(6)?.parse().ok();
        }
    }
    None
}

#[test]
fn fifty_mb_fsynced_by_a_child_is_written_for_the_tree() {
    let _one = serial();
    if !usable() {
        return;
    }
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let f = dir.path().join("w");
    let j = dir.path().join("r.json");
    // `; true` keeps the shell from exec'ing dd: the writer is a child of the measured program.
    let cmd = format!(
        "sh -c 'dd if=/dev/zero of={} bs=1M count=50 conv=fsync 2>/dev/null; true'",
        f.display()
    );
    let md = dir.path().join("r.md");
    let html = dir.path().join("r.html");
    let (doc, stdout) = run_json(
        &[
            "--runs",
            "3",
            "--io",
            "--export-markdown",
            md.to_str().unwrap(),
            "--export-html",
            html.to_str().unwrap(),
            &cmd,
        ],
        &j,
    );
    assert!(stdout.contains("I/O"), "{stdout}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("| Disk written |") && md.contains("52.4"),
        "{md}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("meters") && page.contains("disk read"),
        "no I/O in the report"
    );
    for r in doc["benchmarks"][0]["runs"].as_array().unwrap() {
        let w = io_of(r, "block_write_bytes");
        assert!(
            (45.0 * MB..70.0 * MB).contains(&w),
            "block layer: {w} bytes written, expected ≈ 52.4 MB (50 MiB)"
        );
        assert_eq!(r["io"]["block_source"], "cgroup v1 blkio.throttle");
        let sw = io_of(r, "syscall_write_bytes");
        assert!((52_428_800.0..53.0 * MB).contains(&sw), "wchar {sw}");
        let st = io_of(r, "storage_write_bytes");
        assert!((52_428_800.0..53.0 * MB).contains(&st), "write_bytes {st}");
        eprintln!("tare: block write {w}, wchar {sw}, storage write_bytes {st}");
    }

    // Independent counts of the same work. (1) The shell reads its own /proc/$$/io after
    // reaping dd (the kernel adds a reaped child's counts to its parent). (2) The disk's
    // sectors written across the same command, machine-wide (other writers included).
    let before = disk_sectors_written(dir.path());
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "dd if=/dev/zero of={} bs=1M count=50 conv=fsync 2>/dev/null; cat /proc/$$/io",
            f.display()
        ))
        .output()
        .unwrap();
    let after = disk_sectors_written(dir.path());
    let text = String::from_utf8_lossy(&out.stdout);
    let own_write: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    assert!((52_428_800.0..53.0 * MB).contains(&own_write), "{text}");
    let tare_median = {
        let mut ws: Vec<f64> = doc["benchmarks"][0]["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| io_of(r, "block_write_bytes"))
            .collect();
        ws.sort_by(f64::total_cmp);
        ws[1]
    };
    if let (Some(b), Some(a)) = (before, after) {
        let disk = (a - b) as f64 * 512.0;
        eprintln!(
            "peer: shell's /proc/$$/io write_bytes {own_write}; /sys/block stat delta {disk} bytes \
             (machine-wide); tare block median {tare_median}; gap to the disk {:.1}%",
            (disk - tare_median) / tare_median * 100.0
        );
        // Machine-wide, so it can only be larger (other writers, the journal), not smaller by
        // much.
        assert!(
            disk > 0.9 * tare_median,
            "disk {disk} vs tare {tare_median}"
        );
    }
}

#[test]
fn dirty_data_left_behind_is_flagged() {
    let _one = serial();
    if !usable() {
        return;
    }
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let f = dir.path().join("w");
    let j = dir.path().join("r.json");
    let cmd = format!(
        "sh -c 'dd if=/dev/zero of={} bs=1M count=40 2>/dev/null; true'",
        f.display()
    );
    let (doc, stdout) = run_json(&["--runs", "1", "--io", &cmd], &j);
    let r = &doc["benchmarks"][0]["runs"][0];
    let dirty = io_of(r, "dirty_left_bytes");
    let written = io_of(r, "block_write_bytes");
    eprintln!("dirty left {dirty}, block written {written}");
    // The page cache took the 40 MiB; little or none of it reached the disk during the run.
    assert!(dirty > 20.0 * MB, "dirty left {dirty}");
    assert!(written < 30.0 * MB, "written {written}");
    assert!(stdout.contains("still dirty"), "{stdout}");
}

#[test]
fn cold_reads_come_from_the_disk_for_the_tree() {
    let _one = serial();
    if !usable() {
        return;
    }
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let f = dir.path().join("data");
    std::fs::write(&f, vec![1u8; 20 << 20]).unwrap();
    let j = dir.path().join("r.json");
    let csv = dir.path().join("r.csv");
    let cmd = format!("sh -c 'cat {} > /dev/null; true'", f.display());
    let out = tare()
        .args(["run", "--style", "none", "--warmup", "0", "--runs", "2"])
        .args(["--io", "--cache", "cold", "--cache-file"])
        .arg(&f)
        .arg("--export-json")
        .arg(&j)
        .arg("--export-csv")
        .arg(&csv)
        .arg(&cmd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    for r in doc["benchmarks"][0]["runs"].as_array().unwrap() {
        let rd = io_of(r, "block_read_bytes");
        // 20 MiB from the file, plus sh and cat themselves from a dropped cache.
        assert!((20.0 * MB..40.0 * MB).contains(&rd), "read {rd}");
        let sr = io_of(r, "syscall_read_bytes");
        assert!(sr >= 20.0 * 1048576.0, "rchar {sr}");
        eprintln!("cold read: block {rd}, rchar {sr}");
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    let header = text.lines().next().unwrap();
    assert!(header.contains("io_block_read_bytes") && header.contains("cache_resident_bytes"));
}

#[test]
fn without_meters_no_fields_and_no_columns() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let csv = dir.path().join("r.csv");
    let out = tare()
        .args(["run", "--style", "none", "--runs", "2", "--export-json"])
        .arg(&j)
        .arg("--export-csv")
        .arg(&csv)
        .arg("true")
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let run = doc["benchmarks"][0]["runs"][0].as_object().unwrap();
    for key in [
        "io",
        "cache",
        "ready_time",
        "background",
        "memory_timeline",
        "energy",
    ] {
        assert!(!run.contains_key(key), "{key} in {run:?}");
    }
    let header = std::fs::read_to_string(&csv).unwrap();
    assert!(!header.lines().next().unwrap().contains("io_"));
    // --ready and --isolate do not go together (the sign's pipe and port are outside).
    let bad = tare()
        .args(["run", "--isolate", "--ready", "notify", "true"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
