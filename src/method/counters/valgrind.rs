//! Counts by simulation where no PMU counts them (VMs, CI runners): each run is started under
//! `valgrind --tool=callgrind --trace-children=yes`, which writes one output file per process
//! of the tree (and one per dump) into a private directory tare made for the run; their
//! summaries are summed into tare's counter values.
//!
//! What is counted: every guest instruction of every traced process of the command, from its
//! first instruction (the dynamic loader) to its exit, a shell of `--shell` included;
//! Valgrind's own start-up and tare's work are outside the count (they are not guest code).
//! Not counted: setuid programs (Valgrind cannot trace them), the few instructions a forked
//! child runs between `fork` and `exec`, and kernel work (system calls are one instruction).
//!
//! Forks: a process forked without `exec` inherits its parent's counts so far. Callgrind is
//! told to dump and zero its counts when a process enters `fork` (`--dump-before`,
//! `--zero-before`), so every instruction is in exactly one dump; what runs inside `fork`
//! before the system call (fork handlers, a few hundred instructions) is counted in both.
//!
//! The events (see [`EVENTS`]) and the estimated cycles:
//! `cycles-estimate = L1 hits + 5 · LL hits + 35 · RAM accesses` over instruction fetches and
//! data reads and writes, from Callgrind's cache simulation (the weights of iai and of
//! "consistent benchmarking in CI"). It models a two-level cache (first level split into
//! instruction and data caches of the host's sizes, a unified last level) with fixed
//! latencies; it does not model out-of-order execution, instruction latencies and ports,
//! prefetchers, TLBs, branch mispredictions, frequency, other cores or I/O.

use super::CounterValue;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// The events Valgrind counts, as `--counters` names them.
pub const EVENTS: &[&str] = &[
    "instructions",
    "cycles-estimate",
    "l1-misses",
    "ll-misses",
    "branches",
    "branch-misses",
];

/// Events only Valgrind counts (perf has no event of that name).
pub const ONLY_VALGRIND: &[&str] = &["cycles-estimate", "l1-misses", "ll-misses"];

/// Prefix of Callgrind's output files in the run's directory (`cg.PID`, `cg.PID.N`).
const OUT_PREFIX: &str = "cg.";

/// Functions at whose entry Callgrind dumps and zeroes (see the module comment).
const FORKS: &[&str] = &["fork", "__libc_fork", "__fork", "vfork"];

/// Whether every event is one Valgrind counts.
pub fn counts_all(events: &[String]) -> bool {
    events.iter().all(|e| EVENTS.contains(&e.as_str()))
}

fn needs_cache_sim(events: &[String]) -> bool {
    events
        .iter()
        .any(|e| matches!(e.as_str(), "cycles-estimate" | "l1-misses" | "ll-misses"))
}

fn needs_branch_sim(events: &[String]) -> bool {
    events
        .iter()
        .any(|e| matches!(e.as_str(), "branches" | "branch-misses"))
}

/// Valgrind's options for `events`, output going into `dir`.
fn options(events: &[String], dir: &Path) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["--tool=callgrind".into(), "--trace-children=yes".into()];
    let mut out = dir.as_os_str().to_os_string();
    out.push(format!("/{OUT_PREFIX}%p"));
    let mut log = dir.as_os_str().to_os_string();
    log.push("/log.%p");
    let mut o = OsString::from("--callgrind-out-file=");
    o.push(out);
    v.push(o);
    let mut l = OsString::from("--log-file=");
    l.push(log);
    v.push(l);
    for f in FORKS {
        v.push(format!("--dump-before={f}").into());
        v.push(format!("--zero-before={f}").into());
    }
    if needs_cache_sim(events) {
        v.push("--cache-sim=yes".into());
    }
    if needs_branch_sim(events) {
        v.push("--branch-sim=yes".into());
    }
    v
}

/// The function of the C client (and the C++ client over it) and of the Rust client that holds
/// a kernel's timed region (`clients/c/tare_worker.h`, `clients/rust/src/lib.rs`).
pub const TIMED_REGION: &str = "tare_timed_region";

/// A `tare kernels` worker's `argv` run under Valgrind counting `events` in its timed region
/// only: collection on inside [`TIMED_REGION`] (`--toggle-collect`) and one dump at each of its
/// returns (`--dump-after`), so dump N of the worker holds its Nth repetition's loops and
/// nothing else (not setup, init, clock reads or the protocol).
pub fn wrap_kernel(
    valgrind: &str,
    argv: &[OsString],
    events: &[String],
    dir: &Path,
) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![valgrind.into()];
    v.extend(
        options(events, dir)
            .into_iter()
            .filter(|o| !o.to_string_lossy().contains("-before=")),
    );
    v.push("--collect-atstart=no".into());
    v.push(format!("--toggle-collect={TIMED_REGION}").into());
    v.push(format!("--dump-after={TIMED_REGION}").into());
    v.push("--".into());
    v.extend(argv.iter().cloned());
    v
}

/// The totals of dump `n` (`cg.PID.n`) in `dir`; None where there is none, or where several
/// processes wrote one of that number (which of them is the worker is unknown).
pub fn dump(dir: &Path, n: u64) -> Option<Vec<(String, u64)>> {
    let mut found = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((pid, k)) = name
            .strip_prefix(OUT_PREFIX)
            .and_then(|rest| rest.split_once('.'))
        else {
            continue;
        };
        if pid.bytes().all(|b| b.is_ascii_digit()) && k.parse::<u64>().ok() == Some(n) {
            if found.is_some() {
                return None;
            }
            found = Some(parse_totals(&read_private(&e.path()).ok()?)?);
        }
    }
    found
}

/// `argv` run under Valgrind counting `events`, its files going into `dir`.
pub fn wrap(valgrind: &str, argv: &[OsString], events: &[String], dir: &Path) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![valgrind.into()];
    v.extend(options(events, dir));
    v.push("--".into());
    v.extend(argv.iter().cloned());
    v
}

/// Checks that Valgrind runs here (by counting `/bin/true`); the error says what to do.
pub fn probe(valgrind: &str, events: &[String]) -> Result<(), String> {
    let dir = tempfile::Builder::new()
        .prefix("tare-counters-")
        .tempdir()
        .map_err(|e| format!("cannot make a temporary directory ({e}); check TMPDIR"))?;
    let argv = wrap(valgrind, &["/bin/true".into()], events, dir.path());
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| {
            format!("cannot run '{valgrind}' ({e}); install valgrind or drop --counters")
        })?;
    match collect(dir.path(), events) {
        Ok(v) if out.status.success() && !v.is_empty() => Ok(()),
        r => {
            let why = r.err().unwrap_or_else(|| log_line(dir.path()));
            Err(format!(
                "valgrind could not count /bin/true here ({why}); check `valgrind --tool=callgrind /bin/true`"
            ))
        }
    }
}

/// The first error line of Valgrind's logs in `dir` (for messages).
pub fn log_line(dir: &Path) -> String {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return "no log".into();
    };
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with("log.") {
            continue;
        }
        if let Ok(text) = read_private(&e.path()) {
            if let Some(l) = text
                .lines()
                .map(|l| {
                    l.trim_start_matches(|c: char| c == '=' || c == '-' || c.is_ascii_digit())
                        .trim()
                })
                .find(|l| l.contains("rror") || l.contains("cannot") || l.contains("failed"))
            {
                return l.to_string();
            }
        }
    }
    "no output file was written".into()
}

/// Reads a file of the run's directory: never through a symbolic link (`O_NOFOLLOW`), only a
/// regular file, at most the input limit (the command could have planted anything there).
fn read_private(path: &Path) -> Result<String, String> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let m = f
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !m.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    let limit = crate::results::input::limit().map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    f.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Callgrind's (or Cachegrind's) totals in one output file: its `events:` names with the
/// values of its `summary:` line (`totals:` where there is no summary).
pub fn parse_totals(text: &str) -> Option<Vec<(String, u64)>> {
    let mut events: Option<Vec<String>> = None;
    let mut summary: Option<Vec<u64>> = None;
    let mut totals: Option<Vec<u64>> = None;
    let numbers =
        |s: &str| -> Option<Vec<u64>> { s.split_whitespace().map(|x| x.parse().ok()).collect() };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("events:") {
            events = Some(rest.split_whitespace().map(String::from).collect());
        } else if let Some(rest) = line.strip_prefix("summary:") {
            summary = numbers(rest);
        } else if let Some(rest) = line.strip_prefix("totals:") {
            totals = numbers(rest);
        }
    }
    let (events, values) = (events?, summary.or(totals)?);
    // Trailing zero counts may be left out of a cost line.
    Some(
        events
            .into_iter()
            .enumerate()
            .map(|(i, e)| (e, values.get(i).copied().unwrap_or(0)))
            .collect(),
    )
}

/// Instructions executed in each function itself (Callgrind's self cost of its first event,
/// `Ir`), from one output file: `fn=` starts a function's block (`fn=(ID) NAME` names ID, as
/// `cfn=` does), a cost line adds to it, except the one after `calls=` (the inclusive cost of
/// a call, which is the callee's). Names are summed over a function's blocks.
pub fn function_costs(text: &str) -> Vec<(String, u64)> {
    let mut names: std::collections::HashMap<String, String> = Default::default();
    let mut costs: std::collections::BTreeMap<String, u64> = Default::default();
    let mut current: Option<String> = None;
    let mut skip_next = false;
    let mut name_of = |spec: &str| -> String {
        let spec = spec.trim();
        match spec.strip_prefix('(').and_then(|r| r.split_once(')')) {
            Some((id, rest)) => {
                let rest = rest.trim();
                if rest.is_empty() {
                    names.get(id).cloned().unwrap_or_else(|| format!("({id})"))
                } else {
                    names.insert(id.to_string(), rest.to_string());
                    rest.to_string()
                }
            }
            None => spec.to_string(),
        }
    };
    for line in text.lines() {
        if let Some(spec) = line.strip_prefix("fn=") {
            current = Some(name_of(spec));
        } else if let Some(spec) = line.strip_prefix("cfn=") {
            name_of(spec);
        } else if line.starts_with("calls=") {
            skip_next = true;
        } else if line.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '-' || c == '*')
        {
            if std::mem::take(&mut skip_next) {
                continue;
            }
            let ir = line
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            if let Some(f) = &current {
                *costs.entry(f.clone()).or_default() += ir;
            }
        }
    }
    costs.into_iter().collect()
}

/// The `top` functions by instructions executed in them (self cost), summed over every output
/// file of the run in `dir` (every process and dump), most first.
pub fn top_functions(dir: &Path, top: usize) -> Vec<(String, u64)> {
    let mut sum: std::collections::HashMap<String, u64> = Default::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(OUT_PREFIX) {
            continue;
        }
        if let Ok(text) = read_private(&e.path()) {
            for (f, c) in function_costs(&text) {
                *sum.entry(f).or_default() += c;
            }
        }
    }
    let mut v: Vec<(String, u64)> = sum.into_iter().filter(|(_, c)| *c > 0).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(top);
    v
}

/// Copies the run's Callgrind output files (`cg.PID`, `cg.PID.N`) from its private `dir` into
/// `dest` (made, and its parent), each read as [`collect`] reads it (no link followed). tare
/// runs as root: `dest` and its parent must be real directories (a symlink or a file there is
/// refused, not followed), and each file is made anew (`create_new`: never written through a
/// link someone left in its place).
pub fn keep_outputs(dir: &Path, dest: &Path) -> Result<(), String> {
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        real_dir(parent)?;
    }
    real_dir(dest)?;
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(OUT_PREFIX) {
            continue;
        }
        let text = read_private(&e.path())?;
        let to = dest.join(&name);
        // A leftover (an earlier export's file, or a link put there) is removed, never
        // followed: removing a link removes the link.
        if std::fs::symlink_metadata(&to).is_ok_and(|m| !m.is_dir()) {
            let _ = std::fs::remove_file(&to);
        }
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&to)?
                .write_all(text.as_bytes())
        };
        write().map_err(|e| format!("cannot write {}: {e}", to.display()))?;
    }
    Ok(())
}

/// `p` as a directory of its own: made where missing; an error naming it where something else
/// (a symlink, a file, a device) is there.
fn real_dir(p: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "{} is not a directory (a link or another file is there; tare does not follow it): remove it, or export elsewhere",
            p.display()
        )),
        Err(_) => std::fs::create_dir(p).map_err(|e| format!("cannot make {}: {e}", p.display())),
    }
}

/// tare's events from Valgrind's summed totals (`Ir`, `Dr`, `I1mr`, …).
pub fn values(totals: &[(String, u64)], events: &[String]) -> Vec<CounterValue> {
    let get = |names: &[&str]| -> Option<u64> {
        let mut sum = 0;
        for n in names {
            sum += totals.iter().find(|(e, _)| e == n)?.1;
        }
        Some(sum)
    };
    events
        .iter()
        .map(|e| {
            let value = match e.as_str() {
                "instructions" => get(&["Ir"]),
                "l1-misses" => get(&["I1mr", "D1mr", "D1mw"]),
                "ll-misses" => get(&["ILmr", "DLmr", "DLmw"]),
                "branches" => get(&["Bc", "Bi"]),
                "branch-misses" => get(&["Bcm", "Bim"]),
                "cycles-estimate" => get(&["Ir", "Dr", "Dw"])
                    .zip(get(&["I1mr", "D1mr", "D1mw"]))
                    .zip(get(&["ILmr", "DLmr", "DLmw"]))
                    .map(|((accesses, l1), ll)| cycles_estimate(accesses, l1, ll)),
                _ => None,
            };
            CounterValue::exact(e, value.map(|v| v as f64), "")
        })
        .collect()
}

/// Estimated cycles from `accesses` (instruction fetches, data reads and writes), first-level
/// misses `l1` and last-level misses `ll`: L1 hits + 5 · LL hits + 35 · RAM accesses.
pub fn cycles_estimate(accesses: u64, l1: u64, ll: u64) -> u64 {
    let ram = ll;
    let ll_hits = l1.saturating_sub(ll);
    let l1_hits = accesses.saturating_sub(l1);
    l1_hits + 5 * ll_hits + 35 * ram
}

/// The run's counts: the totals of every output file in `dir`, summed (every process of the
/// tree and every dump). An error when no file has any.
pub fn collect(dir: &Path, events: &[String]) -> Result<Vec<CounterValue>, String> {
    let mut sum: Vec<(String, u64)> = Vec::new();
    let mut files = 0;
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(OUT_PREFIX) {
            continue;
        }
        let text = read_private(&e.path())?;
        let Some(totals) = parse_totals(&text) else {
            return Err(format!(
                "{} has no totals (a process killed before it could write them?)",
                e.path().display()
            ));
        };
        files += 1;
        for (name, v) in totals {
            match sum.iter_mut().find(|(n, _)| *n == name) {
                Some(s) => s.1 += v,
                None => sum.push((name, v)),
            }
        }
    }
    if files == 0 {
        return Err(log_line(dir));
    }
    Ok(values(&sum, events))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn totals_are_parsed_and_mapped() {
        let text = "version: 1\ncmd: ./a\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n\
                    fn=main\n1 5 2\nsummary: 1000 300 200 10 20 5 4 6 1\ntotals: 999 300 200 10 20 5 4 6 1\n";
        let t = parse_totals(text).unwrap();
        assert_eq!(t[0], ("Ir".to_string(), 1000));
        assert_eq!(t[7], ("DLmr".to_string(), 6));
        let v = values(
            &t,
            &ev(&[
                "instructions",
                "l1-misses",
                "ll-misses",
                "cycles-estimate",
                "branches",
            ]),
        );
        assert_eq!(v[0].value, Some(1000.0));
        assert_eq!(v[1].value, Some(35.0));
        assert_eq!(v[2].value, Some(11.0));
        // 1500 accesses, 35 L1 misses of which 11 went to RAM: 1465 + 5·24 + 35·11.
        assert_eq!(v[3].value, Some((1465 + 120 + 385) as f64));
        assert_eq!(v[4].value, None);
        assert_eq!(v[4].status, "not-counted");
    }

    #[test]
    fn self_costs_leave_out_calls() {
        let text = "events: Ir\nfn=(1) main\n0 8\ncfn=(2) strtol\ncalls=1 106\n0 201\n+2 5\n\
                    fn=(2)\n106 201\nfn=(1)\n*  3\n";
        let f = function_costs(text);
        assert_eq!(f, vec![("main".into(), 16), ("strtol".into(), 201)]);
    }

    #[test]
    fn a_file_without_totals_is_none() {
        assert!(parse_totals("events: Ir\nfn=main\n1 5\n").is_none());
        assert_eq!(parse_totals("events: Ir Dr\nsummary: 7\n").unwrap()[1].1, 0);
    }

    #[test]
    fn wraps_with_private_outputs() {
        let v = wrap(
            "valgrind",
            &["prog".into()],
            &ev(&["instructions"]),
            Path::new("/d"),
        );
        let s: Vec<String> = v.iter().map(|x| x.to_string_lossy().into()).collect();
        assert!(s.contains(&"--callgrind-out-file=/d/cg.%p".to_string()));
        assert!(s.contains(&"--trace-children=yes".to_string()));
        assert!(!s.contains(&"--cache-sim=yes".to_string()));
        assert_eq!(&s[s.len() - 2..], ["--", "prog"]);
        let v = wrap(
            "valgrind",
            &["p".into()],
            &ev(&["cycles-estimate"]),
            Path::new("/d"),
        );
        assert!(v.contains(&"--cache-sim=yes".into()));
    }

    #[test]
    fn planted_links_are_not_followed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("target"), "events: Ir\nsummary: 5\n").unwrap();
        std::os::unix::fs::symlink(d.path().join("target"), d.path().join("cg.1")).unwrap();
        assert!(collect(d.path(), &ev(&["instructions"])).is_err());
        std::fs::remove_file(d.path().join("cg.1")).unwrap();
        std::fs::write(d.path().join("cg.1"), "events: Ir\nsummary: 5\n").unwrap();
        std::fs::write(d.path().join("cg.2.1"), "events: Ir\nsummary: 7\n").unwrap();
        let v = collect(d.path(), &ev(&["instructions"])).unwrap();
        assert_eq!(v[0].value, Some(12.0));
    }
}
