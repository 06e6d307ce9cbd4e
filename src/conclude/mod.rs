//! From runs to conclusions: summaries per metric (`summary`), comparisons with the reference and
//! diagnostics that explain noise (`analysis`), and the analysis of randomized setups and bias
//! sweeps (`setups`), the scaling of parameter scans (`scaling`), the suite line of head-to-head kernels (`suite`), and the one model of a measurement behind verdicts between versions —
//! samples grouped by process, the process the unit of replication (`levels`).
//!
//! Reads results and calls the pure `stats` functions; never measures, never prints. Depends on
//! `results` and `stats` only. `method` calls it at the end of a session, and while measuring for
//! `analysis::ratio_precision`, which the `ci(ratio)` stop rule reads.

pub mod analysis;
pub mod commits;
pub mod counts;
pub mod kernels;
pub mod levels;
pub mod pairs;
pub mod processor;
pub mod scaling;
pub mod setups;
pub mod sides;
pub mod suite;
pub mod summary;

#[cfg(test)]
mod tests {
    use crate::results::Run;
    use serde_json::json;

    /// A run's GPU energy is read one way (`results::facts::gpu_joules`, which `levels`
    /// re-exports for verdicts): summed over GPUs, coarse when any GPU's reading was.
    #[test]
    fn gpu_energy_is_read_one_way() {
        let run = |energy: serde_json::Value| -> Run {
            serde_json::from_value(json!({"index": 0, "warmup": false, "start_offset": 0.0,
                "wall_time": 1.0, "user_time": 0.0, "system_time": 0.0, "cpu_time": 0.0,
                "peak_memory": null, "exit_code": 0, "signal": null, "termination": "exit",
                "counted": true, "energy": energy}))
            .unwrap()
        };
        for e in [json!(null), json!({"domains": []}), json!({"gpus": []})] {
            assert_eq!(super::levels::gpu_joules(&run(e.clone())), None, "{e}");
        }
        let r = run(json!({"gpus": [{"joules": 3.0, "coarse": false}, {"name": "no reading"}]}));
        assert_eq!(super::levels::gpu_joules(&r), Some((3.0, false)));
        let r = run(json!({"gpus": [{"joules": 2.5}, {"joules": 1.0, "coarse": true}]}));
        assert_eq!(crate::results::facts::gpu_joules(&r), Some((3.5, true)));
    }
}
