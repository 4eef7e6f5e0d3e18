//! `cargo xtask test`: the whole test suite, plus what this machine can check beyond it:
//! - the GPU tests (`#[ignore = "needs a CUDA GPU"]`) where a GPU opens, or always with
//!   `--require-gpu`, which also fails when none opens;
//! - among them the tests named `multi_gpu_*`, where two GPUs or more open;
//! - the GPU tests again on the CPU device (`LABS_EMULATE=1`) wherever NVRTC is found, GPU
//!   or not (all but compute-sanitizer's);
//! - the kernel checks (tests named `nvrtc_*`, ignored by plain `cargo test`) wherever NVRTC
//!   is found: on the system, or in `.nvrtc/`, where `.ci/run` installs it from pip;
//! - lab01 against the given C program wherever a C compiler is found.
//!
//! What was skipped, and why, is in the closing summary: nothing is skipped silently.
//!
//! It tests every package of the workspace but those whose manifest names the command that
//! tests them (`[package.metadata.xtask] tested-by`, read by [`crate::members`]); the summary
//! names that command. Such a command reuses this runner with a [`Plan`] of its own: its
//! package, the tests it skips where this machine cannot run them and why, and the ignored
//! tests it runs too.
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
use crate::nvrtc::Nvrtc;

/// The name prefix of the GPU tests that need two GPUs or more.
const MULTI_GPU_TESTS: &str = "multi_gpu_";

/// The names of the tests that run compute-sanitizer, which needs a GPU.
const SANITIZER_TESTS: &str = "sanitizer";

/// lab01's tests compare with the C program unless this says there is no compiler.
const NO_C_COMPILER: &str = "LAB01_NO_C_COMPILER";

/// Where lab01's tests find the C program when it is not where they were built.
const C_REFERENCE_VAR: &str = "LAB01_C_REFERENCE";

#[derive(clap::Args)]
pub struct Args {
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
    /// Name filters of tests this machine cannot run, left out of every pass (`--skip`).
    pub skips: Vec<String>,
    /// Name prefixes of ignored tests (ignored by plain `cargo test`: they need a tool) that
    /// run too, this machine having the tool.
    pub ignored: Vec<String>,
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
}

/// `cargo xtask test`.
pub fn run(args: Args) -> crate::bins::Result<()> {
    let plan = match args.bin_dir {
        Some(_) => Plan::default(),
        None => Plan::workspace()?,
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
    let nvrtc_line = match &nvrtc {
        Ok(Nvrtc::Folder(dir)) => format!("ran with NVRTC from {}", dir.display()),
        Ok(Nvrtc::System) => "ran with the system's NVRTC".to_string(),
        Err(why) => format!("skipped: {why}"),
    };

    let compiler = c_compiler();
    let c_line = match &compiler {
        Some(cc) => format!("lab01 compared with reference/mandelbrot.c built by {cc}"),
        None => format!("skipped: no C compiler ($CC, cc or gcc); {NO_C_COMPILER}=1 was set"),
    };

    let env = environment(&nvrtc, compiler.is_some(), c_reference)?;

    let mut totals = Totals::default();
    run_suite(
        &suite,
        plan,
        run_gpu_tests,
        gpus,
        &env,
        &mut totals,
        &mut failed,
    )?;
    let cpu_device_line = match &nvrtc {
        Ok(_) => on_cpu_device(&suite, plan, &env, &mut totals, &mut failed)?,
        Err(why) => format!("skipped: {why}"),
    };

    // The closing summary, its first line in the form CI tools read.
    let summary: Vec<String> = [
        format!(
            "tests: {} passed, {} failed, {} skipped",
            totals.passed, totals.failed, totals.ignored
        ),
        format!("GPU tests: {gpu_line}"),
        format!("multi-GPU tests: {multi_gpu_line}"),
        format!("GPU tests on the CPU device: {cpu_device_line}"),
        format!("kernel checks (NVRTC, sm_80 and sm_90): {nvrtc_line}"),
        format!("C reference: {c_line}"),
    ]
    .into_iter()
    .chain(plan.lines.iter().cloned())
    .collect();
    shared::cli::print_line(&summary.join("\n  ")).map_err(|e| e.to_string())?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("tests failed in: {}", failed.join(", ")))
    }
}

/// Run `suite` with `plan`'s skips, and the tests that need two GPUs only where `gpus` are
/// two or more: every ignored test too (the kernel checks among them) where the GPU tests
/// run, else the plan's ignored tests whose tool is here.
fn run_suite(
    suite: &Suite,
    plan: &Plan,
    run_gpu_tests: bool,
    gpus: usize,
    env: &[(&'static str, OsString)],
    totals: &mut Totals,
    failed: &mut Vec<String>,
) -> crate::bins::Result<()> {
    let mut skips: Vec<&str> = plan
        .skips
        .iter()
        .flat_map(|test| ["--skip", test.as_str()])
        .collect();
    if gpus < 2 {
        skips.extend(["--skip", MULTI_GPU_TESTS]);
    }
    if run_gpu_tests {
        // Every ignored test, the kernel checks among them.
        let test_args: Vec<&str> = ["--include-ignored"]
            .into_iter()
            .chain(skips.iter().copied())
            .collect();
        suite.run(&test_args, env, totals, failed)?;
    } else {
        suite.run(&skips, env, totals, failed)?;
        // The plan's ignored tests whose tool is here, with the plan's skips.
        for prefix in &plan.ignored {
            let mut these = Totals::default();
            let test_args: Vec<&str> = ["--ignored", prefix.as_str()]
                .into_iter()
                .chain(skips.iter().copied())
                .collect();
            suite.run(&test_args, env, &mut these, failed)?;
            totals.add_ignored_that_ran(&these);
        }
    }
    Ok(())
}

/// The GPU tests again on the CPU device, NVRTC being here: all of them where no GPU opened
/// (the kernel checks among them), and where one did, to hold the two to the same tests.
/// compute-sanitizer's tests need a GPU's tools: not on the CPU device. The summary's line.
fn on_cpu_device(
    suite: &Suite,
    plan: &Plan,
    env: &[(&'static str, OsString)],
    totals: &mut Totals,
    failed: &mut Vec<String>,
) -> crate::bins::Result<String> {
    let mut env = env.to_vec();
    env.push((shared::gpu::EMULATE_VARIABLE, "1".into()));
    let mut test_args = vec!["--ignored", "--skip", MULTI_GPU_TESTS];
    test_args.extend(["--skip", SANITIZER_TESTS]);
    // The plan's own ignored tests need a tool, not a GPU: they ran above.
    for prefix in &plan.ignored {
        test_args.extend(["--skip", prefix.as_str()]);
    }
    test_args.extend(plan.skips.iter().flat_map(|test| ["--skip", test.as_str()]));
    let mut on_cpu_device = Totals::default();
    suite.build_cpu_device()?;
    suite.run(&test_args, &env, &mut on_cpu_device, failed)?;
    totals.add_ignored_that_ran(&on_cpu_device);
    Ok(format!(
        "{} ran on the CPU device (LABS_EMULATE=1)",
        on_cpu_device.passed + on_cpu_device.failed
    ))
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
        let mut paths = vec![dir.clone()];
        paths.extend(std::env::split_paths(
            &std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default(),
        ));
        let joined = std::env::join_paths(paths)
            .map_err(|e| format!("cannot set LD_LIBRARY_PATH for {}: {e}", dir.display()))?;
        env.push(("LD_LIBRARY_PATH", joined));
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

/// Test counts summed over every `test result:` line.
#[derive(Default)]
struct Totals {
    passed: u64,
    failed: u64,
    ignored: u64,
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
