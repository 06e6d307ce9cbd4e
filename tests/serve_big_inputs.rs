//! `{"benchmarks":[{…},0,0,0,…]}`, hundreds of MB of an array of numbers where records belong,
//! past the first 64 KiB: `tare import`, `tare compare`, `tare history add` and the server's
//! upload refuse it with one line as it is read (`results::input::JsonShape`), within a small
//! fraction of its size in memory (issue 44). One test in this file: the peak memory of the
//! children is read with getrusage(RUSAGE_CHILDREN), which no other test's children may raise.

mod serve_support;

use serve_support::*;
use std::io::Write;

/// The largest peak resident memory of the children waited for so far, in kB.
fn children_peak_kb() -> i64 {
    // SAFETY: getrusage writes one rusage struct, which lives for the call.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_CHILDREN and a valid pointer to `ru`.
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) },
        0
    );
    ru.ru_maxrss
}

/// A results-like document: one benchmark padded past the first 64 KiB, then `zeros` zeros.
fn garbage(w: &mut impl Write, zeros: usize) {
    write!(
        w,
        "{{\"schema_version\": 1, \"benchmarks\": [{{\"name\": \"first\", \"pad\": \"{}\"}}",
        "x".repeat(100_000)
    )
    .unwrap();
    let block = ",0".repeat(1 << 16);
    for _ in 0..zeros / (1 << 16) {
        w.write_all(block.as_bytes()).unwrap();
    }
    w.write_all(b"]}").unwrap();
}

#[test]
fn arrays_of_numbers_where_records_belong_are_refused_as_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.json");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    garbage(&mut w, 100 << 20);
    w.flush().unwrap();
    drop(w);
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(size >= 200 << 20, "{size}");
    let f = file.to_str().unwrap();
    let store = dir.path().join("h.sqlite");
    let store = store.to_str().unwrap();
    for args in [
        vec!["import", f],
        vec!["compare", f, f],
        vec!["history", "add", "--store", store, "--no-git", f],
    ] {
        let o = tare().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("\"benchmarks\" holds a number where records (objects) belong"),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        let peak = children_peak_kb();
        eprintln!(
            "{args:?} on {} MB: peak of the children {peak} kB",
            size >> 20
        );
        assert!(peak < 100_000, "{args:?}: a child peaked at {peak} kB");
    }

    // The server: a 60 MB body of it is answered 422 without being parsed into values.
    let token = new_token(store, "ci");
    let srv = Server::start(store, &[]);
    let mut body = Vec::new();
    garbage(&mut body, 30 << 20);
    let hwm = |pid: u32| -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap()
    };
    let before = hwm(srv.pid());
    let (code, v) = post(&srv.at("/api/v1/results"), Some(&token), &body);
    assert_eq!(code, 422, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("where records (objects) belong"),
        "{v}"
    );
    let after = hwm(srv.pid());
    eprintln!(
        "upload of {} MB: server VmHWM {before} kB before, {after} kB after",
        body.len() >> 20
    );
    assert!(
        after < before + 200_000,
        "the server grew from {before} kB to {after} kB for a {} MB body",
        body.len() >> 20
    );
}
