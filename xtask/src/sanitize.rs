//! `cargo xtask sanitize [LAB] [-- ARGS]`: each GPU lab under NVIDIA's compute-sanitizer,
//! one small run per tool, and a table of what each tool found.
//!
//! A kernel can read past its buffer, race on shared memory or miss a barrier and still
//! give the right answer on the sizes tried: the sanitizer checks every access instead.
//! memcheck (out-of-bounds and misaligned accesses, leaks) runs over every GPU lab;
//! racecheck (shared-memory hazards) and synccheck (barriers) over the labs whose kernels
//! share memory (`KernelRuns::shared_memory` in the lab table: lab06's reduction). Runs are small: memcheck slows a kernel by 10 to
//! 100 times. ARGS, after `--`, replace the named lab's run (with `--kernel FILE`, a kernel
//! of your own runs under the same tools).
//!
//! `--emulate` runs the same plan on the CPU device, for a machine without a GPU: it checks
//! every access and every barrier in every run, and under racecheck the shared-memory
//! accesses that race between warps (`LABS_EMULATE_RACECHECK`). It stops a run at its first
//! error, so a row counts at most one.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::bins::Bins;
use crate::labs::{self, KernelRuns, Lab, Table, LABS};

#[derive(clap::Args)]
pub struct Args {
    /// One lab (lab03 ... lab06); all the GPU labs if left out
    lab: Option<String>,
    /// Use the binaries in this folder (from `cargo xtask dist`) instead of building
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Only this tool (where it applies to the lab)
    #[arg(long, value_enum)]
    tool: Option<Tool>,
    /// Run the tools' checks on the CPU device instead (no GPU or CUDA toolkit needed); each
    /// run stops at its first error
    #[arg(long)]
    emulate: bool,
    /// Arguments for the lab's run instead of the small run it is given, after `--` (needs
    /// LAB)
    #[arg(last = true, requires = "lab")]
    args: Vec<String>,
}

/// A compute-sanitizer tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tool {
    /// Out-of-bounds and misaligned accesses, leaks
    Memcheck,
    /// Shared-memory hazards between threads
    Racecheck,
    /// Barriers misused
    Synccheck,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Memcheck => "memcheck",
            Tool::Racecheck => "racecheck",
            Tool::Synccheck => "synccheck",
        }
    }
}

/// How one lab is sanitized: its run, from the lab table, and the tools that apply.
#[derive(Debug)]
pub struct Plan {
    pub lab: &'static Lab,
    pub args: &'static [&'static str],
    pub tools: &'static [Tool],
}

impl Plan {
    fn of(lab: &'static Lab, kernels: &'static KernelRuns) -> Plan {
        Plan {
            lab,
            args: kernels.sanitize,
            tools: if kernels.shared_memory {
                &[Tool::Memcheck, Tool::Racecheck, Tool::Synccheck]
            } else {
                &[Tool::Memcheck]
            },
        }
    }

    /// The file name its image goes to, in a scratch folder (`--output`), if it writes one.
    fn output(&self) -> Option<String> {
        let extension = self.lab.work.image_extension()?;
        Some(format!("{}.{extension}", self.lab.name))
    }
}

/// What runs each tool: NVIDIA's compute-sanitizer (its path), or the CPU device.
enum Checker {
    Sanitizer(PathBuf),
    CpuDevice,
}

impl Checker {
    /// The command that runs `lab` under `tool`, before the lab's arguments.
    fn command(&self, bins: &Bins, lab: &Lab, tool: Tool) -> Command {
        match self {
            Checker::Sanitizer(sanitizer) => {
                let mut command = Command::new(sanitizer);
                command
                    .args(["--tool", tool.name(), "--print-limit", "20"])
                    .arg(bins.path(lab.name));
                command
            }
            Checker::CpuDevice => {
                let mut command = bins.command(lab);
                command.arg("--emulate");
                if let Some((variable, path)) = crate::nvrtc::library_path() {
                    command.env(variable, path);
                }
                // memcheck's and synccheck's checks are the CPU device's own, in every run.
                if tool == Tool::Racecheck {
                    command.env(shared::gpu::EMULATE_RACECHECK_VARIABLE, "1");
                }
                command
            }
        }
    }

    /// What the run printed says it found; None where it says nothing a checker says.
    fn finding(&self, text: &str) -> Option<Finding> {
        match self {
            Checker::Sanitizer(_) => read_report(text),
            Checker::CpuDevice => Some(read_stop(text)),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Checker::Sanitizer(_) => "compute-sanitizer",
            Checker::CpuDevice => "the CPU device",
        }
    }
}

/// What one tool found in one run.
#[derive(Debug, PartialEq, Eq)]
struct Finding {
    errors: u64,
    /// The first line that names a problem, for the table.
    first: Option<String>,
}

pub fn run(args: Args) -> Result<()> {
    let plans = plans(&LABS, args.lab.as_deref())?;
    let checker = if args.emulate {
        Checker::CpuDevice
    } else {
        Checker::Sanitizer(find_sanitizer().context(
            "compute-sanitizer not found (on PATH or in /usr/local/cuda/bin): it comes with the \
             CUDA toolkit (https://developer.nvidia.com/cuda-downloads) on a machine with an \
             NVIDIA GPU; without one, add --emulate to run the same checks on the CPU device",
        )?)
    };
    let bins = Bins::locate(args.bin_dir, plans.iter().map(|plan| plan.lab))?;
    let scratch = tempfile::tempdir().context("cannot make a scratch folder")?;

    let mut rows = vec![
        "| lab | tool | errors | first report |".to_string(),
        "|---|---|---:|---|".to_string(),
    ];
    let mut failed = 0;
    for plan in &plans {
        for &tool in plan
            .tools
            .iter()
            .filter(|t| args.tool.is_none_or(|only| only == **t))
        {
            let lab = plan.lab.name;
            shared::cli::eprint_line(&format!(
                "xtask: {lab} under {} ({}) ...",
                tool.name(),
                checker.name()
            ));
            let mut command = checker.command(&bins, plan.lab, tool);
            command.stdin(std::process::Stdio::null());
            if args.args.is_empty() {
                command.args(plan.args);
            } else {
                command.args(&args.args);
            }
            // The image goes to a scratch folder, not into the folder the command is run from.
            if let Some(name) = plan.output() {
                command.arg("--output").arg(scratch.path().join(name));
            }
            let ran = command
                .output()
                .with_context(|| format!("cannot run {lab} under {}", checker.name()))?;
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&ran.stdout),
                String::from_utf8_lossy(&ran.stderr)
            );
            let Some(finding) = checker.finding(&text) else {
                bail!(
                    "{lab} under {} printed no summary (exit {}): {}",
                    tool.name(),
                    ran.status,
                    last_lines(&text)
                );
            };
            // A lab that fails with no sanitizer error (a wrong sum, say) is a failed row too,
            // and the other tools still run: one of them may say why.
            let first = match (&finding.first, ran.status.success()) {
                (Some(report), _) => report.clone(),
                (None, true) => "clean".to_string(),
                (None, false) => format!("the lab failed: {}", last_lines(&text)),
            };
            if finding.errors > 0 || !ran.status.success() {
                failed += 1;
            }
            rows.push(format!(
                "| {lab} | {} | {} | {first} |",
                tool.name(),
                finding.errors
            ));
        }
    }
    shared::cli::print_line(&rows.join("\n"))?;
    if failed > 0 {
        bail!(
            "{failed} run(s) under the sanitizer reported errors or failed: the table's last \
             column says what each found first"
        );
    }
    Ok(())
}

/// Every GPU lab's plan, or the named lab's.
pub fn plans(table: Table, lab: Option<&str>) -> Result<Vec<Plan>> {
    let Some(name) = lab else {
        return Ok(labs::with_kernels(table)
            .map(|(lab, kernels)| Plan::of(lab, kernels))
            .collect());
    };
    let lab = labs::find_in(table, name)?;
    match &lab.kernels {
        Some(kernels) => Ok(vec![Plan::of(lab, kernels)]),
        None => {
            let gpu_labs: Vec<&str> = labs::with_kernels(table).map(|(l, _)| l.name).collect();
            bail!(
                "{} runs no kernel; the GPU labs are {}",
                lab.name,
                gpu_labs.join(", ")
            )
        }
    }
}

/// compute-sanitizer on PATH, else in the CUDA toolkit's usual place.
fn find_sanitizer() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/local/cuda/bin")])
        .map(|dir| dir.join("compute-sanitizer"))
        .find(|p| p.is_file())
}

/// The errors compute-sanitizer counted (`ERROR SUMMARY: N errors`; racecheck's `RACECHECK
/// SUMMARY: N hazards displayed (E errors, W warnings)`; the larger where both are printed),
/// and its first report line.
fn read_report(text: &str) -> Option<Finding> {
    let mut errors: Option<u64> = None;
    let mut first = None;
    let mut count = |n: u64| errors = Some(errors.map_or(n, |e| e.max(n)));
    for line in text.lines() {
        let body = line.trim_start_matches("========= ").trim();
        if let Some(rest) = body.strip_prefix("ERROR SUMMARY: ") {
            count(leading_number(rest)?);
        } else if let Some(rest) = body.strip_prefix("RACECHECK SUMMARY: ") {
            let inside = rest.split_once('(').map_or("", |(_, r)| r);
            count(leading_number(inside).unwrap_or(0));
        } else if first.is_none() && line.starts_with("========= ") && is_problem(body) {
            first = Some(body.chars().take(120).collect());
        }
    }
    errors.map(|errors| Finding { errors, first })
}

/// Where the CPU device stopped a launch (its one line, in the lab's error), as a finding of
/// one error; none where it did not.
fn read_stop(text: &str) -> Finding {
    const STOPPED: &str = "the CPU device stopped ";
    let first = text.lines().find_map(|line| {
        let at = line.find(STOPPED)?;
        // The driver's message ends the line, quoted in the lab's error: `..."))` or `...")`.
        let stop = line[at..]
            .trim_end()
            .trim_end_matches(')')
            .trim_end_matches('"');
        Some(stop.to_string())
    });
    Finding {
        errors: u64::from(first.is_some()),
        first,
    }
}

fn is_problem(body: &str) -> bool {
    [
        "Invalid ",
        "Error",
        "Race ",
        "Barrier ",
        "Leaked ",
        "Misaligned ",
        "Warning: ",
    ]
    .iter()
    .any(|start| body.starts_with(start))
}

fn leading_number(text: &str) -> Option<u64> {
    let digits: String = text
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The last few lines of a run, for a message.
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_run_counts_no_errors() {
        let text =
            "========= COMPUTE-SANITIZER\nlab04: 333x201 ...\n========= ERROR SUMMARY: 0 errors\n";
        assert_eq!(
            read_report(text),
            Some(Finding {
                errors: 0,
                first: None
            })
        );
    }

    #[test]
    fn memcheck_errors_are_counted_with_the_first_report() {
        let text = "========= COMPUTE-SANITIZER\n\
                    ========= Invalid __global__ write of size 1 bytes\n\
                    =========     at escape_colour+0x1f0\n\
                    ========= Invalid __global__ write of size 1 bytes\n\
                    ========= ERROR SUMMARY: 2 errors\n";
        let finding = read_report(text).expect("a summary");
        assert_eq!(finding.errors, 2);
        assert_eq!(
            finding.first.as_deref(),
            Some("Invalid __global__ write of size 1 bytes")
        );
    }

    #[test]
    fn racecheck_hazards_count_as_errors() {
        let text = "========= Error: Race reported between Write access at add_block_total+0x90\n\
                    ========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n";
        let finding = read_report(text).expect("a summary");
        assert_eq!(finding.errors, 1);
        assert!(finding
            .first
            .as_deref()
            .is_some_and(|l| l.starts_with("Error: Race")));
        let clean = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n";
        assert_eq!(read_report(clean).map(|f| f.errors), Some(0));
    }

    #[test]
    fn the_cpu_devices_stop_is_one_error_and_its_line_the_first_report() {
        let text = "lab06: error: CUDA error while launching a kernel: \
                    DriverError(CUDA_ERROR_ILLEGAL_ADDRESS, \"the CPU device stopped kernel \
                    `reduce_plain` at block (0, 0, 0), thread (32, 0, 0): shared store of 4 \
                    bytes at 0x4 in reduce_plain (reduce.cu line 61; PTX line 434), racecheck: \
                    thread (1, 0, 0), of another warp, loaded these bytes\")\n";
        let finding = read_stop(text);
        assert_eq!(finding.errors, 1);
        let first = finding.first.expect("a report");
        assert!(
            first.starts_with("the CPU device stopped kernel `reduce_plain`"),
            "{first}"
        );
        assert!(first.ends_with("loaded these bytes"), "{first}");
        // A lab that failed otherwise (a wrong sum) stopped nothing: no error of a check's.
        let wrong = "lab06: error: 1 variant(s) computed a wrong sum (see the table)\n";
        assert_eq!(
            read_stop(wrong),
            Finding {
                errors: 0,
                first: None
            }
        );
    }

    #[test]
    fn no_summary_is_no_report() {
        assert_eq!(read_report("lab06: no usable GPU\n"), None);
    }

    #[test]
    fn every_gpu_lab_is_sanitized_and_lab06_by_every_tool() {
        let all = plans(&LABS, None).expect("every plan");
        let planned: Vec<(&str, usize, Option<String>)> = all
            .iter()
            .map(|plan| (plan.lab.name, plan.tools.len(), plan.output()))
            .collect();
        assert_eq!(
            planned,
            [
                ("lab03", 1, Some("lab03.ppm".to_string())),
                ("lab04", 1, Some("lab04.ppm".to_string())),
                ("lab05", 1, Some("lab05.png".to_string())),
                ("lab06", 3, None),
            ]
        );
        let error = plans(&LABS, Some("lab01"))
            .expect_err("lab01 runs no kernel")
            .to_string();
        assert!(error.starts_with("lab01 runs no kernel"), "{error}");
        let exercise = crate::bins::workspace_root()
            .join(labs::find("lab06").expect("lab06").package)
            .join("kernels/exercise-broken.cu");
        assert!(exercise.is_file(), "{}", exercise.display());
    }
}
