//! Each CPU's speed, measured (issue 47): a cloud VM's vCPUs do not run at one steady speed.
//! The host's contention moves between vCPUs in bursts of seconds while the guest's steal
//! counter stays at 0, so nothing the kernel reports shows it; only timing work shows it.
//!
//! For: [`measure`] — one thread runs a short fixed loop (deterministic integer work, about
//! 0.3 ms) pinned on each CPU in turn, pass after pass in a shuffled order, for a bounded time
//! ([`MACHINE_BUDGET`] for `tare machine`, [`CHOICE_BUDGET`] before choosing cores); the pure
//! [`analyse`] that turns those timings into each CPU's typical time, its spread over time and
//! the spread across CPUs; the verdict words ([`SpeedReport::findings`], [`SpeedReport::cause`]);
//! and the leave-out rule for core choices ([`leave_out`], [`prefer_steady`], [`swap_with_tare`]).
//!
//! Not for: per-run probes (see [`super::probe`]), or judging a session's runs (the
//! `cpu-speed` diagnostic of `conclude::analysis` reads the runs' own times).

use super::pinned::without;
use super::procfs::{clock_ticks_per_second, parse_proc_stat, CpuTicks};
use super::topology::{format_cpu_list, CoreChoice, Topology};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// How long `tare machine` measures.
pub const MACHINE_BUDGET: Duration = Duration::from_secs(2);
/// How long the check before choosing cores (`--cpus`, `tare suite run`) measures.
pub const CHOICE_BUDGET: Duration = Duration::from_millis(300);
/// What one timed loop should take (calibrated on the first CPU).
pub const VISIT_TARGET: Duration = Duration::from_micros(300);
/// Passes over every CPU taken even past the budget, so each CPU has a few timings.
pub const MIN_PASSES: usize = 3;
/// `tare machine` warns about a CPU whose typical time is this many times the fastest CPU's.
pub const SLOW: f64 = 1.3;
/// ... or whose windows' medians were this many times apart over the check.
pub const UNSTEADY: f64 = 1.3;
/// A core choice leaves out a CPU only when it is this far off (slower or varying): clearly,
/// since a 0.3 s check is short.
pub const CLEARLY: f64 = 1.5;
/// At most this many time windows per CPU (each a median of several timings).
pub const MAX_WINDOWS: usize = 8;
/// Other work above this share of a flagged CPU's time during the check names it as the cause.
pub const OTHER_WORK: f64 = 0.10;

/// One timed loop on one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Visit {
    pub cpu: usize,
    /// Which pass over the CPUs it belonged to (0-based): its place in time.
    pub pass: usize,
    /// Seconds the loop took.
    pub seconds: f64,
}

/// What [`measure`] took: the raw timings and what /proc/stat said around them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Probe {
    /// Iterations of the loop in each visit.
    pub loops: u64,
    /// Wall time of the whole check, seconds.
    pub seconds: f64,
    pub passes: usize,
    pub visits: Vec<Visit>,
    /// CPUs the thread could not be pinned to (not allowed by the cpuset or affinity).
    pub unpinnable: Vec<usize>,
    /// Per CPU: share of the check's time it ran other work than the probe's loop.
    pub other_busy: BTreeMap<usize, f64>,
    /// Per CPU: share of the check's time the hypervisor said it stole.
    pub steal: BTreeMap<usize, f64>,
}

/// One CPU's speed over the check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuSpeed {
    pub cpu: usize,
    pub visits: usize,
    /// Median seconds of one loop over the whole check.
    pub typical: f64,
    /// `typical` over the fastest CPU's (1 for the fastest).
    pub slower: f64,
    /// The slowest time window's median over the fastest window's; `None` with one window.
    pub over_time: Option<f64>,
    /// The same after dividing out what all CPUs did together in each window (the machine's
    /// own movement, [`SpeedReport::together`]): how this CPU varied beyond the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_over_time: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_busy: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal: Option<f64>,
}

impl CpuSpeed {
    /// How far off the CPU is, slower or varying, whichever is worse (1 = steady and fastest).
    pub fn badness(&self) -> f64 {
        self.slower.max(self.own_over_time.unwrap_or(1.0))
    }

    /// Whether it ran `limit` times slower than the fastest, as printed (two decimals).
    pub fn slow(&self, limit: f64) -> bool {
        at_least(self.slower, limit)
    }

    /// Whether it varied `limit` times over the check beyond the others, as printed.
    pub fn unsteady(&self, limit: f64) -> bool {
        self.own_over_time.is_some_and(|o| at_least(o, limit))
    }
}

/// `x >= limit` on the two decimals a ratio is printed with (1.2996 shows as 1.30).
fn at_least(x: f64, limit: f64) -> bool {
    (x * 100.0).round() >= (limit * 100.0).round()
}

/// The speeds of all measured CPUs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SpeedReport {
    pub cpus: Vec<CpuSpeed>,
    pub seconds: f64,
    pub loops: u64,
    pub passes: usize,
    /// Time windows each CPU's timings were split into for `over_time`.
    pub windows: usize,
    /// The slowest CPU's typical time over the fastest's.
    pub across: f64,
    /// How far all CPUs moved together: per window, the median over CPUs of each one's
    /// window median over its typical time; the slowest window's over the fastest's. `None`
    /// with one window or one CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub together: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpinnable: Vec<usize>,
}

impl SpeedReport {
    /// CPUs at or beyond `limit` in slowness or spread over time, worst first.
    pub fn beyond(&self, limit: f64) -> Vec<&CpuSpeed> {
        let mut v: Vec<&CpuSpeed> = self
            .cpus
            .iter()
            .filter(|c| c.slow(limit) || c.unsteady(limit))
            .collect();
        v.sort_by(|a, b| b.badness().total_cmp(&a.badness()).then(a.cpu.cmp(&b.cpu)));
        v
    }

    /// What `tare machine` warns about: CPUs [`SLOW`] or [`UNSTEADY`], worst first.
    pub fn flagged(&self) -> Vec<&CpuSpeed> {
        let mut v: Vec<&CpuSpeed> = self
            .cpus
            .iter()
            .filter(|c| c.slow(SLOW) || c.unsteady(UNSTEADY))
            .collect();
        v.sort_by(|a, b| b.badness().total_cmp(&a.badness()).then(a.cpu.cmp(&b.cpu)));
        v
    }

    /// Whether all CPUs changed speed together by [`UNSTEADY`] or more.
    pub fn machine_unsteady(&self) -> bool {
        self.together.is_some_and(|t| at_least(t, UNSTEADY))
    }

    /// In words, for the CPUs given: "CPU 5 ran 3.1× slower than the fastest; CPU 12 varied
    /// 3.2× over 2.0 s" (at most 4 named, then how many more), after "all CPUs changed speed
    /// together, 1.5× over 2.0 s" where they did.
    pub fn findings(&self, cpus: &[&CpuSpeed], limit: f64) -> String {
        let moved = self.together.filter(|&t| at_least(t, 1.1));
        let beyond = if moved.is_some() { " beyond that" } else { "" };
        let mut parts: Vec<String> = Vec::new();
        if let Some(t) = self.together.filter(|&t| at_least(t, limit)) {
            parts.push(format!(
                "all CPUs changed speed together, {t:.1}× over {:.1} s",
                self.seconds
            ));
        }
        parts.extend(cpus.iter().take(4).map(|c| {
            let mut what = Vec::new();
            if c.slow(limit) {
                what.push(format!("ran {:.1}× slower than the fastest", c.slower));
            }
            if let Some(o) = c.own_over_time.filter(|_| c.unsteady(limit)) {
                what.push(format!("varied {o:.1}× over {:.1} s{beyond}", self.seconds));
            }
            format!("CPU {} {}", c.cpu, what.join(" and "))
        }));
        if cpus.len() > 4 {
            parts.push(format!("and {} more", cpus.len() - 4));
        }
        parts.join("; ")
    }

    /// The likely mechanism behind the CPUs given (all CPUs where the machine moved as a
    /// whole), from what /proc/stat said during the check: other work or steal where it was
    /// seen on at least half of them.
    pub fn cause(&self, cpus: &[&CpuSpeed], virtualized: bool) -> String {
        let all: Vec<&CpuSpeed> = self.cpus.iter().collect();
        let cpus = if cpus.is_empty() || self.machine_unsteady() {
            &all[..]
        } else {
            cpus
        };
        let share = |f: fn(&CpuSpeed) -> Option<f64>, above: f64| -> (usize, f64) {
            let seen: Vec<f64> = cpus
                .iter()
                .filter_map(|c| f(c))
                .filter(|&v| v > above)
                .collect();
            (seen.len(), seen.iter().copied().fold(0.0, f64::max))
        };
        let (other_n, other) = share(|c| c.other_busy, OTHER_WORK);
        let (steal_n, steal) = share(|c| c.steal, 0.01);
        if 2 * other_n >= cpus.len() && other_n > 0 {
            format!(
                "other work ran on them (up to {:.0}% of a CPU's time during the check)",
                100.0 * other
            )
        } else if 2 * steal_n >= cpus.len() && steal_n > 0 {
            format!(
                "the hypervisor took them away (steal up to {:.0}%)",
                100.0 * steal
            )
        } else if virtualized {
            "hidden contention on the host (steal reads 0)".into()
        } else {
            "frequency or thermal limits, or a busy SMT sibling".into()
        }
    }
}

/// The fixed loop: a xorshift chain (each step depends on the last, so it cannot be vectorized
/// or folded) whose result is returned, so it cannot be removed either.
#[inline(never)]
pub fn work(loops: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    let mut acc = 0u64;
    for i in 0..loops {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        acc = acc.wrapping_add(x.rotate_left((i & 63) as u32));
    }
    acc
}

fn timed(loops: u64) -> f64 {
    let t = Instant::now();
    std::hint::black_box(work(
        std::hint::black_box(loops),
        std::hint::black_box(0x9e37),
    ));
    t.elapsed().as_secs_f64()
}

fn proc_stat() -> Option<BTreeMap<usize, CpuTicks>> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    Some(parse_proc_stat(&s).per_cpu.into_iter().collect())
}

/// Times the loop on each of `cpus` in turn, pass after pass in a shuffled order, until
/// `budget` has passed (and at least [`MIN_PASSES`] passes were made). Runs on a thread of its
/// own, so the caller's affinity is left as it was. CPUs it cannot be pinned to are listed in
/// `unpinnable` and skipped.
pub fn measure(cpus: &[usize], budget: Duration) -> Probe {
    let cpus: Vec<usize> = cpus
        .iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    std::thread::scope(|s| {
        s.spawn(|| measure_here(&cpus, budget))
            .join()
            .unwrap_or_default()
    })
}

fn measure_here(cpus: &[usize], budget: Duration) -> Probe {
    use rand::seq::SliceRandom;
    let mut rng = rand::thread_rng();
    let mut p = Probe::default();
    let mut order: Vec<usize> = Vec::new();
    for &c in cpus {
        if super::cooldown::pin_current_thread(c).is_ok() {
            order.push(c);
        } else {
            p.unpinnable.push(c);
        }
    }
    let Some(&first) = order.first() else {
        return p;
    };
    // Calibrate on the first CPU: double until one loop takes the target (best of 3).
    let _ = super::cooldown::pin_current_thread(first);
    let mut loops = 1024u64;
    while loops < 1 << 34 {
        let best = (0..3).map(|_| timed(loops)).fold(f64::INFINITY, f64::min);
        if best >= VISIT_TARGET.as_secs_f64() {
            break;
        }
        loops *= 2;
    }
    p.loops = loops;
    let before = proc_stat();
    let t0 = Instant::now();
    let mut own: BTreeMap<usize, f64> = BTreeMap::new();
    while p.passes < MIN_PASSES || t0.elapsed() < budget {
        order.shuffle(&mut rng);
        for &c in &order {
            if super::cooldown::pin_current_thread(c).is_err() {
                continue;
            }
            let s = timed(loops);
            *own.entry(c).or_default() += s;
            p.visits.push(Visit {
                cpu: c,
                pass: p.passes,
                seconds: s,
            });
        }
        p.passes += 1;
    }
    p.seconds = t0.elapsed().as_secs_f64();
    if let (Some(a), Some(b)) = (before, proc_stat()) {
        let hz = clock_ticks_per_second() as f64;
        for (cpu, tb) in &b {
            let Some(ta) = a.get(cpu) else { continue };
            if !order.contains(cpu) {
                continue;
            }
            let d = tb.since(ta);
            let busy = d.busy() as f64 / hz - own.get(cpu).copied().unwrap_or(0.0);
            p.other_busy
                .insert(*cpu, (busy / p.seconds).clamp(0.0, 1.0));
            p.steal
                .insert(*cpu, (d.steal as f64 / hz / p.seconds).clamp(0.0, 1.0));
        }
    }
    p
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The largest over the smallest of at least two values.
fn spread(v: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = v.collect();
    (v.len() >= 2).then(|| {
        let hi = v.iter().copied().fold(f64::MIN, f64::max);
        let lo = v.iter().copied().fold(f64::MAX, f64::min);
        hi / lo
    })
}

/// From timings to speeds (pure). Each CPU's `typical` is the median of its timings; its
/// timings are split by pass into up to [`MAX_WINDOWS`] windows of at least 4 passes each, and
/// `over_time` is the slowest window's median over the fastest's (medians, so one preempted
/// loop moves nothing; a burst of seconds does). `slower` is `typical` over the fastest CPU's.
/// `together` is how the CPUs moved as one (per window, the median over CPUs of each one's
/// window median over its typical time), and `own_over_time` each CPU's spread once that is
/// divided out: a CPU that varied on its own, not with the whole machine.
pub fn analyse(p: &Probe) -> SpeedReport {
    let windows = (p.passes / 4).clamp(1, MAX_WINDOWS);
    let mut by_cpu: BTreeMap<usize, Vec<&Visit>> = BTreeMap::new();
    for v in &p.visits {
        if v.seconds.is_finite() && v.seconds > 0.0 {
            by_cpu.entry(v.cpu).or_default().push(v);
        }
    }
    let mut cpus: Vec<CpuSpeed> = Vec::new();
    // Per CPU, each window's median (None where it has no timing there).
    let mut window_medians: Vec<Vec<Option<f64>>> = Vec::new();
    for (cpu, vs) in &by_cpu {
        let mut all: Vec<f64> = vs.iter().map(|v| v.seconds).collect();
        let Some(typical) = median(&mut all) else {
            continue;
        };
        let mut per_window: Vec<Vec<f64>> = vec![Vec::new(); windows];
        for v in vs {
            let w = (v.pass * windows / p.passes.max(1)).min(windows - 1);
            per_window[w].push(v.seconds);
        }
        let meds: Vec<Option<f64>> = per_window.iter_mut().map(|w| median(w)).collect();
        let over_time = spread(meds.iter().flatten().copied());
        window_medians.push(meds.iter().map(|m| m.map(|m| m / typical)).collect());
        cpus.push(CpuSpeed {
            cpu: *cpu,
            visits: vs.len(),
            typical,
            slower: 1.0,
            over_time,
            own_over_time: over_time,
            other_busy: p.other_busy.get(cpu).copied(),
            steal: p.steal.get(cpu).copied(),
        });
    }
    // What all CPUs did together in each window, and each CPU beyond it.
    let mut together = None;
    if cpus.len() >= 2 {
        let machine: Vec<Option<f64>> = (0..windows)
            .map(|w| {
                median(
                    &mut window_medians
                        .iter()
                        .filter_map(|m| m[w])
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        together = spread(machine.iter().flatten().copied());
        for (c, meds) in cpus.iter_mut().zip(&window_medians) {
            c.own_over_time = spread(
                meds.iter()
                    .zip(&machine)
                    .filter_map(|(m, all)| Some(m.as_ref()? / all.as_ref()?)),
            );
        }
    }
    let fastest = cpus.iter().map(|c| c.typical).fold(f64::MAX, f64::min);
    let slowest = cpus.iter().map(|c| c.typical).fold(0.0, f64::max);
    for c in &mut cpus {
        c.slower = c.typical / fastest;
    }
    SpeedReport {
        across: if cpus.is_empty() {
            1.0
        } else {
            slowest / fastest
        },
        cpus,
        together,
        seconds: p.seconds,
        loops: p.loops,
        passes: p.passes,
        windows,
        unpinnable: p.unpinnable.clone(),
    }
}

/// Measures and analyses.
pub fn check(cpus: &[usize], budget: Duration) -> SpeedReport {
    analyse(&measure(cpus, budget))
}

/// The CPUs a core choice should leave out: clearly ([`CLEARLY`]) slower than the fastest or
/// varying over the check, worst first.
pub fn leave_out(r: &SpeedReport) -> Vec<usize> {
    r.beyond(CLEARLY).iter().map(|c| c.cpu).collect()
}

/// `topo` without the physical cores of the CPUs [`leave_out`] names, worst first, each only
/// while `fits` still holds for what remains (a choice never gets worse than it was, and tare
/// never refuses to run for it). Returns the topology and the CPUs left out.
pub fn prefer_steady(
    topo: &Topology,
    r: &SpeedReport,
    fits: impl Fn(&Topology) -> bool,
) -> (Topology, Vec<usize>) {
    let mut gone: BTreeSet<usize> = BTreeSet::new();
    let mut left = Vec::new();
    for cpu in leave_out(r) {
        if gone.contains(&cpu) || !topo.cpus.iter().any(|c| c.id == cpu) {
            continue;
        }
        let mut next = gone.clone();
        next.insert(cpu);
        let t = without(topo, &next);
        if fits(&t) {
            gone = next;
            left.push(cpu);
        }
    }
    (without(topo, &gone), left)
}

/// Where a run CPU is clearly off and tare's own core is not, the run takes tare's core and
/// tare (which mostly sleeps) the off one: both whole physical cores of the same shape
/// (threads, package, node, capacity). Returns the CPU given to tare, if a swap was made.
pub fn swap_with_tare(choice: &mut CoreChoice, topo: &Topology, r: &SpeedReport) -> Option<usize> {
    let bad: BTreeSet<usize> = leave_out(r).into_iter().collect();
    let core_of = |cpu: usize| topo.cores.iter().find(|c| c.cpus.contains(&cpu));
    let tare_core = core_of(*choice.tare_cores.first()?)?;
    if tare_core.cpus != choice.tare_cores || tare_core.cpus.iter().any(|c| bad.contains(c)) {
        return None;
    }
    // Only a CPU the check measured counts as good for the run.
    if !tare_core
        .cpus
        .iter()
        .all(|c| r.cpus.iter().any(|s| s.cpu == *c))
    {
        return None;
    }
    let worst = r
        .beyond(CLEARLY)
        .into_iter()
        .find(|s| choice.run_cores.contains(&s.cpu))?;
    let run_core = core_of(worst.cpu)?;
    let same = run_core.cpus.len() == tare_core.cpus.len()
        && run_core.package == tare_core.package
        && run_core.node == tare_core.node
        && run_core.capacity == tare_core.capacity;
    if !same {
        return None;
    }
    let map = |id: &mut usize| {
        if let Some(i) = run_core.cpus.iter().position(|c| c == id) {
            *id = tare_core.cpus[i];
        }
    };
    choice.run_cores.iter_mut().for_each(map);
    choice.idle_siblings.iter_mut().for_each(map);
    choice.run_cores.sort_unstable();
    choice.idle_siblings.sort_unstable();
    choice.tare_cores = run_core.cpus.clone();
    Some(worst.cpu)
}

/// The one line a core choice prints about the CPUs it left out (or gave to tare).
pub fn left_out_note(r: &SpeedReport, left: &[usize], to_tare: Option<usize>) -> Option<String> {
    let named: Vec<&CpuSpeed> = r
        .cpus
        .iter()
        .filter(|c| left.contains(&c.cpu) || to_tare == Some(c.cpu))
        .collect();
    if named.is_empty() {
        return None;
    }
    let mut named = named;
    named.sort_by(|a, b| b.badness().total_cmp(&a.badness()));
    let mut what = Vec::new();
    if !left.is_empty() {
        what.push(format!("left out CPU {}", format_cpu_list(left)));
    }
    if let Some(c) = to_tare {
        what.push(format!("gave CPU {c} to tare, not to the runs"));
    }
    Some(format!(
        "{}: unsteady at the start ({}; tare machine measures longer)",
        what.join(", and "),
        r.findings(&named, CLEARLY),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::topology::{LogicalCpu, PhysicalCore};

    /// Made-up timings: `passes` passes over `n` CPUs; `time(cpu, pass)` gives each loop's
    /// seconds, with a little deterministic jitter.
    fn probe(n: usize, passes: usize, time: impl Fn(usize, usize) -> f64) -> Probe {
        let mut visits = Vec::new();
        for pass in 0..passes {
            for cpu in 0..n {
                let jitter = 1.0 + 0.02 * (((cpu * 7 + pass * 13) % 5) as f64 / 4.0);
                visits.push(Visit {
                    cpu,
                    pass,
                    seconds: time(cpu, pass) * jitter,
                });
            }
        }
        Probe {
            loops: 1 << 16,
            seconds: 2.0,
            passes,
            visits,
            ..Default::default()
        }
    }

    #[test]
    fn steady_cpus_are_ok() {
        let r = analyse(&probe(16, 100, |_, _| 3e-4));
        assert_eq!(r.cpus.len(), 16);
        assert!(r.flagged().is_empty(), "{:?}", r.flagged());
        assert!(r.across < 1.05, "{}", r.across);
        assert_eq!(r.windows, MAX_WINDOWS);
        assert!(leave_out(&r).is_empty());
        // One preempted loop per CPU moves no median.
        let r = analyse(&probe(4, 100, |c, p| if p == 10 + c { 3e-3 } else { 3e-4 }));
        assert!(r.flagged().is_empty(), "{:?}", r.flagged());
    }

    #[test]
    fn one_slow_cpu_is_named() {
        let r = analyse(&probe(16, 100, |c, _| if c == 5 { 9.3e-4 } else { 3e-4 }));
        let f = r.flagged();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].cpu, 5);
        assert!((f[0].slower - 3.1).abs() < 0.1, "{}", f[0].slower);
        assert!(f[0].over_time.unwrap() < 1.05);
        let words = r.findings(&f, SLOW);
        assert!(
            words.starts_with("CPU 5 ran 3.1× slower than the fastest"),
            "{words}"
        );
        assert!(!words.contains("varied"), "{words}");
        assert_eq!(leave_out(&r), vec![5]);
        assert_eq!(
            r.cause(&f, true),
            "hidden contention on the host (steal reads 0)"
        );
        assert!(r.cause(&f, false).contains("frequency"));
    }

    #[test]
    fn a_cpu_that_varies_over_time_is_named() {
        // CPU 12 runs 3.2x slower for the middle third of the check: its typical time stays
        // near the others', its windows do not.
        let r = analyse(&probe(16, 120, |c, p| {
            if c == 12 && (40..80).contains(&p) {
                9.6e-4
            } else {
                3e-4
            }
        }));
        let f = r.flagged();
        assert_eq!(f.iter().map(|c| c.cpu).collect::<Vec<_>>(), vec![12]);
        let o = f[0].over_time.unwrap();
        assert!((o - 3.2).abs() < 0.15, "{o}");
        assert!(f[0].slower < SLOW, "{}", f[0].slower);
        let words = r.findings(&f, SLOW);
        assert!(
            words.starts_with("CPU 12 varied 3.2× over 2.0 s"),
            "{words}"
        );
        assert_eq!(leave_out(&r), vec![12]);
    }

    #[test]
    fn cpus_that_change_speed_together_are_the_machine_not_one_cpu() {
        // All 16 CPUs 1.6x slower for the last third of the check (as on the H200 VM): the
        // machine moved, no CPU on its own; nothing to leave out, but tare machine warns.
        let r = analyse(&probe(16, 120, |c, p| {
            let base = if c == 3 { 4.5e-4 } else { 3e-4 };
            if p >= 80 {
                base * 1.6
            } else {
                base
            }
        }));
        let t = r.together.unwrap();
        assert!((t - 1.6).abs() < 0.1, "{t}");
        assert!(r.machine_unsteady());
        assert!(r.cpus.iter().all(|c| c.over_time.unwrap() > 1.5));
        assert!(
            r.cpus.iter().all(|c| c.own_over_time.unwrap() < 1.1),
            "{:?}",
            r.cpus
        );
        // CPU 3 is slow throughout: named alone, and the only one left out.
        let f = r.flagged();
        assert_eq!(f.iter().map(|c| c.cpu).collect::<Vec<_>>(), vec![3]);
        assert_eq!(leave_out(&r), vec![3]);
        let words = r.findings(&f, SLOW);
        assert!(
            words.starts_with(
                "all CPUs changed speed together, 1.6× over 2.0 s; CPU 3 ran 1.5× slower"
            ),
            "{words}"
        );
        assert_eq!(
            r.cause(&f, true),
            "hidden contention on the host (steal reads 0)"
        );
    }

    #[test]
    fn the_cause_follows_what_proc_stat_said() {
        let mut p = probe(2, 40, |c, _| if c == 1 { 6e-4 } else { 3e-4 });
        p.other_busy.insert(1, 0.4);
        p.other_busy.insert(0, 0.0);
        let r = analyse(&p);
        assert!(r
            .cause(&r.flagged(), true)
            .starts_with("other work ran on them (up to 40%"));
        let mut p = probe(2, 40, |c, _| if c == 1 { 6e-4 } else { 3e-4 });
        p.steal.insert(1, 0.2);
        let r = analyse(&p);
        assert!(r.cause(&r.flagged(), true).contains("steal up to 20%"));
        // Nothing measured: an empty report, no panic.
        let r = analyse(&Probe::default());
        assert!(r.cpus.is_empty() && r.flagged().is_empty());
    }

    fn topo(cores: &[&[usize]]) -> Topology {
        Topology {
            cpus: cores
                .iter()
                .flat_map(|c| c.iter())
                .map(|&id| LogicalCpu {
                    id,
                    package: Some(0),
                    core_id: None,
                    node: Some(0),
                    capacity: None,
                })
                .collect(),
            cores: cores
                .iter()
                .map(|c| PhysicalCore {
                    cpus: c.to_vec(),
                    package: Some(0),
                    node: Some(0),
                    capacity: None,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_choice_leaves_out_clearly_off_cpus_only_while_the_run_still_fits() {
        use crate::machine::topology::choose_cores;
        // 8 cores; CPU 5 2x slower, CPU 6 varying 1.8x, CPU 7 only 1.2x slower (kept).
        let t = topo(&[&[0], &[1], &[2], &[3], &[4], &[5], &[6], &[7]]);
        let r = analyse(&probe(8, 100, |c, p| match c {
            5 => 6e-4,
            6 if p >= 50 => 5.4e-4,
            7 => 3.6e-4,
            _ => 3e-4,
        }));
        assert_eq!(leave_out(&r), vec![5, 6]);
        let before = choose_cores(&t, 6).unwrap();
        assert!(before.run_cores.contains(&5) && before.run_cores.contains(&6));
        let fits = |n: usize| {
            move |x: &Topology| {
                choose_cores(x, n).is_ok_and(|c| !c.tare_cores.is_empty() && x.cores.len() > n)
            }
        };
        // 5 CPUs + tare need 6 of 8 cores: both can go.
        let (t2, left) = prefer_steady(&t, &r, fits(5));
        assert_eq!(left, vec![5, 6]);
        let c = choose_cores(&t2, 5).unwrap();
        assert!(
            !c.run_cores.contains(&5) && !c.run_cores.contains(&6),
            "{c:?}"
        );
        // 6 CPUs + tare need 7 cores: only the worst goes.
        let (_, left) = prefer_steady(&t, &r, fits(6));
        assert_eq!(left, vec![5]);
        // 7 CPUs + tare need all 8: nothing goes, and the run still runs.
        let (t2, left) = prefer_steady(&t, &r, fits(7));
        assert!(left.is_empty());
        assert_eq!(t2, t);
        let note = left_out_note(&r, &[5, 6], None).unwrap();
        assert!(
            note.starts_with("left out CPU 5-6: unsteady at the start (CPU 5 ran 2.0× slower"),
            "{note}"
        );
        assert!(!note.contains('\n'));
    }

    #[test]
    fn an_off_run_cpu_swaps_with_tares_core() {
        use crate::machine::topology::choose_cores;
        // Two cores, as this VM: the run takes CPU 1 and tare CPU 0; CPU 1 is slow.
        let t = topo(&[&[0], &[1]]);
        let mut c = choose_cores(&t, 1).unwrap();
        assert_eq!(
            (c.run_cores.clone(), c.tare_cores.clone()),
            (vec![1], vec![0])
        );
        let r = analyse(&probe(2, 40, |cpu, _| if cpu == 1 { 7e-4 } else { 3e-4 }));
        assert_eq!(swap_with_tare(&mut c, &t, &r), Some(1));
        assert_eq!(
            (c.run_cores.clone(), c.tare_cores.clone()),
            (vec![0], vec![1])
        );
        let note = left_out_note(&r, &[], Some(1)).unwrap();
        assert!(
            note.starts_with("gave CPU 1 to tare, not to the runs: unsteady"),
            "{note}"
        );
        // Steady: nothing moves.
        let mut c = choose_cores(&t, 1).unwrap();
        let r = analyse(&probe(2, 40, |_, _| 3e-4));
        assert_eq!(swap_with_tare(&mut c, &t, &r), None);
        assert_eq!(c.run_cores, vec![1]);
        // SMT siblings move with their core.
        let t = topo(&[&[0, 2], &[1, 3]]);
        let mut c = choose_cores(&t, 1).unwrap();
        assert_eq!(
            (c.run_cores.clone(), c.idle_siblings.clone()),
            (vec![1], vec![3])
        );
        let r = analyse(&probe(4, 40, |cpu, _| if cpu == 1 { 7e-4 } else { 3e-4 }));
        assert_eq!(swap_with_tare(&mut c, &t, &r), Some(1));
        assert_eq!(
            (c.run_cores, c.idle_siblings, c.tare_cores),
            (vec![0], vec![2], vec![1, 3])
        );
    }

    #[test]
    fn the_loop_is_timed_on_this_machine() {
        // Shape only, never timings: this VM's speed changes by 2x for seconds.
        let cpus: Vec<usize> =
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
        let p = measure(&cpus, Duration::from_millis(50));
        assert!(p.passes >= MIN_PASSES);
        assert!(p.loops >= 1024);
        let r = analyse(&p);
        assert!(!r.cpus.is_empty());
        assert!(r.cpus.iter().all(|c| c.typical > 0.0 && c.slower >= 1.0));
        assert!(r.cpus.iter().any(|c| c.slower == 1.0));
        assert_eq!(work(10, 1), work(10, 1));
    }
}
