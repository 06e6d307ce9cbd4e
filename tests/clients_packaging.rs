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

/// Runs `cmd`, panicking with its output when it fails.
fn run(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn have(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A consumer of an installed client: one kernel, run standalone (no `TARE_WORKER_FD`), so it
/// prints its one line per kernel.
const C_CONSUMER: &str = r#"
#include <tare_worker.h>
static void body(void *state) { unsigned v = 7; (void)state; TARE_DO_NOT_OPTIMIZE(v); }
int main(int argc, char **argv) {
    tare_kernel *k = tare_register("installed", NULL);
    tare_on_body(k, body);
    return tare_main(argc, argv);
}
"#;

/// Copies the C client's files into `dir`, so that builds write nothing into the source tree
/// (other tests compile clients/c at the same time).
fn c_client_copy(dir: &Path) {
    for f in [
        "Makefile",
        "tare_worker.c",
        "tare_worker.h",
        "LICENSE-MIT",
        "LICENSE-APACHE",
    ] {
        std::fs::copy(client("c").join(f), dir.join(f)).unwrap();
    }
}

#[test]
fn c_make_install_gives_a_pkg_config_package() {
    if !have("cc") || !have("make") || !have("pkg-config") {
        skip::skip(
            "cc, make and pkg-config",
            "apt-get install gcc make pkg-config",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    c_client_copy(&src);
    std::fs::write(tmp.path().join("prog.c"), C_CONSUMER).unwrap();

    // A staged install: DESTDIR + PREFIX, found through pkg-config's sysroot.
    let stage = tmp.path().join("stage");
    run(std::process::Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&src)
        .arg("install")
        .arg(format!("DESTDIR={}", stage.display()))
        .arg("PREFIX=/opt/tare-worker"));
    let root = stage.join("opt/tare-worker");
    for f in [
        "include/tare_worker.h",
        "lib/libtare_worker.a",
        "lib/pkgconfig/tare_worker.pc",
        "share/doc/tare_worker/LICENSE-MIT",
        "share/doc/tare_worker/LICENSE-APACHE",
    ] {
        assert!(root.join(f).is_file(), "make install did not install {f}");
    }
    let pc = read(root.join("lib/pkgconfig/tare_worker.pc"));
    assert!(pc.contains("prefix=/opt/tare-worker\n"), "{pc}");
    let flags = run(std::process::Command::new("pkg-config")
        .args(["--cflags", "--libs", "tare_worker"])
        .env("PKG_CONFIG_PATH", root.join("lib/pkgconfig"))
        .env("PKG_CONFIG_SYSROOT_DIR", &stage));
    assert!(flags.contains("-ltare_worker"), "{flags}");
    let prog = tmp.path().join("prog");
    run(std::process::Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(&prog)
        .arg(tmp.path().join("prog.c"))
        .args(flags.split_whitespace()));
    let out = run(std::process::Command::new(&prog)
        .env_remove("TARE_WORKER_FD")
        .arg("--list"));
    assert!(out.contains("installed"), "{out}");

    // A plain install into PREFIX, and uninstall removes what install put there.
    let prefix = tmp.path().join("prefix");
    let make = |target: &str| {
        run(std::process::Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(&src)
            .arg(target)
            .arg(format!("PREFIX={}", prefix.display())));
    };
    make("install");
    let flags = run(std::process::Command::new("pkg-config")
        .args(["--cflags", "--libs", "tare_worker"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .env_remove("PKG_CONFIG_SYSROOT_DIR"));
    assert!(
        flags.contains(&format!("-I{}/include", prefix.display())),
        "{flags}"
    );
    let pc = read(prefix.join("lib/pkgconfig/tare_worker.pc"));
    assert!(
        pc.contains(&format!("prefix={}\n", prefix.display()))
            && pc.contains("includedir=${prefix}/include\n")
            && pc.contains("libdir=${prefix}/lib\n"),
        "{pc}"
    );
    make("uninstall");
    assert!(!prefix.join("lib/libtare_worker.a").exists());
    assert!(!prefix.join("include/tare_worker.h").exists());

    // A relative PREFIX (make -C src install PREFIX=rel: the files go to src/rel): the .pc
    // file names that directory absolutely, so a worker builds from anywhere with it (it
    // said prefix=rel before, -Irel/include from the consumer's directory).
    run(std::process::Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&src)
        .args(["install", "PREFIX=rel"]));
    let rel = src.join("rel");
    let pc = read(rel.join("lib/pkgconfig/tare_worker.pc"));
    assert!(pc.contains(&format!("prefix={}\n", rel.display())), "{pc}");
    let flags = run(std::process::Command::new("pkg-config")
        .args(["--cflags", "--libs", "tare_worker"])
        .env("PKG_CONFIG_PATH", rel.join("lib/pkgconfig"))
        .env_remove("PKG_CONFIG_SYSROOT_DIR"));
    let prog = tmp.path().join("prog_rel");
    run(std::process::Command::new("cc")
        .current_dir(tmp.path())
        .arg("-O2")
        .arg("-o")
        .arg(&prog)
        .arg("prog.c")
        .args(flags.split_whitespace()));
    let out = run(std::process::Command::new(&prog)
        .env_remove("TARE_WORKER_FD")
        .arg("--list"));
    assert!(out.contains("installed"), "{out}");
}

const CPP_CONSUMER: &str = r#"
#include <tare_worker.hpp>
int main(int argc, char** argv) {
    tare::kernel("installed").body([] { int x = 1; tare::do_not_optimize(x); });
    return tare::main(argc, argv);
}
"#;

/// Configures and builds the consumer project in `dir` (its CMakeLists.txt written by the
/// caller) and returns what its program prints for `--list`.
fn cmake_consumer(dir: &Path, defs: &[String]) -> String {
    std::fs::write(dir.join("prog.cpp"), CPP_CONSUMER).unwrap();
    let build = dir.join("build");
    run(std::process::Command::new("cmake")
        .arg("-S")
        .arg(dir)
        .arg("-B")
        .arg(&build)
        .args(defs));
    run(std::process::Command::new("cmake")
        .arg("--build")
        .arg(&build));
    run(std::process::Command::new(build.join("prog"))
        .env_remove("TARE_WORKER_FD")
        .arg("--list"))
}

#[test]
fn cpp_cmake_package_and_subproject_without_gtest() {
    if !have("cmake") || !have("c++") || !have("cc") {
        skip::skip("cmake and a C/C++ compiler", "apt-get install cmake g++");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cpp = client("cpp");

    // Install into a prefix; a consumer finds it with find_package(... CONFIG).
    let build = tmp.path().join("build");
    let prefix = tmp.path().join("prefix");
    run(std::process::Command::new("cmake")
        .arg("-S")
        .arg(&cpp)
        .arg("-B")
        .arg(&build)
        .arg("-DTARE_BUILD_TESTS=OFF"));
    run(std::process::Command::new("cmake")
        .arg("--build")
        .arg(&build));
    run(std::process::Command::new("cmake")
        .arg("--install")
        .arg(&build)
        .arg("--prefix")
        .arg(&prefix));
    let lib = ["lib", "lib64"]
        .iter()
        .map(|l| prefix.join(l))
        .find(|l| {
            l.join("cmake/tare_worker/tare_worker-config.cmake")
                .is_file()
        })
        .expect("cmake --install wrote no lib/cmake/tare_worker/tare_worker-config.cmake");
    assert!(lib.join("libtare_worker_c.a").is_file());
    assert!(prefix.join("include/tare_worker.hpp").is_file());
    assert!(prefix.join("include/tare_worker.h").is_file());

    let consumer = tmp.path().join("consumer");
    std::fs::create_dir(&consumer).unwrap();
    std::fs::write(
        consumer.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.16)\n\
         project(consumer LANGUAGES C CXX)\n\
         find_package(tare_worker 0.1 CONFIG REQUIRED)\n\
         add_executable(prog prog.cpp)\n\
         target_link_libraries(prog PRIVATE tare_worker::tare_worker)\n",
    )
    .unwrap();
    let out = cmake_consumer(
        &consumer,
        &[format!("-DCMAKE_PREFIX_PATH={}", prefix.display())],
    );
    assert!(out.contains("installed"), "{out}");

    // As a subproject: configures with GoogleTest made unfindable (the tests are off unless
    // asked for), and the same namespaced target links.
    let parent = tmp.path().join("parent");
    std::fs::create_dir(&parent).unwrap();
    std::fs::write(
        parent.join("CMakeLists.txt"),
        format!(
            "cmake_minimum_required(VERSION 3.16)\n\
             project(parent LANGUAGES C CXX)\n\
             add_subdirectory(\"{}\" tare_worker EXCLUDE_FROM_ALL)\n\
             add_executable(prog prog.cpp)\n\
             target_link_libraries(prog PRIVATE tare_worker::tare_worker)\n",
            cpp.display()
        ),
    )
    .unwrap();
    let out = cmake_consumer(&parent, &["-DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON".into()]);
    assert!(out.contains("installed"), "{out}");
}

/// The Go module path `tare.dev/worker` is not served by anyone; what the README says works
/// is a `replace` to a checkout: a module outside the repository builds with the module proxy
/// off, and its program runs standalone.
#[test]
fn go_module_used_through_replace_builds_offline() {
    if !have("go") {
        skip::skip("go", "run .ci/services.d/45-go.sh as root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path();
    std::fs::write(
        m.join("go.mod"),
        format!(
            "module example.com/consumer\n\ngo 1.21\n\nrequire tare.dev/worker v0.1.0\n\n\
             replace tare.dev/worker => {}\n",
            client("go").display()
        ),
    )
    .unwrap();
    std::fs::write(
        m.join("main.go"),
        "package main\n\nimport \"tare.dev/worker\"\n\nfunc main() {\n\
         \tworker.Register(worker.Kernel{Name: \"installed\", Run: func(b *worker.B) {\n\
         \t\tfor i := 0; i < b.N; i++ {\n\t\t\tworker.KeepAlive(i)\n\t\t}\n\t}})\n\
         \tworker.Main()\n}\n",
    )
    .unwrap();
    let prog = m.join("prog");
    run(std::process::Command::new("go")
        .current_dir(m)
        .args(["build", "-o"])
        .arg(&prog)
        .arg(".")
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("GOTOOLCHAIN", "local")
        .env("GOWORK", "off"));
    let out = run(std::process::Command::new(&prog)
        .env_remove("TARE_WORKER_FD")
        .arg("--list"));
    assert!(out.contains("installed"), "{out}");
}
