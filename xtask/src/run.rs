//! `cargo xtask run LAB [-- ARGS]`: build one lab in release and run it, attached to the
//! terminal; its exit status is xtask's.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::bins::Bins;
use crate::labs;

#[derive(clap::Args)]
pub struct Args {
    /// The lab: lab01 ... lab06 (or just 4)
    lab: String,
    /// Use the binaries in this folder (from `cargo xtask dist`) instead of building
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Arguments given before `--`, which belong after it
    #[arg(hide = true)]
    misplaced: Vec<String>,
    /// Arguments for the lab, after `--`
    #[arg(last = true)]
    args: Vec<String>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let lab = labs::find(&args.lab)?;
    if !args.misplaced.is_empty() {
        let all: Vec<&str> = args
            .misplaced
            .iter()
            .chain(&args.args)
            .map(String::as_str)
            .collect();
        bail!(
            "put the lab's arguments after --: cargo xtask run {} -- {}",
            args.lab,
            all.join(" ")
        );
    }
    let bins = Bins::locate(args.bin_dir, [lab])?;
    let mut command = bins.command(lab);
    // On the CPU device, the workspace's own NVRTC (`.nvrtc/`, from pip) where it is there.
    if args.args.iter().any(|a| a == "--emulate") {
        if let Some((variable, path)) = crate::nvrtc::library_path() {
            command.env(variable, path);
        }
    }
    let status = command
        .args(&args.args)
        .status()
        .with_context(|| format!("cannot run {}", bins.path(lab.name).display()))?;
    // The lab has said what went wrong, if anything; xtask adds nothing but its status.
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => bail!("{} was ended by a signal ({status})", lab.name),
    })
}
