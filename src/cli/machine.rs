//! `tare machine` (show what the machine is doing, with verdicts and advice), `tare machine
//! tune` (performance settings, exact previous values saved) and `tare machine reset`.

use crate::error::{exit, usage};
use crate::machine::inventory::{self, InventoryOptions};
use crate::machine::sysfs::SysRoot;
use crate::machine::tune;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct MachineArgs {
    #[command(subcommand)]
    action: Option<Action>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// How long to time each CPU's speed (a short loop pinned on each CPU in turn); 0 skips it.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::units::parse_duration_or_zero)]
    speed_time: std::time::Duration,
}

#[derive(Subcommand, Debug)]
enum Action {
    /// Show the machine (the default).
    Show {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Set the performance governor (or min = max frequency) and turn turbo off; needs root.
    /// Exit 0 when tuning is complete, 3 when something could not be changed.
    Tune {
        /// Show what would change, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Where the previous values are saved.
        #[arg(long, value_name = "FILE", default_value = tune::DEFAULT_STATE_FILE)]
        state_file: PathBuf,
    },
    /// Restore exactly the values saved by `tare machine tune`.
    Reset {
        /// The file `tare machine tune` saved the previous values in.
        #[arg(long, value_name = "FILE", default_value = tune::DEFAULT_STATE_FILE)]
        state_file: PathBuf,
    },
}

fn color() -> bool {
    crate::report::Style::Full.color()
}

pub fn machine(a: MachineArgs) -> anyhow::Result<i32> {
    let root = SysRoot::from_env();
    match a.action.unwrap_or(Action::Show { json: a.json }) {
        Action::Show { json } => {
            let mut inv = inventory::take_inventory(&root, &InventoryOptions::default());
            // Timing is of this machine only: a synthetic tree's CPUs are not here.
            if root.is_host() && !a.speed_time.is_zero() {
                let cpus: Vec<usize> = match &inv.facts.topology {
                    Some(t) => t.cpus.iter().map(|c| c.id).collect(),
                    None => (0..inv.facts.info.logical_cpus.max(1)).collect(),
                };
                inventory::add_speed(&mut inv, crate::machine::speed::check(&cpus, a.speed_time));
            }
            let disks = crate::machine::blockdev::read(&root);
            if json || a.json {
                let mut v = serde_json::to_value(&inv)?;
                v["block_devices"] = serde_json::to_value(&disks)?;
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print!("{}", inventory::render_text(&inv, color()));
                print!("\n{}", crate::machine::blockdev::render_text(&disks));
            }
            Ok(exit::OK)
        }
        Action::Tune {
            dry_run,
            state_file,
        } => {
            let plan = tune::plan_tune(&root);
            if dry_run {
                print!("{}", tune::render_plan(&plan));
                return Ok(exit::OK);
            }
            let report = tune::apply(&root, &plan, &state_file)
                .map_err(|e| usage(format!("cannot tune: {e}")))?;
            print!("{}", tune::render_report(&report));
            Ok(if report.complete {
                exit::OK
            } else {
                exit::RUN_FAILED
            })
        }
        Action::Reset { state_file } => {
            let report =
                tune::reset(&root, &state_file).map_err(|e| usage(format!("cannot reset: {e}")))?;
            print!("{}", tune::render_reset(&report));
            Ok(if report.failed.is_empty() {
                exit::OK
            } else {
                exit::RUN_FAILED
            })
        }
    }
}
