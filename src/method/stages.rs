//! Extension points around measurement, after Rancid (seed 000 §V): **actions** run at the
//! stages of a session, **meters** take harness-side measurements over an interval. Each is a
//! narrow trait with a few built-ins; docs/extending.md shows how to add one. (Processors are
//! in `conclude::processor`, loggers — exporters — in `results::logger`.)
//!
//! Stages, outermost first: a benchmark (a kernel's setup … teardown in one process),
//! an invocation (one process), a repetition (one sample). `tare kernels --action` and
//! `--meter` build these from the command line.
//!
//! Not for: what runs are made (that is `method::kernels`) or how they are measured (`exec`).

use crate::machine::cooldown::{self, CoolDown, SystemClock};
use crate::machine::sysfs::SysRoot;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where in a session an action runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    BeforeInvocation,
    AfterInvocation,
    BeforeBenchmark,
    AfterBenchmark,
    BeforeRepetition,
    AfterRepetition,
}

impl Stage {
    pub const ALL: [Stage; 6] = [
        Stage::BeforeInvocation,
        Stage::AfterInvocation,
        Stage::BeforeBenchmark,
        Stage::AfterBenchmark,
        Stage::BeforeRepetition,
        Stage::AfterRepetition,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::BeforeInvocation => "before-invocation",
            Stage::AfterInvocation => "after-invocation",
            Stage::BeforeBenchmark => "before-benchmark",
            Stage::AfterBenchmark => "after-benchmark",
            Stage::BeforeRepetition => "before-repetition",
            Stage::AfterRepetition => "after-repetition",
        }
    }

    /// Whether the stage comes before its interval (a benchmark, an invocation, a sample).
    pub fn is_before(self) -> bool {
        matches!(
            self,
            Stage::BeforeInvocation | Stage::BeforeBenchmark | Stage::BeforeRepetition
        )
    }

    pub fn parse(s: &str) -> Result<Stage, String> {
        Stage::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown stage '{s}': choose from {}",
                    Stage::ALL.map(|x| x.name()).join(", ")
                )
            })
    }
}

/// What an action is told about where it runs.
#[derive(Debug, Clone, Copy)]
pub struct StageContext<'a> {
    pub stage: Stage,
    /// The benchmark's name (`KERNEL/IMPLEMENTATION`), when inside one.
    pub benchmark: Option<&'a str>,
    /// The program's implementation label.
    pub program: &'a str,
    pub round: usize,
}

/// Something done at a stage: sleep, cool down, run a shell command, write a sysfs file; in
/// `tare run`, the `--setup`/`--prepare`/`--conclude`/`--cleanup` commands
/// (`method::actions::Script`). An action that fails stops the session with its one-line
/// message (a `UserError` in it keeps its exit code).
pub trait Action {
    /// For messages, e.g. `sleep 100ms`.
    fn describe(&self) -> String;
    fn run(&mut self, ctx: &StageContext) -> anyhow::Result<()>;
    /// What the action found of the state it set since it was last asked, named as a meter's
    /// reading and kept where one is (a run's `meters.cache`, an invocation's `meters`): the
    /// page cache's residency after `--cache`. Asked after each interval; most actions have
    /// nothing to say.
    fn reading(&mut self) -> Option<(String, Reading)> {
        None
    }
}

/// Sleeps a fixed time (Rancid's sleep action; lets the machine settle).
pub struct Sleep(pub Duration);

impl Action for Sleep {
    fn describe(&self) -> String {
        format!("sleep {:?}", self.0)
    }
    fn run(&mut self, _: &StageContext) -> anyhow::Result<()> {
        std::thread::sleep(self.0);
        Ok(())
    }
}

/// Waits until the CPU is below a temperature (`machine::cooldown`, bounded).
pub struct CoolDownAction {
    pub root: SysRoot,
    pub params: CoolDown,
}

impl Action for CoolDownAction {
    fn describe(&self) -> String {
        format!("cool-down to {} °C", self.params.target_c)
    }
    fn run(&mut self, _: &StageContext) -> anyhow::Result<()> {
        cooldown::cool_down(&self.root, &self.params, &SystemClock::default());
        Ok(())
    }
}

/// Runs a command through `/bin/sh -c`, with `TARE_STAGE`, `TARE_BENCHMARK`, `TARE_PROGRAM`
/// and `TARE_ROUND` set; a non-zero exit or running past `timeout` fails it (it is killed).
pub struct Shell {
    pub command: String,
    pub timeout: Duration,
}

impl Action for Shell {
    fn describe(&self) -> String {
        format!("shell '{}'", self.command)
    }
    fn run(&mut self, ctx: &StageContext) -> anyhow::Result<()> {
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(&self.command)
            .env("TARE_STAGE", ctx.stage.name())
            .env("TARE_BENCHMARK", ctx.benchmark.unwrap_or(""))
            .env("TARE_PROGRAM", ctx.program)
            .env("TARE_ROUND", (ctx.round + 1).to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| anyhow::anyhow!("{}: cannot start /bin/sh: {e}", self.describe()))?;
        let t = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(s)) if s.success() => return Ok(()),
                Ok(Some(s)) => {
                    return Err(anyhow::anyhow!(
                        "{} failed at {}: {s}",
                        self.describe(),
                        ctx.stage.name()
                    ))
                }
                Ok(None) if t.elapsed() > self.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(anyhow::anyhow!(
                        "{} ran past {:?} at {}",
                        self.describe(),
                        self.timeout,
                        ctx.stage.name()
                    ));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Err(anyhow::anyhow!("{}: {e}", self.describe())),
            }
        }
    }
}

/// Writes a value into a file (a sysfs knob, e.g. a governor), re-applied when `every` has
/// passed since the last write (`None`: every time the stage comes), since a daemon may
/// change it back.
pub struct SysfsWrite {
    pub path: PathBuf,
    pub value: String,
    pub every: Option<Duration>,
    pub last: Option<Instant>,
}

impl Action for SysfsWrite {
    fn describe(&self) -> String {
        format!("write '{}' to {}", self.value, self.path.display())
    }
    fn run(&mut self, _: &StageContext) -> anyhow::Result<()> {
        if let (Some(every), Some(last)) = (self.every, self.last) {
            if last.elapsed() < every {
                return Ok(());
            }
        }
        std::fs::write(&self.path, &self.value)
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.describe()))?;
        self.last = Some(Instant::now());
        Ok(())
    }
}

/// The actions of a session, by stage.
#[derive(Default)]
pub struct Actions {
    pub at: Vec<(Stage, Box<dyn Action>)>,
}

impl Actions {
    /// Runs every action registered for `ctx.stage`, in order.
    pub fn run(&mut self, ctx: &StageContext) -> Result<(), String> {
        for (stage, a) in &mut self.at {
            if *stage == ctx.stage {
                a.run(ctx).map_err(|e| format!("{e:#}"))?;
            }
        }
        Ok(())
    }

    /// Whether any action runs at `stage` (repetition actions need one sample per request).
    pub fn has(&self, stage: Stage) -> bool {
        self.at.iter().any(|(s, _)| *s == stage)
    }

    /// The session's step at `ctx.stage` (`session`) and a unit's own actions there (`own`),
    /// nested: the unit's nearer the interval — after the session's before it, before them
    /// after it. The one place both engines order the two (`UnitStages`).
    pub fn nested<E>(
        own: Option<&mut Actions>,
        ctx: &StageContext,
        session: impl FnOnce() -> Result<(), E>,
        err: impl Fn(String) -> E,
    ) -> Result<(), E> {
        let mut own = own;
        if !ctx.stage.is_before() {
            if let Some(o) = own.as_deref_mut() {
                o.run(ctx).map_err(&err)?;
            }
        }
        session()?;
        if ctx.stage.is_before() {
            if let Some(o) = own {
                o.run(ctx).map_err(&err)?;
            }
        }
        Ok(())
    }

    /// The actions' readings since they were last asked ([`Action::reading`]).
    pub fn readings(&mut self) -> Vec<(String, Reading)> {
        self.at
            .iter_mut()
            .filter_map(|(_, a)| a.reading())
            .collect()
    }

    /// Parses `STAGE:KIND[:ARG]`: `sleep:DURATION`, `cooldown:CELSIUS`, `shell:COMMAND`,
    /// `sysfs:PATH=VALUE[@EVERY]`.
    pub fn parse(spec: &str, root: &SysRoot) -> Result<(Stage, Box<dyn Action>), String> {
        let (stage, rest) = spec.split_once(':').ok_or_else(|| {
            format!("'{spec}': expected STAGE:KIND:ARG, e.g. before-invocation:sleep:100ms")
        })?;
        let stage = Stage::parse(stage)?;
        let (kind, arg) = rest.split_once(':').unwrap_or((rest, ""));
        let action: Box<dyn Action> = match kind {
            "sleep" => Box::new(Sleep(crate::units::parse_duration(arg).map_err(|e| format!("'{spec}': {e}"))?)),
            "cooldown" => Box::new(CoolDownAction {
                root: root.clone(),
                params: CoolDown::new(
                    arg.trim_end_matches('C')
                        .parse()
                        .map_err(|_| format!("'{spec}': a temperature in °C, e.g. cooldown:50"))?,
                ),
            }),
            "shell" if !arg.is_empty() => Box::new(Shell {
                command: arg.to_string(),
                timeout: Duration::from_secs(600),
            }),
            "sysfs" => {
                let (assign, every) = match arg.rsplit_once('@') {
                    Some((a, e)) => (
                        a,
                        Some(crate::units::parse_duration(e).map_err(|x| format!("'{spec}': {x}"))?),
                    ),
                    None => (arg, None),
                };
                let (path, value) = assign
                    .split_once('=')
                    .ok_or_else(|| format!("'{spec}': expected sysfs:PATH=VALUE[@EVERY]"))?;
                Box::new(SysfsWrite {
                    path: PathBuf::from(path),
                    value: value.to_string(),
                    every,
                    last: None,
                })
            }
            _ => {
                return Err(format!(
                    "'{spec}': unknown action '{kind}': choose sleep:DURATION, cooldown:CELSIUS, shell:COMMAND or sysfs:PATH=VALUE[@EVERY]"
                ))
            }
        };
        Ok((stage, action))
    }
}

/// What one unit of a session has of its own beside the session's actions and meters: the
/// level of a controlled factor (`--cache`, `--background`), where each command of `tare run`
/// or program of `tare kernels` is measured at every level as a unit of its own, interleaved.
/// They nest inside the session's: at a stage before an interval the engine runs the
/// session's actions and then the unit's, after it the unit's first; it starts the unit's
/// meters before the machine probe and the session's meters and stops them after, and keeps
/// the unit's actions' readings beside the meters'.
#[derive(Default)]
pub struct UnitStages {
    pub actions: Actions,
    pub meters: Vec<Box<dyn Meter>>,
}

impl UnitStages {
    /// Whether the unit has nothing of its own (then nothing is done for it).
    pub fn is_empty(&self) -> bool {
        self.actions.at.is_empty() && self.meters.is_empty()
    }

    /// Starts the unit's meters, in order; the first error stops (the started ones are
    /// stopped by the caller's `stop`).
    pub fn start(&mut self) -> anyhow::Result<()> {
        self.meters.iter_mut().try_for_each(|m| m.start())
    }

    /// Stops the unit's meters over `span` and takes its actions' readings, by name.
    pub fn stop(&mut self, span: &Span) -> Vec<(String, Reading)> {
        let mut out: Vec<(String, Reading)> = self
            .meters
            .iter_mut()
            .map(|m| (m.name(), m.stop(span)))
            .collect();
        out.extend(self.actions.readings());
        out
    }
}

/// One measured interval, as the engine timed it: a run of `tare run`, an invocation of
/// `tare kernels`, or the quiet window before the first of them.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub start: Instant,
    pub end: Instant,
    /// The interval's wall time as measured (a run's own clock: its process's wall time).
    pub wall: f64,
}

impl Span {
    /// An empty interval now (to stop meters of an interval that never began).
    pub fn now() -> Span {
        let t = Instant::now();
        Span {
            start: t,
            end: t,
            wall: 0.0,
        }
    }
}

/// What a meter read over one interval: flat named values (what a `tare kernels` invocation
/// record keeps, `NAME.…`), and where the meter has one, its structured record (what a
/// `tare run` run keeps, e.g. `meters.energy`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    pub values: BTreeMap<String, f64>,
    pub record: Option<serde_json::Value>,
}

/// A harness-side measurement over intervals, shared by `tare run` (around each run) and
/// `tare kernels` (around each invocation): reads at `start` and `stop`, returns named
/// values. Client-side user metrics come from the worker (`m.NAME`); CPU time and peak
/// memory from the cgroup; this is for the rest (energy, a temperature, a counter file).
///
/// A session calls, in order: [`Meter::quiet`] once with the other meters over one shared
/// quiet window before the first interval (idle power; only where
/// [`Meter::wants_quiet`]), then `start`/`stop` around each interval, then
/// [`Meter::finish`] once for values known only after the intervals (the GPU meter's). A
/// session with no meters does none of it.
pub trait Meter {
    fn name(&self) -> String;
    /// Reads (or starts what it keeps going) just before an interval's clock starts; an error
    /// stops the session with its one line.
    fn start(&mut self) -> anyhow::Result<()>;
    /// Reads just after it stops: what is known now.
    fn stop(&mut self, span: &Span) -> Reading;
    /// Whether the meter learns something (idle power) from a quiet window before the first
    /// interval; the session waits one window for all meters that do.
    fn wants_quiet(&self) -> Option<Duration> {
        None
    }
    /// The quiet window just passed (`start` was called at its beginning): what the session
    /// record keeps of it, e.g. idle watts.
    fn quiet(&mut self, _span: &Span) -> Option<serde_json::Value> {
        None
    }
    /// After the last interval: a reading per interval `stop` was called for, in that order,
    /// for meters whose values are known only later (empty: none).
    fn finish(&mut self) -> Vec<Reading> {
        Vec::new()
    }
}

/// Calls `quiet` over one window for every meter that wants one (the longest window asked):
/// the session's records of it, by meter name. No window when none wants one.
pub fn quiet_window(meters: &mut [Box<dyn Meter>]) -> Vec<(String, serde_json::Value)> {
    let Some(wait) = meters.iter().filter_map(|m| m.wants_quiet()).max() else {
        return Vec::new();
    };
    for m in meters.iter_mut().filter(|m| m.wants_quiet().is_some()) {
        // Energy meters read counters: a failed read is a missing value, not an error.
        let _ = m.start();
    }
    let start = Instant::now();
    std::thread::sleep(wait);
    let end = Instant::now();
    let span = Span {
        start,
        end,
        wall: (end - start).as_secs_f64(),
    };
    meters
        .iter_mut()
        .filter(|m| m.wants_quiet().is_some())
        .filter_map(|m| Some((m.name(), m.quiet(&span)?)))
        .collect()
}

/// A numeric file read at start and stop: `NAME.delta` (e.g. RAPL `energy_uj`) and
/// `NAME.end` (e.g. a temperature); a file that cannot be read gives nothing.
pub struct FileMeter {
    pub label: String,
    pub path: PathBuf,
    pub at_start: Option<f64>,
}

impl FileMeter {
    fn read(&self) -> Option<f64> {
        std::fs::read_to_string(&self.path)
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

impl Meter for FileMeter {
    fn name(&self) -> String {
        self.label.clone()
    }
    fn start(&mut self) -> anyhow::Result<()> {
        self.at_start = self.read();
        Ok(())
    }
    fn stop(&mut self, _: &Span) -> Reading {
        let mut out = BTreeMap::new();
        if let Some(end) = self.read() {
            out.insert(format!("{}.end", self.label), end);
            if let Some(s) = self.at_start {
                out.insert(format!("{}.delta", self.label), end - s);
            }
        }
        Reading {
            values: out,
            record: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_actions_and_refuses_nonsense() {
        let root = SysRoot::default();
        for ok in [
            "before-invocation:sleep:10ms",
            "after-repetition:shell:true",
            "before-benchmark:cooldown:60",
            "before-repetition:sysfs:/tmp/x=1@1s",
        ] {
            assert!(Actions::parse(ok, &root).is_ok(), "{ok}");
        }
        for bad in [
            "sleep:10ms",
            "before-lunch:sleep:1s",
            "before-invocation:nap:1s",
            "before-invocation:sleep:soon",
            "before-invocation:sysfs:/tmp/x",
        ] {
            assert!(Actions::parse(bad, &root).is_err(), "{bad}");
        }
    }

    #[test]
    fn sysfs_writes_are_reapplied_when_due() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("knob");
        let mut a = SysfsWrite {
            path: p.clone(),
            value: "performance".into(),
            every: Some(Duration::from_secs(3600)),
            last: None,
        };
        let ctx = StageContext {
            stage: Stage::BeforeRepetition,
            benchmark: None,
            program: "c",
            round: 0,
        };
        a.run(&ctx).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "performance");
        std::fs::write(&p, "powersave").unwrap();
        a.run(&ctx).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "powersave",
            "not yet due"
        );
        a.last = Some(Instant::now() - Duration::from_secs(7200));
        a.run(&ctx).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "performance",
            "re-applied"
        );
    }

    #[test]
    fn a_failing_shell_action_says_where() {
        let mut a = Shell {
            command: "exit 4".into(),
            timeout: Duration::from_secs(5),
        };
        let ctx = StageContext {
            stage: Stage::AfterInvocation,
            benchmark: None,
            program: "c",
            round: 0,
        };
        let e = a.run(&ctx).unwrap_err().to_string();
        assert!(e.contains("after-invocation") && !e.contains('\n'), "{e}");
    }

    /// Counts its calls; wants a quiet window of `quiet` where given.
    struct Probe {
        quiet: Option<Duration>,
        calls: Vec<&'static str>,
    }

    impl Meter for Probe {
        fn name(&self) -> String {
            "probe".into()
        }
        fn start(&mut self) -> anyhow::Result<()> {
            self.calls.push("start");
            Ok(())
        }
        fn stop(&mut self, _: &Span) -> Reading {
            self.calls.push("stop");
            Reading::default()
        }
        fn wants_quiet(&self) -> Option<Duration> {
            self.quiet
        }
        fn quiet(&mut self, span: &Span) -> Option<serde_json::Value> {
            self.calls.push("quiet");
            Some(serde_json::json!({ "seconds": span.wall }))
        }
    }

    #[test]
    fn one_quiet_window_for_the_meters_that_want_one() {
        let mut none: Vec<Box<dyn Meter>> = vec![Box::new(Probe {
            quiet: None,
            calls: Vec::new(),
        })];
        let t = Instant::now();
        assert!(quiet_window(&mut none).is_empty());
        assert!(t.elapsed() < Duration::from_millis(20), "no window waited");
        let mut two: Vec<Box<dyn Meter>> = vec![
            Box::new(Probe {
                quiet: Some(Duration::from_millis(30)),
                calls: Vec::new(),
            }),
            Box::new(Probe {
                quiet: None,
                calls: Vec::new(),
            }),
        ];
        let got = quiet_window(&mut two);
        assert_eq!(got.len(), 1, "{got:?}");
        let secs = got[0].1["seconds"].as_f64().unwrap();
        assert!(secs >= 0.03, "{secs}");
    }

    /// Pushes its name on a shared log.
    struct Log(
        &'static str,
        std::rc::Rc<std::cell::RefCell<Vec<&'static str>>>,
    );

    impl Action for Log {
        fn describe(&self) -> String {
            self.0.into()
        }
        fn run(&mut self, _: &StageContext) -> anyhow::Result<()> {
            self.1.borrow_mut().push(self.0);
            Ok(())
        }
    }

    #[test]
    fn a_units_actions_run_nearer_the_interval_than_the_sessions() {
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut own = Actions::default();
        for stage in [Stage::BeforeInvocation, Stage::AfterInvocation] {
            own.at.push((stage, Box::new(Log("unit", log.clone()))));
        }
        for stage in [Stage::BeforeInvocation, Stage::AfterInvocation] {
            let ctx = StageContext {
                stage,
                benchmark: None,
                program: "p",
                round: 0,
            };
            let session = || -> Result<(), String> {
                log.borrow_mut().push("session");
                Ok(())
            };
            Actions::nested(Some(&mut own), &ctx, session, |e| e).unwrap();
        }
        assert_eq!(*log.borrow(), ["session", "unit", "unit", "session"]);
        // A failing unit action stops before the session's step after the interval.
        let mut bad = Actions::default();
        bad.at.push((
            Stage::AfterInvocation,
            Box::new(Shell {
                command: "exit 1".into(),
                timeout: Duration::from_secs(5),
            }),
        ));
        let ctx = StageContext {
            stage: Stage::AfterInvocation,
            benchmark: None,
            program: "p",
            round: 0,
        };
        let mut reached = false;
        let r = Actions::nested(
            Some(&mut bad),
            &ctx,
            || -> Result<(), String> {
                reached = true;
                Ok(())
            },
            |e| e,
        );
        assert!(r.is_err() && !reached);
    }
}
