//! The one round scheduler of `tare run` and `tare kernels`: which unit runs when, and when
//! the session stops. A unit is what an engine runs once per benchmark (or program) and round:
//! a process run giving one sample (`tare run`, `method::Runner`), a worker invocation
//! giving many (`tare kernels`, `method::kernels::session`), or one process of a program
//! running its head-to-head pairs (`tare kernels --baseline`, `method::kernels::pairs`).
//! [`Pace`] times the rounds for an engine's time-budget forecast.
//!
//! It owns the order (rounds counterbalanced by `order::Rounds` from one ChaCha8 rng seeded
//! with the session's seed, the same rng then lent to each unit; or `tare run`'s sequential
//! order, one benchmark at a time), the warm-up units, the cancellation check before every
//! unit, and the loop that asks the engine after each round whether every unit's rule holds
//! ([`Engine::settled`]) or the session reached its bounds ([`Engine::bounded`]).
//!
//! Not for: how a unit is measured and recorded, or what a rule says: those are the engine's
//! ([`Engine`]). Generic, not a trait object: nothing here costs a run more than a call and an
//! atomic load.

use super::order::Rounds;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How a session ended before its rules held.
#[derive(Debug)]
pub enum Halt<F> {
    /// Ctrl-C: the units finished so far are kept.
    Interrupted,
    /// A unit or an action failed.
    Failed(F),
}

/// Where a unit runs in the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    /// Its round in interleaved order; `None` in sequential order and for warm-ups.
    pub round: Option<usize>,
    /// A warm-up unit: run before the measured ones, never counted.
    pub warmup: bool,
}

/// What a stage of the session is about: one benchmark (sequential order) or all of them
/// (interleaved rounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    One(usize),
    All,
}

/// The session's shape for the scheduler.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Benchmarks (or programs), indices `0..units`.
    pub units: usize,
    /// Warm-up units per benchmark before its measured ones.
    pub warmups: usize,
    /// At most this many rounds (interleaved order).
    pub max_rounds: usize,
    /// The order's seed.
    pub seed: u64,
}

/// An engine the scheduler drives: how one unit runs and what its rules say. The stage hooks
/// default to nothing.
pub trait Engine {
    /// Why a unit or an action failed.
    type Failure;

    /// Before the warm-ups of `scope` (its `--setup` actions, its observer's start).
    fn prepare(&mut self, _scope: Scope) -> Result<(), Halt<Self::Failure>> {
        Ok(())
    }
    /// After the warm-ups of `scope`, right before its first measured unit.
    fn begin(&mut self, _scope: Scope) -> Result<(), Halt<Self::Failure>> {
        Ok(())
    }
    /// Runs and records one unit of benchmark (or program) `unit`. `rng` is the order's, for
    /// draws of the engine's own (which kernels an invocation runs in which order).
    fn unit(
        &mut self,
        unit: usize,
        turn: Turn,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), Halt<Self::Failure>>;
    /// Sequential order: whether `unit`'s rule holds after its last unit (its stop reason
    /// then recorded).
    fn holds(&mut self, _unit: usize) -> bool {
        true
    }
    /// After `round`: the engine's work between rounds, then whether every unit's rule holds
    /// (their stop reasons then recorded).
    fn settled(&mut self, round: usize) -> bool;
    /// After `round`, not settled: whether the session reached its bounds (another round
    /// would pass them), the unsettled units' stop reasons then saying so.
    fn bounded(&mut self, _round: usize) -> bool {
        false
    }
    /// After the last unit of `scope` (its `--cleanup` actions, its observer's end).
    fn end(&mut self, _scope: Scope) -> Result<(), Halt<Self::Failure>> {
        Ok(())
    }
}

/// The pace of a session's rounds, for a time budget's forecast of the next round (an
/// engine's [`Engine::bounded`]): each round's time less what later rounds do not repeat
/// (calibration), and the session's time so far.
#[derive(Debug, Clone)]
pub struct Pace {
    t0: Instant,
    round_start: Instant,
    once: Duration,
    rounds: Vec<Duration>,
}

impl Default for Pace {
    fn default() -> Self {
        let now = Instant::now();
        Pace {
            t0: now,
            round_start: now,
            once: Duration::ZERO,
            rounds: Vec::new(),
        }
    }
}

impl Pace {
    /// The first round starts now ([`Engine::begin`]).
    pub fn begin(&mut self) {
        self.round_start = Instant::now();
    }
    /// Time of the current round that later rounds do not repeat.
    pub fn once(&mut self, d: Duration) {
        self.once += d;
    }
    /// The current round ended; the next starts now.
    pub fn end_round(&mut self) {
        let took = self.round_start.elapsed().saturating_sub(self.once);
        self.rounds.push(took);
        self.round_start = Instant::now();
        self.once = Duration::ZERO;
    }
    /// The session's time so far.
    pub fn spent(&self) -> Duration {
        self.t0.elapsed()
    }
    /// The time the next round is expected to take: the slowest of the rounds after the first
    /// (the first also calibrates), or the first while it is the only one.
    pub fn next(&self) -> Duration {
        match self.rounds.as_slice() {
            [] => Duration::ZERO,
            [only] => *only,
            [_, rest @ ..] => rest.iter().copied().max().unwrap_or_default(),
        }
    }
}

/// Interleaved order: every unit's warm-ups, then rounds of one unit per benchmark in a
/// counterbalanced order until the engine's rules hold, it is bounded, or `max_rounds`.
pub fn interleaved<E: Engine>(
    e: &mut E,
    shape: &Shape,
    cancel: &AtomicBool,
) -> Result<(), Halt<E::Failure>> {
    let mut rng = ChaCha8Rng::seed_from_u64(shape.seed);
    e.prepare(Scope::All)?;
    for i in 0..shape.units {
        warm_up(e, i, shape.warmups, &mut rng, cancel)?;
    }
    e.begin(Scope::All)?;
    // Counterbalanced rounds: every unit in every position once per block (`order`).
    let mut order = Rounds::new(shape.units);
    for round in 0..shape.max_rounds {
        for i in order.next(&mut rng) {
            let turn = Turn {
                round: Some(round),
                warmup: false,
            };
            unit(e, i, turn, &mut rng, cancel)?;
        }
        if e.settled(round) || e.bounded(round) {
            break;
        }
    }
    e.end(Scope::All)
}

/// Sequential order: one benchmark at a time, its warm-ups then its units until its rule
/// holds.
pub fn sequential<E: Engine>(
    e: &mut E,
    shape: &Shape,
    cancel: &AtomicBool,
) -> Result<(), Halt<E::Failure>> {
    let mut rng = ChaCha8Rng::seed_from_u64(shape.seed);
    let turn = Turn {
        round: None,
        warmup: false,
    };
    for i in 0..shape.units {
        e.prepare(Scope::One(i))?;
        warm_up(e, i, shape.warmups, &mut rng, cancel)?;
        e.begin(Scope::One(i))?;
        loop {
            unit(e, i, turn, &mut rng, cancel)?;
            if e.holds(i) {
                break;
            }
        }
        e.end(Scope::One(i))?;
    }
    Ok(())
}

fn warm_up<E: Engine>(
    e: &mut E,
    i: usize,
    n: usize,
    rng: &mut ChaCha8Rng,
    cancel: &AtomicBool,
) -> Result<(), Halt<E::Failure>> {
    let turn = Turn {
        round: None,
        warmup: true,
    };
    for _ in 0..n {
        unit(e, i, turn, rng, cancel)?;
    }
    Ok(())
}

/// One unit, unless the session was interrupted before it.
fn unit<E: Engine>(
    e: &mut E,
    i: usize,
    turn: Turn,
    rng: &mut ChaCha8Rng,
    cancel: &AtomicBool,
) -> Result<(), Halt<E::Failure>> {
    if cancel.load(Ordering::Relaxed) {
        return Err(Halt::Interrupted);
    }
    e.unit(i, turn, rng)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what the scheduler asked for; settles after `rounds` rounds (or a benchmark
    /// after `per_unit` units), interrupts before unit `cancel_at`.
    #[derive(Default)]
    struct Log {
        calls: Vec<String>,
        rounds: usize,
        per_unit: usize,
        bound_at: Option<usize>,
        cancel_at: Option<usize>,
        units: usize,
        cancel: Option<&'static AtomicBool>,
    }

    impl Engine for Log {
        type Failure = String;
        fn prepare(&mut self, s: Scope) -> Result<(), Halt<String>> {
            self.calls.push(format!("prepare {s:?}"));
            Ok(())
        }
        fn begin(&mut self, s: Scope) -> Result<(), Halt<String>> {
            self.calls.push(format!("begin {s:?}"));
            Ok(())
        }
        fn unit(&mut self, u: usize, t: Turn, _: &mut ChaCha8Rng) -> Result<(), Halt<String>> {
            self.units += 1;
            if Some(self.units) == self.cancel_at {
                self.cancel.unwrap().store(true, Ordering::Relaxed);
            }
            let w = if t.warmup { " warm-up" } else { "" };
            self.calls.push(format!("unit {u} {:?}{w}", t.round));
            if u == 9 {
                return Err(Halt::Failed("nine".into()));
            }
            Ok(())
        }
        fn holds(&mut self, u: usize) -> bool {
            let n = self
                .calls
                .iter()
                .filter(|c| **c == format!("unit {u} None"))
                .count();
            n >= self.per_unit
        }
        fn settled(&mut self, round: usize) -> bool {
            self.calls.push(format!("settled {round}"));
            round + 1 >= self.rounds
        }
        fn bounded(&mut self, round: usize) -> bool {
            self.calls.push(format!("bounded {round}"));
            Some(round) == self.bound_at
        }
        fn end(&mut self, s: Scope) -> Result<(), Halt<String>> {
            self.calls.push(format!("end {s:?}"));
            Ok(())
        }
    }

    fn shape(units: usize, warmups: usize) -> Shape {
        Shape {
            units,
            warmups,
            max_rounds: usize::MAX,
            seed: 26,
        }
    }

    #[test]
    fn the_pace_forecasts_the_slowest_round_after_the_first() {
        let mut p = Pace::default();
        assert_eq!(p.next(), Duration::ZERO);
        p.rounds = [9, 1, 4, 1]
            .iter()
            .map(|&s| Duration::from_secs(s))
            .collect();
        // The first calibrates: not the pace; one slow round among fast ones is.
        assert_eq!(p.next(), Duration::from_secs(4));
        p.rounds.truncate(1);
        assert_eq!(p.next(), Duration::from_secs(9));
        // What later rounds do not repeat is left out of the round's time.
        let mut p = Pace::default();
        p.begin();
        p.once(Duration::from_secs(3600));
        p.end_round();
        assert_eq!(p.next(), Duration::ZERO);
        assert!(p.spent() < Duration::from_secs(60));
    }

    #[test]
    fn rounds_follow_the_counterbalanced_order_of_the_seed() {
        let mut log = Log {
            rounds: 4,
            ..Log::default()
        };
        interleaved(&mut log, &shape(2, 1), &AtomicBool::new(false)).unwrap();
        // The order is order::Rounds' over the same rng: same seed, same order.
        let mut rng = ChaCha8Rng::seed_from_u64(26);
        let mut order = Rounds::new(2);
        let mut want = vec![
            "prepare All".to_string(),
            "unit 0 None warm-up".into(),
            "unit 1 None warm-up".into(),
            "begin All".into(),
        ];
        for round in 0..4 {
            for i in order.next(&mut rng) {
                want.push(format!("unit {i} Some({round})"));
            }
            want.push(format!("settled {round}"));
            if round < 3 {
                want.push(format!("bounded {round}"));
            }
        }
        want.push("end All".into());
        assert_eq!(log.calls, want);
    }

    #[test]
    fn a_bounded_session_ends_after_that_round_and_max_rounds_caps_it() {
        let mut log = Log {
            rounds: usize::MAX,
            bound_at: Some(2),
            ..Log::default()
        };
        interleaved(&mut log, &shape(3, 0), &AtomicBool::new(false)).unwrap();
        let units = log.calls.iter().filter(|c| c.starts_with("unit")).count();
        assert_eq!(units, 9);
        assert_eq!(log.calls.last().unwrap(), "end All");
        let mut log = Log {
            rounds: usize::MAX,
            ..Log::default()
        };
        let capped = Shape {
            max_rounds: 5,
            ..shape(3, 0)
        };
        interleaved(&mut log, &capped, &AtomicBool::new(false)).unwrap();
        let units = log.calls.iter().filter(|c| c.starts_with("unit")).count();
        assert_eq!(units, 15);
    }

    #[test]
    fn sequential_order_runs_one_benchmark_at_a_time_until_its_rule_holds() {
        let mut log = Log {
            per_unit: 2,
            ..Log::default()
        };
        sequential(&mut log, &shape(2, 1), &AtomicBool::new(false)).unwrap();
        let want = [
            "prepare One(0)",
            "unit 0 None warm-up",
            "begin One(0)",
            "unit 0 None",
            "unit 0 None",
            "end One(0)",
            "prepare One(1)",
            "unit 1 None warm-up",
            "begin One(1)",
            "unit 1 None",
            "unit 1 None",
            "end One(1)",
        ];
        assert_eq!(log.calls, want);
    }

    #[test]
    fn an_interrupt_stops_before_the_next_unit_and_a_failure_at_once() {
        static CANCEL: AtomicBool = AtomicBool::new(false);
        let mut log = Log {
            rounds: usize::MAX,
            cancel_at: Some(3),
            cancel: Some(&CANCEL),
            ..Log::default()
        };
        let r = interleaved(&mut log, &shape(2, 0), &CANCEL);
        assert!(matches!(r, Err(Halt::Interrupted)), "{r:?}");
        assert_eq!(log.units, 3);
        assert!(!log.calls.iter().any(|c| c.starts_with("end")));
        let mut log = Log::default();
        let r = sequential(&mut log, &shape(10, 0), &AtomicBool::new(false));
        assert!(
            matches!(r, Err(Halt::Failed(ref w)) if w == "nine"),
            "{r:?}"
        );
        assert_eq!(log.calls.last().unwrap(), "unit 9 None");
    }
}
