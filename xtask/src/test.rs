//! `cargo xtask test`: the whole test suite, plus the tests it ignores whose needs this
//! machine meets, each test's need declared as the reason it is ignored ([`crate::needs`]):
//! - the GPU tests (`#[ignore = "needs a CUDA GPU"]`) and compute-sanitizer's where a GPU
//!   opens, or always with `--require-gpu`, which also fails when none opens;
//! - with them those that need two GPUs, where two or more open;
//! - the GPU tests again on the CPU device (`LABS_EMULATE=1`) wherever NVRTC is found, GPU
//!   or not (all but compute-sanitizer's and those that need two GPUs);
//! - the kernel checks (those that need NVRTC) with the GPU tests, and on the CPU device:
//!   wherever NVRTC is found, on the system, or in `.nvrtc/`, where `.ci/run` installs it
//!   from pip;
//! - lab01 against the given C program wherever a C compiler is found.
//!
//! The ignored tests and their needs come from libtest's own lines of the first run; they
//! then run by their exact names. What was skipped, and why, is in the closing summary:
//! nothing is skipped silently, and a test ignored for a reason that is no need fails the run.
//!
//! It tests every package of the workspace but those whose manifest names the command that
//! tests them (`[package.metadata.xtask] tested-by`, read by [`crate::members`]); the summary
//! names that command. Such a command reuses this runner with a [`Plan`] of its own: its
//! package, and the needs of its own tests with whether this machine meets them.
//!
//! With `--bin-dir DIR` it runs the test executables of `cargo xtask dist --tests` instead
//! of cargo, for a GPU machine without a Rust toolchain.

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::bins::cargo;
use crate::gpu;
use crate::members;
use crate::needs::{self, Need};
use crate::nvrtc::Nvrtc;

/// lab01's tests compare with the C program unless this says there is no compiler.
const NO_C_COMPILER: &str = "LAB01_NO_C_COMPILER";

/// Where lab01's tests find the C program when it is not where they were built.
const C_REFERENCE_VAR: &str = "LAB01_C_REFERENCE";

#[derive(clap::Args)]
pub struct Args {
    /// Test this lab only (lab01 ... lab06, or just 4): on the CPU device where no GPU opens
    #[arg(conflicts_with = "bin_dir")]
    lab: Option<String>,

    /// Run the test executables in DIR/deps (from `cargo xtask dist --tests`)
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,

    /// Run the GPU tests whatever the GPU probe says, and fail if no GPU opens
    #[arg(long)]
    require_gpu: bool,
}

/// What one test command runs beyond what this machine's probes decide.
#[derive(Default)]
pub struct Plan {
    /// cargo's choice of packages (`--workspace --exclude P`, `--package P`); unused with
    /// `--bin-dir`, whose executables are the ones `dist --tests` chose.
    pub packages: Vec<String>,
    /// The needs its tests declare beyond [`needs::NEEDS`], each with whether this machine
    /// meets it, or why not.
    pub needs: Vec<(Need, Result<(), String>)>,
    /// Lines the closing summary ends with: what was skipped and why, what is tested elsewhere.
    pub lines: Vec<String>,
}

impl Plan {
    /// `cargo xtask test`'s: every package but those tested by a command of their own.
    fn workspace() -> crate::bins::Result<Plan> {
        let mut plan = Plan {
            packages: vec!["--workspace".to_string()],
            ..Plan::default()
        };
        for member in members::tested_elsewhere()? {
            plan.lines.push(format!(
                "{}'s tests: run by `{}`",
                member.package, member.by
            ));
            plan.packages
                .extend(["--exclude".to_string(), member.package]);
        }
        Ok(plan)
    }

    /// `cargo xtask test LAB`'s: that lab's package alone.
    fn lab(name: &str) -> crate::bins::Result<Plan> {
        let lab = crate::labs::find(name).map_err(|e| e.to_string())?;
        Ok(Plan {
            packages: vec!["--package".to_string(), lab.package.to_string()],
            ..Plan::default()
        })
    }
}

/// `cargo xtask test`.
pub fn run(args: Args) -> crate::bins::Result<()> {
    let plan = match (&args.bin_dir, &args.lab) {
        (Some(_), _) => Plan::default(),
        (None, Some(lab)) => Plan::lab(lab)?,
        (None, None) => Plan::workspace()?,
    };
    run_plan(args.bin_dir, args.require_gpu, &plan)
}

/// Run the tests of `plan` (from `bin_dir`'s executables, or with cargo); the GPU tests
/// whatever the GPU probe says with `require_gpu`.
pub fn run_plan(
    bin_dir: Option<PathBuf>,
    require_gpu: bool,
    plan: &Plan,
) -> crate::bins::Result<()> {
    let c_reference = bin_dir.as_deref().and_then(c_reference_in);
    let suite = Suite::new(bin_dir, &plan.packages)?;
    let mut failed = Vec::new();
    let machine = Machine::probe(require_gpu, plan, &mut failed);
    let nvrtc = &machine.nvrtc;
    // Said first, once: the summary's lines point back to it.
    if let (Some(why), Err(_)) = (&machine.no_gpu, nvrtc) {
        shared::cli::eprint_line(&format!(
            "xtask test: the GPU tests and the kernel checks will be skipped: no GPU opened \
             ({why}), and the CPU device that runs them without one needs NVRTC; {}",
            crate::nvrtc::install_hint()
        ));
    }
    let no_nvrtc = "skipped: NVRTC not found (`cargo xtask install-nvrtc` installs it)";
    let nvrtc_line = match nvrtc {
        Ok(Nvrtc::Folder(dir)) => format!("ran with NVRTC from {}", dir.display()),
        Ok(Nvrtc::System) => "ran with the system's NVRTC".to_string(),
        Err(_) => no_nvrtc.to_string(),
    };

    let compiler = c_compiler();
    let c_line = match &compiler {
        Some(cc) => format!("lab01 compared with reference/mandelbrot.c built by {cc}"),
        None => format!("skipped: no C compiler ($CC, cc or gcc); {NO_C_COMPILER}=1 was set"),
    };

    let env = environment(nvrtc, compiler.is_some(), c_reference)?;

    let mut totals = Totals::default();
    suite.run(&[], &env, &mut totals, &mut failed)?;
    let ignored = std::mem::take(&mut totals.ignored_tests);
    let (by_need, unknown) = sort_by_need(&ignored, &machine.met);
    failed.extend(unknown);

    let (here, on_cpu_device) = chosen(&by_need);
    run_ignored(&suite, &here, &env, &mut totals, &mut failed)?;

    let cpu_device_line = match nvrtc {
        Ok(_) => {
            let mut env = env.clone();
            env.push((shared::gpu::EMULATE_VARIABLE, "1".into()));
            suite.build_cpu_device()?;
            let ran = run_ignored(&suite, &on_cpu_device, &env, &mut totals, &mut failed)?;
            format!("{ran} ran on the CPU device (LABS_EMULATE=1)")
        }
        Err(_) => no_nvrtc.to_string(),
    };
    let not_run: Vec<String> = by_need
        .iter()
        .filter(|needed| needed.met.is_err() && !(needed.need.on_cpu_device && nvrtc.is_ok()))
        .map(|needed| {
            let why = needed.met.as_ref().err().map_or("", String::as_str);
            let nor = match needed.need.on_cpu_device {
                true => ", nor NVRTC for the CPU device",
                false => "",
            };
            format!(
                "{} \"{}\" ({why}{nor})",
                needed.tests.len(),
                needed.need.reason
            )
        })
        .collect();

    // The closing summary, its first line in the form CI tools read.
    let summary: Vec<String> = [
        format!(
            "tests: {} passed, {} failed, {} skipped",
            totals.passed, totals.failed, totals.ignored
        ),
        format!("GPU tests: {}", machine.gpu_line),
        format!("multi-GPU tests: {}", machine.multi_gpu_line),
        format!("GPU tests on the CPU device: {cpu_device_line}"),
        format!(
            "kernel checks (NVRTC, {}): {nvrtc_line}",
            shared::nvrtc::checked_arches().join(", ")
        ),
        format!("C reference: {c_line}"),
    ]
    .into_iter()
    .chain(plan.lines.iter().cloned())
    .chain(
        (!not_run.is_empty()).then(|| format!("skipped for their needs: {}", not_run.join("; "))),
    )
    .collect();
    shared::cli::print_line(&summary.join("\n  ")).map_err(|e| e.to_string())?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("tests failed in: {}", failed.join(", ")))
    }
}

/// The ignored tests to run here (their needs met), and those to run again on the CPU
/// device (their needs met by it too: never those that need two GPUs or compute-sanitizer,
/// which would only fail there, or run for minutes in the interpreter).
fn chosen<'a>(by_need: &[Needed<'a>]) -> (Vec<&'a str>, Vec<&'a str>) {
    let tests = |keep: &dyn Fn(&Needed) -> bool| {
        by_need
            .iter()
            .filter(|needed| keep(needed))
            .flat_map(|needed| needed.tests.iter().copied())
            .collect()
    };
    (
        tests(&|needed| needed.met.is_ok()),
        tests(&|needed| needed.need.on_cpu_device),
    )
}

/// What this machine meets, need by need, and the summary's lines on its GPUs.
struct Machine {
    /// Why no GPU opened, where none did.
    no_gpu: Option<String>,
    gpu_line: String,
    multi_gpu_line: String,
    nvrtc: Result<Nvrtc, String>,
    met: Vec<(Need, Result<(), String>)>,
}

impl Machine {
    /// Probe the GPUs and NVRTC; `--require-gpu` without a GPU is a failure, said in `failed`.
    fn probe(require_gpu: bool, plan: &Plan, failed: &mut Vec<String>) -> Machine {
        // The probe is the labs' own `Gpu::open`. With --require-gpu its answer decides nothing:
        // the GPU tests run anyway, so a broken `Gpu::open` fails them instead of hiding them.
        let gpu = gpu::probe();
        let run_gpu_tests = require_gpu || gpu.is_ok();
        let gpu_line = match (&gpu, require_gpu) {
            (Ok(name), _) => format!("ran on {name}"),
            (Err(why), true) => {
                failed.push(format!("--require-gpu: no GPU opened ({why})"));
                format!("ran, but no GPU opened: {why}")
            }
            (Err(why), false) => {
                format!("skipped: {why} (--require-gpu fails instead)")
            }
        };

        let gpus = gpu::count();
        let multi_gpu_line = match (run_gpu_tests, gpus) {
            (false, _) => "skipped with the GPU tests".to_string(),
            (true, 0 | 1) => format!("skipped: {gpus} GPU(s) opened, and they need 2"),
            (true, _) => format!("ran on {gpus} GPUs"),
        };

        let nvrtc = crate::nvrtc::find();

        // What this machine meets, need by need (why not in short: the lines above say it
        // whole): NVRTC's kernel checks run with the GPU tests here, and wherever NVRTC is
        // found, on the CPU device (`run_plan`).
        let gpu_met = match run_gpu_tests {
            true => Ok(()),
            false => Err("no GPU opened".to_string()),
        };
        let two_gpus_met = gpu_met.clone().and_then(|()| match gpus {
            0 | 1 => Err(format!("{gpus} GPU(s) opened")),
            _ => Ok(()),
        });
        let met: Vec<(Need, Result<(), String>)> = [
            (needs::GPU, gpu_met.clone()),
            (needs::COMPUTE_SANITIZER, gpu_met.clone()),
            (needs::NVRTC, gpu_met),
            (needs::TWO_GPUS, two_gpus_met),
        ]
        .into_iter()
        .chain(plan.needs.iter().cloned())
        .collect();
        Machine {
            no_gpu: gpu.err().filter(|_| !require_gpu),
            gpu_line,
            multi_gpu_line,
            nvrtc,
            met,
        }
    }
}

/// The ignored tests that declare one need, and whether this machine meets it, or why not.
struct Needed<'a> {
    need: Need,
    met: Result<(), String>,
    tests: Vec<&'a str>,
}

/// The ignored tests of `ignored` (name, reason) sorted by the need their reason declares,
/// each need with whether this machine meets it (from `met`). The second list says which
/// tests declare a reason that is no need's (the run fails).
fn sort_by_need<'a>(
    ignored: &'a [(String, Option<String>)],
    met: &[(Need, Result<(), String>)],
) -> (Vec<Needed<'a>>, Vec<String>) {
    let mut by_need: Vec<Needed> = Vec::new();
    let mut unknown = Vec::new();
    for (name, reason) in ignored {
        // Without a reason (a doc-test's `ignore`) a test declares no need: it stays skipped.
        let Some(reason) = reason else { continue };
        match met.iter().find(|(need, _)| need.reason == reason) {
            Some((need, meets)) => match by_need.iter_mut().find(|n| n.need == *need) {
                Some(needed) => needed.tests.push(name),
                None => by_need.push(Needed {
                    need: *need,
                    met: meets.clone(),
                    tests: vec![name],
                }),
            },
            None => unknown.push(format!(
                "{name}: ignored for \"{reason}\", which is no need of xtask::needs"
            )),
        }
    }
    (by_need, unknown)
}

/// Run the ignored tests `names` by their exact names, each named once however many test
/// executables have a test of that name (none: nothing to run, where `--ignored` alone would
/// run every ignored test). Returns how many ran.
fn run_ignored(
    suite: &Suite,
    names: &[&str],
    env: &[(&'static str, OsString)],
    totals: &mut Totals,
    failed: &mut Vec<String>,
) -> crate::bins::Result<u64> {
    if names.is_empty() {
        return Ok(0);
    }
    let mut names = names.to_vec();
    names.sort_unstable();
    names.dedup();
    let mut these = Totals::default();
    let test_args: Vec<&str> = ["--ignored", "--exact"].into_iter().chain(names).collect();
    suite.run(&test_args, env, &mut these, failed)?;
    totals.add_ignored_that_ran(&these);
    Ok(these.passed + these.failed)
}

/// A dist folder carries the given C program for lab01's tests; say where, since the path
/// built into them is the build machine's.
fn c_reference_in(bin_dir: &Path) -> Option<PathBuf> {
    Some(bin_dir.join(crate::bins::C_PROGRAM)).filter(|file| file.is_file())
}

/// The variables the test processes get: where NVRTC is, that there is no C compiler, where
/// the given C program is.
fn environment(
    nvrtc: &Result<Nvrtc, String>,
    c_compiler: bool,
    c_reference: Option<PathBuf>,
) -> crate::bins::Result<Vec<(&'static str, OsString)>> {
    let mut env: Vec<(&str, OsString)> = Vec::new();
    if let Ok(Nvrtc::Folder(dir)) = &nvrtc {
        env.push(crate::nvrtc::path_with(dir)?);
    }
    if !c_compiler {
        env.push((NO_C_COMPILER, "1".into()));
    }
    if let Some(file) = c_reference {
        let file = fs::canonicalize(&file).unwrap_or(file);
        env.push((C_REFERENCE_VAR, file.into_os_string()));
    }
    Ok(env)
}

/// Where the test executables come from: cargo, or a `dist --tests` folder.
enum Suite {
    /// `cargo test` with these package arguments.
    Cargo(Vec<String>),
    Executables(Vec<PathBuf>),
}

impl Suite {
    fn new(bin_dir: Option<PathBuf>, packages: &[String]) -> crate::bins::Result<Suite> {
        Ok(match bin_dir {
            None => Suite::Cargo(packages.to_vec()),
            Some(dir) => Suite::Executables(test_executables(&dir.join("deps"))?),
        })
    }

    /// Build the CPU device beside the labs under test (cargo builds a library for tests
    /// only where a test links it; a `dist` folder has it already).
    fn build_cpu_device(&self) -> crate::bins::Result<()> {
        match self {
            Suite::Cargo(_) => crate::bins::run_status(cargo().args([
                "build",
                "--quiet",
                "--package",
                "cpu-device",
            ])),
            Suite::Executables(_) => Ok(()),
        }
    }

    /// Run every test executable with `test_args`; record what failed in `failed`.
    fn run(
        &self,
        test_args: &[&str],
        env: &[(&str, OsString)],
        totals: &mut Totals,
        failed: &mut Vec<String>,
    ) -> crate::bins::Result<()> {
        let described = test_args.join(" ");
        match self {
            Suite::Cargo(packages) => {
                let mut cargo = cargo();
                cargo
                    .arg("test")
                    .args(packages)
                    .args(["--no-fail-fast", "--"])
                    .args(test_args)
                    .envs(env.iter().map(|(k, v)| (k, v)));
                if !run_counting(&mut cargo, totals)? {
                    failed.push(format!("cargo test -- {described}").trim_end().to_string());
                }
            }
            Suite::Executables(executables) => {
                for exe in executables {
                    shared::cli::eprint_line(&format!(
                        "xtask: running {} {described}",
                        exe.display()
                    ));
                    let mut command = Command::new(exe);
                    command
                        .args(test_args)
                        .envs(env.iter().map(|(k, v)| (k, v)));
                    if !run_counting(&mut command, totals)? {
                        failed.push(exe.display().to_string());
                    }
                }
            }
        }
        Ok(())
    }
}

/// The C compiler lab01's tests will use (`$CC`, else `cc`, else `gcc`), if one runs.
fn c_compiler() -> Option<String> {
    let candidates = std::env::var("CC")
        .into_iter()
        .chain(["cc".to_string(), "gcc".to_string()]);
    candidates.into_iter().find(|cc| {
        Command::new(cc)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Test counts summed over every `test result:` line, and the ignored tests with their
/// reasons.
#[derive(Default)]
struct Totals {
    passed: u64,
    failed: u64,
    ignored: u64,
    ignored_tests: Vec<(String, Option<String>)>,
}

impl Totals {
    /// Count the tests of a second run over ignored tests as run, not skipped.
    fn add_ignored_that_ran(&mut self, second: &Totals) {
        let ran = second.passed + second.failed;
        self.passed += second.passed;
        self.failed += second.failed;
        self.ignored = self.ignored.saturating_sub(ran);
    }
}

/// Run a test command, echoing its output while adding up its `test result:` lines.
/// Returns whether it succeeded.
fn run_counting(command: &mut Command, totals: &mut Totals) -> crate::bins::Result<bool> {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            shared::cli::print_line(&line).map_err(|e| e.to_string())?;
            if let Some((name, reason)) = needs::ignored(&line) {
                totals
                    .ignored_tests
                    .push((name.to_string(), reason.map(str::to_string)));
            }
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
fn test_executables(deps: &Path) -> crate::bins::Result<Vec<PathBuf>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `cargo xtask test lab05` on a machine with no GPU: lab05's package alone, its GPU
    /// test on the CPU device, and neither its two-GPU test (2^31 samples: minutes in the
    /// interpreter) nor compute-sanitizer's, which are skipped with their reasons.
    #[test]
    fn one_lab_runs_its_gpu_tests_on_the_cpu_device_but_not_those_that_need_more() {
        let plan = Plan::lab("5").expect("lab05's plan");
        assert_eq!(plan.packages, ["--package", "lab05-buddhabrot"]);
        let unknown = Plan::lab("lab09").err().unwrap_or_default();
        assert!(unknown.starts_with("no lab called 'lab09'"), "{unknown}");

        let ignored: Vec<(String, Option<String>)> = [
            ("gpu_canvas_matches", needs::GPU),
            ("multi_gpu_canvas", needs::TWO_GPUS),
            ("sanitized", needs::COMPUTE_SANITIZER),
            ("nvrtc_compiles", needs::NVRTC),
        ]
        .map(|(name, need)| (name.to_string(), Some(need.reason.to_string())))
        .into();
        let no_gpu = Err("no GPU opened".to_string());
        let met = [
            needs::GPU,
            needs::TWO_GPUS,
            needs::COMPUTE_SANITIZER,
            needs::NVRTC,
        ]
        .map(|need| (need, no_gpu.clone()));
        let (by_need, unknown) = sort_by_need(&ignored, &met);
        assert!(unknown.is_empty(), "{unknown:?}");
        let (here, on_cpu_device) = chosen(&by_need);
        assert!(here.is_empty(), "{here:?}");
        assert_eq!(on_cpu_device, ["gpu_canvas_matches", "nvrtc_compiles"]);
    }

    /// The ignored tests run by what they declare, whatever their names: here a GPU test
    /// named like a kernel check, on a machine with one GPU and a sandbox.
    #[test]
    fn ignored_tests_are_chosen_by_their_declared_need() {
        let sandbox = Need {
            reason: "needs a sandbox",
            on_cpu_device: false,
        };
        let output = [
            "running 6 tests",
            "test a::nvrtc_looking_gpu_test ... ignored, needs a CUDA GPU",
            "test multi_gpu_canvas ... ignored, needs two CUDA GPUs (cargo xtask test runs it where two open)",
            "test b::grades_in_the_sandbox ... ignored, needs a sandbox",
            "test typo ... ignored, needs a CUDA GUP",
            "test src/lib.rs - f (line 3) ... ignored",
            "test plain ... ok",
            "test result: ok. 1 passed; 0 failed; 5 ignored; 0 measured; 0 filtered out",
        ];
        let ignored: Vec<(String, Option<String>)> = output
            .iter()
            .filter_map(|line| needs::ignored(line))
            .map(|(name, reason)| (name.to_string(), reason.map(str::to_string)))
            .collect();
        let met = [
            (needs::GPU, Ok(())),
            (needs::TWO_GPUS, Err("1 GPU(s) opened".to_string())),
            (sandbox, Ok(())),
        ];
        let (by_need, unknown) = sort_by_need(&ignored, &met);
        let run: Vec<&str> = by_need
            .iter()
            .filter(|needed| needed.met.is_ok())
            .flat_map(|needed| needed.tests.iter().copied())
            .collect();
        assert_eq!(
            run,
            ["a::nvrtc_looking_gpu_test", "b::grades_in_the_sandbox"]
        );
        let skipped: Vec<(&str, &str)> = by_need
            .iter()
            .filter_map(|needed| Some((needed.need.reason, needed.met.as_ref().err()?.as_str())))
            .collect();
        assert_eq!(skipped, [(needs::TWO_GPUS.reason, "1 GPU(s) opened")]);
        assert_eq!(unknown.len(), 1);
        assert!(unknown[0].starts_with("typo: "), "{unknown:?}");
    }
}
