//! Parsers for the /proc files the machine layer reads: `stat`, `meminfo`, `loadavg`,
//! `pressure/*`, `cpuinfo`.
//!
//! For: turning file contents into numbers, defensively (odd lines are skipped, never a panic).
//! Not for: reading files (see [`super::sysfs`]) or judging the numbers (see
//! [`super::inventory`], [`super::probe`]).

use serde::{Deserialize, Serialize};

/// Clock ticks of one `/proc/stat` line (units: USER_HZ ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// Ticks the CPU spent running something: user, nice, system, irq, softirq. Guest time is
    /// already inside user/nice; steal (the vCPU was not running) and iowait (idle) are not busy.
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }
    /// All ticks, steal included.
    pub fn total(&self) -> u64 {
        self.busy() + self.idle + self.iowait + self.steal
    }
    /// Field-wise difference `self - earlier`, saturating at 0 (counters can go backwards on
    /// CPU hotplug).
    pub fn since(&self, earlier: &CpuTicks) -> CpuTicks {
        CpuTicks {
            user: self.user.saturating_sub(earlier.user),
            nice: self.nice.saturating_sub(earlier.nice),
            system: self.system.saturating_sub(earlier.system),
            idle: self.idle.saturating_sub(earlier.idle),
            iowait: self.iowait.saturating_sub(earlier.iowait),
            irq: self.irq.saturating_sub(earlier.irq),
            softirq: self.softirq.saturating_sub(earlier.softirq),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }
    pub fn add(&mut self, o: &CpuTicks) {
        self.user += o.user;
        self.nice += o.nice;
        self.system += o.system;
        self.idle += o.idle;
        self.iowait += o.iowait;
        self.irq += o.irq;
        self.softirq += o.softirq;
        self.steal += o.steal;
    }
}

/// What `/proc/stat` says about CPUs and runnable threads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProcStat {
    /// The aggregate `cpu` line.
    pub total: CpuTicks,
    /// `cpuN` lines: (N, ticks). Offline CPUs have no line.
    pub per_cpu: Vec<(usize, CpuTicks)>,
    pub procs_running: Option<u64>,
    pub procs_blocked: Option<u64>,
}

fn parse_ticks<'a>(mut fields: impl Iterator<Item = &'a str>) -> CpuTicks {
    let mut next = || {
        fields
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    CpuTicks {
        user: next(),
        nice: next(),
        system: next(),
        idle: next(),
        iowait: next(),
        irq: next(),
        softirq: next(),
        steal: next(),
    }
}

/// Parses `/proc/stat`.
pub fn parse_proc_stat(s: &str) -> ProcStat {
    let mut out = ProcStat::default();
    for line in s.lines() {
        let mut f = line.split_ascii_whitespace();
        let Some(key) = f.next() else { continue };
        if key == "cpu" {
            out.total = parse_ticks(f);
        } else if let Some(n) = key.strip_prefix("cpu") {
            if let Ok(n) = n.parse::<usize>() {
                out.per_cpu.push((n, parse_ticks(f)));
            }
        } else if key == "procs_running" {
            out.procs_running = f.next().and_then(|v| v.parse().ok());
        } else if key == "procs_blocked" {
            out.procs_blocked = f.next().and_then(|v| v.parse().ok());
        }
    }
    out
}

/// Sums the `cpuN` lines of `/proc/stat` for the CPUs in `cpus` (all CPUs when empty) without
/// allocating; also returns how many of them had a line.
pub fn sum_cpu_ticks(s: &str, cpus: &[usize]) -> (CpuTicks, usize) {
    let mut sum = CpuTicks::default();
    let mut found = 0;
    for line in s.lines() {
        if !line.starts_with("cpu") {
            if found > 0 {
                break; // the cpu lines come first
            }
            continue;
        }
        let mut f = line.split_ascii_whitespace();
        let Some(key) = f.next() else { continue };
        let Ok(n) = key[3..].parse::<usize>() else {
            continue;
        };
        if cpus.is_empty() || cpus.contains(&n) {
            sum.add(&parse_ticks(f));
            found += 1;
        }
    }
    (sum, found)
}

/// A `/proc/meminfo` field in bytes (the file says kB, meaning KiB).
pub fn meminfo_bytes(s: &str, key: &str) -> Option<u64> {
    for line in s.lines() {
        if let Some(rest) = line.strip_prefix(key) {
            let rest = rest.strip_prefix(':')?;
            let mut f = rest.split_ascii_whitespace();
            let n: u64 = f.next()?.parse().ok()?;
            return Some(match f.next() {
                Some("kB") => n * 1024,
                _ => n,
            });
        }
    }
    None
}

/// `/proc/loadavg`: 1, 5 and 15 minute load averages, runnable and total threads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoadAvg {
    pub one: f64,
    pub five: f64,
    pub fifteen: f64,
    /// Currently runnable threads (including the reader).
    pub runnable: Option<u64>,
    pub threads: Option<u64>,
}

pub fn parse_loadavg(s: &str) -> Option<LoadAvg> {
    let mut f = s.split_ascii_whitespace();
    let one = f.next()?.parse().ok()?;
    let five = f.next()?.parse().ok()?;
    let fifteen = f.next()?.parse().ok()?;
    let (runnable, threads) = match f.next().and_then(|rt| rt.split_once('/')) {
        Some((r, t)) => (r.parse().ok(), t.parse().ok()),
        None => (None, None),
    };
    Some(LoadAvg {
        one,
        five,
        fifteen,
        runnable,
        threads,
    })
}

/// One pressure stall line (`some` or `full`) of `/proc/pressure/*`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PsiLine {
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    /// Total stall time in microseconds since boot.
    pub total_us: u64,
}

/// `/proc/pressure/{cpu,io,memory}`: the `some` and `full` lines.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Psi {
    pub some: Option<PsiLine>,
    pub full: Option<PsiLine>,
}

pub fn parse_psi(s: &str) -> Psi {
    let mut out = Psi::default();
    for line in s.lines() {
        let mut f = line.split_ascii_whitespace();
        let which = f.next();
        let mut l = PsiLine::default();
        let mut ok = false;
        for kv in f {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            match k {
                "avg10" => l.avg10 = v.parse().unwrap_or(0.0),
                "avg60" => l.avg60 = v.parse().unwrap_or(0.0),
                "avg300" => l.avg300 = v.parse().unwrap_or(0.0),
                "total" => {
                    if let Ok(t) = v.parse() {
                        l.total_us = t;
                        ok = true;
                    }
                }
                _ => {}
            }
        }
        if !ok {
            continue;
        }
        match which {
            Some("some") => out.some = Some(l),
            Some("full") => out.full = Some(l),
            _ => {}
        }
    }
    out
}

/// First value of a `key : value` field in `/proc/cpuinfo`.
pub fn cpuinfo_field<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    s.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// Whether the first `flags` line of `/proc/cpuinfo` has `flag`.
pub fn cpuinfo_has_flag(s: &str, flag: &str) -> bool {
    cpuinfo_field(s, "flags")
        .map(|f| f.split_ascii_whitespace().any(|x| x == flag))
        .unwrap_or(false)
}

/// The kernel's USER_HZ: the unit of `/proc/stat` ticks (100 on practically every system).
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions and does not touch memory we own.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat() {
        let s = "cpu  10 1 5 100 2 0 1 3 0 0\ncpu0 4 0 2 50 1 0 1 2 0 0\ncpu1 6 1 3 50 1 0 0 1\nintr 1 2\nprocs_running 3\nprocs_blocked 1\n";
        let p = parse_proc_stat(s);
        assert_eq!(p.total.steal, 3);
        assert_eq!(p.per_cpu.len(), 2);
        assert_eq!(p.per_cpu[1].1.busy(), 10);
        assert_eq!(p.procs_running, Some(3));
        let (sum, n) = sum_cpu_ticks(s, &[1]);
        assert_eq!((sum.user, n), (6, 1));
        let (sum, n) = sum_cpu_ticks(s, &[]);
        assert_eq!((sum.user, n), (10, 2));
        // short and garbage lines do not panic
        let p = parse_proc_stat("cpu\ncpux 1 2\ncpu3 a b\n\n");
        assert_eq!(p.per_cpu, vec![(3, CpuTicks::default())]);
        assert_eq!(sum_cpu_ticks("cpu", &[]).1, 0);
    }

    #[test]
    fn meminfo_and_load() {
        let m = "MemTotal:       16 kB\nSwapTotal:  0 kB\nSwapFree: 3\n";
        assert_eq!(meminfo_bytes(m, "MemTotal"), Some(16 * 1024));
        assert_eq!(meminfo_bytes(m, "SwapFree"), Some(3));
        assert_eq!(meminfo_bytes(m, "Nope"), None);
        let l = parse_loadavg("1.24 0.47 0.17 2/91 4858\n").unwrap();
        assert_eq!((l.one, l.runnable, l.threads), (1.24, Some(2), Some(91)));
        assert!(parse_loadavg("x").is_none());
    }

    #[test]
    fn psi() {
        let p = parse_psi("some avg10=2.70 avg60=4.45 avg300=2.24 total=9511785\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
        assert_eq!(p.some.unwrap().total_us, 9511785);
        assert_eq!(p.full.unwrap().total_us, 0);
        assert_eq!(parse_psi("garbage"), Psi::default());
    }

    #[test]
    fn cpuinfo() {
        let c = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu hypervisor sse\n";
        assert_eq!(cpuinfo_field(c, "model name"), Some("AMD EPYC"));
        assert!(cpuinfo_has_flag(c, "hypervisor"));
        assert!(!cpuinfo_has_flag(c, "hyper"));
    }
}
