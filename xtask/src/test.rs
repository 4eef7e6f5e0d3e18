//! `cargo xtask test`: the whole test suite, plus the GPU tests (marked
//! `#[ignore = "needs a CUDA GPU"]`) where a GPU is present.
//!
//! With `--bin-dir DIR` it runs the test executables of `cargo xtask dist --tests` instead
//! of cargo, for a GPU machine without a Rust toolchain.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::bins::cargo;
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
    let mut totals = Totals::default();
    let mut failed = Vec::new();
    match args.bin_dir {
        None => {
            let mut cargo = cargo();
            cargo.args(["test", "--workspace", "--"]).args(test_args);
            if !run_counting(&mut cargo, &mut totals)? {
                failed.push("cargo test".to_string());
            }
        }
        Some(dir) => {
            for exe in test_executables(&dir.join("deps"))? {
                eprintln!("xtask: running {}", exe.display());
                if !run_counting(Command::new(&exe).args(test_args), &mut totals)? {
                    failed.push(exe.display().to_string());
                }
            }
        }
    }
    // One closing line for the whole suite, in the form CI tools read.
    println!(
        "tests: {} passed, {} failed, {} skipped",
        totals.passed, totals.failed, totals.ignored
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("tests failed in: {}", failed.join(", ")))
    }
}

/// Test counts summed over every `test result:` line.
#[derive(Default)]
struct Totals {
    passed: u64,
    failed: u64,
    ignored: u64,
}

/// Run a test command, echoing its output while adding up its `test result:` lines.
/// Returns whether it succeeded.
fn run_counting(command: &mut Command, totals: &mut Totals) -> crate::Result<bool> {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            println!("{line}");
            if let Some(counts) = line.strip_prefix("test result: ") {
                for part in counts.split([';', '.']) {
                    let mut words = part.split_whitespace();
                    let (Some(n), Some(what)) = (words.next(), words.next()) else {
                        continue;
                    };
                    let n: u64 = n.parse().unwrap_or(0);
                    match what {
                        "passed" => totals.passed += n,
                        "failed" => totals.failed += n,
                        "ignored" => totals.ignored += n,
                        _ => {}
                    }
                }
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("cannot wait for {:?}: {e}", command.get_program()))?;
    Ok(status.success())
}

/// The test executables of a `cargo xtask dist --tests` folder.
fn test_executables(deps: &std::path::Path) -> crate::Result<Vec<PathBuf>> {
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
    Ok(executables)
}
