//! Export paths are written as a shell's `>` would (issue 23): a regular file is replaced
//! atomically, a character device or FIFO is written in place and stays what it is, `-` is
//! standard output, a symbolic link planted by another user is refused before the first run,
//! and two outputs of one session naming the same file are refused. Every format is tried.
//! `--output FILE` (the commands' own output) is opened by the journal's rules: no link planted by
//! another user, no file of another user or with other hard links, a device or FIFO in place.
//! Devices, FIFOs and links are made in a temporary directory, never the machine's /dev.

mod common;
#[path = "common/skip.rs"]
mod skip;

use common::nodes::{mkfifo, mknod_char};
use common::{is_root, tare};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::process::Output;

const FORMATS: [&str; 6] = [
    "--export-json",
    "--export-csv",
    "--export-markdown",
    "--export-asciidoc",
    "--export-orgmode",
    "--export-html",
];

fn run_with(option: &str, path: &Path) -> Output {
    tare()
        .args(["run", "--style", "none", "--runs", "2", "--warmup", "0"])
        .arg(option)
        .arg(path)
        .args(["--", "true"])
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_null_device_stays_a_device_in_every_format() {
    if !is_root() {
        return skip::skip("root", "mknod needs CAP_MKNOD; run the tests as root");
    }
    let d = tempfile::tempdir().unwrap();
    let null = d.path().join("null");
    mknod_char(&null, 1, 3).expect("mknod");
    for option in FORMATS {
        let o = run_with(option, &null);
        assert_eq!(o.status.code(), Some(0), "{option}: {}", stderr(&o));
        let m = std::fs::symlink_metadata(&null).unwrap();
        assert!(
            m.file_type().is_char_device(),
            "{option} replaced the device"
        );
        assert_eq!(m.rdev(), libc::makedev(1, 3), "{option}");
    }
    // Nothing else was left in the directory: no journal, no temporary file.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
}

#[test]
fn a_full_device_stays_a_device_and_the_session_exits_3_naming_it() {
    if !is_root() {
        return skip::skip("root", "mknod needs CAP_MKNOD; run the tests as root");
    }
    let d = tempfile::tempdir().unwrap();
    let full = d.path().join("full");
    mknod_char(&full, 1, 7).expect("mknod");
    for option in FORMATS {
        let o = run_with(option, &full);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{option}: {err}");
        assert!(err.contains(&full.display().to_string()), "{option}: {err}");
        assert!(
            std::fs::symlink_metadata(&full)
                .unwrap()
                .file_type()
                .is_char_device(),
            "{option} replaced the device"
        );
    }
}

#[test]
fn a_fifo_is_written_through_and_stays_a_fifo() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("pipe");
    mkfifo(&fifo);
    for option in FORMATS {
        let reader = {
            let p = fifo.clone();
            std::thread::spawn(move || std::fs::read(&p).unwrap())
        };
        let o = run_with(option, &fifo);
        assert_eq!(o.status.code(), Some(0), "{option}: {}", stderr(&o));
        let got = String::from_utf8(reader.join().unwrap()).unwrap();
        assert!(got.contains("true"), "{option} sent {got:?}");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }
}

#[test]
fn a_dash_is_standard_output_in_every_format() {
    let d = tempfile::tempdir().unwrap();
    for option in FORMATS {
        let o = tare()
            .current_dir(d.path())
            .args(["run", "--style", "none", "--runs", "2", "--warmup", "0"])
            .args([option, "-", "--", "true"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{option}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("true"), "{option}: stdout {out:?}");
        assert!(
            !d.path().join("-").exists(),
            "{option} wrote a file named -"
        );
    }
    let o = tare()
        .current_dir(d.path())
        .args(["run", "--style", "none", "--runs", "2", "--warmup", "0"])
        .args(["--export-json", "-", "--", "true"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["benchmarks"][0]["runs"].as_array().unwrap().len(), 2);
}

#[test]
fn a_link_of_another_user_is_refused_before_any_run_and_its_target_kept() {
    if !is_root() {
        return skip::skip(
            "root",
            "lchown to another user needs root; run the tests as root",
        );
    }
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let link = d.path().join("r.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    let marker = d.path().join("ran");
    for option in FORMATS {
        let o = tare()
            .args(["run", "--style", "none", "--runs", "1", "--warmup", "0"])
            .arg(option)
            .arg(&link)
            .arg(format!("touch {}", marker.display()))
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{option}: {err}");
        assert!(err.contains("symbolic link owned by uid 65534"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!marker.exists(), "{option}: a run started");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }
    // A link of one's own is followed, and stays a link.
    let mine = d.path().join("latest.json");
    std::os::unix::fs::symlink(&victim, &mine).unwrap();
    let o = run_with("--export-json", &mine);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&victim)
        .unwrap()
        .contains("\"benchmarks\""));
    assert!(std::fs::symlink_metadata(&mine)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn two_exports_to_one_file_are_refused_before_any_run() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r.out");
    let marker = d.path().join("ran");
    let o = tare()
        .current_dir(d.path())
        .args(["run", "--style", "none", "--runs", "1"])
        .arg("--export-json")
        .arg(&r)
        .args(["--export-csv", "./r.out"])
        .arg(format!("touch {}", marker.display()))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--export-json and --export-csv both write"),
        "{err}"
    );
    assert!(!marker.exists() && !r.exists());
}

#[test]
fn a_directory_or_a_socket_is_refused_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let o = run_with("--export-csv", d.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    let s = d.path().join("sock");
    let _l = std::os::unix::net::UnixListener::bind(&s).unwrap();
    let o = run_with("--export-json", &s);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("socket"), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&s)
        .unwrap()
        .file_type()
        .is_socket());
}

#[test]
fn a_second_running_session_writing_the_same_export_refuses_at_once() {
    let d = tempfile::tempdir().unwrap();
    let csv = d.path().join("shared.csv");
    let journal = d.path().join("a.json.journal");
    let mut first = tare()
        .args(["run", "--style", "none", "--runs", "200", "--export-json"])
        .arg(d.path().join("a.json"))
        .arg("--export-csv")
        .arg(&csv)
        .args(["--", "sleep", "0.02"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The first session has passed its checks once its journal exists.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !journal.exists() {
        assert!(std::time::Instant::now() < deadline, "no journal");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Through another spelling of the same path, too.
    let o = tare()
        .current_dir(d.path())
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "2",
            "--export-json",
            "b.json",
        ])
        .args(["--export-csv", "./shared.csv", "true"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("another running tare session"), "{err}");
    assert!(!d.path().join("b.json").exists());
    assert!(first.wait().unwrap().success());
    // Once the first has finished, the path is free again.
    let o = tare()
        .current_dir(d.path())
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "2",
            "--export-csv",
            "shared.csv",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_summary_lost_to_a_full_stdout_is_not_exit_0() {
    if !is_root() {
        return skip::skip("root", "mknod needs CAP_MKNOD; run the tests as root");
    }
    let d = tempfile::tempdir().unwrap();
    let full = d.path().join("full");
    mknod_char(&full, 1, 7).expect("mknod");
    let json = d.path().join("r.json");
    let o = tare()
        .args(["run", "--runs", "2", "--warmup", "0", "--export-json"])
        .arg(&json)
        .arg("true")
        .stdout(std::fs::OpenOptions::new().write(true).open(&full).unwrap())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("summary could not be written"), "{err}");
    // The runs are kept in the export.
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["benchmarks"][0]["runs"].as_array().unwrap().len(), 2);
}

/// `tare run --output FILE` of `cmd` (through sh) with `runs` runs, in `dir`; killed after
/// `limit` (a hang is a failure, not a stuck test).
fn run_output(dir: &Path, output: &str, runs: u32, cmd: &str, limit: u64) -> Output {
    use std::time::{Duration, Instant};
    let child = tare()
        .current_dir(dir)
        .args(["run", "--style", "none", "--warmup", "0", "-S", "sh"])
        .args(["--runs", &runs.to_string(), "--output", output, cmd])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(limit);
    let watchdog = std::thread::spawn(move || {
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            // Stop once the child is gone (its /proc entry is reaped by wait_with_output).
            if !Path::new(&format!("/proc/{pid}")).exists() {
                return false;
            }
        }
        // SAFETY: kill(2) with a pid this test started and has not reaped yet.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        true
    });
    let o = child.wait_with_output().unwrap();
    assert!(
        !watchdog.join().unwrap(),
        "tare --output {output} ran past {limit} s: {}",
        stderr(&o)
    );
    o
}

#[test]
fn an_output_file_with_other_hard_links_or_of_another_user_is_refused_before_any_run() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::hard_link(&victim, d.path().join("out.log")).unwrap();
    let o = run_output(d.path(), "out.log", 2, "echo HELLO; touch ran", 120);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("out.log")
            && err.contains("2 hard links")
            && err.contains("choose another path"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!d.path().join("ran").exists(), "a run started");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");

    if !is_root() {
        return skip::skip(
            "root",
            "chown to another user needs root; run the tests as root",
        );
    }
    let theirs = d.path().join("theirs.log");
    std::fs::write(&theirs, "theirs\n").unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let o = run_output(d.path(), "theirs.log", 2, "echo HELLO; touch ran", 120);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("theirs.log") && err.contains("uid 65534"),
        "{err}"
    );
    assert!(!d.path().join("ran").exists(), "a run started");
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "theirs\n");
    // One's own file is appended to, run after run.
    let o = run_output(d.path(), "mine.log", 2, "echo HELLO", 120);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mine = std::fs::read_to_string(d.path().join("mine.log")).unwrap();
    assert_eq!(mine.matches("HELLO").count(), 2, "{mine:?}");
}

#[test]
fn an_output_link_or_hard_link_put_in_place_between_runs_is_not_written_through() {
    if !is_root() {
        return skip::skip(
            "root",
            "lchown to another user needs root; run the tests as root",
        );
    }
    // The command itself plays the other user: after the first run it replaces the output
    // file by a link (owned by nobody) or a hard link to a victim. tare opens the output
    // again for every run, and must not follow either.
    for (name, swap) in [
        (
            "sym.log",
            "ln -s victim sym.log; chown -h 65534:65534 sym.log",
        ),
        ("hard.log", "ln victim hard.log"),
    ] {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let cmd =
            format!("echo HELLO; [ -e swapped ] || {{ rm -f {name}; {swap}; touch swapped; }}");
        let o = run_output(d.path(), name, 3, &cmd, 120);
        let err = stderr(&o);
        assert_ne!(o.status.code(), Some(0), "{name}: {err}");
        assert!(err.contains(name), "{name}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: {err}");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "precious\n",
            "{name}: tare wrote through to the victim"
        );
    }
}

#[test]
fn an_output_device_or_fifo_is_written_in_place_and_a_fifo_without_reader_is_not_waited_for_forever(
) {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    mkfifo(&fifo);
    // One reader, open (non-blocking) for the whole session, so every run finds it.
    let reader = {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        std::thread::spawn(move || {
            use std::io::Read;
            let mut got = Vec::new();
            let end = std::time::Instant::now() + std::time::Duration::from_secs(120);
            while !got.ends_with(b"HELLO\nHELLO\n") && std::time::Instant::now() < end {
                let mut buf = [0u8; 4096];
                match f.read(&mut buf) {
                    Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                    _ => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
            String::from_utf8_lossy(&got).into_owned()
        })
    };
    let o = run_output(d.path(), "fifo", 2, "echo HELLO", 120);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(reader.join().unwrap(), "HELLO\nHELLO\n");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    // Nobody reads: the run is refused after tare's FIFO wait (30 s), naming the FIFO.
    let o = run_output(d.path(), "fifo", 1, "touch ran", 120);
    let err = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("fifo") && err.contains("FIFO for reading"),
        "{err}"
    );
    assert!(!d.path().join("ran").exists(), "the run started");

    if !is_root() {
        return skip::skip("root", "mknod needs CAP_MKNOD; run the tests as root");
    }
    // Not named `null`, which --output reads as "discard".
    let null = d.path().join("zero");
    mknod_char(&null, 1, 3).expect("mknod");
    let o = run_output(d.path(), "zero", 2, "echo HELLO", 120);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = std::fs::symlink_metadata(&null).unwrap();
    assert!(m.file_type().is_char_device(), "the device was replaced");
    assert_eq!(m.rdev(), libc::makedev(1, 3));
}

#[test]
fn a_lock_directory_planted_by_another_user_in_tmp_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    if !is_root()
        || std::process::Command::new("runuser")
            .arg("--help")
            .output()
            .is_err()
    {
        return skip::skip(
            "root and runuser",
            "run the tests as root (sudo -E cargo test); apt-get install util-linux",
        );
    }
    let (_bin_dir, bin) = common::tare_for_everyone();
    // A shared temporary directory (mode 1777, like /tmp) where "another user" (root here)
    // made /tmp/tare-65534 first: a link to a folder of theirs, in which cores/.lock leads to
    // a file of nobody's. Before, nobody's tare created its lock files in that folder and
    // truncated the file through the link.
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    std::fs::set_permissions(t, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let theirs = t.join("theirs");
    std::fs::create_dir_all(theirs.join("cores")).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(theirs.join("cores"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let home = t.join("home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
    let victim = home.join("victim");
    std::fs::write(&victim, "nobody's data\n").unwrap();
    std::os::unix::fs::chown(&victim, Some(65534), Some(65534)).unwrap();
    std::os::unix::fs::symlink(&victim, theirs.join("cores/.lock")).unwrap();
    std::os::unix::fs::symlink(&theirs, t.join("tare-65534")).unwrap();
    let run = || {
        std::process::Command::new("runuser")
            .args(["-u", "nobody", "--", "env", "XDG_RUNTIME_DIR="])
            .arg(format!("TMPDIR={}", t.display()))
            .arg(&bin)
            .args(["run", "--style", "none", "--runs", "2", "--cores", "1"])
            .arg("--export-json")
            .arg(home.join("r.json"))
            .arg("true")
            .current_dir("/")
            .output()
            .unwrap()
    };
    let o = run();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("tare-65534") && err.contains("symbolic link"),
        "says why the lock directory is not used: {err}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "nobody's data\n");
    let names: Vec<_> = std::fs::read_dir(&theirs)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec!["cores"], "tare wrote into the planted folder");

    // Without the link, tare makes its own directory: mode 0700, nobody's.
    std::fs::remove_file(t.join("tare-65534")).unwrap();
    let o = run();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("lock directory"), "{}", stderr(&o));
    let m = std::fs::symlink_metadata(t.join("tare-65534")).unwrap();
    assert!(m.is_dir());
    assert_eq!(m.uid(), 65534);
    assert_eq!(m.mode() & 0o777, 0o700);
}
