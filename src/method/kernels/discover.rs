//! What the programs have: each started once (not measured) to say hello with its kernels and
//! its clock, and the benchmarks made from that — every kernel of any program, crossed with
//! its parameters' values, in each program that has it — with their empty results.
//!
//! Not for: measuring them (`session.rs`, `invoke.rs`) or the protocol itself
//! (`exec::worker`).

use super::{explain, target_ns, KernelsPlan, Program, Target};
use crate::exec::worker::{self, ClockInfo, Hello, WorkerError};
use crate::exec::{Executor, RunSpec, Sink};
use crate::results::{Benchmark, KernelRecord, KERNEL_KEY};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What one program said when asked.
#[derive(Debug, Clone)]
pub struct Discovered {
    pub hello: Hello,
    pub clock: ClockInfo,
}

/// Starts `program` once to read its kernels and its clock (one invocation, not measured).
pub fn discover(
    exec: &Executor,
    plan_spec: &RunSpec,
    program: &Program,
    timeout: Duration,
    start_timeout: Duration,
    cancel: &AtomicBool,
) -> Result<Discovered, String> {
    let mut spec = plan_spec.clone();
    spec.argv = program.argv.iter().map(Into::into).collect();
    // This invocation is not measured: a worker that dies at start (a missing module, a bad
    // path) has its stderr kept in a private file, and its last lines go into the error.
    let captured = match spec.stderr {
        Sink::Null => tempfile::Builder::new()
            .prefix("tare-worker-stderr-")
            .tempdir()
            .ok()
            .map(|d| {
                let p = d.path().join("stderr");
                spec.stderr = Sink::File(p.clone());
                (d, p)
            }),
        _ => None,
    };
    let (m, r) = worker::invoke(exec, &spec, timeout, cancel, |w| {
        let hello = w.hello(start_timeout)?;
        let clock = match w.clock()? {
            Ok(c) => c,
            Err(e) => return Err(WorkerError::Protocol(format!("'clock' failed: {e}"))),
        };
        w.exit()?;
        Ok(Discovered { hello, clock })
    })
    .map_err(|e| format!("{e:#}"))?;
    let d = r.map_err(|e| {
        let said = captured
            .as_ref()
            .and_then(|(_, p)| crate::exec::capture::last_lines_of_file(p, 3))
            .filter(|t| !t.is_empty())
            .map_or(String::new(), |t| format!(" (its stderr ends: {t})"));
        if e.closed_before_hello() {
            return not_a_worker(&m, &said);
        }
        format!("{}{said}", explain(e, &m))
    })?;
    Ok(d)
}

/// A program that ended before its 'hello': no tare worker (or one that died at start, which
/// its stderr then shows), in one line with what to run instead.
fn not_a_worker(m: &crate::exec::Measurement, said: &str) -> String {
    let how = match (m.exit_code, m.signal) {
        (Some(c), _) => format!("it exited with status {c}"),
        (_, Some(s)) if s != libc::SIGKILL => format!("it was killed by signal {s}"),
        _ => "it closed the connection".to_string(),
    };
    format!(
        "{how} without speaking tare's worker protocol (no 'hello'){said}; tare kernels runs \
         workers: link the program with a tare client library (docs/clients.md), or run an \
         existing suite through `tare native-worker HARNESS TARGET` (docs/native-workers.md); \
         the protocol is docs/protocol.md"
    )
}

/// The benchmarks for the kernels the programs announce: every kernel of any program (in the
/// order the programs list them, the first program's first), its declared parameters crossed
/// with the values given (`params`; the first program's defaults for the rest), in each
/// program that has the kernel. Errors name a parameter no selected kernel declares.
pub fn targets(
    found: &[Discovered],
    filter: Option<&regex::Regex>,
    params: &[crate::plan::command::Parameter],
) -> Result<Vec<Target>, String> {
    let mut names: Vec<String> = Vec::new();
    for d in found {
        for k in &d.hello.kernels {
            if !names.contains(&k.name) && filter.is_none_or(|f| f.is_match(&k.name)) {
                names.push(k.name.clone());
            }
        }
    }
    if names.is_empty() {
        return Err(match filter {
            Some(f) => format!("no kernel matches --filter '{}'", f.as_str()),
            None => "the programs announce no kernel".into(),
        });
    }
    for p in params {
        let declared = found.iter().any(|d| {
            d.hello
                .kernels
                .iter()
                .any(|k| names.contains(&k.name) && k.params.iter().any(|q| q.name == p.name))
        });
        if !declared {
            return Err(format!(
                "parameter '{}' is not declared by any selected kernel; see tare kernels --list",
                p.name
            ));
        }
    }
    let mut out = Vec::new();
    for name in &names {
        let info = found
            .iter()
            .flat_map(|d| d.hello.kernels.iter())
            .find(|k| &k.name == name)
            .expect("a kernel from the list");
        // Each declared parameter: the values given for it, else the values the worker
        // lists (`values=`), else its default; the grid is their cross product.
        let mut grid: Vec<BTreeMap<String, String>> = vec![BTreeMap::new()];
        for q in &info.params {
            let values: Vec<String> = match params.iter().find(|p| p.name == q.name) {
                Some(p) => p.values.clone(),
                None if !q.values.is_empty() => q.values.clone(),
                None => vec![q.default.clone()],
            };
            grid = grid
                .into_iter()
                .flat_map(|g| {
                    values.iter().map(move |v| {
                        let mut g = g.clone();
                        g.insert(q.name.clone(), v.clone());
                        g
                    })
                })
                .collect();
        }
        for g in grid {
            for (i, d) in found.iter().enumerate() {
                if d.hello.kernels.iter().any(|k| &k.name == name) {
                    out.push(Target {
                        kernel: name.clone(),
                        params: g.clone(),
                        program: i,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Empty benchmarks for the targets, named `KERNEL/IMPLEMENTATION`.
pub fn empty_benchmarks(plan: &KernelsPlan, found: &[Discovered]) -> Vec<Benchmark> {
    plan.targets
        .iter()
        .map(|t| {
            let p = &plan.programs[t.program];
            let d = &found[t.program];
            let mut extra = BTreeMap::new();
            let rec = KernelRecord {
                kernel: t.kernel.clone(),
                implementation: p.label.clone(),
                program: p.command.clone(),
                lang: d.hello.lang.clone(),
                client: format!("{} {}", d.hello.client, d.hello.version),
                clock_resolution_ns: d.clock.resolution_ns,
                clock_cost_ns: d.clock.cost_ns,
                min_sample_ns: target_ns(&d.clock, plan.min_sample),
                loops_fixed: plan.loops.is_some(),
                threads: d
                    .hello
                    .kernels
                    .iter()
                    .find(|k| k.name == t.kernel)
                    .map_or(1, |k| k.threads),
                ..Default::default()
            };
            extra.insert(KERNEL_KEY.to_string(), serde_json::json!(rec));
            Benchmark {
                name: format!("{}/{}", t.kernel, p.label),
                command: p.command.clone(),
                argv: p.argv.clone(),
                parameters: t.params.clone(),
                summary: Default::default(),
                stop_reason: String::new(),
                runs: Vec::new(),
                diagnostics: Vec::new(),
                extra,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::worker::{KernelInfo, ParamInfo};
    use crate::plan::command::Parameter;

    fn program(kernels: &[(&str, &[(&str, &str)])]) -> Discovered {
        Discovered {
            hello: Hello {
                client: "t".into(),
                version: "1".into(),
                lang: "c".into(),
                approximate_loops: false,
                kernels: kernels
                    .iter()
                    .map(|(n, ps)| KernelInfo {
                        name: n.to_string(),
                        doc: String::new(),
                        threads: 1,
                        params: ps
                            .iter()
                            .map(|(p, d)| ParamInfo {
                                name: p.to_string(),
                                default: d.to_string(),
                                doc: String::new(),
                                values: Vec::new(),
                            })
                            .collect(),
                    })
                    .collect(),
            },
            clock: ClockInfo {
                resolution_ns: 1.0,
                cost_ns: 20.0,
            },
        }
    }

    #[test]
    fn kernels_match_by_name_across_programs_with_one_parameter_grid() {
        let a = program(&[
            ("blur", &[("size", "256"), ("radius", "3")]),
            ("empty", &[]),
        ]);
        let b = program(&[
            ("empty", &[]),
            ("blur", &[("size", "128"), ("radius", "3")]),
        ]);
        let c = program(&[("only_c", &[])]);
        let params = [Parameter {
            name: "size".into(),
            values: vec!["64".into(), "128".into()],
        }];
        let t = targets(&[a, b, c], None, &params).unwrap();
        let shown: Vec<String> = t
            .iter()
            .map(|t| format!("{}{:?}@{}", t.kernel, t.params, t.program))
            .collect();
        assert_eq!(
            shown,
            [
                r#"blur{"radius": "3", "size": "64"}@0"#,
                r#"blur{"radius": "3", "size": "64"}@1"#,
                r#"blur{"radius": "3", "size": "128"}@0"#,
                r#"blur{"radius": "3", "size": "128"}@1"#,
                "empty{}@0",
                "empty{}@1",
                "only_c{}@2",
            ]
        );
    }

    #[test]
    fn defaults_come_from_the_first_program_and_unknown_parameters_are_refused() {
        let a = program(&[("blur", &[("size", "256")])]);
        let b = program(&[("blur", &[("size", "128")])]);
        let t = targets(&[a.clone(), b], None, &[]).unwrap();
        assert!(t.iter().all(|t| t.params["size"] == "256"));
        let bad = [Parameter {
            name: "nope".into(),
            values: vec!["1".into()],
        }];
        assert!(targets(std::slice::from_ref(&a), None, &bad)
            .unwrap_err()
            .contains("parameter 'nope' is not declared"));
        let f = regex::Regex::new("^x").unwrap();
        assert!(targets(&[a], Some(&f), &[])
            .unwrap_err()
            .contains("no kernel matches"));
    }

    #[test]
    fn values_a_worker_lists_are_each_measured_unless_values_are_given() {
        let mut a = program(&[("sum", &[("size", "256"), ("kind", "int")])]);
        a.hello.kernels[0].params[0].values = vec!["256".into(), "4096".into()];
        let shown = |t: Vec<Target>| -> Vec<String> {
            t.iter()
                .map(|t| format!("{}={}", t.params["size"], t.params["kind"]))
                .collect()
        };
        let t = targets(std::slice::from_ref(&a), None, &[]).unwrap();
        assert_eq!(shown(t), ["256=int", "4096=int"]);
        let given = [Parameter {
            name: "size".into(),
            values: vec!["64".into()],
        }];
        let t = targets(&[a], None, &given).unwrap();
        assert_eq!(shown(t), ["64=int"]);
    }
}
