//! The kernels quickstart is one short command (issue 24): `examples/kernels/blur/run.sh`
//! builds the languages whose toolchains are here, says which it skipped and why, and
//! measures the rest. Here with C and Python (always present in the test setup) and Go
//! hidden from PATH: Go is skipped with its build script's reason, the others measured.

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn the_quickstart_measures_what_builds_and_names_what_it_skipped() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // PATH without Go (installed under /usr/local/go here), with cc and python3.
    let path: Vec<String> = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !Path::new(d).join("go").exists())
        .map(String::from)
        .collect();
    let out = Command::new(root.join("examples/kernels/blur/run.sh"))
        .args(["-r", "2"])
        .env("LANGS", "c python go")
        .env("PATH", path.join(":"))
        .env("TARE", env!("CARGO_BIN_EXE_tare"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    assert!(out.status.success(), "{text}");
    assert!(err.contains("building c       ok"), "{err}");
    assert!(err.contains("building python  ok"), "{err}");
    assert!(
        err.contains("building go      skipped: go is not installed"),
        "{err}"
    );
    assert!(
        err.contains("measuring 2 of 7 languages (skipped: go)"),
        "{err}"
    );
    assert!(text.contains("blur"), "{text}");
}
