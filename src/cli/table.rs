//! `tare table`: placeholder.
use clap::Args;
#[derive(Args, Debug)]
pub struct TableArgs {}
pub fn run(_a: TableArgs) -> anyhow::Result<i32> {
    Ok(0)
}
