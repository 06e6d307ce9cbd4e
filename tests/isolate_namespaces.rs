//! Isolation with real namespaces, as root: network, processes, file system, /tmp, result
//! files, exit status and cgroup accounting of isolated runs. Skipped (with a message) when
//! not root, since namespaces and cgroups need it here.

#[path = "common/skip.rs"]
mod skip;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use tare::exec::isolate::files::Workdir;
use tare::exec::isolate::Isolation;
use tare::exec::{detect, Executor, Needs, Preference, RunSpec, Sink};

fn root() -> bool {
    // Effective uid from /proc: avoids unsafe in tests.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

macro_rules! need_root {
    () => {
        if !root() {
            skip::skip(
                "root (namespaces, mounts, cgroups)",
                "run the tests as root (sudo -E cargo test)",
            );
            return;
        }
    };
}

fn executor() -> Executor {
    let (backend, _) = detect(Preference::Auto, &Needs::default(), Path::new("/")).unwrap();
    Executor::new(backend)
}

/// A fresh directory outside /tmp (which is private in isolated runs), removed at the end:
/// in /var/tmp, not below the target directory, which may itself lie below /tmp (a clone in
/// /tmp), where it would be hidden and its path would show up in the private /tmp.
fn scratch(name: &str) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix(&format!("tare-iso-{name}-"))
        .tempdir_in("/var/tmp")
        .unwrap();
    // Reachable by the isolated tool, an unprivileged user on the host.
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    d
}

/// Runs `script` with bash in isolation; returns the measurement and the combined output.
fn run_script(iso: Isolation, script: &str, dir: &Path) -> (tare::exec::Measurement, String) {
    let log = dir.join("out.log");
    let _ = std::fs::remove_file(&log);
    let mut spec = RunSpec::new(["bash", "-c", script]);
    // The scripts use absolute paths; "/" stays visible wherever the repository lives.
    spec.cwd = Some(PathBuf::from("/"));
    spec.stdout = Sink::File(log.clone());
    spec.stderr = Sink::File(log.clone());
    spec.isolation = Some(iso);
    let m = executor().run(&spec, &AtomicBool::new(false)).unwrap();
    let mut out = String::new();
    std::fs::File::open(&log)
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    (m, out)
}

#[test]
fn no_network_but_private_loopback() {
    need_root!();
    let scratch_dir = scratch("net");
    let dir = scratch_dir.path();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sed 's/^/IF=/'; \
         if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo HOST=reached; else echo HOST=refused; fi; \
         (exec 3<>/dev/tcp/127.0.0.1/1) 2>&1 | grep -q refused && echo LO=up"
    );
    let (m, out) = run_script(Isolation::default(), &script, dir);
    assert!(m.succeeded(), "{m:?} {out}");
    let ifs: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("IF=")).collect();
    assert_eq!(ifs, vec!["lo"], "{out}");
    assert!(out.contains("HOST=refused"), "{out}");
    // Connecting to a closed port on a loopback that is up is refused (not unreachable).
    assert!(out.contains("LO=up"), "{out}");

    let with_net = Isolation {
        network: true,
        ..Default::default()
    };
    let (_, out) = run_script(with_net, &script, dir);
    assert!(out.contains("HOST=reached"), "{out}");
}

#[test]
fn sees_and_signals_only_its_own_processes() {
    need_root!();
    let scratch_dir = scratch("pid");
    let dir = scratch_dir.path();
    let me = std::process::id();
    let script = format!(
        "echo PID=$$; ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' ' | sed 's/^/PROCS=/'; echo; \
         if kill -0 {me} 2>/dev/null; then echo KILL=ok; else echo KILL=failed; fi; \
         test -d /proc/{me} && echo SEES=yes || echo SEES=no; hostname"
    );
    let (m, out) = run_script(Isolation::default(), &script, dir);
    assert!(m.succeeded(), "{m:?} {out}");
    assert!(
        out.contains("PID=2\n"),
        "the tool runs as PID 2 under an init: {out}"
    );
    assert!(out.contains("KILL=failed"), "{out}");
    assert!(out.contains("SEES=no"), "{out}");
    let procs = out.lines().find_map(|l| l.strip_prefix("PROCS=")).unwrap();
    let n = procs.split_whitespace().count();
    assert!(
        (2..=6).contains(&n),
        "only the run's own processes: {procs}"
    );
    assert!(out.contains("tare\n"), "own UTS namespace: {out}");
}

#[test]
fn file_system_is_read_only_except_writable_dirs_and_tmp_is_private() {
    need_root!();
    let scratch_dir = scratch("fs");
    let dir = scratch_dir.path();
    let writable = dir.join("open");
    std::fs::create_dir_all(&writable).unwrap();
    let tag = format!("tare-iso-probe-{}", std::process::id());
    let in_repo = Path::new(env!("CARGO_MANIFEST_DIR")).join(&tag);
    let in_var_tmp = Path::new("/var/tmp").join(&tag);
    let in_tmp = Path::new("/tmp").join(&tag);
    let in_writable = writable.join("ok.txt");
    let script = format!(
        "for p in {} {} {} {}; do if echo x > $p 2>/dev/null; then echo W=$p=ok; else echo W=$p=refused; fi; done; \
         ls /tmp | wc -l | sed 's/^/TMPCOUNT=/'",
        in_repo.display(),
        in_var_tmp.display(),
        in_tmp.display(),
        in_writable.display()
    );
    let iso = Isolation {
        writable: vec![writable.clone()],
        ..Default::default()
    };
    let (m, out) = run_script(iso, &script, dir);
    assert!(m.succeeded(), "{m:?} {out}");
    assert!(
        out.contains(&format!("W={}=refused", in_repo.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!("W={}=refused", in_var_tmp.display())),
        "{out}"
    );
    assert!(out.contains(&format!("W={}=ok", in_tmp.display())), "{out}");
    assert!(
        out.contains(&format!("W={}=ok", in_writable.display())),
        "{out}"
    );
    assert!(
        out.contains("TMPCOUNT=1\n"),
        "private /tmp holds only our file: {out}"
    );
    assert!(!in_repo.exists());
    assert!(!in_var_tmp.exists());
    assert!(
        !in_tmp.exists(),
        "a file written to /tmp in the run is not in the host /tmp"
    );
    assert_eq!(std::fs::read_to_string(&in_writable).unwrap(), "x\n");
}

#[test]
fn writable_and_readable_dirs_below_tmp_and_hidden_home() {
    need_root!();
    let host_tmp_dir = tempfile::tempdir().unwrap(); // lives in the host /tmp
    let readable_dir = tempfile::tempdir().unwrap(); // also in the host /tmp
    std::fs::write(readable_dir.path().join("input"), "in").unwrap();
    let home_dir = scratch("home");
    let home = home_dir.path().to_path_buf();
    std::fs::write(home.join("secret"), "s").unwrap();
    let script = format!(
        "echo y > {}/f && echo TMPW=ok; ls -A $HOME | wc -l | sed 's/^/HOMECOUNT=/'; \
         cat {r}/input && echo; if echo z > {r}/w 2>/dev/null; then echo RW=ok; else echo RW=refused; fi",
        host_tmp_dir.path().display(),
        r = readable_dir.path().display()
    );
    let log_dir = scratch("home-log");
    let log_dir = log_dir.path();
    let iso = Isolation {
        writable: vec![host_tmp_dir.path().to_path_buf()],
        readable: vec![readable_dir.path().to_path_buf()],
        hide_home: true,
        ..Default::default()
    };
    let log = log_dir.join("out.log");
    let mut spec = RunSpec::new(["bash", "-c", &script]);
    spec.cwd = Some(PathBuf::from("/"));
    spec.env.retain(|(k, _)| k != "HOME");
    spec.env.push(("HOME".into(), home.clone().into()));
    spec.stdout = Sink::File(log.clone());
    spec.stderr = Sink::File(log.clone());
    spec.isolation = Some(iso);
    let m = executor().run(&spec, &AtomicBool::new(false)).unwrap();
    let out = std::fs::read_to_string(&log).unwrap();
    assert!(m.succeeded(), "{m:?} {out}");
    assert!(out.contains("TMPW=ok"), "{out}");
    assert!(out.contains("HOMECOUNT=0"), "{out}");
    assert!(
        out.contains("\nin\n") && out.contains("RW=refused"),
        "readable below /tmp: visible, read-only: {out}"
    );
    assert_eq!(
        std::fs::read_to_string(host_tmp_dir.path().join("f")).unwrap(),
        "y\n"
    );
}

#[test]
fn result_files_are_collected_from_the_workdir() {
    need_root!();
    let scratch_dir = scratch("results");
    let dir = scratch_dir.path();
    let wd = Workdir::create(dir, "work").unwrap();
    let iso = Isolation {
        result_files: vec!["*.out".into()],
        workdir: Some(wd.path().to_path_buf()),
        ..Default::default()
    };
    let log = dir.join("out.log");
    let mut spec = RunSpec::new(["bash", "-c", "echo r > result.out; echo n > note.txt; pwd"]);
    spec.cwd = Some(wd.path().to_path_buf());
    spec.stdout = Sink::File(log.clone());
    spec.stderr = Sink::File(log.clone());
    spec.isolation = Some(iso.clone());
    let m = executor().run(&spec, &AtomicBool::new(false)).unwrap();
    assert!(
        m.succeeded(),
        "{m:?} {}",
        std::fs::read_to_string(&log).unwrap()
    );
    let dest = dir.join("files");
    let got = wd.collect(&iso.result_files, &dest, 1 << 20).unwrap().files;
    assert_eq!(got, vec![PathBuf::from("result.out")]);
    assert_eq!(
        std::fs::read_to_string(dest.join("result.out")).unwrap(),
        "r\n"
    );
    assert!(!dest.join("note.txt").exists());
    wd.remove().unwrap();
}

#[test]
fn exit_status_signals_and_accounting_survive_isolation() {
    need_root!();
    let scratch_dir = scratch("acct");
    let dir = scratch_dir.path();
    let (m, _) = run_script(Isolation::default(), "exit 7", dir);
    assert_eq!(m.exit_code, Some(7));
    let (m, _) = run_script(Isolation::default(), "kill -SEGV $$", dir);
    assert_eq!(m.signal, Some(libc_sigsegv()), "{m:?}");
    // 64 MB written to the private /tmp (tmpfs) is charged to the run's memory cgroup; a
    // busy loop is charged as CPU time.
    let (m, out) = run_script(
        Isolation::default(),
        "head -c 64000000 /dev/zero > /tmp/big; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo done",
        dir,
    );
    assert!(m.succeeded(), "{m:?} {out}");
    assert!(m.cpu().as_secs_f64() > 0.05, "{m:?}");
    assert!(
        m.cpu() <= m.wall + std::time::Duration::from_millis(50),
        "{m:?}"
    );
    let peak = m.peak_memory.expect("peak memory under isolation");
    assert!(peak >= 64_000_000, "tmpfs pages charged to the run: {peak}");
    assert_eq!(m.leftover_processes, 0);
}

fn libc_sigsegv() -> i32 {
    11
}

/// Runs `bash -c script` isolated with a hidden `home`; returns the run's result and output.
fn run_with_hidden_home(
    home: &Path,
    script: &str,
    log_dir: &Path,
) -> (anyhow::Result<tare::exec::Measurement>, String) {
    let log = log_dir.join("out.log");
    let mut spec = RunSpec::new(["bash", "-c", script]);
    spec.cwd = Some(PathBuf::from("/"));
    spec.env.retain(|(k, _)| k != "HOME");
    spec.env.push(("HOME".into(), home.into()));
    spec.stdout = Sink::File(log.clone());
    spec.stderr = Sink::File(log.clone());
    spec.isolation = Some(Isolation {
        hide_home: true,
        ..Default::default()
    });
    let m = executor().run(&spec, &AtomicBool::new(false));
    (m, std::fs::read_to_string(&log).unwrap_or_default())
}

#[test]
fn hidden_home_below_tmp_gets_its_mount_point_in_the_private_tmp() {
    need_root!();
    // A home below the host /tmp (as for a clone of the repository in /tmp): its path does
    // not exist in the run's fresh /tmp until tare creates it.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("secret"), "s").unwrap();
    let log_dir = scratch("home-tmp");
    let (m, out) = run_with_hidden_home(
        home.path(),
        "ls -A $HOME | wc -l | sed 's/^/HOMECOUNT=/'; echo w > $HOME/f && echo HOMEW=ok",
        log_dir.path(),
    );
    let m = m.unwrap();
    assert!(m.succeeded(), "{m:?} {out}");
    assert!(out.contains("HOMECOUNT=0"), "{out}");
    assert!(out.contains("HOMEW=ok"), "{out}");
    assert!(!home.path().join("f").exists());
}

#[test]
fn a_failed_setup_step_is_named_not_taken_for_a_missing_program() {
    need_root!();
    // HOME is a file: the tmpfs cannot be mounted on it. The error must say so, not that
    // bash was not found (std passes on only the errno, ENOTDIR).
    let dir = scratch("home-file");
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let (m, _) = run_with_hidden_home(&file, "true", dir.path());
    let e = format!("{:#}", m.unwrap_err());
    assert!(
        e.contains("mounting a private tmpfs on") && e.contains("not-a-dir"),
        "{e}"
    );
    assert!(!e.contains("not found"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn a_program_the_unprivileged_tool_cannot_reach_is_named_before_the_run() {
    need_root!();
    // As root, the isolated tool is an unprivileged host user: a program in a directory of
    // mode 0700 cannot be executed, and tare says why instead of "permission denied".
    let dir = scratch("prog");
    let private = dir.path().join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::copy("/bin/true", private.join("prog")).unwrap();
    std::fs::set_permissions(
        &private,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let mut spec = RunSpec::new([private.join("prog")]);
    spec.cwd = Some(PathBuf::from("/"));
    spec.isolation = Some(Isolation::default());
    let e = format!(
        "{:#}",
        executor().run(&spec, &AtomicBool::new(false)).unwrap_err()
    );
    assert!(
        e.contains("unprivileged user") && e.contains(&format!("chmod o+x {}", private.display())),
        "{e}"
    );
}
