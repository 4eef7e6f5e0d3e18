//! `cargo xtask profile LAB [-- ARGS]`: one lab under Nsight Compute (`ncu`), a small named
//! set of metrics per kernel, printed as a table; `--save FILE` also writes each kernel's
//! figures as CSV ([`figures`]), which `cargo xtask docs` draws as a roofline.
//!
//! Where a kernel's time goes, in the few numbers that explain the labs: how long it ran,
//! how full the SMs were kept (achieved occupancy), how busy they and the FP64 pipe were,
//! how much of L2's and DRAM's bandwidth it used, how many of a warp's 32 lanes did useful
//! work, and what the warps waited on most. Only one launch of each kernel is profiled (the
//! first, or the `--launch`th): ncu replays a launch once per group of metrics, and lab06
//! launches each kernel hundreds of times.

mod bodies;
mod figures;
mod ncu;

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::bins::Bins;
use crate::labs::{self, Lab, Table, Work, LABS};

#[derive(clap::Args)]
pub struct Args {
    /// The lab: lab03 ... lab06, or `all`: each of them as docs/profile-h100.csv records them
    lab: String,
    /// Use the binaries in this folder (from `cargo xtask dist`) instead of building
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Profile the Nth launch of each kernel [default: 1]
    #[arg(long, value_name = "N", value_parser = crate::values::at_least_one_u32("the launch"))]
    launch: Option<u32>,
    /// Also write each kernel's figures, and the peaks they are shares of, to FILE as CSV
    #[arg(long, value_name = "FILE")]
    save: Option<PathBuf>,
    /// Arguments for the lab, after `--`
    #[arg(last = true)]
    args: Vec<String>,
}

pub fn run(args: Args) -> Result<()> {
    let runs = runs(&LABS, &args)?;
    let ncu = find_ncu().context(
        "ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin: it comes with the \
         CUDA toolkit (https://developer.nvidia.com/nsight-compute) on a machine with an \
         NVIDIA GPU",
    )?;
    let bins = Bins::locate(args.bin_dir, runs.iter().map(|(lab, _, _)| *lab))?;
    // Opened before the work, so that a bad path costs no profiling.
    let save = args
        .save
        .as_deref()
        .map(shared::output::Output::create)
        .transpose()?;
    let device = crate::gpu::probe().unwrap_or_else(|why| why);
    let mut rows = Vec::new();
    for (lab, run, launch) in &runs {
        let launches = profile(&ncu, &bins, lab.name, run, *launch)?;
        if runs.len() > 1 {
            shared::cli::print_line(&format!("\n{} {}:\n", lab.name, run.join(" ")))?;
        }
        shared::cli::print_line(&table(&launches))?;
        // A Mandelbrot lab's arguments describe an image lab01 can count its work for.
        let lab01_bodies = if lab.work == Work::Mandelbrot {
            bodies::lab01_loop_bodies(run)
        } else {
            None
        };
        let context = figures::Context {
            lab: lab.name,
            args: &run.join(" "),
            device: &device,
            lab01_bodies,
        };
        rows.extend(launches.iter().map(|l| figures::row(l, &context)));
    }
    if let Some(mut file) = save {
        file.write_all(figures::csv(&rows).as_bytes())?;
        file.commit()?;
    }
    Ok(())
}

/// What to profile: each GPU lab's recorded run for `all`, else the lab named with ARGS or
/// its small run; with the launch of each kernel to profile.
pub fn runs(table: Table, args: &Args) -> Result<Vec<(&'static Lab, Vec<String>, u32)>> {
    if args.lab == "all" {
        if !args.args.is_empty() || args.launch.is_some() {
            bail!("`profile all` runs what docs/profile-h100.csv records: no ARGS, no --launch");
        }
        return Ok(labs::with_kernels(table)
            .map(|(lab, kernels)| (lab, strings(kernels.recorded.0), kernels.recorded.1))
            .collect());
    }
    let lab = labs::find_in(table, &args.lab)?;
    let Some(kernels) = &lab.kernels else {
        let gpu_labs: Vec<&str> = labs::with_kernels(table).map(|(l, _)| l.name).collect();
        bail!(
            "{} runs no kernel; profile one of {}",
            lab.name,
            gpu_labs.join(", ")
        );
    };
    let run = if args.args.is_empty() {
        strings(kernels.profile)
    } else {
        args.args.clone()
    };
    Ok(vec![(lab, run, args.launch.unwrap_or(1))])
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Run `lab` with `args` under ncu, profiling the `launch`th launch of each kernel.
fn profile(
    ncu: &std::path::Path,
    bins: &Bins,
    lab: &str,
    args: &[String],
    launch: u32,
) -> Result<Vec<ncu::Launch>> {
    let scratch = tempfile::tempdir().context("cannot make a scratch folder")?;
    let mut command = Command::new(ncu);
    // `--clock-control none`: the GPU runs at the clocks it chooses, as in the labs' own
    // timed runs and `cargo xtask bench`, not locked to its base clock (ncu's default, which
    // makes runs repeatable but slower than the bench's: an H100's base clock is about a
    // fifth below its boost). The peaks are worked out from the clock measured during each
    // launch, so a share of peak holds at whatever clock it ran.
    command
        .args(["--csv", "--page", "raw", "--print-units", "base"])
        .args(["--clock-control", "none", "--kernel-id"])
        .arg(format!(":::{launch}"))
        .arg("--metrics")
        .arg(ncu::metrics())
        .arg(std::path::absolute(bins.path(lab)).context("cannot find the lab binary")?)
        .args(args)
        .current_dir(scratch.path());
    shared::cli::eprint_line(&format!(
        "xtask: {lab} under ncu (launch {launch} of each kernel, replayed once per metric \
         group) ..."
    ));
    let ran = command
        .output()
        .with_context(|| format!("cannot run {}", ncu.display()))?;
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let launches = ncu::read_csv(&stdout);
    if launches.is_empty() {
        bail!(
            "ncu profiled no kernel of {lab} ({}): {}",
            ran.status,
            String::from_utf8_lossy(&ran.stderr)
                .lines()
                .chain(stdout.lines())
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("no message")
        );
    }
    Ok(launches)
}

fn find_ncu() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/local/cuda/bin")])
        .map(|dir| dir.join("ncu"))
        .find(|p| p.is_file())
}

/// The printed table: a row per launch, time in microseconds, the rest as ncu gave it.
fn table(launches: &[ncu::Launch]) -> String {
    let mut text = String::from("| kernel |");
    for metric in ncu::SHOWN {
        text.push_str(&format!(" {} |", metric.heading));
    }
    text.push_str(" top stalls (cycles per instruction) |\n|---|");
    text.push_str(&"---:|".repeat(ncu::SHOWN.len()));
    text.push_str("---|\n");
    for launch in launches {
        text.push_str(&format!("| {} |", launch.kernel));
        for metric in ncu::SHOWN {
            let scale = if metric.name == ncu::TIME { 1e6 } else { 1.0 };
            let shown = launch
                .get(metric.name)
                .map_or_else(|| "n/a".to_string(), |x| format!("{:.1}", x * scale));
            text.push_str(&format!(" {shown} |"));
        }
        let stalls: Vec<String> = launch
            .stalls
            .iter()
            .map(|(reason, cycles)| format!("{reason} {cycles:.1}"))
            .collect();
        text.push_str(&format!(" {} |\n", stalls.join(", ")));
    }
    text.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_microseconds_and_the_top_stalls() {
        let stall = "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio";
        let launches = ncu::read_csv(&ncu::tests::sample(
            "escape_colour",
            &[
                (ncu::TIME, "nsecond", "1,234,000"),
                (ncu::OCCUPANCY, "%", "61.25"),
                (stall, "", "0.5"),
            ],
        ));
        let text = table(&launches);
        assert!(
            text.contains("| escape_colour | 1234.0 | 61.2 | n/a |"),
            "{text}"
        );
        assert!(text.ends_with("| wait 0.5 |"), "{text}");
    }

    #[test]
    fn all_is_every_gpu_lab_and_a_cpu_lab_is_refused() {
        let args = |lab: &str| Args {
            lab: lab.to_string(),
            bin_dir: None,
            launch: None,
            save: None,
            args: Vec::new(),
        };
        let all: Vec<&str> = runs(&LABS, &args("all"))
            .expect("profile all")
            .iter()
            .map(|(lab, _, _)| lab.name)
            .collect();
        assert_eq!(all, ["lab03", "lab04", "lab05", "lab06"]);
        let error = runs(&LABS, &args("lab02")).expect_err("lab02 runs no kernel");
        assert_eq!(
            error.to_string(),
            "lab02 runs no kernel; profile one of lab03, lab04, lab05, lab06"
        );
    }
}
