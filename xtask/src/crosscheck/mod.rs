//! `cargo xtask crosscheck DIR`: run a suite of kernels kept outside this repository on
//! the CPU device and, where a GPU opens, on the GPU, and compare them kernel by kernel.
//!
//! DIR holds `crosscheck.toml` ([`manifest`]) and the kernels' CUDA C++ files. Each kernel
//! is compiled with NVRTC through `shared::gpu` (PTX for `compute_90` on the CPU device, a
//! cubin for the GPU's own `sm_XX`, both with `-lineinfo`), launched with the arguments the
//! manifest describes, and every buffer it was given is digested afterwards, with what its
//! printfs printed. The driver library is chosen once per process, so each device is a
//! child process of this one (the hidden `crosscheck-side`, [`side`]), restarted after a
//! kernel that faults (a GPU's context is spoilt by it) or hangs (ended by a watchdog).
//!
//! The summary counts identical, differing, differing in rounding alone where an
//! order-dependent kernel's float atomics leave the order open ([`compare`]), refused by the
//! CPU device (grouped by the reason in its line), failed on the GPU and failed on both. Without a GPU it gives the
//! CPU device's side alone. The exit status is non-zero for a failure of the tool, and,
//! where a GPU was compared, for any kernel that differs or that the CPU device refused
//! (or failed) where the GPU ran it.
//!
//! Written here: the tools that are kept (compute-sanitizer, Nsight Compute) look at one
//! device at a time; none runs a PTX interpreter and a GPU on the same launches.
//!
//! Like the other commands it runs from a `cargo xtask dist` folder on a machine without
//! Rust: the CPU device is the library beside the binaries there (or in `--bin-dir`), and
//! NVRTC is found as the labs find it (`.nvrtc` in a workspace, else the loader's path).

pub mod compare;
pub mod manifest;
pub mod record;
pub mod side;

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use wait_timeout::ChildExt;

use compare::{Bytes, Side, Verdict};
use manifest::{Kernel, Suite};
use record::{Line, Outcome, Status, Stored};
use side::{Device, SideArgs, SideFiles, EXIT_RESTART};

/// Why the GPU's side was not run under `--cpu-only`.
const CPU_ONLY: &str = "--cpu-only";

/// The hidden subcommand that runs one side.
pub const SIDE_COMMAND: &str = "crosscheck-side";

#[derive(clap::Args)]
pub struct Args {
    /// The suite's folder: crosscheck.toml and the kernels' .cu files
    dir: PathBuf,
    /// Also write the kernel-by-kernel report (statuses, lines, digests, verdicts) as JSON
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Use the CPU device in this folder (from `cargo xtask dist`) instead of building it
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Only the kernels whose names contain TEXT (may be given more than once)
    #[arg(long, value_name = "TEXT")]
    only: Vec<String>,
    /// Run the CPU device's side only, even where a GPU is present
    #[arg(long)]
    cpu_only: bool,
    /// Seconds one launch may run on the CPU device; a side silent for this long and two
    /// minutes more (a GPU's hung kernel) is ended, and the kernel counts as timed out
    #[arg(long, value_name = "SECONDS", default_value_t = 120.0)]
    deadline: f64,
    /// A folder of CUDA headers for NVRTC (cuda_fp16.h, cooperative_groups.h, nv/target),
    /// which NVRTC 12 does not carry; may be given more than once. Without it, the CUDA
    /// toolkit's include folder where there is one ($CUDA_HOME, /usr/local/cuda)
    #[arg(long = "include-path", value_name = "DIR")]
    include: Vec<PathBuf>,
    /// Run the second side on the CPU device too, in place of the GPU: the comparison's own
    /// test, and a check that the CPU device gives the same bytes twice
    #[arg(long, hide = true, conflicts_with = "cpu_only")]
    second_cpu: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if !(args.deadline > 0.0 && args.deadline.is_finite()) {
        bail!(
            "--deadline {}: give a positive number of seconds",
            args.deadline
        );
    }
    let suite = Suite::load(&args.dir)?;
    let kernels = suite.select(&args.only);
    if kernels.is_empty() {
        bail!(
            "no kernel of {} has a name containing {}",
            args.dir.display(),
            args.only.join(" or ")
        );
    }
    if let Some(out) = &args.out {
        check_writable(out)?;
    }
    let include = include_paths(&args.include)?;
    let library = cpu_device(args.bin_dir.as_deref())?;
    let work = tempfile::Builder::new()
        .prefix("xtask-crosscheck-")
        .tempdir()
        .context("cannot create a temporary folder")?;
    let watchdog = Duration::from_secs_f64(args.deadline) + Duration::from_secs(120);
    let run_on = |device: Device, name: &str| {
        let mut env: Vec<(&str, std::ffi::OsString)> = Vec::new();
        if let Some((variable, path)) = crate::nvrtc::library_path() {
            env.push((variable, path));
        }
        if device == Device::Cpu {
            env.push(("CPU_DEVICE_LIBRARY", library.clone().into_os_string()));
            env.push((
                shared::gpu::EMULATE_DEADLINE_VARIABLE,
                args.deadline.to_string().into(),
            ));
        }
        let sides = Sides {
            suite: &suite,
            only: &args.only,
            include: &include,
            count: kernels.len(),
            work: work.path(),
            env,
            watchdog,
        };
        sides.run(device, name)
    };
    let cpu = match run_on(Device::Cpu, "cpu")? {
        Ran::Side(side) => side,
        Ran::Unavailable(why) => bail!("the CPU device did not open: {why}"),
    };
    let gpu = match (args.cpu_only, args.second_cpu) {
        (true, _) => Ran::Unavailable(CPU_ONLY.to_string()),
        (false, true) => run_on(Device::Cpu, "second")?,
        (false, false) => run_on(Device::Gpu, "gpu")?,
    };
    let cpu_files = SideFiles::in_folder(work.path(), "cpu");
    let gpu_files =
        SideFiles::in_folder(work.path(), if args.second_cpu { "second" } else { "gpu" });
    let report = match &gpu {
        Ran::Side(gpu) => Some(judge(&kernels, &cpu, gpu, &cpu_files, &gpu_files)?),
        Ran::Unavailable(_) => None,
    };
    let text = match (&gpu, &report) {
        (Ran::Side(gpu), Some(verdicts)) => summary(&suite, &kernels, &cpu, gpu, verdicts),
        (Ran::Unavailable(why), _) => cpu_summary(&suite, &kernels, &cpu, why),
        (Ran::Side(_), None) => String::new(),
    };
    for line in text.lines() {
        shared::cli::print_line(line)?;
    }
    if let Some(out) = &args.out {
        let json = json_report(&suite, &kernels, &cpu, &gpu, report.as_deref());
        let text = serde_json::to_string_pretty(&json).context("writing the report")?;
        shared::output::write_file(out, text.as_bytes())?;
    }
    let failed = report
        .iter()
        .flatten()
        .filter(|verdict| verdict.fails())
        .count();
    Ok(match failed {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}

/// The folder of `--out` exists and the path is not a folder: checked before minutes of
/// running.
fn check_writable(out: &Path) -> Result<()> {
    if out.is_dir() {
        bail!("--out {}: is a folder; give a file name", out.display());
    }
    let folder = out.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(folder) = folder {
        if !folder.is_dir() {
            bail!("--out {}: its folder does not exist", out.display());
        }
    }
    Ok(())
}

/// The folders of CUDA headers NVRTC is given: those of `--include-path`, each checked,
/// or else the toolkit's where one is found, or none (said once, on stderr).
fn include_paths(given: &[PathBuf]) -> Result<Vec<PathBuf>> {
    for dir in given {
        if !dir.is_dir() {
            bail!("--include-path {}: is not a folder", dir.display());
        }
    }
    if !given.is_empty() {
        return Ok(given.to_vec());
    }
    let toolkit = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|home| PathBuf::from(home).join("include"))
        .chain([PathBuf::from("/usr/local/cuda/include")])
        .find(|dir| dir.join("cuda_fp16.h").is_file());
    match &toolkit {
        Some(dir) => shared::cli::eprint_line(&format!(
            "xtask: crosscheck: CUDA headers from {}",
            dir.display()
        )),
        None => shared::cli::eprint_line(
            "xtask: crosscheck: no CUDA headers found (no --include-path, $CUDA_HOME or \
             /usr/local/cuda): kernels that include cuda_fp16.h or cooperative_groups.h \
             will not compile",
        ),
    }
    Ok(toolkit.into_iter().collect())
}

/// The CPU device's library: in `--bin-dir`, else named by `CPU_DEVICE_LIBRARY`, else
/// beside this program in a dist folder, else built by cargo in this workspace.
fn cpu_device(bin_dir: Option<&Path>) -> Result<PathBuf> {
    let file = shared::gpu::cpu_device_file();
    if let Some(dir) = bin_dir {
        let path = dir.join(&file);
        if !path.is_file() {
            bail!(
                "{} not found; make the folder with `cargo xtask dist`",
                path.display()
            );
        }
        return Ok(path);
    }
    if let Some(path) = std::env::var_os("CPU_DEVICE_LIBRARY") {
        return Ok(PathBuf::from(path));
    }
    if let Some(dir) = crate::bins::dist_folder() {
        let path = dir.join(&file);
        if !path.is_file() {
            bail!("{} is missing from this dist folder", path.display());
        }
        return Ok(path);
    }
    // With `shared`, as the labs' builds have it (`bins::Bins::locate`): built alone, the CPU
    // device's dependencies take other features, and each build undoes the other's.
    let status = crate::bins::cargo()
        .args([
            "build",
            "--release",
            "--package",
            "cpu-device",
            "--package",
            "shared",
        ])
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!("building the CPU device failed ({status}); cargo's messages above say why");
    }
    Ok(crate::bins::target_dir().join("release").join(file))
}

/// What running one side gave.
enum Ran {
    Side(Side),
    Unavailable(String),
}

/// What every side's run shares.
struct Sides<'a> {
    suite: &'a Suite,
    only: &'a [String],
    include: &'a [PathBuf],
    count: usize,
    work: &'a Path,
    env: Vec<(&'static str, std::ffi::OsString)>,
    watchdog: Duration,
}

/// How a side's process ended.
enum Ended {
    Exited(ExitStatus),
    /// Silent past the watchdog, and killed.
    Hung,
}

impl Sides<'_> {
    /// Run the side on `device` until every kernel has an outcome: a side that stops after
    /// a fault, dies or hangs is started again from the kernel after.
    fn run(&self, device: Device, label: &str) -> Result<Ran> {
        let files = SideFiles::in_folder(self.work, label);
        let exe = std::env::current_exe().context("cannot find this program to run its sides")?;
        let started = Instant::now();
        let mut from = 0;
        let mut lost: Vec<Outcome> = Vec::new();
        shared::cli::eprint_line(&format!(
            "xtask: crosscheck: {} kernels on the {}",
            self.count,
            match device {
                Device::Cpu => "CPU device",
                Device::Gpu => "GPU",
            }
        ));
        loop {
            let stdout = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&files.printf)
                .with_context(|| format!("cannot open {}", files.printf.display()))?;
            let side = SideArgs::new(
                &self.suite.dir,
                device,
                &files,
                from,
                self.only,
                self.include,
            );
            let mut child = Command::new(&exe)
                .arg(SIDE_COMMAND)
                .args(side.to_args())
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stdout(stdout)
                .spawn()
                .with_context(|| format!("cannot run {}", exe.display()))?;
            let ended = self.watch(&mut child, &files.record)?;
            let lines = record::read(&files.record)?;
            if let Some(why) = lines.iter().find_map(|line| match line {
                Line::Unavailable { why } => Some(why.clone()),
                _ => None,
            }) {
                return Ok(Ran::Unavailable(why));
            }
            let finished = |lost: &[Outcome], index: usize| {
                lost.iter().any(|o| o.index == index)
                    || lines
                        .iter()
                        .any(|l| matches!(l, Line::Done(o) if o.index == index))
            };
            let begun = lines.iter().rev().find_map(|line| match line {
                Line::Begin { index } if !finished(&lost, *index) => Some(*index),
                _ => None,
            });
            let next = (0..self.count).find(|&i| !finished(&lost, i) && Some(i) != begun);
            match (ended, begun) {
                (Ended::Exited(status), None) if status.success() || next.is_none() => break,
                (Ended::Exited(status), None) if status.code() == Some(i32::from(EXIT_RESTART)) => {
                }
                (Ended::Exited(status), None) => bail!(
                    "the {} side failed ({status}) before kernel {}; its message above says why",
                    device.name(),
                    next.unwrap_or(0)
                ),
                (Ended::Exited(status), Some(index)) => lost.push(Outcome::failed(
                    index,
                    Status::Crash,
                    format!("the side's process died during this kernel ({status})"),
                )),
                (Ended::Hung, Some(index)) => lost.push(Outcome::failed(
                    index,
                    Status::Timeout,
                    format!(
                        "no answer after {} s: ended by the crosscheck's watchdog",
                        self.watchdog.as_secs()
                    ),
                )),
                (Ended::Hung, None) => bail!(
                    "the {} side hung before its first kernel and was ended",
                    device.name()
                ),
            }
            match (0..self.count).find(|&i| !finished(&lost, i)) {
                Some(i) => from = i,
                None => break,
            }
        }
        let lines = record::read(&files.record)?;
        let (name, arch) = lines
            .iter()
            .find_map(|line| match line {
                Line::Device { name, arch } => Some((name.clone(), arch.clone())),
                _ => None,
            })
            .unwrap_or_default();
        let mut outcomes: Vec<Option<Outcome>> = vec![None; self.count];
        for outcome in lines
            .into_iter()
            .filter_map(|line| match line {
                Line::Done(outcome) => Some(outcome),
                _ => None,
            })
            .chain(lost)
        {
            if let Some(slot) = outcomes.get_mut(outcome.index) {
                *slot = Some(outcome);
            }
        }
        let outcomes = outcomes
            .into_iter()
            .enumerate()
            .map(|(i, o)| {
                o.with_context(|| {
                    format!(
                        "the {} side left kernel {i} without an outcome",
                        device.name()
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        shared::cli::eprint_line(&format!(
            "xtask: crosscheck: the {label} side took {:.1} s",
            started.elapsed().as_secs_f64()
        ));
        Ok(Ran::Side(Side {
            device: name,
            arch,
            outcomes,
        }))
    }

    /// Wait for the side, ending it if its record stays unchanged past the watchdog.
    fn watch(&self, child: &mut std::process::Child, record: &Path) -> Result<Ended> {
        let size = || std::fs::metadata(record).map_or(0, |m| m.len());
        let (mut last, mut since) = (size(), Instant::now());
        loop {
            if let Some(status) = child
                .wait_timeout(Duration::from_millis(100))
                .context("waiting for a side")?
            {
                return Ok(Ended::Exited(status));
            }
            let now = size();
            if now != last {
                (last, since) = (now, Instant::now());
            } else if since.elapsed() > self.watchdog {
                // Ours to end: the child this command started.
                let _ = child.kill();
                let _ = child.wait();
                return Ok(Ended::Hung);
            }
        }
    }
}

/// A side's data file, read for the comparison.
struct DataFile(PathBuf);

impl Bytes for DataFile {
    fn bytes(&self, stored: &Stored) -> Result<Vec<u8>> {
        side::read_range(&self.0, stored.offset, stored.offset + stored.len)
    }
}

fn judge(
    kernels: &[Kernel],
    cpu: &Side,
    gpu: &Side,
    cpu_files: &SideFiles,
    gpu_files: &SideFiles,
) -> Result<Vec<Verdict>> {
    let (cpu_data, gpu_data) = (
        DataFile(cpu_files.data.clone()),
        DataFile(gpu_files.data.clone()),
    );
    kernels
        .iter()
        .zip(cpu.outcomes.iter().zip(&gpu.outcomes))
        .map(|(kernel, (c, g))| compare::verdict(kernel, c, g, &cpu_data, &gpu_data))
        .collect()
}

/// The first line of a status's line, clipped.
fn short(line: &str) -> String {
    let first = line.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut text: String = first.chars().take(160).collect();
    if first.chars().count() > 160 {
        text.push_str("...");
    }
    text
}

fn heading(suite: &Suite, kernels: &[Kernel]) -> String {
    let of = if kernels.len() == suite.kernels.len() {
        String::new()
    } else {
        format!(" (of {})", suite.kernels.len())
    };
    format!("{} kernels{of} in {}", kernels.len(), suite.dir.display())
}

/// Refused kernels, grouped by reason, as indented lines.
fn refusals(kernels: &[Kernel], outcomes: &[&Outcome]) -> String {
    let groups = compare::grouped(
        outcomes
            .iter()
            .map(|o| (compare::reason(&o.line), kernels[o.index].name.as_str())),
    );
    groups
        .iter()
        .map(|(reason, names)| {
            format!(
                "    {:>4}  {reason}: {}\n",
                names.len(),
                compare::some_names(names, 3)
            )
        })
        .collect()
}

/// Kernels with their lines, indented.
fn listed(kernels: &[Kernel], outcomes: &[&Outcome]) -> String {
    outcomes
        .iter()
        .map(|o| {
            format!(
                "          {}: {}: {}\n",
                kernels[o.index].name,
                o.status.word(),
                short(&o.line)
            )
        })
        .collect()
}

/// The CPU device's side alone.
fn cpu_summary(suite: &Suite, kernels: &[Kernel], cpu: &Side, why: &str) -> String {
    let with = |status: Status| -> Vec<&Outcome> {
        cpu.outcomes.iter().filter(|o| o.status == status).collect()
    };
    let mut text = format!(
        "crosscheck: {} on the {} ({})\n",
        heading(suite, kernels),
        cpu.device,
        cpu.arch
    );
    text.push_str(&format!(
        "  {:>4}  ran to the end\n",
        with(Status::Ok).len()
    ));
    let refused = with(Status::Refused);
    text.push_str(&format!(
        "  {:>4}  refused by the CPU device\n",
        refused.len()
    ));
    text.push_str(&refusals(kernels, &refused));
    for status in [
        Status::Fault,
        Status::Timeout,
        Status::Crash,
        Status::Compile,
        Status::Setup,
    ] {
        let these = with(status.clone());
        if !these.is_empty() {
            text.push_str(&format!("  {:>4}  {}\n", these.len(), status.word()));
            text.push_str(&listed(kernels, &these));
        }
    }
    text.push_str(&match why {
        CPU_ONLY => "the GPU side was not run (--cpu-only)\n".to_string(),
        _ => format!("the GPU side needs a GPU ({why}): run this on a GPU machine to compare\n"),
    });
    text
}

/// Both sides, compared.
fn summary(
    suite: &Suite,
    kernels: &[Kernel],
    cpu: &Side,
    gpu: &Side,
    verdicts: &[Verdict],
) -> String {
    let mut text = format!(
        "crosscheck: {}, the {} ({}) against the {} ({})\n",
        heading(suite, kernels),
        cpu.device,
        cpu.arch,
        gpu.device,
        gpu.arch
    );
    let count = |f: &dyn Fn(&Verdict) -> bool| verdicts.iter().filter(|v| f(v)).count();
    let identical = count(&|v| matches!(v, Verdict::Identical { .. }));
    let reordered = count(&|v| matches!(v, Verdict::Identical { reordered: true }));
    text.push_str(&format!("  {identical:>4}  identical"));
    if reordered > 0 {
        text.push_str(&format!(
            " ({reordered} order-dependent: same elements, in another order)"
        ));
    }
    text.push('\n');
    let differing: Vec<(usize, &String)> = verdicts
        .iter()
        .enumerate()
        .filter_map(|(i, v)| match v {
            Verdict::Differs(line) => Some((i, line)),
            _ => None,
        })
        .collect();
    text.push_str(&format!("  {:>4}  differing\n", differing.len()));
    for (i, line) in differing {
        text.push_str(&format!("          {}: {line}\n", kernels[i].name));
    }
    let rounding: Vec<(usize, &String)> = verdicts
        .iter()
        .enumerate()
        .filter_map(|(i, v)| match v {
            Verdict::Rounding(line) => Some((i, line)),
            _ => None,
        })
        .collect();
    if !rounding.is_empty() {
        text.push_str(&format!(
            "  {:>4}  differing in rounding alone, where atomics' order is open (float sums)\n",
            rounding.len()
        ));
        for (i, line) in rounding {
            text.push_str(&format!("          {}: {line}\n", kernels[i].name));
        }
    }
    let pick = |wanted: &Verdict, outcomes: &[Outcome]| -> Vec<usize> {
        verdicts
            .iter()
            .enumerate()
            .filter(|(_, v)| *v == wanted)
            .map(|(i, _)| outcomes[i].index)
            .collect()
    };
    let refused: Vec<&Outcome> = pick(&Verdict::CpuRefused, &cpu.outcomes)
        .into_iter()
        .map(|i| &cpu.outcomes[i])
        .collect();
    text.push_str(&format!(
        "  {:>4}  refused by the CPU device where the GPU ran\n",
        refused.len()
    ));
    text.push_str(&refusals(kernels, &refused));
    let cpu_failed: Vec<&Outcome> = pick(&Verdict::CpuFailed, &cpu.outcomes)
        .into_iter()
        .map(|i| &cpu.outcomes[i])
        .collect();
    if !cpu_failed.is_empty() {
        text.push_str(&format!(
            "  {:>4}  failed on the CPU device where the GPU ran\n",
            cpu_failed.len()
        ));
        text.push_str(&listed(kernels, &cpu_failed));
    }
    let gpu_failed: Vec<&Outcome> = pick(&Verdict::GpuFailed, &gpu.outcomes)
        .into_iter()
        .map(|i| &gpu.outcomes[i])
        .collect();
    text.push_str(&format!("  {:>4}  failed on the GPU\n", gpu_failed.len()));
    text.push_str(&listed(kernels, &gpu_failed));
    let both: Vec<&Outcome> = pick(&Verdict::BothFailed, &gpu.outcomes)
        .into_iter()
        .map(|i| &gpu.outcomes[i])
        .collect();
    text.push_str(&format!("  {:>4}  failed on both\n", both.len()));
    for outcome in both {
        let c = &cpu.outcomes[outcome.index];
        text.push_str(&format!(
            "          {}: CPU device {}: {}; GPU {}: {}\n",
            kernels[outcome.index].name,
            c.status.word(),
            short(&compare::reason(&c.line)),
            outcome.status.word(),
            short(&compare::reason(&outcome.line))
        ));
    }
    let failing = verdicts.iter().filter(|v| v.fails()).count();
    text.push_str(&match failing {
        0 => "crosscheck: no wrong answer, and no refusal where the GPU ran\n".to_string(),
        n => format!("crosscheck: {n} kernels differ or were refused where the GPU ran\n"),
    });
    text
}

fn outcome_json(outcome: &Outcome) -> serde_json::Value {
    serde_json::json!({
        "status": outcome.status.word(),
        "line": outcome.line,
        "buffers": outcome.buffers.iter().map(|b| serde_json::json!({
            "arg": b.arg, "bytes": b.len, "digest": b.digest,
        })).collect::<Vec<_>>(),
        "printf": outcome.printf.as_ref().map(|p| serde_json::json!({
            "bytes": p.len, "digest": p.digest,
        })),
        "ms": outcome.ms,
    })
}

fn json_report(
    suite: &Suite,
    kernels: &[Kernel],
    cpu: &Side,
    gpu: &Ran,
    verdicts: Option<&[Verdict]>,
) -> serde_json::Value {
    let device = |side: &Side| serde_json::json!({ "device": side.device, "arch": side.arch });
    let gpu_side = match gpu {
        Ran::Side(side) => Some(side),
        Ran::Unavailable(_) => None,
    };
    let entries: Vec<serde_json::Value> = kernels
        .iter()
        .enumerate()
        .map(|(i, kernel)| {
            let verdict = verdicts.and_then(|v| v.get(i));
            serde_json::json!({
                "name": kernel.name,
                "file": kernel.file.display().to_string(),
                "entry": kernel.entry,
                "cpu": cpu.outcomes.get(i).map(outcome_json),
                "gpu": gpu_side.and_then(|g| g.outcomes.get(i)).map(outcome_json),
                "verdict": verdict.map(Verdict::word),
                "detail": match verdict {
                    Some(Verdict::Differs(line) | Verdict::Rounding(line)) => Some(line.clone()),
                    _ => None,
                },
                "reason": cpu.outcomes.get(i)
                    .filter(|o| o.status == Status::Refused)
                    .map(|o| compare::reason(&o.line)),
            })
        })
        .collect();
    serde_json::json!({
        "suite": suite.dir.display().to_string(),
        "cpu": device(cpu),
        "gpu": match gpu {
            Ran::Side(side) => device(side),
            Ran::Unavailable(why) => serde_json::json!({ "unavailable": why }),
        },
        "kernels": entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite() -> Suite {
        let text = "[[kernel]]\nname = \"a/one\"\nfile = \"one.cu\"\ngrid = 1\nblock = 1\n\
                    [[kernel]]\nname = \"b/two\"\nfile = \"two.cu\"\ngrid = 1\nblock = 1\n\
                    [[kernel]]\nname = \"b/three\"\nfile = \"three.cu\"\ngrid = 1\nblock = 1\n";
        Suite::parse(Path::new("suite"), text).unwrap()
    }

    fn side(statuses: &[(Status, &str)]) -> Side {
        Side {
            device: "dev".into(),
            arch: "compute_90".into(),
            outcomes: statuses
                .iter()
                .enumerate()
                .map(|(i, (s, line))| Outcome::failed(i, s.clone(), *line))
                .collect(),
        }
    }

    const UNKNOWN: &str = "CUDA_ERROR_INVALID_PTX: k (PTX line 4): the CPU device does not know the instruction `tanh.approx.f32`, so it refuses";

    #[test]
    fn the_cpu_side_alone_counts_and_groups_refusals() {
        let suite = suite();
        let cpu = side(&[
            (Status::Ok, ""),
            (Status::Refused, UNKNOWN),
            (Status::Fault, "CUDA_ERROR_ILLEGAL_ADDRESS: bad\nmore"),
        ]);
        let text = cpu_summary(&suite, &suite.kernels, &cpu, "no GPU");
        assert!(text.contains("     1  ran to the end\n"), "{text}");
        assert!(
            text.contains("     1  instruction `tanh.approx.f32`: b/two\n"),
            "{text}"
        );
        assert!(
            text.contains("b/three: fault: CUDA_ERROR_ILLEGAL_ADDRESS: bad\n"),
            "{text}"
        );
        assert!(text.contains("the GPU side needs a GPU (no GPU)"), "{text}");
    }

    #[test]
    fn both_sides_are_summed_up_by_verdict() {
        let suite = suite();
        let cpu = side(&[
            (Status::Ok, ""),
            (Status::Refused, UNKNOWN),
            (Status::Fault, "f"),
        ]);
        let gpu = side(&[(Status::Ok, ""), (Status::Ok, ""), (Status::Fault, "g")]);
        let verdicts = [
            Verdict::Differs("argument 0 ...".into()),
            Verdict::CpuRefused,
            Verdict::BothFailed,
        ];
        let text = summary(&suite, &suite.kernels, &cpu, &gpu, &verdicts);
        assert!(
            text.contains("     1  differing\n          a/one: argument 0 ...\n"),
            "{text}"
        );
        assert!(
            text.contains("     1  refused by the CPU device where the GPU ran\n     "),
            "{text}"
        );
        assert!(
            text.contains("b/three: CPU device fault: f; GPU fault: g"),
            "{text}"
        );
        assert!(
            text.ends_with("2 kernels differ or were refused where the GPU ran\n"),
            "{text}"
        );
        let json = json_report(
            &suite,
            &suite.kernels,
            &cpu,
            &Ran::Side(gpu),
            Some(&verdicts),
        );
        assert_eq!(
            json["kernels"][1]["reason"],
            "instruction `tanh.approx.f32`"
        );
        assert_eq!(json["kernels"][0]["verdict"], "differing");
    }

    #[test]
    fn out_must_name_a_file_in_a_folder_that_exists() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_writable(dir.path()).is_err());
        assert!(check_writable(&dir.path().join("no/such.json")).is_err());
        assert!(check_writable(&dir.path().join("r.json")).is_ok());
        assert!(check_writable(Path::new("r.json")).is_ok());
    }
}
