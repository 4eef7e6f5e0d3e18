//! `cargo xtask test`: the whole test suite, plus the GPU tests (marked
//! `#[ignore = "needs a CUDA GPU"]`) where a GPU is present.
//!
//! With `--bin-dir DIR` it runs the test executables of `cargo xtask dist --tests` instead
//! of cargo, for a GPU machine without a Rust toolchain.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use crate::bins::{cargo, run_status};
use crate::gpu;

#[derive(clap::Args)]
pub struct Args {
    /// Run the test executables in DIR/deps (from `cargo xtask dist --tests`)
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
}

pub fn run(args: Args) -> crate::Result<()> {
    let gpu = gpu::probe();
    match &gpu {
        Ok(name) => eprintln!("xtask: GPU found ({name}): the GPU tests run too"),
        Err(why) => eprintln!("xtask: {why}: the GPU tests stay ignored"),
    }
    let test_args: &[&str] = if gpu.is_ok() {
        &["--include-ignored"]
    } else {
        &[]
    };
    match args.bin_dir {
        None => run_status(cargo().args(["test", "--workspace", "--"]).args(test_args)),
        Some(dir) => run_executables(&dir.join("deps"), test_args),
    }
}

fn run_executables(deps: &std::path::Path, test_args: &[&str]) -> crate::Result<()> {
    let mut executables: Vec<PathBuf> = fs::read_dir(deps)
        .map_err(|e| {
            format!(
                "cannot read {}: {e}; run `cargo xtask dist --tests`",
                deps.display()
            )
        })?
        .flatten()
        .map(|entry| entry.path())
        .collect();
    executables.sort();
    let mut failed = Vec::new();
    for exe in &executables {
        eprintln!("xtask: running {}", exe.display());
        let status = Command::new(exe).args(test_args).status();
        if !matches!(status, Ok(s) if s.success()) {
            failed.push(exe.display().to_string());
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("test executables failed: {}", failed.join(", ")))
    }
}
