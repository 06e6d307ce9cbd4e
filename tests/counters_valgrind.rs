//! `--counters` counted by Valgrind (issue 27), with the real valgrind and a C program: counts
//! that repeat to the last digit while both cores are busy (stress-ng --cpu 2, or two busy
//! loops where stress-ng is missing) and the runs' wall times vary; the same instruction count
//! as Callgrind run by hand; the whole process tree counted once (a shell's two children, a
//! child forked without exec); 1% more work called slower by `tare compare --metric
//! instructions` (exit 1 with --fail-if-slower 0.5%), the same program twice equal; times under
//! Valgrind never compared with times outside it. Skips when valgrind or cc is missing.

mod common;
#[path = "common/skip.rs"]
mod skip;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

const PROGRAM: &str = r#"
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
/* work N [fork]: N rounds of a loop; with fork, a child forked without exec does N/10 more. */
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    volatile unsigned long x = 0;
    for (long i = 0; i < n; i++) x += (unsigned long)i * 7;
    if (argc > 2) {
        pid_t p = fork();
        if (p == 0) {
            for (long i = 0; i < n / 10; i++) x += (unsigned long)i * 7;
            _exit(0);
        }
        waitpid(p, 0, 0);
    }
    return 0;
}
"#;

/// The compiled program, or None (skipped) without valgrind or cc.
fn setup(dir: &Path) -> Option<PathBuf> {
    let ok = |c: &mut Command| c.output().map(|o| o.status.success()).unwrap_or(false);
    if !ok(Command::new("valgrind").arg("--version")) {
        skip::skip(
            "valgrind",
            "apt-get install valgrind (.ci/services.d/48-valgrind.sh)",
        );
        return None;
    }
    let src = dir.join("work.c");
    let exe = dir.join("work");
    std::fs::write(&src, PROGRAM).unwrap();
    if !ok(Command::new("cc").arg("-O1").arg("-o").arg(&exe).arg(&src)) {
        skip::skip("a C compiler (cc)", "apt-get install gcc");
        return None;
    }
    Some(exe)
}

/// tare: cargo's build of it, or `TARE_BIN` (a copy of the build, where several checkouts share
/// one target directory and the binary there may be another's).
fn tare(args: &[&str]) -> Output {
    common::tare()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `command` under tare with Valgrind counting `events`; the results document.
fn counted(dir: &Path, name: &str, events: &str, runs: usize, command: &str) -> Value {
    let json = dir.join(format!("{name}.json"));
    let out = tare(&[
        "run",
        "--style",
        "basic",
        "--counters",
        events,
        "--counters-backend",
        "valgrind",
        "--runs",
        &runs.to_string(),
        "--name",
        "work",
        "--export-json",
        json.to_str().unwrap(),
        command,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// Each counted run's value of `event`.
fn values(doc: &Value, event: &str) -> Vec<f64> {
    doc["benchmarks"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["counted"] == true)
        .map(|r| {
            assert_eq!(r["extra"]["counters_backend"], "valgrind", "{r}");
            r["extra"]["counters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["event"] == event)
                .unwrap_or_else(|| panic!("no {event} in {r}"))["value"]
                .as_f64()
                .unwrap()
        })
        .collect()
}

fn spread(xs: &[f64]) -> f64 {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0, f64::max);
    (hi - lo) / lo
}

/// Both cores kept busy: stress-ng --cpu 2 where installed, else two shell busy loops; stopped
/// (by their ids) when dropped.
struct Load(Vec<Child>);

impl Load {
    fn start() -> (Load, &'static str) {
        let stress = Command::new("stress-ng")
            .args(["--cpu", "2", "--timeout", "600s", "--quiet"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        match stress {
            Ok(c) => (Load(vec![c]), "stress-ng --cpu 2"),
            Err(_) => (
                Load(
                    (0..2)
                        .map(|_| {
                            Command::new("sh")
                                .args(["-c", "while :; do :; done"])
                                .spawn()
                                .unwrap()
                        })
                        .collect(),
                ),
                "two busy loops",
            ),
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // stress-ng's workers are in its process group: stop the group.
            // SAFETY: kill(2) on the group this test made (the child's pid), no memory involved.
            unsafe {
                libc::kill(-(c.id() as i32), libc::SIGKILL);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

use std::os::unix::process::CommandExt;

#[test]
fn counts_repeat_under_load_and_match_callgrind_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = setup(dir.path()) else {
        return;
    };
    let cmd = format!("{} 3000000", exe.display());
    let (load, what) = Load::start();
    let doc = counted(
        dir.path(),
        "loaded",
        "instructions,cycles-estimate",
        5,
        &cmd,
    );
    drop(load);
    let ir = values(&doc, "instructions");
    let cycles = values(&doc, "cycles-estimate");
    let walls: Vec<f64> = doc["benchmarks"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["wall_time"].as_f64().unwrap())
        .collect();
    eprintln!(
        "under {what}: instructions spread {:.6}%, cycles-estimate {:.6}%, wall time {:.1}% ({ir:?}, {walls:?})",
        spread(&ir) * 100.0,
        spread(&cycles) * 100.0,
        spread(&walls) * 100.0
    );
    assert!(spread(&ir) <= 1e-4, "instructions vary: {ir:?}");
    assert!(spread(&cycles) <= 1e-4, "estimated cycles vary: {cycles:?}");
    // 3M rounds of a loop of a few instructions.
    assert!(ir[0] > 9e6 && ir[0] < 4e7, "{ir:?}");
    assert!(cycles[0] >= ir[0], "{cycles:?} {ir:?}");
    let summary = &doc["benchmarks"][0]["extra"]["counters"];
    assert_eq!(summary["backend"], "valgrind", "{summary}");
    assert_eq!(summary["events"][0]["repeats"], true, "{summary}");
    assert_eq!(doc["extra"]["counters"]["backend"], "valgrind");

    // The peer: Callgrind run by hand on the same program.
    let out_file = dir.path().join("by-hand.out");
    let o = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(&exe)
        .arg("3000000")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let file = std::fs::read_to_string(&out_file).unwrap();
    // Functions' own instructions add up to Callgrind's total: calls are not counted twice.
    let own: u64 = tare::method::counters::valgrind::function_costs(&file)
        .iter()
        .map(|(_, c)| c)
        .sum();
    let by_hand: f64 = file
        .lines()
        .find_map(|l| l.strip_prefix("summary:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        own as f64, by_hand,
        "sum of functions' own instructions vs summary"
    );
    // Only the environment and argv differ (the loader's and libc's start-up read them).
    assert!(
        (ir[0] - by_hand).abs() / by_hand < 1e-4,
        "tare {} vs callgrind by hand {by_hand}",
        ir[0]
    );
}

#[test]
fn the_whole_process_tree_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = setup(dir.path()) else {
        return;
    };
    let one = values(
        &counted(
            dir.path(),
            "one",
            "instructions",
            2,
            &format!("{} 2000000", exe.display()),
        ),
        "instructions",
    )[0];
    // A shell running the program twice: both children and the shell.
    let e = exe.display();
    let two = values(
        &counted(
            dir.path(),
            "two",
            "instructions",
            2,
            &format!("sh -c '{e} 2000000; {e} 2000000'"),
        ),
        "instructions",
    )[0];
    assert!(
        two > 2.0 * one * 0.999 && two < 2.0 * one * 1.05,
        "a shell's two children: {two} vs 2 × {one}"
    );
    // A child forked without exec does a tenth more work; its parent's counts before the fork
    // are not counted again in it.
    let forked = values(
        &counted(
            dir.path(),
            "fork",
            "instructions",
            2,
            &format!("{e} 2000000 fork"),
        ),
        "instructions",
    )[0];
    let ratio = forked / one;
    assert!(
        ratio > 1.08 && ratio < 1.12,
        "forked child with a tenth of the work: {forked} vs {one} (×{ratio:.3}; 2× would be a double count)"
    );
}

#[test]
fn one_percent_more_work_fails_the_gate_and_a_a_gives_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = setup(dir.path()) else {
        return;
    };
    let e = exe.display();
    counted(
        dir.path(),
        "old",
        "instructions",
        3,
        &format!("{e} 2000000"),
    );
    counted(
        dir.path(),
        "again",
        "instructions",
        3,
        &format!("{e} 2000000"),
    );
    counted(
        dir.path(),
        "new",
        "instructions",
        3,
        &format!("{e} 2020000"),
    );
    let p = |n: &str| {
        dir.path()
            .join(format!("{n}.json"))
            .to_str()
            .unwrap()
            .to_string()
    };
    let report = dir.path().join("cmp.json");
    let gate = |old: &str, new: &str| {
        tare(&[
            "compare",
            "--metric",
            "instructions",
            "--fail-if-slower",
            "0.5%",
            "--export-json",
            report.to_str().unwrap(),
            &p(old),
            &p(new),
        ])
    };
    let out = gate("old", "new");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("a change in work"), "{}", text(&out));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let c = &r["comparisons"][0];
    assert_eq!(c["verdict"], "slower", "{r}");
    assert_eq!(r["metric"], "instructions");
    let change = c["ratio"].as_f64().unwrap() - 1.0;
    assert!(change > 0.009 && change < 0.011, "{c}");
    // The 20,000 more rounds are main's own instructions, and only main's.
    assert_eq!(c["functions_moved"][0]["function"], "main", "{c}");
    let moved = c["functions_moved"][0]["instructions"].as_f64().unwrap();
    let total = c["new_mean"].as_f64().unwrap() - c["old_mean"].as_f64().unwrap();
    assert!(
        (moved - total).abs() <= 0.001 * total,
        "main {moved} of {total}: {c}"
    );
    assert!(
        text(&out).contains("functions that moved most: main +"),
        "{}",
        text(&out)
    );

    // A/A: the same program in two sessions.
    let out = gate("old", "again");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["comparisons"][0]["verdict"], "equal-within-noise", "{r}");
    assert_eq!(r["regression"], false);

    // Times under Valgrind are not the command's: never compared with times outside it.
    let plain = dir.path().join("plain.json");
    let out = tare(&[
        "run",
        "--style",
        "none",
        "--runs",
        "2",
        "--name",
        "work",
        "--export-json",
        plain.to_str().unwrap(),
        &format!("{e} 2000000"),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let out = tare(&["compare", &p("old"), plain.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("under Valgrind"), "{}", text(&out));
    // A metric a side never counted is a usage error naming what to do.
    let out = tare(&["compare", "--metric", "ll-misses", &p("old"), &p("new")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--counters ll-misses"),
        "{}",
        text(&out)
    );
}

#[test]
fn backends_are_chosen_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    if setup(dir.path()).is_none() {
        return;
    }
    // perf has no simulated events.
    let out = tare(&[
        "run",
        "--counters",
        "cycles-estimate",
        "--counters-backend",
        "perf",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--counters-backend valgrind"),
        "{}",
        text(&out)
    );
    // Valgrind has no software events.
    let out = tare(&[
        "run",
        "--counters",
        "page-faults",
        "--counters-backend",
        "valgrind",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("valgrind does not count 'page-faults'"),
        "{}",
        text(&out)
    );
    // An isolated run has its own /tmp: it could not write the counts where tare reads them.
    let out = tare(&["run", "--counters", "instructions", "--isolate", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("cannot be combined with --isolate"),
        "{}",
        text(&out)
    );
    // auto: the simulated events go to Valgrind wherever perf is.
    let j = dir.path().join("auto.json");
    let out = tare(&[
        "run",
        "--style",
        "none",
        "--runs",
        "2",
        "--counters",
        "instructions,ll-misses,branches",
        "--export-json",
        j.to_str().unwrap(),
        "true",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(doc["extra"]["counters"]["backend"], "valgrind");
    let v = values(&doc, "branches");
    assert!(v[0] > 1000.0, "{v:?}");
    // Counts that repeat need few runs: 3 by default where Valgrind counts.
    let out = tare(&[
        "run",
        "--style",
        "none",
        "--counters",
        "instructions",
        "--counters-backend",
        "valgrind",
        "--export-json",
        j.to_str().unwrap(),
        "true",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(values(&doc, "instructions").len(), 3);
}

/// `tare kernels --counters`: a C kernel whose setup does 100 times its body's work is counted
/// per loop like the same body with no setup, in every sample (the setup, init, clock reads and
/// protocol are outside the timed region Callgrind collects).
#[test]
fn kernels_count_the_timed_region_only() {
    let dir = tempfile::tempdir().unwrap();
    if setup(dir.path()).is_none() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let client = root.join("clients/c");
    let exe = dir.path().join("kern");
    let built = Command::new("cc")
        .args(["-std=c11", "-O2", "-I"])
        .arg(&client)
        .arg("-o")
        .arg(&exe)
        .arg(root.join("tests/fixtures/counters_kernel.c"))
        .arg(client.join("tare_worker.c"))
        .arg("-lm")
        .status()
        .unwrap();
    assert!(built.success());
    let json = dir.path().join("k.json");
    let out = tare(&[
        "kernels",
        "--counters",
        "instructions",
        "--invocations",
        "2",
        "--max-samples",
        "5",
        "--export-json",
        json.to_str().unwrap(),
        exe.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("per loop (timed region, Valgrind): instructions"),
        "{}",
        text(&out)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let per_loop = |name: &str| -> Vec<f64> {
        let b = doc["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"].as_str().unwrap().starts_with(name))
            .unwrap();
        b["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                assert_eq!(r["extra"]["counters_backend"], "valgrind", "{r}");
                r["extra"]["counters"][0]["value"].as_f64().unwrap()
            })
            .collect()
    };
    let (light, heavy) = (per_loop("light"), per_loop("heavy"));
    // The body: 10000 rounds of a loop of a few instructions.
    assert!(light[0] > 20_000.0 && light[0] < 200_000.0, "{light:?}");
    assert!(
        spread(&light) <= 1e-4 && spread(&heavy) <= 1e-4,
        "{light:?} {heavy:?}"
    );
    // Counting the setup would add 100 bodies to a sample of a few dozen loops at least.
    let ratio = heavy[0] / light[0];
    assert!(
        (ratio - 1.0).abs() < 1e-3,
        "heavy {heavy:?} vs light {light:?}"
    );
}

/// The blur example of the C, C++ and Rust clients (each built by its build.sh) under
/// `tare kernels --counters`: every sample of each has counts of its timed region
/// (`tare_timed_region` in each client), repeating, and the same implementations agree on
/// the checksum as without counters. Skips a language whose toolchain is missing.
#[test]
fn blur_of_the_c_cpp_and_rust_clients_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    if setup(dir.path()).is_none() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut commands = Vec::new();
    for (lang, tool, how) in [
        ("c", "cc", "apt-get install gcc"),
        ("cpp", "c++", "apt-get install g++"),
        ("rust", "cargo", "rustup (https://rustup.rs)"),
    ] {
        if Command::new(tool).arg("--version").output().is_err() {
            skip::skip(&format!("{tool} for the {lang} blur example"), how);
            continue;
        }
        let ex = root.join(format!("examples/kernels/blur/{lang}"));
        let out = Command::new(ex.join("build.sh"))
            .arg("--print-command")
            .current_dir(&ex)
            .output()
            .unwrap();
        assert!(out.status.success(), "{lang}: {}", text(&out));
        commands.push((
            lang,
            String::from_utf8(out.stdout).unwrap().trim().to_string(),
        ));
    }
    if commands.is_empty() {
        return;
    }
    let json = dir.path().join("blur.json");
    // Fixed loops: a sample's count per loop carries its share of the region's fixed cost, so
    // counts repeat exactly only at one loop count; calibrated under load (a full test run on
    // 2 CPUs), the two invocations' loops differed and the Rust blur's counts with them
    // (291,805 and 291,745.5 a loop).
    let mut args: Vec<String> = [
        "kernels",
        "--counters",
        "instructions",
        "--loops",
        "16",
        "--invocations",
        "2",
        "--max-samples",
        "4",
        "--filter",
        "^blur$",
        "-L",
        "size",
        "32",
        "-L",
        "radius",
        "2",
        "--export-json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(json.to_str().unwrap().into());
    args.extend(commands.iter().map(|(_, c)| c.clone()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tare(&refs);
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let benches = doc["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), commands.len(), "{}", text(&out));
    for b in benches {
        let counts: Vec<f64> = b["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r["extra"]["counters"][0]["value"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{} has a sample without counts: {r}", b["name"]))
            })
            .collect();
        // 32×32 pixels, a 5-wide window two ways: thousands of instructions a loop at least.
        assert!(counts[0] > 10_000.0, "{}: {counts:?}", b["name"]);
        assert!(spread(&counts) <= 1e-4, "{}: {counts:?}", b["name"]);
    }
}

/// `tare kernels --counters` of a Python worker (no native timed region): each kernel's loops
/// counted as the difference of whole invocations of 1× and 2× the loops; a kernel whose setup
/// does 100 times its body's work counts the same per loop as the same body with no setup
/// (counting the setup would add 100 bodies over a few dozen loops), and the counts repeat
/// (PYTHONHASHSEED fixed for the counted invocations).
#[test]
fn kernels_count_python_loops_by_difference() {
    let dir = tempfile::tempdir().unwrap();
    if setup(dir.path()).is_none() {
        return;
    }
    if Command::new("python3").arg("--version").output().is_err() {
        skip::skip("python3", "apt-get install python3");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let json = dir.path().join("py.json");
    let out = tare(&[
        "kernels",
        "--counters",
        "instructions",
        "--invocations",
        "2",
        "--max-samples",
        "3",
        "--export-json",
        json.to_str().unwrap(),
        root.join("tests/fixtures/counters_kernel.py")
            .to_str()
            .unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("per loop (1x/2x invocations, Valgrind): instructions"),
        "{}",
        text(&out)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let per_loop = |name: &str| -> Vec<f64> {
        let b = doc["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"].as_str().unwrap().starts_with(name))
            .unwrap();
        b["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["extra"]["counters"].is_array())
            .map(|r| {
                assert_eq!(r["extra"]["counters_method"], "1x/2x invocations", "{r}");
                r["extra"]["counters"][0]["value"].as_f64().unwrap()
            })
            .collect()
    };
    let (light, heavy) = (per_loop("light"), per_loop("heavy"));
    // One count per invocation (a pair of counted invocations each).
    assert_eq!((light.len(), heavy.len()), (2, 2), "{light:?} {heavy:?}");
    // The body: 3000 rounds of a Python loop, hundreds of instructions each.
    assert!(light[0] > 300_000.0 && light[0] < 30_000_000.0, "{light:?}");
    // Within 0.05%: a few thousand instructions of a whole invocation (~2e8) do not cancel
    // (measured here: 0.0003% to 0.011%).
    assert!(
        spread(&light) <= 5e-4 && spread(&heavy) <= 5e-4,
        "{light:?} {heavy:?}"
    );
    let ratio = heavy[0] / light[0];
    assert!(
        (ratio - 1.0).abs() < 1e-3,
        "heavy {heavy:?} vs light {light:?}"
    );
}

/// The blur example of the Go, Java and JS clients under `tare kernels --counters`: their loops
/// counted by the difference of 1× and 2× invocations, one count per invocation, with the
/// spread each runtime allows: node with `--predictable` (V8 deterministic) repeats to 0.01%;
/// Go (its runtime's background threads) and Java with the JIT in the foreground (`-Xbatch
/// -XX:-TieredCompilation -XX:+UseSerialGC`) within 2%. Skips a language whose toolchain is
/// missing.
#[test]
fn blur_of_the_go_java_and_js_clients_is_counted_by_difference() {
    let dir = tempfile::tempdir().unwrap();
    if setup(dir.path()).is_none() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut commands = Vec::new();
    for (lang, tool, how, spread_max) in [
        ("go", "go", "https://go.dev/dl", 0.02),
        ("java", "mvn", "apt-get install openjdk-17-jdk maven", 0.02),
        // node --predictable: 0.0005% between invocations in the helper's runs, 0.014% in one
        // run at the end of the session (155,557.0 against 155,535.1); without it 35%.
        ("js", "node", "apt-get install nodejs", 1e-3),
    ] {
        if Command::new(tool).arg("--version").output().is_err() {
            skip::skip(&format!("{tool} for the {lang} blur example"), how);
            continue;
        }
        let ex = root.join(format!("examples/kernels/blur/{lang}"));
        let out = Command::new(ex.join("build.sh"))
            .arg("--print-command")
            .current_dir(&ex)
            .output()
            .unwrap();
        if !out.status.success() {
            skip::skip(
                &format!("a build of the {lang} blur example"),
                "see its build.sh",
            );
            continue;
        }
        let cmd = String::from_utf8(out.stdout).unwrap().trim().to_string();
        // The runtimes' own deterministic modes (docs/counters.md).
        let cmd = match lang {
            "js" => cmd.replacen("node ", "node --predictable ", 1),
            "java" => cmd.replacen(
                "java ",
                "java -Xbatch -XX:-TieredCompilation -XX:+UseSerialGC ",
                1,
            ),
            _ => cmd,
        };
        commands.push((lang, cmd, spread_max));
    }
    if commands.is_empty() {
        return;
    }
    let json = dir.path().join("blur.json");
    let mut args: Vec<String> = [
        "kernels",
        "--counters",
        "instructions",
        "--invocations",
        "2",
        "--max-samples",
        "3",
        "--filter",
        "^blur$",
        "-L",
        "size",
        "16",
        "-L",
        "radius",
        "2",
        "--export-json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(json.to_str().unwrap().into());
    args.extend(commands.iter().map(|(_, c, _)| c.clone()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tare(&refs);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("no counts"), "{}", text(&out));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let benches = doc["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), commands.len(), "{}", text(&out));
    for (b, (lang, _, spread_max)) in benches.iter().zip(&commands) {
        let counts: Vec<f64> = b["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["extra"]["counters"].is_array())
            .map(|r| {
                assert_eq!(r["extra"]["counters_method"], "1x/2x invocations", "{r}");
                r["extra"]["counters"][0]["value"].as_f64().unwrap()
            })
            .collect();
        assert_eq!(counts.len(), 2, "{lang}: {counts:?}");
        // 16×16 pixels, a 5-wide window two ways: thousands of instructions a loop at least.
        assert!(counts[0] > 5_000.0, "{lang}: {counts:?}");
        assert!(spread(&counts) <= *spread_max, "{lang}: {counts:?}");
    }
}

/// Builds the C kernel fixture with `-DMORE=more` (percent more rounds in its body).
fn build_kernel(dir: &Path, more: u32) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let client = root.join("clients/c");
    let exe = dir.join(format!("kern{more}"));
    let built = Command::new("cc")
        .args(["-std=c11", "-O2", &format!("-DMORE={more}"), "-I"])
        .arg(&client)
        .arg("-o")
        .arg(&exe)
        .arg(root.join("tests/fixtures/counters_kernel.c"))
        .arg(client.join("tare_worker.c"))
        .arg("-lm")
        .status()
        .unwrap();
    assert!(built.success());
    exe
}

/// `tare kernels --counters`: the verdict between implementations is drawn on the counts per
/// loop (a build whose body does 1% more work is slower on instructions, an identical build
/// equal, with two invocations, fewer than a verdict on time needs), and the line says so;
/// across builds, `tare compare --metric instructions --fail-if-slower 0.5%` exits 1.
#[test]
fn kernels_verdicts_are_on_counts() {
    let dir = tempfile::tempdir().unwrap();
    if setup(dir.path()).is_none() {
        return;
    }
    let (old, more) = (build_kernel(dir.path(), 0), build_kernel(dir.path(), 1));
    let same = dir.path().join("same");
    std::fs::copy(&old, &same).unwrap();
    let json = dir.path().join("k.json");
    let run = |programs: &[&Path], names: &[&str], json: &Path| -> Output {
        let mut args: Vec<String> = [
            "kernels",
            "--counters",
            "instructions",
            "--invocations",
            "2",
            "--max-samples",
            "3",
            "--filter",
            "^light$",
            "--export-json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(json.to_str().unwrap().into());
        for n in names {
            args.extend(["--name".to_string(), n.to_string()]);
        }
        args.extend(programs.iter().map(|p| p.to_str().unwrap().to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        tare(&refs)
    };
    let out = run(&[&old, &more, &same], &["old", "more", "same"], &json);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("slower on instructions")
            && text(&out).contains("per loop (timed region, Valgrind): instructions"),
        "{}",
        text(&out)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cs = doc["comparisons"].as_array().unwrap();
    let of = |name: &str| {
        cs.iter()
            .find(|c| c["candidate_name"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("no comparison of {name}: {cs:?}"))
    };
    assert_eq!(of("more")["metric"], "instructions", "{cs:?}");
    assert_eq!(of("more")["verdict"], "slower", "{cs:?}");
    let r = of("more")["ratio"].as_f64().unwrap();
    assert!((r - 1.01).abs() < 0.002, "{cs:?}");
    assert_eq!(of("same")["verdict"], "equal-within-noise", "{cs:?}");
    assert!(of("same")["words"]
        .as_str()
        .unwrap()
        .contains("the verdict is on the counts"));
    // Across builds: two sessions, compared on the counts.
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    assert!(run(&[&old], &["c"], &a).status.success());
    assert!(run(&[&more], &["c"], &b).status.success());
    let gate = tare(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--metric",
        "instructions",
        "--fail-if-slower",
        "0.5%",
    ]);
    assert_eq!(gate.status.code(), Some(1), "{}", text(&gate));
    assert!(text(&gate).contains("change in work"), "{}", text(&gate));
    // Kernels' counts are per loop, in invocations (the line once said "per run").
    assert!(
        text(&gate).contains("instructions per loop;")
            && text(&gate).contains("the ratios of all invocations"),
        "{}",
        text(&gate)
    );
}

/// Counts in the history store: each session's instructions a series of their own
/// (`--metric instructions`), cut by steps, not a permutation test: four commits, the last
/// two doing 1% more work, give one regression on instructions at the third (`history check`
/// exits 1), which `history show` and the HTML report show with the counts.
#[test]
fn counts_are_a_history_series_with_steps_as_changes() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = setup(dir.path()) else {
        return;
    };
    let d = dir.path();
    let git = |args: &[&str]| {
        let st = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(args)
            .current_dir(d)
            .output()
            .unwrap();
        assert!(st.status.success(), "git {args:?}: {}", text(&st));
        String::from_utf8_lossy(&st.stdout).trim().to_string()
    };
    git(&["init", "-q"]);
    let store = d.join("h.sqlite");
    let store = store.to_str().unwrap();
    for (i, rounds) in ["1000000", "1000000", "1010000", "1010000"]
        .iter()
        .enumerate()
    {
        std::fs::write(d.join("f"), i.to_string()).unwrap();
        git(&["add", "f"]);
        git(&["commit", "-qm", &format!("c{i}")]);
        let hash = git(&["rev-parse", "HEAD"]);
        let json = d.join(format!("r{i}.json"));
        let out = tare(&[
            "run",
            "--counters",
            "instructions",
            "--counters-backend",
            "valgrind",
            "--style",
            "none",
            "-n",
            "work",
            "--export-json",
            json.to_str().unwrap(),
            &format!("{} {rounds}", exe.display()),
        ]);
        assert!(out.status.success(), "{}", text(&out));
        let add = tare(&[
            "history",
            "add",
            "--store",
            store,
            "--commit",
            &hash,
            json.to_str().unwrap(),
        ]);
        assert!(add.status.success(), "{}", text(&add));
    }
    let show = tare(&[
        "history",
        "show",
        "--store",
        store,
        "--metric",
        "instructions",
    ]);
    assert!(show.status.success(), "{}", text(&show));
    assert!(text(&show).contains("instructions"), "{}", text(&show));
    // The level after the step, every digit: 10,000 more rounds of a few instructions.
    assert!(text(&show).contains("regression"), "{}", text(&show));
    let check = tare(&[
        "history",
        "check",
        "--store",
        store,
        "--metric",
        "instructions",
    ]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
    assert!(text(&check).contains("instructions"), "{}", text(&check));
    let html = d.join("h.html");
    let report = tare(&[
        "history",
        "report",
        "--store",
        store,
        "--export-html",
        html.to_str().unwrap(),
    ]);
    assert!(report.status.success(), "{}", text(&report));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("instructions"),
        "the report has no count series"
    );
    let bad = tare(&["history", "show", "--store", store, "--metric", "nope"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("instructions"), "{}", text(&bad));
}

const TWO_FUNCTIONS: &str = r#"
#include <stdlib.h>
/* Two functions of the same work; -DMORE=1 makes `other` do 1% more. */
#ifndef MORE
#define MORE 0
#endif
static volatile unsigned long x;
__attribute__((noinline)) static void hot(long n) { for (long i = 0; i < n; i++) x += (unsigned long)i * 7; }
__attribute__((noinline)) static void other(long n) { n += n * MORE / 100; for (long i = 0; i < n; i++) x += (unsigned long)i * 3; }
int main(int argc, char **argv) { long n = atol(argv[1]); hot(n); other(n); return 0; }
"#;

/// Callgrind's files kept beside the results (`NAME.callgrind/`, their directory in each
/// run's `extra.callgrind`), readable by `callgrind_annotate`; of two C builds where one
/// function does 1% more work, `tare compare --metric instructions` names that function first.
#[test]
fn callgrind_files_are_kept_and_the_function_that_moved_is_named_first() {
    let dir = tempfile::tempdir().unwrap();
    if setup(dir.path()).is_none() {
        return;
    }
    let d = dir.path();
    let src = d.join("two.c");
    std::fs::write(&src, TWO_FUNCTIONS).unwrap();
    let mut files = Vec::new();
    for more in [0, 1] {
        let exe = d.join(format!("two{more}"));
        let ok = Command::new("cc")
            .args(["-O1", "-g", &format!("-DMORE={more}"), "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .unwrap();
        assert!(ok.success());
        let json = d.join(format!("r{more}.json"));
        let out = tare(&[
            "run",
            "--counters",
            "instructions",
            "--counters-backend",
            "valgrind",
            "--runs",
            "2",
            "--style",
            "none",
            "-n",
            "two",
            "--export-json",
            json.to_str().unwrap(),
            &format!("{} 200000", exe.display()),
        ]);
        assert!(out.status.success(), "{}", text(&out));
        files.push(json);
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();
    let kept = doc["benchmarks"][0]["runs"][1]["extra"]["callgrind"]
        .as_str()
        .unwrap_or_else(|| panic!("no callgrind directory recorded: {doc}"))
        .to_string();
    assert!(kept.contains("r1.callgrind"), "{kept}");
    let cg: Vec<PathBuf> = std::fs::read_dir(&kept)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(cg.len(), 1, "{cg:?}");
    if Command::new("callgrind_annotate")
        .arg("--version")
        .output()
        .is_ok()
    {
        let ann = Command::new("callgrind_annotate")
            .arg(&cg[0])
            .output()
            .unwrap();
        assert!(ann.status.success(), "{}", text(&ann));
        assert!(text(&ann).contains("other"), "{}", text(&ann));
    }
    let cmp = tare(&[
        "compare",
        files[0].to_str().unwrap(),
        files[1].to_str().unwrap(),
        "--metric",
        "instructions",
        "--fail-if-slower",
        "0.2%",
    ]);
    assert_eq!(cmp.status.code(), Some(1), "{}", text(&cmp));
    let line = text(&cmp)
        .lines()
        .find(|l| l.contains("functions that moved most:"))
        .unwrap_or_else(|| panic!("{}", text(&cmp)))
        .to_string();
    let first = line.split("most:").nth(1).unwrap().trim().to_string();
    assert!(first.starts_with("other +"), "{line}");
    assert!(text(&cmp).contains("Callgrind's files:"), "{}", text(&cmp));
}

/// tare runs as root: where a symlink stands in the place of the directory Callgrind's files
/// are kept in (`NAME.callgrind`), it is refused with one line, not followed (nothing lands in
/// the directory it points to), and the run itself completes.
#[test]
fn a_symlink_in_place_of_the_callgrind_directory_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    if setup(dir.path()).is_none() {
        return;
    }
    let d = dir.path();
    let victim = d.join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, d.join("out.callgrind")).unwrap();
    let json = d.join("out.json");
    let o = tare(&[
        "run",
        "--counters",
        "instructions",
        "--counters-backend",
        "valgrind",
        "--runs",
        "1",
        "-n",
        "w",
        "/bin/true",
        "--export-json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("out.callgrind is not a directory (a link or another file is there; tare does not follow it)"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
    assert!(json.is_file());
}
