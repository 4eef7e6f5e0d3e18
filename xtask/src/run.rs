//! `cargo xtask run LAB [-- ARGS]`: build one lab in release and run it.

use std::path::PathBuf;

use crate::bins::{run_status, Bins};
use crate::labs;

#[derive(clap::Args)]
pub struct Args {
    /// The lab: lab01 ... lab06 (or just 4)
    lab: String,
    /// Use the binaries in this folder (from `cargo xtask dist`) instead of building
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Arguments for the lab, after `--`
    #[arg(last = true)]
    args: Vec<String>,
}

pub fn run(args: Args) -> crate::Result<()> {
    let lab = labs::find(&args.lab)?;
    let bins = Bins::locate(args.bin_dir, &[lab])?;
    run_status(bins.command(&lab).args(&args.args))
}
