//! `cargo instructor grade SUBMISSION`: grade a student's workspace with this workspace's checks.
//!
//! 1. Take from the submission only the files a student may write ([`intake`]), lay them
//!    into a fresh copy of the hand-out, and build each graded lab `--locked` in the sandbox
//!    ([`compile`], [`sandbox`]), starting from a prebuilt copy of the hand-out so that only
//!    what the student changed compiles.
//! 2. Run every check of the rubric (`xtask/instructor/rubric.toml`, [`crate::rubric`]) in the sandbox, each
//!    process tree killed when its check ends, and compare what it wrote with what this
//!    workspace's own programs write, here, out of the sandbox's sight ([`checks`]); speed
//!    by the grader's clock or this workspace's CUDA events ([`timing`]).
//! 3. Once every student process is gone, print the table and write results.json
//!    ([`report`]).
//!
//! `--build-only DIR` stops after step 1 and keeps the build; `--built DIR` grades such a
//! folder: a GPU machine without Rust grades what a machine with Rust built.
//!
//! `grade-class DIR --out OUT`, a command of its own, grades every submission of a class,
//! each by this command in a subprocess ([`class`]), Gradescope's export and Classroom 50's
//! download among the forms it reads; `--slurm` grades on a cluster ([`slurm`]). The options
//! the two share are one struct, [`Common`], that the class hands to each of its grades.
//!
//! A score is not an error: the command exits 0 whenever grading ran, and non-zero only when
//! it could not (no sandbox, no submission, the hand-out does not build).

mod checks;
mod class;
mod compile;
mod fault;
mod inert;
mod intake;
mod planted;
mod ptx;
mod report;
mod slurm;
mod timing;

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::files;
use crate::regions::Keep;
use crate::rubric::{self, Rubric};
use crate::{sandbox, scratch};
use checks::{Built, Outcome};
use fault::Fault;
use report::Graded;
use xtask::bins::Bins;
use xtask::gpu;
use xtask::labs::{Lab, LABS, REFERENCE};

pub use class::ClassArgs;

#[derive(clap::Args)]
pub struct Args {
    /// The student's workspace: their copy of the hand-out, with their work in it
    #[arg(value_name = "SUBMISSION", required_unless_present = "built")]
    submission: Option<PathBuf>,
    /// Build only, into this new folder, for `--built` on another machine (a GPU machine
    /// without Rust)
    #[arg(long, value_name = "DIR", requires = "submission")]
    build_only: Option<PathBuf>,
    /// Grade a folder made by `--build-only` instead of building SUBMISSION
    #[arg(long, value_name = "DIR", conflicts_with = "submission")]
    built: Option<PathBuf>,
    /// Also write Gradescope's results.json here
    #[arg(long, value_name = "FILE")]
    gradescope: Option<PathBuf>,
    /// Grade only this lab's checks (give it again for more labs): a lab regraded, its own
    /// total
    #[arg(long, value_name = "LAB", value_parser = lab, conflicts_with = "build_only")]
    only: Vec<&'static Lab>,
    /// The uid the student's code runs as (run by root): each grade of a class running at
    /// once has its own, given by `grade-class`
    #[arg(long, value_name = "UID", hide = true, value_parser = clap::value_parser!(u32).range(1..))]
    sandbox_user: Option<u32>,
    #[command(flatten)]
    pub common: Common,
}

/// The options of `grade` that `grade-class` takes too and hands to each grade of the
/// class: one definition, flattened into both commands, passed to the class as this struct
/// and to its grades' subprocesses by [`Common::to_args`].
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Common {
    /// This workspace's binaries, from `cargo xtask dist` (the reference and the solution)
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// Run the student's code without the sandbox, with this user's rights: only for code
    /// you trust, or where each submission already has a throwaway machine (the report
    /// and results.json say so)
    #[arg(long)]
    pub unsandboxed: bool,
    /// Seconds each lab's build may take [default: the rubric's build_time_limit_s]
    #[arg(long, value_name = "SECONDS", value_parser = xtask::values::at_least_one("the build time limit", 86_400))]
    pub build_time_limit: Option<u64>,
    /// Where no GPU opens, list the GPU checks instead of running them on the CPU device (a
    /// grade of the CPU labs alone, in seconds instead of a minute)
    #[arg(long)]
    pub no_cpu_device: bool,
}

impl Common {
    /// The command line that parses back to these options, for a grade run as a subprocess
    /// of a class: each flag spelt here once, beside its definition (the test
    /// `common_options_parse_back`).
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = Vec::new();
        if let Some(dir) = &self.bin_dir {
            args.extend(["--bin-dir".into(), dir.clone().into_os_string()]);
        }
        if self.unsandboxed {
            args.push("--unsandboxed".into());
        }
        if self.no_cpu_device {
            args.push("--no-cpu-device".into());
        }
        if let Some(seconds) = self.build_time_limit {
            args.extend(["--build-time-limit".into(), seconds.to_string().into()]);
        }
        args
    }
}

/// What `--build-only` keeps beside the binaries and the taken files.
#[derive(Serialize, Deserialize)]
struct Intake {
    notes: Vec<String>,
    /// Labs that did not build, with cargo's first error.
    broken: Vec<(String, String)>,
    /// Labs the grader could not build (no sandbox, no toolchain): not graded, not a 0.
    #[serde(default)]
    grader_failed: Vec<(String, String)>,
}

/// `class-task PLAN`: one task of a class's Slurm array, a command of its own.
pub fn task(plan: &Path) -> Result<()> {
    class::task(plan)
}

/// `grade-class`: each submission graded by `grade` in a subprocess, with the options
/// [`Common`] to both.
pub fn run_class(args: ClassArgs) -> Result<()> {
    // The class's own scratch (its sandbox's probe) goes when it returns, as a grade's does.
    let _finish = scratch::Finish;
    class::run(args)
}

/// `grade`: one submission (or a `--built` folder): build it, run every check, print the
/// table and write results.json.
pub fn run(args: &Args) -> Result<()> {
    let mut rubric = Rubric::load()?;
    let only_note = only(&mut rubric, &args.only)?;
    // This grade's scratch folder goes when it returns, however it does.
    let _finish = scratch::Finish;
    // Every path is checked before the work: a results file that cannot be written fails now.
    let results = args.gradescope.as_deref().map(results_file).transpose()?;
    let scratch = scratch()?;
    let jail = sandbox::Jail::detect(args.common.unsandboxed)?;
    let jail = match args.sandbox_user {
        Some(user) => jail.for_user(user)?,
        None => jail,
    };
    // Without Landlock, before any student process starts: what the sandbox must not read
    // is made unreadable to its user, until this grade (and any beside it) ends.
    let _protection = jail.protect(&protected(args))?;
    let graded: Vec<&'static Lab> = LABS
        .iter()
        .filter(|lab| rubric.checks.iter().any(|c| c.lab == *lab))
        .collect();

    let built_dir = scratch.path().join("built");
    if let Some(out) = &args.build_only {
        // For another machine, which may have a GPU: every graded lab is built.
        let intake = take_in(args, &rubric, &jail, scratch.path(), &graded)?;
        return keep_build(&built_dir, &intake, out);
    }
    let machine = Machine::find(args, jail.clone(), &graded)?;
    // Only the labs with a check that runs here are built: without a GPU and with
    // `--no-cpu-device`, lab03 to lab05 are not (10 s of a 24 s grade of the solved
    // hand-out on 2 cores).
    let runs_here: Vec<&'static Lab> = graded
        .iter()
        .copied()
        .filter(|lab| {
            rubric
                .checks
                .iter()
                .any(|check| check.lab == *lab && machine.grades(check))
        })
        .collect();
    let intake = take_in(args, &rubric, &jail, scratch.path(), &runs_here)?;
    let built = Built {
        bins: built_dir.join("bin"),
        src: built_dir.join("src"),
    };
    let context = checks::Context::new(checks::Settings {
        cpu_device: machine.cpu_device.as_ref(),
        gpu: machine.gpu_info.as_ref(),
        ..checks::Settings::new(
            &rubric,
            &machine.jail,
            &built,
            &machine.reference,
            scratch.path(),
        )
    });
    let graded_checks: Vec<Graded> = rubric
        .checks
        .iter()
        .map(|check| grade_check(check, &intake, &context, &machine))
        .collect();
    // Every student process ended with its check; only now is anything reported.
    report_grade(
        args,
        &machine.jail,
        &machine.gpu_checks,
        &intake,
        &graded_checks,
        only_note,
        results,
    )
}

/// A lab named on the command line, from xtask's table.
fn lab(name: &str) -> Result<&'static Lab> {
    xtask::labs::find(name)
}

/// Keep the checks of the `--only` labs (all where none is given), and say so for the report.
fn only(rubric: &mut Rubric, labs: &[&'static Lab]) -> Result<Option<String>> {
    if labs.is_empty() {
        return Ok(None);
    }
    if let Some(lab) = labs
        .iter()
        .find(|lab| !rubric.checks.iter().any(|c| c.lab == **lab))
    {
        bail!(
            "--only {}: the rubric has no check of {}; give a lab it grades",
            lab.name,
            lab.name
        );
    }
    rubric.checks.retain(|check| labs.contains(&check.lab));
    let names: Vec<&str> = labs.iter().map(|lab| lab.name).collect();
    Ok(Some(format!(
        "Graded: {} alone (--only); the total is theirs, not the whole rubric's.",
        names.join(" and ")
    )))
}

/// The submission's `labs` built here, or a `--built` folder copied into `scratch/built`.
fn take_in(
    args: &Args,
    rubric: &Rubric,
    jail: &sandbox::Jail,
    scratch: &Path,
    labs: &[&'static Lab],
) -> Result<Intake> {
    let built_dir = scratch.join("built");
    match (&args.submission, &args.built) {
        (Some(submission), _) => {
            let limit = args
                .common
                .build_time_limit
                .unwrap_or(rubric.build_time_limit_s);
            prepare(submission, jail, rubric, scratch, labs, limit)
        }
        (None, Some(dir)) => {
            // The folder is the instructor's (`--build-only`), but it is copied as regular
            // files only: a link in it is refused, never followed into someone's build.
            copy_built(dir, &built_dir)?;
            let text = fs::read_to_string(built_dir.join("intake.json")).with_context(|| {
                format!("{} was not made by `grade --build-only`", dir.display())
            })?;
            serde_json::from_str(&text)
                .with_context(|| format!("{}/intake.json is not valid", dir.display()))
        }
        (None, None) => bail!("give the student's workspace SUBMISSION"),
    }
}

/// What this machine grades with: its GPU (or why none opened), the sandbox given that GPU,
/// the reference binaries, and the CPU device where no GPU opens.
struct Machine {
    /// Why no GPU opened, if none did.
    no_gpu: Option<String>,
    gpu_info: Option<checks::GpuInfo>,
    jail: sandbox::Jail,
    reference: Bins,
    cpu_device: Option<checks::CpuDevice>,
    /// What grades the GPU checks here ([`gpu_checks`]), for the report.
    gpu_checks: String,
}

impl Machine {
    fn find(args: &Args, jail: sandbox::Jail, graded: &[&'static Lab]) -> Result<Machine> {
        let probe = gpu::probe();
        let no_gpu = probe.as_ref().err().cloned();
        let gpu_info = if no_gpu.is_none() {
            checks::gpu_info()
        } else {
            None
        };
        // A GPU run sees this grade's GPU alone: every other `/dev/nvidiaN` is left out.
        let device = gpu_info.as_ref().and_then(|g| g.device.clone());
        if no_gpu.is_none() && device.is_none() {
            shared::cli::eprint_line(
                "xtask: warning: this GPU's device file is not known (no /proc/driver/nvidia): \
                 the GPU checks' sandboxes are given every /dev/nvidia*",
            );
        }
        let jail = jail.for_gpu(device);
        let reference_labs = LABS
            .iter()
            .filter(|lab| *lab == REFERENCE.lab || graded.contains(lab));
        let common = &args.common;
        let reference = Bins::locate(reference_dir(common.bin_dir.as_deref())?, reference_labs)?;
        let device = (no_gpu.is_some() && !common.no_cpu_device)
            .then(|| checks::cpu_device(reference.dir()));
        let gpu_checks = gpu_checks(probe.as_deref().map_err(String::as_str), device.as_ref());
        shared::cli::eprint_line(&format!("xtask: {gpu_checks}"));
        Ok(Machine {
            no_gpu,
            gpu_info,
            jail,
            reference,
            cpu_device: device.and_then(Result::ok),
            gpu_checks,
        })
    }

    /// Whether `check` runs here: it needs no GPU, a GPU opened, or the CPU device grades it.
    fn grades(&self, check: &rubric::Check) -> bool {
        !check.needs_gpu()
            || self.no_gpu.is_none()
            || (self.cpu_device.is_some() && !check.times_a_kernel())
    }
}

/// The folder of the reference binaries: `--bin-dir`'s (absolute: the reference programs
/// run in folders of their own); where none is given, the dist folder this program runs
/// from; else None (this workspace's release build, built now).
fn reference_dir(bin_dir: Option<&Path>) -> Result<Option<PathBuf>> {
    match bin_dir {
        Some(dir) => fs::canonicalize(dir)
            .map(Some)
            .with_context(|| format!("--bin-dir {}", dir.display())),
        None => Ok(xtask::bins::dist_folder()),
    }
}

/// What grades the GPU checks here, given the GPU's name or why none opens, and the CPU
/// device or why it cannot stand in (None: `--no-cpu-device`): a clause for the report, a
/// class's log and a class's identity (a class graded again once NVRTC is installed grades
/// its GPU checks, where it kept the grades made without them).
pub fn gpu_checks(
    gpu: std::result::Result<&str, &str>,
    device: Option<&std::result::Result<checks::CpuDevice, String>>,
) -> String {
    let no_gpu = |why: &str| {
        format!(
            "no GPU opens here: {}",
            why.split(';').next().unwrap_or(why)
        )
    };
    match (gpu, device) {
        (Ok(name), _) => format!("the GPU checks ran on the GPU ({name})"),
        (Err(why), None) => format!(
            "the GPU checks were not graded ({}; --no-cpu-device)",
            no_gpu(why)
        ),
        (Err(why), Some(Ok(device))) => format!(
            "the GPU checks ran on the CPU device, with NVRTC from {} ({}); the kernels' \
             speed is not graded",
            device
                .nvrtc
                .as_ref()
                .map_or("the system's libraries".to_string(), |d| d
                    .display()
                    .to_string()),
            no_gpu(why)
        ),
        (Err(why), Some(Err(not))) => format!(
            "the GPU checks were not graded ({}; the CPU device cannot stand in: {not})",
            no_gpu(why)
        ),
    }
}

/// One check: run, or why not (no GPU, its lab did not build), said on stderr as it goes.
fn grade_check(
    check: &rubric::Check,
    intake: &Intake,
    context: &checks::Context,
    machine: &Machine,
) -> Graded {
    let name = check.name();
    shared::cli::eprint_line(&format!("xtask: grading {name}"));
    let started = std::time::Instant::now();
    let lab = check.lab.name;
    let broken = intake.broken.iter().find(|(l, _)| l == lab);
    let unbuilt = intake.grader_failed.iter().find(|(l, _)| l == lab);
    let outcome = match (machine.grades(check), broken, unbuilt) {
        (false, _, _) => Outcome::NotGraded("not graded here: needs a GPU".to_string()),
        (_, _, Some((_, error))) if check.runs_student_binary() => {
            Outcome::GraderFailed(format!("the grader could not build the lab: {error}"))
        }
        (_, Some((_, error)), _) if check.runs_student_binary() => {
            Outcome::score(0.0, format!("did not build: {error}"))
        }
        _ => checks::run(check, context),
    };
    match &outcome {
        Outcome::Scored { score, .. } => shared::cli::eprint_line(&format!(
            "xtask:   {} of {} points, {:.1} s",
            report::round(*score),
            check.points,
            started.elapsed().as_secs_f64()
        )),
        Outcome::GraderFailed(why) => shared::cli::eprint_line(&format!(
            "xtask:   {}",
            inert::line(&report::graders_failure(why))
        )),
        Outcome::NotGraded(_) => {}
    }
    Graded {
        name,
        max: check.points,
        hidden: check.hidden,
        outcome,
    }
}

/// The table on stdout, and results.json where `--gradescope` asks for it.
fn report_grade(
    args: &Args,
    jail: &sandbox::Jail,
    gpu_checks: &str,
    intake: &Intake,
    graded: &[Graded],
    only: Option<String>,
    results: Option<shared::output::Output>,
) -> Result<()> {
    let mut notes = vec![format!("Grading: {}.", jail.describe())];
    notes.push(format!("{}.", capitalized(gpu_checks)));
    notes.extend(only);
    if !intake.notes.is_empty() {
        notes.push(
            "Taken from the submission: only the files with solution regions. Differences:"
                .to_string(),
        );
        // The notes name the submission's own files: shown inert.
        notes.extend(
            intake
                .notes
                .iter()
                .map(|n| format!("- {}", inert::markdown(n))),
        );
    }
    shared::cli::print_line(report::table(graded, &notes).trim_end())?;
    if let (Some(path), Some(mut file)) = (&args.gradescope, results) {
        let partial: Vec<&str> = args.only.iter().map(|lab| lab.name).collect();
        let json = serde_json::to_string_pretty(&report::gradescope(graded, &notes, &partial))
            .context("cannot encode the results")?;
        file.write_all(format!("{json}\n").as_bytes())?;
        file.commit()?;
        shared::cli::eprint_line(&format!("xtask: wrote {}", path.display()));
    }
    Ok(())
}

/// `text` with its first letter a capital, to start a sentence.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// Take the submission's files, lay them into a fresh hand-out and build each graded lab;
/// the binaries and taken files go to `scratch/built`.
fn prepare(
    submission: &Path,
    jail: &sandbox::Jail,
    rubric: &Rubric,
    scratch: &Path,
    labs: &[&Lab],
    build_limit_s: u64,
) -> Result<Intake> {
    let (files, _) = files::handout(Keep::Stub)?;
    // The hand-out's own build (the cache) is trusted to take the rubric's time.
    let cache = compile::Cache::open(
        &files,
        jail,
        labs,
        Duration::from_secs(rubric.build_time_limit_s),
    )?;
    let build_limit = Duration::from_secs(build_limit_s);
    let taken = intake::take(submission, files)?;
    let work = scratch.join("work");
    compile::lay_out(&work, &taken.files, &taken.changed)?;
    let target = scratch.join("target");
    cache.target_for(&target, jail)?;

    let built = scratch.join("built");
    let bin = built.join("bin");
    fs::create_dir_all(&bin).with_context(|| format!("cannot create {}", bin.display()))?;
    let (mut broken, mut grader_failed) = (Vec::new(), Vec::new());
    for lab in labs {
        shared::cli::eprint_line(&format!("xtask: building the student's {}", lab.package));
        match compile::build_lab(jail, &work, &target, &cache.vendor(), lab, build_limit) {
            Ok(()) => {
                let from = target.join("release").join(lab.name);
                fs::copy(&from, bin.join(lab.name))
                    .with_context(|| format!("cannot copy the student's {}", lab.name))?;
            }
            Err(Fault::Student(error)) => broken.push((lab.name.to_string(), error)),
            Err(Fault::Grader(error)) => grader_failed.push((lab.name.to_string(), error)),
        }
    }
    if labs.iter().any(|lab| lab.name == "lab06") && !broken.iter().any(|(l, _)| l == "lab06") {
        let vendor = cache.vendor();
        let build = planted::Build {
            jail,
            work: &work,
            target: &target,
            vendor: &vendor,
            limit: build_limit,
        };
        if let Err(error) = planted::build_lab06_harness(&build, &bin) {
            grader_failed.push(("lab06".to_string(), error));
        }
    }
    for kernel in rubric.kernels() {
        if let Some(file) = taken.files.iter().find(|f| f.path == kernel) {
            let to = built.join("src").join(kernel);
            if let Some(dir) = to.parent() {
                fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            fs::write(&to, &file.bytes)
                .with_context(|| format!("cannot write {}", to.display()))?;
        }
    }
    let intake = Intake {
        notes: taken.notes,
        broken,
        grader_failed,
    };
    let json = serde_json::to_string_pretty(&intake).context("cannot encode the intake")?;
    fs::write(built.join("intake.json"), json).context("cannot write the intake")?;
    // The build folders are large and no check needs them.
    let _ = fs::remove_dir_all(&target);
    Ok(intake)
}

fn keep_build(built: &Path, intake: &Intake, out: &Path) -> Result<()> {
    if out.exists() {
        bail!(
            "{} exists; give a new folder for --build-only",
            out.display()
        );
    }
    compile::copy_tree(built, out)?;
    let broken: Vec<&str> = intake.broken.iter().map(|(lab, _)| lab.as_str()).collect();
    shared::cli::eprint_line(&format!(
        "xtask: the build is in {} ({}); grade it with `instructor grade --built {}`",
        out.display(),
        if broken.is_empty() {
            "every lab built".to_string()
        } else {
            format!("did not build: {}", broken.join(", "))
        },
        out.display()
    ));
    Ok(())
}

/// Copy a `--build-only` folder: folders and regular files (modes kept), nothing else. A link
/// or a special file anywhere in it fails the grade with one line.
fn copy_built(from: &Path, to: &Path) -> Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let refuse = |path: &Path, what: &str| {
        anyhow::anyhow!(
            "{} is {what}; a folder made by `grade --build-only` holds only folders and \
             regular files",
            inert::line(&path.to_string_lossy())
        )
    };
    let meta = fs::symlink_metadata(from).with_context(|| {
        format!(
            "cannot read --built {}",
            inert::line(&from.to_string_lossy())
        )
    })?;
    if meta.file_type().is_symlink() {
        return Err(refuse(from, "a symbolic link"));
    }
    if !meta.is_dir() {
        return Err(refuse(from, "not a folder"));
    }
    fs::create_dir(to).with_context(|| format!("cannot create {}", to.display()))?;
    let mut names: Vec<_> = fs::read_dir(from)
        .with_context(|| format!("cannot read {}", from.display()))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("cannot read {}", from.display()))?;
    names.sort();
    for name in names {
        let (source, target) = (from.join(&name), to.join(&name));
        let kind = fs::symlink_metadata(&source)
            .with_context(|| format!("cannot read {}", source.display()))?
            .file_type();
        if kind.is_dir() {
            copy_built(&source, &target)?;
        } else if kind.is_file() {
            // O_NOFOLLOW: a file swapped for a link since the look is refused too.
            let mut file = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&source)
                .map_err(|_| refuse(&source, "not a regular file"))?;
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Err(refuse(&source, "not a regular file"));
            }
            let mut copy = fs::File::create(&target)
                .with_context(|| format!("cannot write {}", target.display()))?;
            std::io::copy(&mut file, &mut copy)
                .with_context(|| format!("cannot copy {}", source.display()))?;
            fs::set_permissions(
                &target,
                fs::Permissions::from_mode(meta.permissions().mode() & 0o755),
            )
            .with_context(|| format!("cannot set the mode of {}", target.display()))?;
        } else if kind.is_symlink() {
            return Err(refuse(&source, "a symbolic link"));
        } else {
            return Err(refuse(&source, "a special file"));
        }
    }
    Ok(())
}

/// What a grade's student may not read: the instructor's workspace, the references, the
/// folder the results are written to, and the folder of the submission (its siblings may be
/// other students'; a folder any user may write, like /tmp, is left alone).
fn protected(args: &Args) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = xtask::bins::workspace().into_iter().collect();
    roots.extend(args.common.bin_dir.clone());
    // The folder of a file that may not exist yet (the results).
    let parent = |p: &Path| {
        let folder = p.parent().filter(|f| !f.as_os_str().is_empty());
        fs::canonicalize(folder.unwrap_or(Path::new("."))).ok()
    };
    for path in args.gradescope.iter().chain(&args.built) {
        roots.extend(parent(path));
    }
    if let Some(submission) = &args.submission {
        roots.push(submission.clone());
        roots.extend(parent(submission));
    }
    roots
}

/// The results file, checked now: a new or regular file whose folder exists.
fn results_file(path: &Path) -> Result<shared::output::Output> {
    if let Ok(meta) = fs::metadata(path) {
        if !meta.is_file() {
            bail!(
                "--gradescope {}: not a regular file; give a path for results.json",
                path.display()
            );
        }
    }
    Ok(shared::output::Output::create(path)?)
}

/// The grade's own folder, removed at the end whatever happens; under the grader's known
/// folder ([`scratch`]), so that a grade killed with -9 leaves it to the next grade to remove.
fn scratch() -> Result<tempfile::TempDir> {
    scratch::tempdir("grade-")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A script as a lab's binary.
    fn script(path: &Path, body: &str) {
        use std::os::unix::fs::PermissionsExt;
        fs::write(path, format!("#!/bin/sh\n{body}\n")).expect("written");
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("a mode");
    }

    /// Grade lab02's first check that `test` picks, with these reference and student
    /// binaries, in `time_limit` (each speed check runs twice).
    fn grade_lab02(
        test: fn(&rubric::Test) -> bool,
        reference: &str,
        student: &str,
        time_limit: Duration,
    ) -> Outcome {
        let top = tempfile::tempdir().expect("a temp folder");
        let (bins, built) = (top.path().join("reference"), top.path().join("built"));
        fs::create_dir_all(&bins).expect("created");
        fs::create_dir_all(built.join("bin")).expect("created");
        for lab in &LABS {
            script(&bins.join(lab.name), reference);
        }
        script(&built.join("bin/lab02"), student);
        let rubric = Rubric::load().expect("the rubric");
        let check = rubric
            .checks
            .iter()
            .find(|c| c.lab.name == "lab02" && test(&c.test))
            .expect("a check of lab02");
        let jail = sandbox::Jail::detect(true).expect("no sandbox");
        let reference = Bins::locate(Some(bins), &LABS).expect("the reference");
        let student = Built {
            bins: built.join("bin"),
            src: built.join("src"),
        };
        let context = checks::Context::new(checks::Settings {
            time_limit,
            speed_runs: 2,
            noise: 1,
            ..checks::Settings::new(&rubric, &jail, &student, &reference, top.path())
        });
        checks::run(check, &context)
    }

    fn image_check(test: &rubric::Test) -> bool {
        matches!(test, rubric::Test::Image { .. })
    }

    fn speed_check(test: &rubric::Test) -> bool {
        matches!(test, rubric::Test::CpuSpeed { .. })
    }

    /// A lab's binary that writes "P6" where `-o` says, after `sleep` where it is run in the
    /// sandbox (the reference image, made outside it, is written at once). The sleep holds
    /// no pipe of the run's: a run killed at its limit ends at once.
    fn writes_after(sleep: &str) -> String {
        format!(
            r#"while [ "$1" != "-o" ]; do shift; done; [ "$2" = reference.ppm ] || sleep {sleep} >/dev/null 2>&1; echo P6 > "$2""#
        )
    }

    /// The grader's own reference failing ("not the student's fault") scored the student 0:
    /// now it is the grader's failure, a variant of its own, and its words say whose it is
    /// nowhere else (the report says it once: it read "not the student's fault" twice).
    #[test]
    fn the_references_failure_is_the_graders_not_a_zero() {
        let outcome = grade_lab02(image_check, "exit 3", "exit 0", Duration::from_secs(20));
        let Outcome::GraderFailed(why) = &outcome else {
            panic!("{outcome:?}");
        };
        assert!(why.starts_with("the reference lab02 failed: "), "{why}");
        assert!(!why.contains("fault"), "{why}");
    }

    /// The same words printed by the student's program are the student's failure: only the
    /// grader's own code can say the grader failed.
    #[test]
    fn a_student_claiming_the_graders_fault_scores_zero() {
        let student = "echo \"the reference failed (not the student's fault)\" >&2; exit 1";
        let outcome = grade_lab02(
            image_check,
            &writes_after("0"),
            student,
            Duration::from_secs(20),
        );
        let Outcome::Scored { score, output } = &outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(*score, 0.0);
        assert!(output.contains("(not the student's fault)"), "{output}");
    }

    /// The check's 7 s are shared: the solution's 2 s run, the student's 4 s run, then the
    /// solution's second run has 1 s at most and runs out (a second to spare either way). That was the grader's failure (not
    /// graded, in every grade) or a 0 said to be "not the student's fault". It is the
    /// student's, in words that say what to do.
    #[test]
    fn a_solution_run_out_of_time_the_student_used_is_the_students() {
        let outcome = grade_lab02(
            speed_check,
            &writes_after("2"),
            &writes_after("4"),
            Duration::from_secs(7),
        );
        let Outcome::Scored { score, output } = &outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(*score, 0.0);
        assert!(
            output.starts_with("your runs took ") && output.contains(" s of the check's 7 s, so the solution's run, which yours are compared with, had too little time left to finish (the solution's runs took ") && output.ends_with(" s): your program must be faster to be graded here"),
            "{output}"
        );
    }

    /// A solution that never ends, beside a student's program that ends at once, is the
    /// grader's failure, not the student's 0.
    #[test]
    fn a_solution_out_of_time_by_itself_is_the_graders() {
        let never_ends = r#"while [ "$1" != "-o" ]; do shift; done; [ "$2" = reference.ppm ] || exec sleep 30; echo P6 > "$2""#;
        let outcome = grade_lab02(
            speed_check,
            never_ends,
            &writes_after("0"),
            Duration::from_secs(2),
        );
        let Outcome::GraderFailed(why) = &outcome else {
            panic!("{outcome:?}");
        };
        assert!(
            why.starts_with("the solution did not finish within the check's 2 s (its runs took ")
                && why.ends_with(" s, the student's 0.0 s)"),
            "{why}"
        );
    }

    /// `--only lab04` kept every lab's checks, or kept lab04's and said nothing of the total
    /// being lab04's alone; a lab the rubric does not grade (lab01, the given program) was an
    /// empty table of 0 of 0 points.
    #[test]
    fn only_keeps_the_named_labs_checks_and_says_so() {
        let lab04 = xtask::labs::find("lab04").expect("lab04");
        let mut rubric = Rubric::load().expect("the rubric");
        let all = rubric.checks.len();
        let note = only(&mut rubric, &[lab04]).expect("lab04 is graded");
        assert!(rubric.checks.len() > 1 && rubric.checks.len() < all);
        assert!(rubric.checks.iter().all(|check| check.lab == lab04));
        assert_eq!(
            note.as_deref(),
            Some("Graded: lab04 alone (--only); the total is theirs, not the whole rubric's.")
        );

        let mut whole = Rubric::load().expect("the rubric");
        assert_eq!(only(&mut whole, &[]).expect("no --only"), None);
        assert_eq!(whole.checks.len(), all);

        let lab01 = xtask::labs::find("lab01").expect("lab01");
        let error = only(&mut whole, &[lab04, lab01]).expect_err("lab01 has no check");
        assert_eq!(
            format!("{error:#}"),
            "--only lab01: the rubric has no check of lab01; give a lab it grades"
        );
    }

    /// The attack: a `--built` folder whose `bin/lab02` links to the instructor's own build
    /// (or anywhere): refused with one line, nothing followed.
    #[test]
    fn a_built_folder_with_a_link_is_refused_not_followed() {
        let top = tempfile::tempdir().expect("a temp folder");
        let built = top.path().join("built");
        fs::create_dir_all(built.join("bin")).expect("created");
        fs::write(built.join("intake.json"), "{}").expect("written");
        fs::write(built.join("bin/lab06"), "binary").expect("written");
        let copy = top.path().join("copy");
        copy_built(&built, &copy).expect("regular files copy");
        assert_eq!(fs::read(copy.join("bin/lab06")).expect("copied"), b"binary");

        std::os::unix::fs::symlink("/etc/passwd", built.join("bin/lab02")).expect("a link");
        let error = copy_built(&built, &top.path().join("again")).expect_err("refused");
        let said = format!("{error:#}");
        assert!(said.ends_with("bin/lab02 is a symbolic link; a folder made by `grade --build-only` holds only folders and regular files"), "{said}");

        let link = top.path().join("link");
        std::os::unix::fs::symlink(&copy, &link).expect("a link");
        let said = format!(
            "{:#}",
            copy_built(&link, &top.path().join("third")).expect_err("refused")
        );
        assert!(said.contains("link is a symbolic link"), "{said}");
    }
}
