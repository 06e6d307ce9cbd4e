//! Acting on the machine between runs: [`cool_down`] (wait until the CPU is cool enough) and
//! [`heat_up`] (spin on the run's cores until the frequency is at its maximum).
//!
//! For: the two bounded waits of seed 000 (Rancid, §IV-A.1–2 and §IV-C). Not for: deciding when
//! to call them (method does, per run or per benchmark) or fixing the frequency (see
//! [`super::tune`]).
//!
//! How they fit together (Rancid §IV-C): cool down *first*, then heat up, then run.
//! - Cool-down waits until the hottest CPU thermal zone is below `target`; once it has been
//!   above, it waits further, to `target - hysteresis`, so the heat-up and several runs fit
//!   before the zone is hot again. It never waits longer than `max_wait`: a machine that cannot
//!   cool (ambient heat, a busy neighbour) must not stall the session; the outcome says so.
//! - Heat-up raises the frequency of an idle-clocked core (a governor that follows load) before
//!   a run, by spinning on the run's cores until `scaling_cur_freq` reaches the maximum. It is
//!   bounded too, because spinning heats the chip, and is pointless with the performance
//!   governor or without cpufreq (then it returns at once and says why).
//!
//! Both outcomes are meant to be stored with the run (`Run.extra["cooldown"]`, `["heatup"]`).

use super::freq::cpufreq_dir;
use super::sysfs::SysRoot;
use super::thermal::{hottest, relevant_temp_paths};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Time source and sleeper, injectable for tests.
pub trait Clock {
    /// Time since an arbitrary fixed start.
    fn now(&self) -> Duration;
    fn sleep(&self, d: Duration);
}

/// The real monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    start: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock {
            start: Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// Parameters of a cool-down.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoolDown {
    /// Runs may start when the hottest CPU zone is below this (°C).
    pub target_c: f64,
    /// Once above target, wait until `target_c - hysteresis_c`.
    pub hysteresis_c: f64,
    /// Never wait longer than this.
    pub max_wait: Duration,
    /// How often to read the temperature.
    pub poll: Duration,
}

impl CoolDown {
    /// `target_c` with 5 °C hysteresis, 60 s at most, polled every 500 ms.
    pub fn new(target_c: f64) -> Self {
        CoolDown {
            target_c,
            hysteresis_c: 5.0,
            max_wait: Duration::from_secs(60),
            poll: Duration::from_millis(500),
        }
    }
}

/// What a cool-down did. Times in seconds, temperatures in °C.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoolDownOutcome {
    pub waited: f64,
    /// Whether the temperature was (or became) low enough.
    pub reached: bool,
    /// No usable thermal zone: nothing was waited for.
    pub skipped: bool,
    pub start_temp_c: Option<f64>,
    pub final_temp_c: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Waits until the hottest relevant thermal zone (the CPU zones, else all) is below
/// `p.target_c` (and, once it was above, below `target_c - hysteresis_c`), never longer than
/// `p.max_wait`.
pub fn cool_down(root: &SysRoot, p: &CoolDown, clock: &dyn Clock) -> CoolDownOutcome {
    let paths = relevant_temp_paths(root);
    let mut buf = String::new();
    let skipped = |note: &str| CoolDownOutcome {
        waited: 0.0,
        reached: false,
        skipped: true,
        start_temp_c: None,
        final_temp_c: None,
        note: Some(note.into()),
    };
    if paths.is_empty() {
        return skipped("no thermal zones; cool-down skipped");
    }
    let Some(first) = hottest(root, &paths, &mut buf) else {
        return skipped("thermal zones unreadable or implausible; cool-down skipped");
    };
    if first < p.target_c {
        return CoolDownOutcome {
            waited: 0.0,
            reached: true,
            skipped: false,
            start_temp_c: Some(first),
            final_temp_c: Some(first),
            note: None,
        };
    }
    let goal = p.target_c - p.hysteresis_c.max(0.0);
    let t0 = clock.now();
    let mut last = Some(first);
    loop {
        let waited = clock.now().saturating_sub(t0);
        if waited >= p.max_wait {
            return CoolDownOutcome {
                waited: waited.as_secs_f64(),
                reached: false,
                skipped: false,
                start_temp_c: Some(first),
                final_temp_c: last,
                note: Some(format!(
                    "gave up after {:.1} s: still {} (goal {goal:.1} °C)",
                    waited.as_secs_f64(),
                    last.map(|t| format!("{t:.1} °C"))
                        .unwrap_or_else(|| "unreadable".into())
                )),
            };
        }
        clock.sleep(
            p.poll
                .min(p.max_wait - waited)
                .max(Duration::from_millis(1)),
        );
        if let Some(t) = hottest(root, &paths, &mut buf) {
            last = Some(t);
            if t <= goal {
                return CoolDownOutcome {
                    waited: clock.now().saturating_sub(t0).as_secs_f64(),
                    reached: true,
                    skipped: false,
                    start_temp_c: Some(first),
                    final_temp_c: Some(t),
                    note: None,
                };
            }
        }
    }
}

/// A heat-up counts as reached when every core's current frequency is within this share of its
/// maximum (`scaling_cur_freq` is an average over the last interval and rarely shows the exact
/// maximum).
pub const HEAT_UP_TOLERANCE: f64 = 0.05;

/// What a heat-up did. Frequencies in kHz, in the order of `cores`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeatUpOutcome {
    pub cores: Vec<usize>,
    pub waited: f64,
    pub reached: bool,
    pub skipped: bool,
    pub target_khz: Vec<Option<u64>>,
    pub final_khz: Vec<Option<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain data for which all-zero is the empty set; CPU_SET writes inside
    // it because cpu < CPU_SETSIZE (checked above); sched_setaffinity(0, ..) reads exactly
    // size_of::<cpu_set_t>() bytes from a live reference and changes only the calling thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn read_khz(root: &SysRoot, path: &Option<String>, buf: &mut String) -> Option<u64> {
    let p = path.as_ref()?;
    root.read_into(p, buf).ok()?;
    buf.trim().parse().ok()
}

/// Spins one thread pinned on each of `cores` until every core's `scaling_cur_freq` is within
/// [`HEAT_UP_TOLERANCE`] of its maximum (`scaling_max_freq`, or `cpuinfo_max_freq`, whichever is
/// lower), or `max` has passed. Without frequency information it returns at once:
/// "no frequency information; heat-up skipped".
pub fn heat_up(root: &SysRoot, cores: &[usize], max: Duration) -> HeatUpOutcome {
    let cur_paths: Vec<Option<String>> = cores
        .iter()
        .map(|&c| {
            let p = format!("{}/scaling_cur_freq", cpufreq_dir(c));
            root.exists(&p).then_some(p)
        })
        .collect();
    let targets: Vec<Option<u64>> = cores
        .iter()
        .map(|&c| {
            let d = cpufreq_dir(c);
            let a = root.opt_u64(&format!("{d}/scaling_max_freq"));
            let b = root.opt_u64(&format!("{d}/cpuinfo_max_freq"));
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        })
        .collect();
    let mut buf = String::new();
    let usable: Vec<usize> = (0..cores.len())
        .filter(|&i| cur_paths[i].is_some() && targets[i].is_some())
        .collect();
    if cores.is_empty() || usable.is_empty() {
        return HeatUpOutcome {
            cores: cores.to_vec(),
            waited: 0.0,
            reached: false,
            skipped: true,
            target_khz: targets,
            final_khz: cur_paths
                .iter()
                .map(|p| read_khz(root, p, &mut buf))
                .collect(),
            note: Some(if cores.is_empty() {
                "no cores given; heat-up skipped".into()
            } else {
                "no frequency information; heat-up skipped".into()
            }),
        };
    }
    let at_max = |i: usize, buf: &mut String| -> bool {
        match (read_khz(root, &cur_paths[i], buf), targets[i]) {
            (Some(c), Some(t)) => c as f64 >= t as f64 * (1.0 - HEAT_UP_TOLERANCE),
            _ => true, // nothing to wait for on this core
        }
    };
    let t0 = Instant::now();
    if usable.iter().all(|&i| at_max(i, &mut buf)) {
        return HeatUpOutcome {
            cores: cores.to_vec(),
            waited: 0.0,
            reached: true,
            skipped: false,
            target_khz: targets,
            final_khz: cur_paths
                .iter()
                .map(|p| read_khz(root, p, &mut buf))
                .collect(),
            note: None,
        };
    }
    let stop = AtomicBool::new(false);
    let mut pin_failures = Vec::new();
    let reached = std::thread::scope(|s| {
        let handles: Vec<_> = cores
            .iter()
            .map(|&c| {
                let stop = &stop;
                s.spawn(move || {
                    let pinned = pin_current_thread(c).is_ok();
                    let mut x: u64 = 0;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                    pinned
                })
            })
            .collect();
        let mut reached = false;
        while t0.elapsed() < max {
            std::thread::sleep(Duration::from_millis(10).min(max.saturating_sub(t0.elapsed())));
            if usable.iter().all(|&i| at_max(i, &mut buf)) {
                reached = true;
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        for (h, &c) in handles.into_iter().zip(cores) {
            if !h.join().unwrap_or(false) {
                pin_failures.push(c);
            }
        }
        reached
    });
    let mut notes = Vec::new();
    if !reached {
        notes.push(format!(
            "maximum frequency not reached within {:.1} s",
            max.as_secs_f64()
        ));
    }
    if !pin_failures.is_empty() {
        notes.push(format!(
            "could not pin spinners to CPUs {:?}; they ran unpinned",
            pin_failures
        ));
    }
    HeatUpOutcome {
        cores: cores.to_vec(),
        waited: t0.elapsed().as_secs_f64(),
        reached,
        skipped: false,
        target_khz: targets,
        final_khz: cur_paths
            .iter()
            .map(|p| read_khz(root, p, &mut buf))
            .collect(),
        note: if notes.is_empty() {
            None
        } else {
            Some(notes.join("; "))
        },
    }
}
