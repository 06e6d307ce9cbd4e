//! `tare bias --factor env` on two small C programs (tests/c/), built here with `cc -O2`:
//! `stack_align.c` chases pointers through 8-byte loads at fixed offsets from a stack buffer
//! (they straddle cache lines when the buffer starts on one, which with ASLR off depends on
//! the environment's size); `stack_fixed.c` aligns its buffer at run time and never straddles.
//! The first must show a significant effect that disappears with ASLR on; the second none.
//! Asserts on p-values only (no timing thresholds); about 20 s in debug.

#[path = "common/skip.rs"]
mod skip;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn build(src: &str, out: &Path) -> bool {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
    Command::new("cc")
        .args(["-O2", "-o"])
        .arg(out)
        .arg(dir.join(src))
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn sweep(program: &Path, json: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_tare"))
        .env("NO_COLOR", "1")
        .args([
            "bias",
            "--style",
            "basic",
            "--factor",
            "env",
            "--levels",
            "0:112:16",
            "--repeat",
            "6",
            "--metric",
            "cpu",
            "--seed",
            "5",
            "--export-json",
        ])
        .arg(json)
        .arg("--")
        .arg(program)
        .arg("20000000")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "tare bias failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{}:\n{stdout}", program.display());
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

fn usable() -> bool {
    let aslr = std::fs::read_to_string("/proc/sys/kernel/randomize_va_space")
        .map(|s| s.trim() != "0")
        .unwrap_or(false);
    let x86 = cfg!(target_arch = "x86_64");
    if !(aslr && x86) {
        skip::skip(
            "x86_64 with ASLR enabled",
            "sysctl kernel.randomize_va_space=2",
        );
    }
    aslr && x86
}

#[test]
fn env_size_matters_through_stack_alignment_only_for_the_misaligned_program() {
    if !usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (align, fixed) = (
        dir.path().join("stack_align"),
        dir.path().join("stack_fixed"),
    );
    if !(build("stack_align.c", &align) && build("stack_fixed.c", &fixed)) {
        skip::skip("a C compiler (cc)", "apt-get install gcc libc6-dev");
        return;
    }
    let doc = sweep(&align, &dir.path().join("align.json"));
    let bias = &doc["extra"]["bias"];
    assert_eq!(bias["factor"], "env");
    assert_eq!(bias["sweep"]["levels"].as_array().unwrap().len(), 8);
    let p = bias["sweep"]["p_value"].as_f64().unwrap();
    assert!(p < 0.01, "no env effect found for stack_align: p = {p}");
    let p_on = bias["intervention"]["sweep"]["p_value"].as_f64().unwrap();
    assert!(p_on > 0.001, "effect persists with ASLR on: p = {p_on}");
    // Every run recorded its level's setup.
    let run = &doc["benchmarks"][3]["runs"][0]["extra"]["setup"];
    assert_eq!(run["env_pad"], 48);
    assert_eq!(run["aslr"], false);

    let doc = sweep(&fixed, &dir.path().join("fixed.json"));
    let p = doc["extra"]["bias"]["sweep"]["p_value"].as_f64().unwrap();
    assert!(p > 0.001, "env effect found for stack_fixed: p = {p}");
}
