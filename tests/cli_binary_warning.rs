//! A C program compiled without optimization is named at the start of a session; the same
//! program compiled with -O2 is not. (Needs a C compiler; skipped without one.)

#[path = "common/skip.rs"]
mod skip;
use std::process::Command;

fn compile(dir: &std::path::Path, name: &str, flags: &[&str]) -> Option<std::path::PathBuf> {
    let src = dir.join("p.c");
    std::fs::write(
        &src,
        "int main(void) { volatile int x = 0; for (int i = 0; i < 1000; i++) x += i; return 0; }\n",
    )
    .unwrap();
    let out = dir.join(name);
    let ok = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .ok()?
        .success();
    ok.then_some(out)
}

fn warnings_for(prog: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tare"))
        .args(["run", "--style", "basic", "--runs", "1"])
        .arg("--")
        .arg(prog)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn unoptimized_c_binary_is_named_optimized_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let (Some(debug), Some(release)) = (
        compile(dir.path(), "dbg", &["-g", "-O0"]),
        compile(dir.path(), "opt", &["-g", "-O2"]),
    ) else {
        return skip::skip("a C compiler (cc)", "apt-get install gcc libc6-dev");
    };
    let w = warnings_for(&debug);
    assert!(w.contains("looks unoptimized") && w.contains("-O0"), "{w}");
    let w = warnings_for(&release);
    assert!(!w.contains("looks unoptimized"), "{w}");
    // Interpreted programs are never called debug builds.
    assert!(!warnings_for(std::path::Path::new("/bin/sh")).contains("looks unoptimized"));
}
