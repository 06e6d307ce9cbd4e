//! Energy on synthetic powercap trees (this machine has no RAPL): the tree is shaped like the
//! kernel's intel_rapl driver's (`/sys/class/powercap/intel-rapl:N[:M]/{name, energy_uj,
//! max_energy_range_uj}`, CPUs' `topology/physical_package_id`). Domains found, wrap-around,
//! idle power and dynamic energy, attribution — through the library and end to end through
//! `tare run` with `TARE_SYSROOT`, the measured command moving the counters itself.

mod common;
use common::tare;

use serde_json::Value;
use std::path::Path;
use tare::machine::energy::{delta_uj, EnergyMeter};
use tare::machine::sysfs::SysRoot;

const MAX: u64 = 262_143_328_850;

fn write(root: &Path, rel: &str, v: &str) {
    let p = root.join(rel.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{v}\n")).unwrap();
}

/// One package of 4 CPUs with core and dram subzones, and psys.
fn tree(root: &Path, package_uj: u64) {
    let z = "/sys/class/powercap";
    write(root, &format!("{z}/intel-rapl/enabled"), "1");
    for (zone, name, e) in [
        ("intel-rapl:0", "package-0", package_uj),
        ("intel-rapl:0:0", "core", 1_000_000),
        ("intel-rapl:0:1", "dram", 2_000_000),
        ("intel-rapl:1", "psys", 3_000_000),
    ] {
        write(root, &format!("{z}/{zone}/name"), name);
        write(root, &format!("{z}/{zone}/energy_uj"), &e.to_string());
        write(
            root,
            &format!("{z}/{zone}/max_energy_range_uj"),
            &MAX.to_string(),
        );
    }
    for cpu in 0..4 {
        write(
            root,
            &format!("/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"),
            "0",
        );
    }
    write(root, "/sys/devices/system/cpu/online", "0-3");
}

#[test]
fn domains_wrap_idle_and_attribution() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), MAX - 1_000_000);
    let mut m = EnergyMeter::discover(&SysRoot::new(dir.path())).expect("domains");
    let names: Vec<(&str, Option<usize>)> = m
        .domains
        .iter()
        .map(|d| (d.name.as_str(), d.package))
        .collect();
    assert_eq!(
        names,
        vec![
            ("package-0", Some(0)),
            ("core", Some(0)),
            ("dram", Some(0)),
            ("psys", None)
        ]
    );
    // Idle: 2 W on the package for 1 s.
    let idle_before = vec![Some(0), Some(0), Some(0), Some(0)];
    let idle_after = vec![Some(2_000_000), Some(500_000), Some(0), Some(4_000_000)];
    m.set_idle(&idle_before, &idle_after, 1.0);
    assert_eq!(m.idle_watts[0], Some(2.0));
    // A 0.5 s run during which the package counter wrapped: 1 J to the top, then 3 J.
    let before = m.read();
    assert_eq!(before[0], Some(MAX - 1_000_000));
    let mut after = before.clone();
    after[0] = Some(2_999_999);
    after[1] = Some(1_250_000);
    let r = m.record(&before, &after, 0.5, None);
    assert!(r.attributed, "{r:?}");
    let pkg = &r.domains[0];
    assert!(pkg.wrapped);
    assert!((pkg.joules - 4.0).abs() < 1e-9, "{pkg:?}");
    // Dynamic: 4 J − 2 W × 0.5 s.
    assert!((pkg.dynamic_joules.unwrap() - 3.0).abs() < 1e-9, "{pkg:?}");
    assert!((r.domains[1].joules - 0.25).abs() < 1e-9);
    assert!(!r.domains[1].wrapped);
    // Pinned to half the package: other work shares it, nothing is charged to the run.
    let half = m.record(&before, &after, 0.5, Some(&[0, 1]));
    assert!(!half.attributed);
    assert!(half.note.contains("not attributed"), "{}", half.note);
    assert!(half.domains.iter().all(|d| d.dynamic_joules.is_none()));
    let whole = m.record(&before, &after, 0.5, Some(&[0, 1, 2, 3]));
    assert!(whole.attributed);
    assert_eq!(delta_uj(MAX, 0, MAX), 1);
}

#[test]
fn end_to_end_through_tare_run_with_a_synthetic_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    tree(&root, MAX - 500_000);
    let counter = root.join("sys/class/powercap/intel-rapl:0/energy_uj");
    let j = dir.path().join("r.json");
    // The command is the "hardware": it moves the package counter past the top (0.5 J to
    // wrap, then 1.5 J), as a run using 2 J would.
    let cmd = format!("sh -c 'echo 1499999 > {}'", counter.display());
    let out = tare()
        .env("TARE_SYSROOT", &root)
        .args(["run", "--style", "basic", "--warmup", "0", "--runs", "1"])
        .args(["--energy", "--energy-idle", "50ms", "--export-json"])
        .arg(&j)
        .arg(&cmd)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("energy"), "{stdout}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(doc["extra"]["energy"]["available"], true);
    assert_eq!(doc["extra"]["energy"]["idle_watts"][0], 0.0);
    let e = &doc["benchmarks"][0]["runs"][0]["energy"];
    let pkg = &e["domains"][0];
    assert_eq!(pkg["name"], "package-0");
    assert_eq!(pkg["wrapped"], true);
    assert!((pkg["joules"].as_f64().unwrap() - 2.0).abs() < 1e-9, "{e}");
    eprintln!("synthetic run energy record: {e}");
}

#[test]
fn no_powercap_says_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let out = tare()
        .env("TARE_SYSROOT", dir.path())
        .args([
            "run",
            "--style",
            "basic",
            "--runs",
            "1",
            "--energy",
            "--energy-idle",
            "10ms",
            "true",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("energy: unavailable"));
}

#[test]
fn energy_ratios_get_a_ci_like_time() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    tree(&root, 1_000_000);
    let c = root.join("sys/class/powercap/intel-rapl:0/energy_uj");
    let j = dir.path().join("r.json");
    // Two "programs" whose runs use 1 J and 2 J of package energy.
    let add = |uj: u64| {
        format!(
            "sh -c 'v=$(cat {f}); echo $((v+{uj})) > {f}'",
            f = c.display()
        )
    };
    let out = tare()
        .env("TARE_SYSROOT", &root)
        .args(["run", "--style", "basic", "--warmup", "0", "--runs", "6"])
        .args(["--energy", "--energy-idle", "20ms", "--export-json"])
        .arg(&j)
        .arg("--export-csv")
        .arg(dir.path().join("r.csv"))
        .arg(add(1_000_000))
        .arg(add(2_000_000))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let e = &doc["extra"]["energy_comparisons"][0];
    assert_eq!(e["paired"], true);
    assert!((e["ratio"].as_f64().unwrap() - 2.0).abs() < 1e-9, "{e}");
    assert!(
        (e["ratio_ci_low"].as_f64().unwrap() - 2.0).abs() < 1e-9,
        "{e}"
    );
    assert!(stdout.contains("2.00× the package energy"), "{stdout}");
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "energy_package_joules")
        .expect("energy column");
    let values: Vec<f64> = lines
        .map(|l| {
            l.rsplit(',')
                .nth(header.len() - 1 - col)
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(values.iter().all(|v| *v == 1.0 || *v == 2.0), "{values:?}");
}

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/fake_worker.py");

/// `tare kernels --energy` on the same synthetic tree, through the meters `tare run` uses: a
/// repetition action plays the hardware (1 J on the package counter per sample, inside the
/// invocation), so the invocations' package energies add up to what the counter moved, and
/// nothing moved in the idle window before them.
#[test]
fn kernels_energy_per_invocation_through_the_same_meters() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    tree(&root, 5_000_000);
    let counter = root.join("sys/class/powercap/intel-rapl:0/energy_uj");
    let bump = format!(
        "before-repetition:shell:v=$(cat {c}); echo $((v + 1000000)) > {c}",
        c = counter.display()
    );
    let j = dir.path().join("k.json");
    let out = tare()
        .env("TARE_SYSROOT", &root)
        .args(["kernels", FAKE, "--filter", "^spin$", "-r", "2"])
        .args(["--warmup", "0", "--sample-stop", "runs >= 3"])
        .args(["--sample-time", "1ms", "--seed", "3"])
        .args(["--action", &bump])
        .args(["--energy", "--energy-idle", "50ms", "-q", "--export-json"])
        .arg(&j)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(
        doc["extra"]["energy"]["available"], true,
        "{}",
        doc["extra"]
    );
    assert_eq!(doc["extra"]["energy"]["idle_watts"][0], 0.0);
    let moved = std::fs::read_to_string(&counter)
        .unwrap()
        .trim()
        .parse::<u64>()
        .unwrap()
        - 5_000_000;
    assert!(
        moved >= 2_000_000,
        "one sample or more per invocation: {moved}"
    );
    let invs = doc["benchmarks"][0]["extra"]["invocations"]
        .as_array()
        .unwrap();
    assert_eq!(invs.len(), 2, "{invs:?}");
    let mut sum = 0.0;
    for inv in invs {
        let m = &inv["meters"];
        let j = m["energy.package-0.joules"].as_f64().unwrap_or(-1.0);
        assert!(j >= 1.0, "{m}");
        // Idle power was 0: all of it is dynamic.
        assert_eq!(
            m["energy.package-0.dynamic_joules"].as_f64(),
            Some(j),
            "{m}"
        );
        assert_eq!(m["energy.core.joules"], 0.0, "{m}");
        sum += j;
    }
    assert!(
        (sum - moved as f64 / 1e6).abs() < 1e-9,
        "{sum} J vs {moved} µJ"
    );
    let out = tare()
        .env("TARE_SYSROOT", &root)
        .args(["kernels", FAKE, "--baseline", "spin", "--energy"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("drop one of them") && err.lines().count() == 1,
        "{err}"
    );
}
