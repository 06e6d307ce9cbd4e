//! The `jmh` harness: a JMH benchmarks jar (the archetype's shaded `benchmarks.jar`), driven
//! inside one JVM per invocation (JMH's `-f 0`: tare owns the process level). A small driver
//! of tare's (`TareJmh.java`, compiled against the jar with `javac` once per session into
//! `TARE_SESSION_DIR`) runs as `java -cp JAR:DIR TareJmh`: it lists the benchmarks and their
//! `@Param` values (`BenchmarkList`), then serves requests on stdin through JMH's `Runner`
//! with forks 0, no warm-up iterations, single-shot mode and a batch of N calls
//! (`-f 0 -wi 0 -bm ss -bs N -i K`): each measurement iteration is a sample of exactly N loops,
//! its time the batch's. Kernels: `Class.method` (the package dropped), its `@Param`s tare
//! parameters whose `values=` are the `@Param` values (every combination measured by default,
//! as JMH does; `-L n 100,1000` picks or adds values, and scans give a complexity class).
//!
//! Limits: JMH's own warm-up and forks are not used (tare's invocations and steady-state
//! detection take their place: the JVM's JIT warms up across an invocation's samples);
//! `@Setup(Level.Iteration)` runs around each sample, `Level.Invocation` around each call as
//! in JMH; the clock is `System.nanoTime`
//! as JMH reads it, taken as 1 ns and free.

use super::{kernel_name, Harness, Kernel, Sample};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The driver's source, compiled against the jar.
const DRIVER: &str = include_str!("TareJmh.java");

pub struct Jmh {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    log: PathBuf,
    kernels: Vec<Kernel>,
    /// JMH's benchmark and `NAME=VALUE` parameters of each kernel.
    runs: Vec<(String, Vec<String>)>,
    version: String,
}

/// A benchmark's `@Param`s and their values, in order.
type Params = Vec<(String, Vec<String>)>;

/// One benchmark listed by the driver: `bench NAME [PARAM=V1,V2 ...]` → (name, params).
fn parse_bench(line: &str) -> Option<(String, Params)> {
    let mut f = line.strip_prefix("bench ")?.split(' ');
    let name = f.next()?.to_string();
    let params = f
        .filter_map(|p| {
            let (k, v) = p.split_once('=')?;
            Some((k.to_string(), v.split(',').map(str::to_string).collect()))
        })
        .collect();
    Some((name, params))
}

/// Every combination of the parameters' values, in order (the first parameter slowest).
fn combinations(params: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, vs) in params {
        out = out
            .into_iter()
            .flat_map(|c| {
                vs.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((k.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    out
}

/// The driver compiled against `jar`, in the session directory where tare names one (once
/// per session), else in `dir`.
fn compile(jar: &Path, dir: &Path) -> Result<PathBuf, String> {
    let session = super::common::session_dir();
    let out = match &session {
        Some(s) => s.join("jmh-driver"),
        None => dir.join("jmh-driver"),
    };
    if out.join("TareJmh.class").is_file() {
        return Ok(out);
    }
    let stage = tempfile::Builder::new()
        .prefix(".jmh-driver-")
        .tempdir_in(session.as_deref().unwrap_or(dir))
        .map_err(|e| format!("cannot make a directory for tare's JMH driver: {e}"))?;
    let src = stage.path().join("TareJmh.java");
    std::fs::write(&src, DRIVER).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let built = Command::new("javac")
        .arg("-cp")
        .arg(jar)
        .arg("-d")
        .arg(stage.path())
        .arg(&src)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run javac: {e}; install a JDK (17 or later)"))?;
    if !built.status.success() {
        return Err(format!(
            "compiling tare's JMH driver against {} failed (is it a JMH benchmarks jar?): {}",
            jar.display(),
            super::last_line(&built)
        ));
    }
    // Renamed whole into place: a later worker sees a complete driver or none.
    let staged = stage.keep();
    if std::fs::rename(&staged, &out).is_err() {
        return Ok(staged);
    }
    Ok(out)
}

impl Jmh {
    pub fn start(jar: &Path, args: &[String], dir: &Path) -> Result<Jmh, String> {
        if !jar.is_file() {
            return Err(format!("no JMH benchmarks jar {}", jar.display()));
        }
        let driver = compile(jar, dir)?;
        let java = Command::new("java")
            .arg("-version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run java: {e}; install a JDK (17 or later)"))?;
        let version = String::from_utf8_lossy(&java.stderr)
            .lines()
            .next()
            .unwrap_or("java")
            .trim()
            .to_string();
        let mut cp = jar.as_os_str().to_owned();
        cp.push(":");
        cp.push(driver.as_os_str());
        let log = dir.join("jmh.log");
        let log_file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        // JMH refuses to run while another JMH on the machine holds /tmp/jmh.lock: another
        // tare session's JVM, a JMH run of someone else's. tare does not lean on that lock (it
        // runs one program at a time and records what else used the worker's cores, as
        // "interfered with"), so a second session measures and says so instead of failing.
        let mut child = Command::new("java")
            .arg("-Djmh.ignoreLock=true")
            .args(args)
            .arg("-cp")
            .arg(cp)
            .arg("TareJmh")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("cannot run java: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("cannot talk to the JVM".into());
        };
        let mut j = Jmh {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            log,
            kernels: Vec::new(),
            runs: Vec::new(),
            version,
        };
        loop {
            let line = j.line()?;
            if line == "ready" {
                break;
            }
            let Some((name, params)) = parse_bench(&line) else {
                continue;
            };
            let short = name.rsplit('.').take(2).collect::<Vec<_>>();
            let short = format!("{}.{}", short.get(1).unwrap_or(&""), short[0]);
            // One kernel per benchmark, its `@Param`s as parameters: each combination of
            // values an entry (`Kernel.params`), all of them announced as the parameter's
            // `values=` and measured by default, as JMH runs them.
            let mut k = kernel_name(&short);
            // Another class's method of the same name (in another package): a name of its own.
            if j.kernels
                .iter()
                .zip(&j.runs)
                .any(|(x, r)| x.name == k && r.0 != name)
            {
                k = format!("{k}.{}", j.kernels.len());
            }
            for c in combinations(&params) {
                let shown: Vec<String> = c.iter().map(|(p, v)| format!("{p}={v}")).collect();
                let named: Vec<(String, String)> =
                    c.iter().map(|(p, v)| (kernel_name(p), v.clone())).collect();
                j.kernels.push(Kernel {
                    name: k.clone(),
                    doc: format!("JMH {name}"),
                    params: named,
                });
                j.runs.push((name.clone(), shown));
            }
        }
        if j.kernels.is_empty() {
            return Err(format!("{} has no JMH benchmarks", jar.display()));
        }
        Ok(j)
    }

    /// The driver's next line; where the JVM ended instead, its last line of output.
    fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(n) if n > 0 => Ok(line.trim_end().to_string()),
            _ => Err(self.ended()),
        }
    }

    fn ended(&self) -> String {
        let log = std::fs::read(&self.log).unwrap_or_default();
        let last = crate::exec::capture::last_lines(&log, 1);
        format!(
            "the JVM ended: {}",
            if last.is_empty() { "no output" } else { &last }
        )
    }
}

/// The driver's reply to a run: each iteration's batch time in ns.
fn parse_reply(line: &str) -> Result<Vec<f64>, String> {
    if let Some(e) = line.strip_prefix("error ") {
        return Err(e.to_string());
    }
    let rest = line
        .strip_prefix("ok")
        .ok_or_else(|| format!("tare's JMH driver said '{line}'"))?;
    rest.split_whitespace()
        .map(|w| w.parse::<f64>().map_err(|_| format!("not a time: {w}")))
        .collect()
}

impl Drop for Jmh {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Harness for Jmh {
    fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    fn about(&self) -> Option<String> {
        Some(format!("JMH, {}", self.version))
    }

    /// Values JMH's `@Param` did not list are JMH's to take (`-p NAME=VALUE`): a new entry
    /// with them (a value with a space or none cannot go into the driver's request line).
    fn extend(&mut self, like: usize, params: &[(String, String)]) -> Option<usize> {
        let base = self.kernels.get(like)?;
        let (name, shown) = self.runs.get(like)?.clone();
        if params
            .iter()
            .any(|(_, v)| v.is_empty() || v.contains(char::is_whitespace))
        {
            return None;
        }
        let shown: Vec<String> = shown
            .iter()
            .map(|s| {
                let raw = s.split_once('=').map_or(s.as_str(), |(p, _)| p);
                match params.iter().find(|(p, _)| *p == kernel_name(raw)) {
                    Some((_, v)) => format!("{raw}={v}"),
                    None => s.clone(),
                }
            })
            .collect();
        let kernel = Kernel {
            name: base.name.clone(),
            doc: base.doc.clone(),
            params: params.to_vec(),
        };
        self.kernels.push(kernel);
        self.runs.push((name, shown));
        Some(self.kernels.len() - 1)
    }

    fn run(&mut self, index: usize, loops: u64, reps: u64) -> Result<Vec<Sample>, String> {
        if loops > i32::MAX as u64 || reps > i32::MAX as u64 {
            return Err(format!("JMH takes at most {} loops a sample", i32::MAX));
        }
        let (name, params) = &self.runs[index];
        let mut req = format!("{name} {loops} {reps}");
        for p in params {
            req.push(' ');
            req.push_str(p);
        }
        if writeln!(self.stdin, "{req}").is_err() {
            return Err(self.ended());
        }
        let times = parse_reply(&self.line()?)?;
        Ok(times
            .into_iter()
            .map(|ns| Sample {
                loops,
                ns: ns.round() as u64,
                cpu_ns: None,
                bytes: None,
                items: None,
                metrics: Default::default(),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_replies() {
        let (n, p) = parse_bench("bench a.B.sum size=256,4096 kind=x").unwrap();
        assert_eq!(n, "a.B.sum");
        let c = combinations(&p);
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[1],
            [("size".into(), "4096".into()), ("kind".into(), "x".into())]
        );
        assert_eq!(combinations(&[]), [Vec::<(String, String)>::new()]);
        assert_eq!(parse_bench("ready"), None);
        assert_eq!(
            parse_reply("ok 94978.0 2.4094001E7").unwrap(),
            [94978.0, 2.4094001e7]
        );
        assert_eq!(
            parse_reply("error No benchmarks").unwrap_err(),
            "No benchmarks"
        );
        assert!(parse_reply("what").is_err());
    }
}
