//! Stop rules: composable conditions on how many runs there are, how long measuring took and
//! how precise the estimate is (seed 000 §IV-B and §V), e.g.
//! `runs >= 20 and ci(median) < 1%` or `not (runs < 10) and (cv(10) < 2% or time >= 60s)`.
//!
//! Precision rules look at the width of an interval, never at a p-value: stopping when a test
//! first turns significant would bias the verdict ("sampling to a foregone conclusion").

use std::fmt;

/// A quantity a condition looks at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// Counted runs so far (warm-up excluded).
    Runs,
    /// Seconds spent measuring this benchmark (warm-up excluded).
    Time,
    /// Relative half-width of the 95% CI of the median wall time.
    CiMedian,
    /// Coefficient of variation of wall time over the last N runs (all runs when None).
    Cv(Option<usize>),
    /// Largest relative half-width over the comparison ratio CIs not yet decided (comparisons
    /// only): a comparison whose verdict is settled at a level stricter than α counts 0.
    RatioCi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
}

/// A stop rule: atoms combined with and/or/not.
#[derive(Debug, Clone, PartialEq)]
pub enum StopRule {
    Cond(Metric, Cmp, f64),
    And(Box<StopRule>, Box<StopRule>),
    Or(Box<StopRule>, Box<StopRule>),
    Not(Box<StopRule>),
}

/// The values a rule is evaluated against; `None` where not (yet) known, which makes every
/// condition on it false.
pub trait StopContext {
    fn runs(&self) -> usize;
    fn time(&self) -> f64;
    fn ci_median(&self) -> Option<f64>;
    fn cv(&self, window: Option<usize>) -> Option<f64>;
    fn ratio_ci(&self) -> Option<f64>;
}

impl StopRule {
    pub fn and(self, other: StopRule) -> StopRule {
        StopRule::And(Box::new(self), Box::new(other))
    }
    pub fn or(self, other: StopRule) -> StopRule {
        StopRule::Or(Box::new(self), Box::new(other))
    }

    /// The rule tare uses when none is given: at least `min_runs`, then stop once the
    /// `precision` metric — `ci(median)` for one benchmark, `ci(ratio)` for an interleaved
    /// comparison — is narrow enough, or at `max_runs`, or when the budget is spent.
    pub fn default_rule(
        min_runs: usize,
        max_runs: usize,
        precision_metric: Metric,
        precision: f64,
        budget: f64,
    ) -> StopRule {
        StopRule::Cond(Metric::Runs, Cmp::Ge, min_runs as f64).and(
            StopRule::Cond(precision_metric, Cmp::Le, precision)
                .or(StopRule::Cond(Metric::Runs, Cmp::Ge, max_runs as f64))
                .or(StopRule::Cond(Metric::Time, Cmp::Ge, budget)),
        )
    }

    /// Whether the rule says stop.
    pub fn holds(&self, ctx: &dyn StopContext) -> bool {
        match self {
            StopRule::Cond(m, c, v) => value_of(*m, ctx).is_some_and(|x| compare(x, *c, *v)),
            StopRule::And(a, b) => a.holds(ctx) && b.holds(ctx),
            StopRule::Or(a, b) => a.holds(ctx) || b.holds(ctx),
            StopRule::Not(a) => !a.holds(ctx),
        }
    }

    /// Whether the rule reads only runs and time, which cost nothing to know.
    pub fn is_cheap(&self) -> bool {
        match self {
            StopRule::Cond(m, _, _) => matches!(m, Metric::Runs | Metric::Time),
            StopRule::And(a, b) | StopRule::Or(a, b) => a.is_cheap() && b.is_cheap(),
            StopRule::Not(a) => a.is_cheap(),
        }
    }

    /// Whether the rule has a `not` over an expensive metric: then an unknown value can make
    /// it hold, and it must be evaluated in full every round.
    pub fn negates_expensive(&self) -> bool {
        match self {
            StopRule::Cond(..) => false,
            StopRule::And(a, b) | StopRule::Or(a, b) => {
                a.negates_expensive() || b.negates_expensive()
            }
            StopRule::Not(a) => !a.is_cheap(),
        }
    }

    /// Whether the rule looks at comparison ratios.
    pub fn uses_ratio(&self) -> bool {
        match self {
            StopRule::Cond(m, _, _) => *m == Metric::RatioCi,
            StopRule::And(a, b) | StopRule::Or(a, b) => a.uses_ratio() || b.uses_ratio(),
            StopRule::Not(a) => a.uses_ratio(),
        }
    }

    /// The run count of a rule that is only a count of runs (`--runs N` is `runs >= N`),
    /// which bounds the attempts spent on runs that do not count; `None` for any other rule.
    pub fn exact_runs(&self) -> Option<usize> {
        match self {
            StopRule::Cond(Metric::Runs, Cmp::Ge, v) if *v >= 1.0 => Some(v.ceil() as usize),
            StopRule::Cond(Metric::Runs, Cmp::Gt, v) if *v >= 0.0 => Some(v.floor() as usize + 1),
            _ => None,
        }
    }

    /// Why the rule holds: the atoms that are true, with their current values, e.g.
    /// "runs >= 10 (23) and ci(median) <= 1% (0.87%)". Call only when `holds` is true.
    pub fn explain(&self, ctx: &dyn StopContext) -> String {
        match self {
            StopRule::Cond(m, c, v) => {
                let now = value_of(*m, ctx).map_or("n/a".to_string(), |x| match m {
                    // A decided comparison counts 0 (`conclude::analysis::ratio_precision`).
                    Metric::RatioCi if x == 0.0 => "0%: every ratio decided".to_string(),
                    _ => show(*m, x),
                });
                format!(
                    "{} {} {} (now {now})",
                    metric_name(*m),
                    cmp_name(*c),
                    show(*m, *v)
                )
            }
            StopRule::And(a, b) => format!("{} and {}", a.explain(ctx), b.explain(ctx)),
            StopRule::Or(a, b) => {
                let mut held: Vec<String> = Vec::new();
                for r in [a, b] {
                    if r.holds(ctx) {
                        held.push(r.explain(ctx));
                    }
                }
                held.join(" or ")
            }
            StopRule::Not(a) => format!("not ({a})"),
        }
    }
}

/// When a rule's expensive metrics (CIs, CV, the ratio bootstrap — each costs time that
/// grows with the runs) are evaluated: every round up to 100 counted runs, then whenever the
/// count has grown by 5% since the last evaluation, so their total cost per run stays
/// constant. In between, the rule is evaluated with those metrics unknown: without `not`
/// over them, a rule that holds then holds for any values of them (caps on runs and time
/// stop exactly). A rule that first holds at n runs when evaluated every round is found at
/// the first scheduled evaluation from n on — at most one step (5%) later.
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    next: usize,
}

impl Schedule {
    pub fn new() -> Schedule {
        Schedule { next: 0 }
    }

    /// Whether the expensive metrics are due at `runs` counted runs; moves the schedule on.
    pub fn due(&mut self, runs: usize) -> bool {
        if runs < self.next {
            return false;
        }
        self.next = next_evaluation(runs);
        true
    }
}

/// The run count of the evaluation after one at `runs`.
pub fn next_evaluation(runs: usize) -> usize {
    if runs < 100 {
        runs + 1
    } else {
        runs + runs.div_ceil(20)
    }
}

fn value_of(m: Metric, ctx: &dyn StopContext) -> Option<f64> {
    match m {
        Metric::Runs => Some(ctx.runs() as f64),
        Metric::Time => Some(ctx.time()),
        Metric::CiMedian => ctx.ci_median(),
        Metric::Cv(w) => ctx.cv(w),
        Metric::RatioCi => ctx.ratio_ci(),
    }
}

fn compare(x: f64, c: Cmp, v: f64) -> bool {
    match c {
        Cmp::Lt => x < v,
        Cmp::Le => x <= v,
        Cmp::Gt => x > v,
        Cmp::Ge => x >= v,
    }
}

fn metric_name(m: Metric) -> String {
    match m {
        Metric::Runs => "runs".into(),
        Metric::Time => "time".into(),
        Metric::CiMedian => "ci(median)".into(),
        Metric::Cv(None) => "cv".into(),
        Metric::Cv(Some(n)) => format!("cv({n})"),
        Metric::RatioCi => "ci(ratio)".into(),
    }
}

fn cmp_name(c: Cmp) -> &'static str {
    match c {
        Cmp::Lt => "<",
        Cmp::Le => "<=",
        Cmp::Gt => ">",
        Cmp::Ge => ">=",
    }
}

fn show(m: Metric, v: f64) -> String {
    match m {
        Metric::Runs => format!("{v}"),
        Metric::Time => format!("{v:.3}s").replace(".000s", "s"),
        _ => format!("{}%", trim_float(v * 100.0)),
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl fmt::Display for StopRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopRule::Cond(m, c, v) => {
                write!(f, "{} {} {}", metric_name(*m), cmp_name(*c), show(*m, *v))
            }
            StopRule::And(a, b) => write!(f, "{} and {}", paren(a), paren(b)),
            StopRule::Or(a, b) => write!(f, "{a} or {b}"),
            StopRule::Not(a) => write!(f, "not ({a})"),
        }
    }
}

fn paren(r: &StopRule) -> String {
    match r {
        StopRule::Or(..) => format!("({r})"),
        _ => r.to_string(),
    }
}

// ---- parsing ----------------------------------------------------------------------------

/// Parses a stop rule. Errors name the offending word and show the grammar.
pub fn parse(text: &str) -> Result<StopRule, String> {
    let tokens = tokenize(text)?;
    if tokens.len() > MAX_TOKENS {
        return Err(grammar_error(
            &text.chars().take(60).collect::<String>(),
            &format!(
                "the rule has {} words, more than {MAX_TOKENS}",
                tokens.len()
            ),
        ));
    }
    let mut p = Parser {
        tokens: &tokens,
        pos: 0,
        depth: 0,
    };
    let rule = p.or()?;
    if p.pos != tokens.len() {
        return Err(grammar_error(
            text,
            &format!("unexpected '{}'", tokens[p.pos]),
        ));
    }
    Ok(rule)
}

fn grammar_error(text: &str, what: &str) -> String {
    format!(
        "invalid --stop '{text}': {what}; write conditions like 'runs >= 20', 'time >= 30s', 'ci(median) < 1%', \
         'cv(10) < 2%', 'ci(ratio) < 1%' joined with and/or/not and parentheses"
    )
}

fn tokenize(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' || c == ')' {
            out.push(c.to_string());
            i += 1;
        } else if c == '<' || c == '>' {
            if chars.get(i + 1) == Some(&'=') {
                out.push(format!("{c}="));
                i += 2;
            } else {
                out.push(c.to_string());
                i += 1;
            }
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !"()<>".contains(chars[i]) {
                i += 1;
            }
            let mut word: String = chars[start..i].iter().collect();
            // Glue a metric's argument: ci(median), cv(10).
            if (word == "ci" || word == "cv") && chars.get(i) == Some(&'(') {
                let close = chars[i..].iter().position(|&c| c == ')').map(|p| i + p);
                let Some(close) = close else {
                    return Err(grammar_error(text, "missing ')'"));
                };
                word.extend(chars[i..=close].iter());
                i = close + 1;
            }
            out.push(word);
        }
    }
    Ok(out)
}

/// The longest rule (in words) and the deepest nesting of `not` and parentheses accepted:
/// far beyond any real rule, and small enough that parsing, printing and evaluating (all
/// recursive) cannot overflow the stack.
const MAX_TOKENS: usize = 1000;
const MAX_DEPTH: usize = 32;

struct Parser<'a> {
    tokens: &'a [String],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.pos).map(String::as_str)
    }
    fn next(&mut self) -> Option<String> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn err(&self, what: &str) -> String {
        grammar_error(&self.tokens.join(" "), what)
    }

    fn or(&mut self) -> Result<StopRule, String> {
        let mut left = self.and()?;
        while self.peek() == Some("or") {
            self.pos += 1;
            left = left.or(self.and()?);
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<StopRule, String> {
        let mut left = self.unary()?;
        while self.peek() == Some("and") {
            self.pos += 1;
            left = left.and(self.unary()?);
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<StopRule, String> {
        let nests = matches!(self.peek(), Some("not") | Some("("));
        if nests {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(self.err(&format!(
                    "more than {MAX_DEPTH} nested 'not' or parentheses"
                )));
            }
        }
        let r = self.unary_inner();
        if nests {
            self.depth -= 1;
        }
        r
    }

    fn unary_inner(&mut self) -> Result<StopRule, String> {
        match self.peek() {
            Some("not") => {
                self.pos += 1;
                Ok(StopRule::Not(Box::new(self.unary()?)))
            }
            Some("(") => {
                self.pos += 1;
                let r = self.or()?;
                if self.next().as_deref() != Some(")") {
                    return Err(self.err("missing ')'"));
                }
                Ok(r)
            }
            _ => self.cond(),
        }
    }

    fn cond(&mut self) -> Result<StopRule, String> {
        let metric_word = self
            .next()
            .ok_or_else(|| self.err("a condition is missing"))?;
        let metric = match metric_word.as_str() {
            "runs" => Metric::Runs,
            "time" => Metric::Time,
            "ci(median)" => Metric::CiMedian,
            "ci(ratio)" => Metric::RatioCi,
            "cv" => Metric::Cv(None),
            w if w.starts_with("cv(") && w.ends_with(')') => {
                let n: usize = w[3..w.len() - 1]
                    .trim()
                    .parse()
                    .map_err(|_| self.err(&format!("bad window in '{w}'")))?;
                if n < 2 {
                    return Err(self.err("cv(N) needs a window of at least 2 runs"));
                }
                Metric::Cv(Some(n))
            }
            w => return Err(self.err(&format!("unknown quantity '{w}'"))),
        };
        let cmp = match self.next().as_deref() {
            Some("<") => Cmp::Lt,
            Some("<=") => Cmp::Le,
            Some(">") => Cmp::Gt,
            Some(">=") => Cmp::Ge,
            other => {
                return Err(self.err(&format!(
                    "expected <, <=, > or >= after '{metric_word}', found '{}'",
                    other.unwrap_or("end")
                )))
            }
        };
        let raw = self.next().ok_or_else(|| self.err("a value is missing"))?;
        let value = match metric {
            Metric::Runs => raw
                .parse::<usize>()
                .map(|v| v as f64)
                .map_err(|_| self.err(&format!("'{raw}' is not a whole number of runs")))?,
            Metric::Time => crate::units::parse_duration(&raw)
                .map(|d| d.as_secs_f64())
                .map_err(|e| self.err(&e))?,
            _ => {
                if !raw.ends_with('%') {
                    return Err(self.err(&format!("'{raw}' should be a percentage such as 1%")));
                }
                crate::units::parse_fraction(&raw)
                    .map_err(|e| self.err(&format!("'{raw}': {e}")))?
            }
        };
        Ok(StopRule::Cond(metric, cmp, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A series of wall times for the schedule tests: the first `upto` of `xs`.
    struct Series<'a> {
        xs: &'a [f64],
        upto: usize,
        expensive: bool,
    }

    impl StopContext for Series<'_> {
        fn runs(&self) -> usize {
            self.upto
        }
        fn time(&self) -> f64 {
            self.xs[..self.upto].iter().sum()
        }
        fn ci_median(&self) -> Option<f64> {
            self.expensive
                .then(|| crate::stats::relative_median_ci_halfwidth(&self.xs[..self.upto]))
                .flatten()
        }
        fn cv(&self, _: Option<usize>) -> Option<f64> {
            None
        }
        fn ratio_ci(&self) -> Option<f64> {
            None
        }
    }

    /// Where a rule first holds: evaluated in full every run, and on the schedule.
    fn stop_points(rule: &StopRule, xs: &[f64]) -> (Option<usize>, Option<usize>) {
        let every = (1..=xs.len()).find(|&n| {
            rule.holds(&Series {
                xs,
                upto: n,
                expensive: true,
            })
        });
        let mut schedule = Schedule::new();
        let scheduled = (1..=xs.len()).find(|&n| {
            let expensive = schedule.due(n);
            rule.holds(&Series {
                xs,
                upto: n,
                expensive,
            })
        });
        (every, scheduled)
    }

    fn noisy(seed: u64, noise: f64, n: usize) -> Vec<f64> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| 1e-3 * (1.0 + noise * (rng.gen::<f64>() - 0.5)))
            .collect()
    }

    /// The scheduled stop point is the first scheduled evaluation at which the every-round
    /// rule holds; it is never earlier than the every-round stop, and in most series within
    /// one schedule step of it (a CI can widen again for a while, which delays both alike).
    #[test]
    fn scheduled_evaluation_stops_within_one_step_of_every_round() {
        let mut within_one_step = 0;
        let mut cases = 0;
        for seed in 0..12u64 {
            let xs = noisy(seed, [0.02, 0.05, 0.1][seed as usize % 3], 3000);
            for precision in [0.01, 0.005] {
                let rule = StopRule::default_rule(10, 3000, Metric::CiMedian, precision, 1e9);
                let (every, scheduled) = stop_points(&rule, &xs);
                let (Some(every), Some(scheduled)) = (every, scheduled) else {
                    panic!("seed {seed}: {every:?} {scheduled:?}");
                };
                assert!(scheduled >= every, "seed {seed}: {scheduled} < {every}");
                let holds = |n: usize| {
                    rule.holds(&Series {
                        xs: &xs,
                        upto: n,
                        expensive: true,
                    })
                };
                let mut s = Schedule::new();
                let first = (1..=xs.len())
                    .filter(|&n| s.due(n))
                    .find(|&n| n >= every && holds(n))
                    .unwrap();
                assert_eq!(scheduled, first, "seed {seed}");
                let mut s = Schedule::new();
                let next_due = (1..=xs.len()).filter(|&n| s.due(n)).find(|&n| n >= every);
                within_one_step += usize::from(Some(scheduled) == next_due);
                cases += 1;
            }
        }
        assert!(
            within_one_step * 10 >= cases * 8,
            "{within_one_step} of {cases} within one step"
        );
    }

    #[test]
    fn caps_stop_exactly_between_evaluations() {
        // An unreachable precision: the cap on runs stops it at exactly 5000.
        let xs = noisy(1, 0.2, 6000);
        let rule = StopRule::default_rule(10, 5000, Metric::CiMedian, 1e-9, 1e9);
        assert_eq!(stop_points(&rule, &xs), (Some(5000), Some(5000)));
        // And the schedule evaluates O(log n) times past 100 runs.
        let mut s = Schedule::new();
        let evaluations = (1..=100_000).filter(|&n| s.due(n)).count();
        assert!(evaluations < 100 + 250, "{evaluations}");
    }

    #[test]
    fn exact_runs_only_for_a_plain_run_count() {
        assert_eq!(parse("runs >= 1").unwrap().exact_runs(), Some(1));
        assert_eq!(parse("runs > 4").unwrap().exact_runs(), Some(5));
        assert_eq!(
            parse("runs >= 3 and time >= 1s").unwrap().exact_runs(),
            None
        );
        assert_eq!(parse("ci(median) < 1%").unwrap().exact_runs(), None);
        assert_eq!(parse("runs < 3").unwrap().exact_runs(), None);
    }

    #[test]
    fn cheapness_and_negation() {
        assert!(parse("runs >= 10 or time >= 5s").unwrap().is_cheap());
        assert!(!parse("ci(median) < 1%").unwrap().is_cheap());
        assert!(parse("not (ci(median) < 1%)").unwrap().negates_expensive());
        assert!(!parse("not (runs < 10) and ci(median) < 1%")
            .unwrap()
            .negates_expensive());
    }

    struct Ctx {
        runs: usize,
        time: f64,
        ci: Option<f64>,
    }
    impl StopContext for Ctx {
        fn runs(&self) -> usize {
            self.runs
        }
        fn time(&self) -> f64 {
            self.time
        }
        fn ci_median(&self) -> Option<f64> {
            self.ci
        }
        fn cv(&self, _w: Option<usize>) -> Option<f64> {
            Some(0.05)
        }
        fn ratio_ci(&self) -> Option<f64> {
            None
        }
    }

    #[test]
    fn parses_and_evaluates() {
        let r = parse("runs >= 20 and ci(median) < 1%").unwrap();
        assert!(!r.holds(&Ctx {
            runs: 19,
            time: 1.0,
            ci: Some(0.001)
        }));
        assert!(r.holds(&Ctx {
            runs: 20,
            time: 1.0,
            ci: Some(0.001)
        }));
        assert!(!r.holds(&Ctx {
            runs: 20,
            time: 1.0,
            ci: None
        }));
        let r = parse("not (runs < 5) and (cv(10) < 2% or time >= 1m)").unwrap();
        assert!(r.holds(&Ctx {
            runs: 5,
            time: 61.0,
            ci: None
        }));
        assert!(!r.holds(&Ctx {
            runs: 5,
            time: 59.0,
            ci: None
        }));
        assert!(parse("ci(ratio) < 1%").unwrap().uses_ratio());
    }

    #[test]
    fn explains_and_displays() {
        let r = StopRule::default_rule(10, 1000, Metric::CiMedian, 0.01, 60.0);
        let ctx = Ctx {
            runs: 23,
            time: 2.0,
            ci: Some(0.0087),
        };
        assert!(r.holds(&ctx));
        assert_eq!(
            r.explain(&ctx),
            "runs >= 10 (now 23) and ci(median) <= 1% (now 0.87%)"
        );
        assert_eq!(
            r.to_string(),
            "runs >= 10 and (ci(median) <= 1% or runs >= 1000 or time >= 60s)"
        );
        assert_eq!(parse(&r.to_string()).unwrap(), r);
    }

    #[test]
    fn errors_say_what_to_write() {
        for bad in [
            "runs >=",
            "speed > 3",
            "runs >= x",
            "ci(median) < 1",
            "(runs > 3",
            "runs > 3 extra",
            "cv(1) < 1%",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.starts_with("invalid --stop"), "{bad}: {e}");
        }
    }
}
