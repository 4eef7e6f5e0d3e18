//! Running one check: a program in the sandbox, its output compared by the grader after every
//! process of the check is gone, with what this workspace's own programs write.
//!
//! The expected output is never where the student's process can read it: the references are
//! made here, outside the sandbox, into the grader's own folder; the sandbox sees only the
//! program, an empty output folder, and (for a kernel check) the student's kernel file.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lab05_buddhabrot::config::{self as lab05, Backend};
use lab06_generics_vs_virtual::cli as lab06;
use lab06_generics_vs_virtual::cpu::{Cores, CpuSum};
use shared::gpu::DeviceArg;
use shared::nvrtc::KernelArg;
use shared::timing::LabReport;
use shared::view::MandelbrotArgs;

use super::fault::Fault;
use super::planted;
use super::timing;
use crate::rubric::{self, Check, Size, Test};
use crate::sandbox::{self, Jail, Limits, Mount, Spec, TreeLimits};
use xtask::bins::Bins;
use xtask::labs::{self, Lab, REFERENCE};
use xtask::{ppm, runner};

/// Where the program, its output folder and a kernel file are inside the sandbox.
const BIN: &str = "/grade/bin";
const OUT: &str = "/grade/out";
const KERNEL: &str = "/grade/kernel.cu";
/// A staged kernel's folder: the student's kernel file and the headers the grader planted.
const KERNELS: &str = "/grade/kernels";

/// The student's build: their binaries and the files taken from their submission.
pub struct Built {
    pub bins: PathBuf,
    pub src: PathBuf,
}

/// The GPU the checks run on, for the plausibility floor.
pub struct GpuInfo {
    pub sms: u32,
    pub clock_khz: u32,
    /// Its device file's minor number (`/dev/nvidiaN`) and UUID, from its PCI address.
    pub device: Option<(u32, Option<String>)>,
}

/// The CPU device, where the GPU checks run when no GPU opens: the grader's own library
/// (never the submission's) and the folder of NVRTC, if it is not the system's.
pub struct CpuDevice {
    pub library: PathBuf,
    pub nvrtc: Option<PathBuf>,
}

/// The CPU device beside the reference binaries in `dir`, and NVRTC; or why not.
pub fn cpu_device(dir: &Path) -> Result<CpuDevice, String> {
    let library = dir.join("libcpu_device.so");
    if !library.is_file() {
        return Err(format!(
            "no {} (cargo xtask dist puts it there)",
            library.display()
        ));
    }
    let nvrtc = match xtask::nvrtc::find()? {
        xtask::nvrtc::Nvrtc::Folder(dir) => Some(dir),
        xtask::nvrtc::Nvrtc::System => None,
    };
    Ok(CpuDevice { library, nvrtc })
}

/// Where the CPU device's library and NVRTC are inside the sandbox.
const CPU_DEVICE: &str = "/grade/libcpu_device.so";
const NVRTC: &str = "/grade/nvrtc";

/// What a grade's checks run with, the same for each check.
pub struct Settings<'a> {
    pub jail: &'a Jail,
    /// Set where no GPU opens: the GPU checks run on the CPU device.
    pub cpu_device: Option<&'a CpuDevice>,
    pub student: &'a Built,
    pub reference: &'a Bins,
    /// The grader's own folder: references and the sandbox's output folders.
    pub scratch: &'a Path,
    /// A check's time, shared by all of its runs, the student's and the solution's.
    pub time_limit: Duration,
    pub speed_runs: usize,
    pub gpu: Option<&'a GpuInfo>,
    /// This grade's own number: lab06's lengths, lab02's speed view and the planted kernels
    /// are drawn from it ([`noise`]).
    pub noise: u64,
    /// The limits of each run's whole process tree (the rubric's).
    pub tree: TreeLimits,
    /// A GPU run's time limit: this many times the reference's time for the same work, plus
    /// this start-up (the rubric's `gpu_time_factor`, `gpu_start_up_s`).
    pub gpu_time: (f64, Duration),
}

impl<'a> Settings<'a> {
    /// The rubric's limits and a number of this grade's own, on a machine with neither a GPU
    /// nor the CPU device (the caller sets them where it has them).
    pub fn new(
        rubric: &rubric::Rubric,
        jail: &'a Jail,
        student: &'a Built,
        reference: &'a Bins,
        scratch: &'a Path,
    ) -> Settings<'a> {
        Settings {
            jail,
            cpu_device: None,
            student,
            reference,
            scratch,
            time_limit: Duration::from_secs(rubric.time_limit_s),
            speed_runs: rubric.speed_runs,
            gpu: None,
            noise: noise(),
            tree: rubric.tree_limits(),
            gpu_time: (
                rubric.gpu_time_factor,
                Duration::from_secs_f64(rubric.gpu_start_up_s),
            ),
        }
    }
}

/// What the checks learn as they run: the first three kept for the rest of the grade, the
/// last two the check's own, reset as each check starts.
#[derive(Default)]
struct Caches {
    /// References already made in this grade, with how long each took.
    made: RefCell<HashMap<Reference, (Made, Duration)>>,
    /// Whether each GPU lab's host code ran the kernel the grader planted ([`host_proven`]),
    /// found once per grade.
    hosts: RefCell<HashMap<&'static str, Result<Host, Fault>>>,
    /// The solution's longest run on the GPU so far, by lab (its planted kernel's run, or its
    /// own in a speed check): where known, what the lab's GPU runs' limit follows, as the
    /// process's start-up and the kernel are what a GPU run takes (a CPU reference, lab01's
    /// seconds at a deep zoom, would let a kernel that never ends hold each check for ten
    /// times that).
    gpu_reference: RefCell<HashMap<&'static str, Duration>>,
    /// The solution's runs on the CPU device in this grade, by lab and arguments: what a
    /// student's run there with the same arguments follows ([`device_limit`]).
    device_reference: RefCell<HashMap<(&'static str, Vec<OsString>), Duration>>,
    /// The longest reference of the check running now: what its GPU runs' limit follows.
    reference_wall: Cell<Option<Duration>>,
    /// How much of the check's time its runs have taken so far: whose a solution's run out of
    /// that time is ([`out_of_time`]).
    spent: Cell<Spent>,
}

/// The time a check's runs took: the student's code's (their binary, or their kernel in the
/// solution's host code), and the grader's own (the solution's).
#[derive(Clone, Copy, Default)]
struct Spent {
    student: Duration,
    solution: Duration,
}

/// A grade's checks: their settings, and what they learn as they run.
pub struct Context<'a> {
    pub settings: Settings<'a>,
    caches: Caches,
}

impl<'a> Context<'a> {
    pub fn new(settings: Settings<'a>) -> Context<'a> {
        Context {
            settings,
            caches: Caches::default(),
        }
    }
}

/// A reference this workspace's own programs make, once per grade.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Reference {
    /// A file `lab` writes (an image, a canvas) in its own folder, run with `args`.
    Output {
        lab: &'static str,
        args: Vec<OsString>,
    },
    /// lab06's exact total for `args` (a length), by its plain loop.
    Sum { args: Vec<String> },
}

/// What a [`Reference`] is.
#[derive(Debug, Clone)]
pub enum Made {
    Output(Vec<u8>),
    Sum(f64),
}

/// How one check went. The student's fault and the grader's are different variants: a
/// grader's failure is never a student's 0, and a class never keeps it as graded.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Graded: the points earned (0 when the student's program failed) and why.
    Scored { score: f64, output: String },
    /// Not graded on this machine by design (a GPU check without a GPU).
    NotGraded(String),
    /// Not graded because the grader failed (its reference or solution failed, the sandbox
    /// did not start): not the student's fault; a later run grades it.
    GraderFailed(String),
}

impl Outcome {
    pub fn score(score: f64, output: impl Into<String>) -> Outcome {
        Outcome::Scored {
            score,
            output: output.into(),
        }
    }
}

/// The share of the points earned and what to tell the student, or why not and whose fault.
type Earned = Result<(f64, String), Fault>;

/// Run `check`: the student's failure is a 0 that says why, the grader's is not graded.
pub fn run(check: &Check, context: &Context) -> Outcome {
    let deadline = Instant::now() + context.settings.time_limit;
    context.caches.reference_wall.set(None);
    context.caches.spent.set(Spent::default());
    let lab = check.lab;
    // Where the CPU device stands in for the GPU, the rubric may give the check less work
    // (`on_cpu_device`): said beside the result, as the check's name gives the GPU's.
    let test = check.test_on(check.needs_gpu() && context.settings.cpu_device.is_some());
    let smaller = !std::ptr::eq(test, &check.test);
    let result = match test {
        Test::Image {
            size,
            view,
            max_differing,
            kernel,
        } => image(
            context,
            lab,
            deadline,
            (*size, view),
            *max_differing,
            kernel.as_deref(),
        ),
        Test::Canvas { kernel, args } => canvas(context, lab, deadline, kernel, args),
        Test::Sums {
            kernel,
            args,
            variants,
        } => sums(context, lab, deadline, kernel.as_deref(), *args, variants),
        Test::CpuSpeed { args } => cpu_speed(context, lab, deadline, args),
        Test::KernelSpeed { kernel, args } => kernel_speed(context, lab, deadline, kernel, args),
    };
    let result = match smaller {
        true => result.map_err(|fault| fault.map_student(|why| on_cpu_device(test, why))),
        false => result,
    }
    .map(|(fraction, output)| match smaller {
        true => (fraction, on_cpu_device(test, output)),
        false => (fraction, output),
    });
    match result {
        Ok((fraction, output)) => Outcome::score(check.points * fraction, output),
        Err(Fault::Student(output)) => Outcome::score(0.0, output),
        Err(Fault::Grader(why)) => Outcome::GraderFailed(why),
    }
}

/// A result of `test`, the smaller work the CPU device grades in the GPU's place, saying so.
fn on_cpu_device(test: &Test, output: String) -> String {
    format!(
        "{output} (on the CPU device, which graded the smaller work: {}; a GPU grades the \
         check's own)",
        test.describe()
    )
}

/// Who runs: the student's binary, or this workspace's with the student's kernel file.
enum Program<'a> {
    Student,
    /// The solution's own binary, on the GPU or not.
    Solution {
        gpu: bool,
    },
    SolutionWithKernel(&'a Path),
    /// This workspace's binary with the student's kernel file staged in a folder of the
    /// grader's (`dir`, as `file`) beside headers the grader planted there (lab06's
    /// `add.cuh`), which `--kernel` reads beside the file.
    StagedKernel {
        dir: &'a Path,
        file: &'a str,
    },
    /// A harness the grader planted in the student's build, by its binary's name: the
    /// student's code linked with the grader's (lab06's CPU variants).
    Harness(&'static str),
    /// A kernel the grader wrote (a host path), run by the student's binary or this
    /// workspace's: see [`host_proven`].
    Planted {
        student: bool,
        file: &'a Path,
    },
}

impl Program<'_> {
    /// The grader's own program, by the name its failure is told with (the grader's
    /// failure); None where the student's code runs.
    fn graders(&self) -> Option<&'static str> {
        match self {
            Program::Solution { .. } => Some("the solution"),
            Program::Planted { student: false, .. } => {
                Some("the solution, with the planted kernel,")
            }
            Program::Student
            | Program::SolutionWithKernel(_)
            | Program::StagedKernel { .. }
            | Program::Harness(_)
            | Program::Planted { student: true, .. } => None,
        }
    }
}

/// One sandboxed run of `lab` with `args` and a fresh output folder; the folder is handed
/// back (host path) for the grader to read once the run is over.
struct Sandboxed {
    stdout: Vec<u8>,
    wall: Duration,
    out: tempfile::TempDir,
}

/// Run `program` in the sandbox by `deadline`. Its failure is the student's where their code
/// ran, the grader's where the grader's own program did or the sandbox did not start; a
/// solution's run out of the check's time is either ([`out_of_time`]).
fn sandboxed(
    context: &Context,
    lab: &'static Lab,
    program: &Program,
    args: &[OsString],
    deadline: Instant,
) -> Result<Sandboxed, Fault> {
    let kernel = kernel_runs(lab, program);
    let emulated = kernel && context.settings.cpu_device.is_some();
    let reference = match emulated {
        true => device_reference(context, lab, program, args, deadline)?,
        false => None,
    };
    let out = tempfile::Builder::new()
        .prefix("out-")
        .tempdir_in(context.settings.scratch)
        .map_err(|e| Fault::Grader(format!("cannot make an output folder: {e}")))?;
    context
        .settings
        .jail
        .give(out.path())
        .map_err(|e| Fault::Grader(format!("{e:#}")))?;
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(out_of_time(context, program, None));
    }
    let follows = match emulated {
        true => reference.and_then(|reference| follow(context, reference, left)),
        false => gpu_limit(context, lab, program, kernel, left),
    };
    let wall = follows.map_or(left, |(limit, _)| limit);
    let (spec, gpu) = spec(context, lab, program, args, out.path(), wall)?;
    let limits = if gpu {
        Limits::check(wall).on_gpu()
    } else {
        Limits::check(wall)
    }
    .with_tree(context.settings.tree);
    let started = Instant::now();
    let ran = context.settings.jail.run(&spec, &limits);
    spend(context, program, started.elapsed());
    let failed = |why: String| match program.graders() {
        Some(name) => Fault::Grader(format!("{name} failed: {why}")),
        None => Fault::Student(why),
    };
    match ran {
        Ok((status, ran, _)) if status.success() => {
            match emulated {
                true => note_device_solution(context, lab, program, args, ran.wall),
                false => note_solution(context, lab, program, gpu, ran.wall),
            }
            Ok(Sandboxed {
                stdout: ran.stdout,
                wall: ran.wall,
                out,
            })
        }
        Ok((status, _, stderr)) => Err(failed(crash_or_refusal(status, &stderr))),
        Err(runner::Failure::TimedOut(_)) => Err(out_of_time(context, program, follows)),
        // Nothing of anyone's ran: the sandbox could not start, or not be cleared after.
        Err(failure @ runner::Failure::Spawn(_)) => Err(Fault::Grader(failure.to_string())),
        Err(failure) => Err(failed(failure.to_string())),
    }
}

/// Count `took` against the check's time, as the student's or the solution's.
fn spend(context: &Context, program: &Program, took: Duration) {
    let mut spent = context.caches.spent.get();
    match program.graders() {
        Some(_) => spent.solution += took,
        None => spent.student += took,
    }
    context.caches.spent.set(spent);
}

/// Why `program` ran out of time. The student's code, of the limit it had: the check's, or
/// the one that `follows` the reference's time on a GPU. The solution shares the check's
/// time with the student's runs, so where those took most of what the check's runs took, its
/// run out of time is the student's fault, in words the student understands (a program 50
/// times slower than the solution, leaving the solution's next speed run no time, was a 0
/// said to be "not the student's fault", or a check the grader failed at in every grade);
/// otherwise it is the grader's.
fn out_of_time(
    context: &Context,
    program: &Program,
    follows: Option<(Duration, Duration)>,
) -> Fault {
    let limit = context.settings.time_limit.as_secs_f64();
    let Some(name) = program.graders() else {
        return Fault::Student(match follows {
            Some((limit, reference)) => format!(
                "did not finish within {:.1} s ({} times the reference's {:.2} s for the same \
                 work, plus {:.0} s of start-up)",
                limit.as_secs_f64(),
                context.settings.gpu_time.0,
                reference.as_secs_f64(),
                context.settings.gpu_time.1.as_secs_f64()
            ),
            None => "did not finish within the check's time limit".to_string(),
        });
    };
    let spent = context.caches.spent.get();
    let (student, solution) = (spent.student.as_secs_f64(), spent.solution.as_secs_f64());
    if spent.student > spent.solution {
        Fault::Student(format!(
            "your runs took {student:.1} s of the check's {limit:.0} s, so the solution's \
             run, which yours are compared with, had too little time left to finish (the \
             solution's runs took {solution:.1} s): your program must be faster to be graded \
             here"
        ))
    } else {
        Fault::Grader(format!(
            "{name} did not finish within the check's {limit:.0} s (its runs took \
             {solution:.1} s, the student's {student:.1} s)"
        ))
    }
}

/// Whether `program` runs `lab`'s kernels: on the GPU, or on the CPU device in its place.
fn kernel_runs(lab: &'static Lab, program: &Program) -> bool {
    match program {
        Program::SolutionWithKernel(_) | Program::StagedKernel { .. } | Program::Planted { .. } => {
            true
        }
        Program::Solution { gpu } => *gpu,
        Program::Harness(_) => false,
        Program::Student => lab.first().variant.device == labs::Device::Gpu,
    }
}

/// What the sandbox runs for `program` with `args`, writing into `out`, and whether it is
/// given the GPU (not where the CPU device stands in for it). Where the CPU device stands
/// in, it stops a launch still running when the run's time (`left`: the check's time left,
/// or what follows the solution's run of the same work there) is all but spent, with a line
/// saying the kernel may never end (the sandbox's limit, a moment later, would say only that
/// the time ran out).
fn spec(
    context: &Context,
    lab: &'static Lab,
    program: &Program,
    args: &[OsString],
    out: &Path,
    left: Duration,
) -> Result<(Spec, bool), Fault> {
    // A kernel file runs on the GPU; a student's binary needs one if its lab does.
    let gpu = kernel_runs(lab, program);
    let bins = match program {
        Program::Student | Program::Harness(_) | Program::Planted { student: true, .. } => {
            &context.settings.student.bins
        }
        Program::Solution { .. }
        | Program::SolutionWithKernel(_)
        | Program::StagedKernel { .. }
        | Program::Planted { student: false, .. } => context.settings.reference.dir(),
    };
    let binary = match program {
        Program::Harness(name) => name,
        _ => lab.name,
    };
    let mut spec = Spec::new(Path::new(BIN).join(binary))
        .mount(Mount::read_only(
            bins.join(binary),
            Path::new(BIN).join(binary),
        ))
        .mount(Mount::writable(out, OUT))
        .cwd(OUT)
        .args(args.iter().cloned());
    // Where no GPU opens, the kernels run on the CPU device: the grader's own, named to the
    // lab by `CPU_DEVICE_LIBRARY`, with NVRTC beside it; the sandbox gets no GPU at all.
    let gpu = match (gpu, context.settings.cpu_device) {
        (true, Some(device)) => {
            let emulate = DeviceArg {
                emulate: true,
                ..DeviceArg::default()
            };
            spec = spec
                .mount(Mount::read_only(&device.library, CPU_DEVICE))
                .env("CPU_DEVICE_LIBRARY", CPU_DEVICE)
                .args(emulate.to_args());
            if let Some(nvrtc) = &device.nvrtc {
                spec = spec
                    .mount(Mount::read_only(nvrtc, NVRTC))
                    .env("LD_LIBRARY_PATH", NVRTC);
            }
            let launches = left.saturating_sub(context.settings.gpu_time.1);
            if !launches.is_zero() {
                spec = spec.env(
                    shared::gpu::EMULATE_DEADLINE_VARIABLE,
                    format!("{:.3}", launches.as_secs_f64()),
                );
            }
            false
        }
        (gpu, _) => gpu,
    };
    spec = spec.gpu(gpu);
    let kernel = match program {
        Program::SolutionWithKernel(kernel) => {
            let file = context.settings.student.src.join(kernel);
            if !file.is_file() {
                return Err(Fault::Student(format!(
                    "no {} was taken from the submission",
                    kernel.display()
                )));
            }
            Some(file)
        }
        Program::Planted { file, .. } => Some(file.to_path_buf()),
        Program::StagedKernel { dir, file } => {
            spec = spec
                .mount(Mount::read_only(dir, KERNELS))
                .arg("--kernel")
                .arg(Path::new(KERNELS).join(file));
            None
        }
        Program::Student | Program::Solution { .. } | Program::Harness(_) => None,
    };
    if let Some(file) = kernel {
        let kernel = KernelArg {
            path: Some(PathBuf::from(KERNEL)),
            ..KernelArg::default()
        };
        spec = spec
            .mount(Mount::read_only(file, KERNEL))
            .args(kernel.to_args());
    }
    Ok((spec, gpu))
}

/// A student's run on a GPU, or on the CPU device in its place: the limit that follows the
/// reference's time for the same work, and that time, where it is below the `left` of the
/// check's time. A kernel that never ends held each of lab04's six GPU checks for the whole
/// 120 s (12 minutes a submission); now it costs the start-up and a few seconds.
fn gpu_limit(
    context: &Context,
    lab: &'static Lab,
    program: &Program,
    gpu: bool,
    left: Duration,
) -> Option<(Duration, Duration)> {
    let reference = context
        .caches
        .gpu_reference
        .borrow()
        .get(lab.name)
        .copied()
        .or(context.caches.reference_wall.get());
    match (gpu, program, reference) {
        (
            true,
            Program::Student
            | Program::SolutionWithKernel(_)
            | Program::StagedKernel { .. }
            | Program::Planted { student: true, .. },
            Some(reference),
        ) => follow(context, reference, left),
        _ => None,
    }
}

/// The limit of a run that follows `reference` (the solution's time for the same work): the
/// rubric's multiple of it plus start-up, where that is less than the check's time `left`.
fn follow(context: &Context, reference: Duration, left: Duration) -> Option<(Duration, Duration)> {
    let (factor, start_up) = context.settings.gpu_time;
    let limit = start_up + reference.mul_f64(factor);
    (limit < left).then_some((limit, reference))
}

/// On the CPU device, what a student's run of `program` with `args` follows, as on a GPU:
/// the solution's own run there with the same arguments (its kernel in place of theirs, or
/// the planted kernel by the solution's host code), made first where this grade has not yet
/// made it. A kernel that never ends then costs seconds a check, not the check's time: the
/// rubric keeps the CPU device's work to about a second (`on_cpu_device`). None for the
/// solution's own runs.
fn device_reference(
    context: &Context,
    lab: &'static Lab,
    program: &Program,
    args: &[OsString],
    deadline: Instant,
) -> Result<Option<Duration>, Fault> {
    let twin = match program {
        Program::Student | Program::SolutionWithKernel(_) | Program::StagedKernel { .. } => {
            Program::Solution { gpu: true }
        }
        Program::Planted {
            student: true,
            file,
        } => Program::Planted {
            student: false,
            file,
        },
        Program::Solution { .. }
        | Program::Planted { student: false, .. }
        | Program::Harness(_) => return Ok(None),
    };
    let key = (lab.name, args.to_vec());
    if let Some(took) = context.caches.device_reference.borrow().get(&key) {
        return Ok(Some(*took));
    }
    Ok(Some(sandboxed(context, lab, &twin, args, deadline)?.wall))
}

/// Keep how long the solution's run on the CPU device took with `args`: the students' runs
/// with the same arguments follow it ([`device_reference`]).
fn note_device_solution(
    context: &Context,
    lab: &'static Lab,
    program: &Program,
    args: &[OsString],
    took: Duration,
) {
    if program.graders().is_some() {
        context
            .caches
            .device_reference
            .borrow_mut()
            .insert((lab.name, args.to_vec()), took);
    }
}

/// Keep how long the solution's successful GPU run took: the students' GPU runs' limit
/// follows it ([`gpu_limit`]).
fn note_solution(
    context: &Context,
    lab: &'static Lab,
    program: &Program,
    gpu: bool,
    took: Duration,
) {
    if let Program::Solution { gpu: true } = program {
        note_reference(context, took);
    }
    if let (true, Program::Solution { .. } | Program::Planted { student: false, .. }) =
        (gpu, program)
    {
        let mut known = context.caches.gpu_reference.borrow_mut();
        let longest = known.get(lab.name).map_or(took, |w| (*w).max(took));
        known.insert(lab.name, longest);
    }
}

/// The reference `key`, made earlier in this grade, if it was; noted for the GPU runs' limit.
fn known(context: &Context, key: &Reference) -> Option<Made> {
    let (made, took) = context.caches.made.borrow().get(key).cloned()?;
    note_reference(context, took);
    Some(made)
}

/// Keep a reference made now, and note how long it took for the GPU runs' limit.
fn keep(context: &Context, key: Reference, made: Made, took: Duration) {
    note_reference(context, took);
    context.caches.made.borrow_mut().insert(key, (made, took));
}

/// The check's GPU runs' limit follows its longest reference.
fn note_reference(context: &Context, took: Duration) {
    let longest = context
        .caches
        .reference_wall
        .get()
        .map_or(took, |w| w.max(took));
    context.caches.reference_wall.set(Some(longest));
}

/// One line for a run that ended badly, paths inside the sandbox left out.
fn crash_or_refusal(status: std::process::ExitStatus, stderr: &[u8]) -> String {
    use std::os::unix::process::ExitStatusExt;
    let last = sandbox::last_line(stderr).replace(&format!("{OUT}/"), "");
    match (status.signal(), status.code()) {
        (Some(signal), _) => format!("crashed: killed by signal {signal}"),
        (_, Some(101)) => format!("crashed: panicked: {last}"),
        _ => last,
    }
}

/// A file the sandboxed process left in its output folder: a regular file, not a link, at
/// most `cap` bytes.
fn output_file(dir: &Path, name: &str, cap: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(name);
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .map_err(|_| format!("wrote no {name}"))?;
    if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Err(format!("{name} is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {name}: {e}"))?;
    if bytes.len() as u64 > cap {
        return Err(format!("{name} is larger than the expected {cap} bytes"));
    }
    Ok(bytes)
}

/// A reference output made here by this workspace's own program, outside the sandbox (kept
/// for the rest of the grade): `file` is what the program writes, given its arguments, in
/// the folder it runs in (its output paths are relative to it).
fn made(
    context: &Context,
    lab: &'static Lab,
    args: &[OsString],
    file: &str,
) -> Result<Vec<u8>, Fault> {
    let key = Reference::Output {
        lab: lab.name,
        args: args.to_vec(),
    };
    if let Some(Made::Output(bytes)) = known(context, &key) {
        return Ok(bytes);
    }
    let dir = tempfile::Builder::new()
        .prefix("reference-")
        .tempdir_in(context.settings.scratch)
        .map_err(|e| Fault::Grader(format!("cannot make a folder for the reference: {e}")))?;
    let mut command = context.settings.reference.command(lab);
    command.current_dir(dir.path()).args(args);
    let started = Instant::now();
    runner::run(&mut command, runner::limit_for(1 << 28))
        .map_err(|e| Fault::Grader(format!("the reference {} failed: {e}", lab.name)))?;
    let bytes = fs::read(dir.path().join(file))
        .map_err(|e| Fault::Grader(format!("the reference {} wrote no {file}: {e}", lab.name)))?;
    keep(context, key, Made::Output(bytes.clone()), started.elapsed());
    Ok(bytes)
}

/// lab01's image, as this workspace's stand-in for it makes it (lab02): byte-identical to
/// lab01 at every size and view (`verify` and lab02's tests prove it), on every core instead
/// of one (a deep zoom at 3001x2001 keeps lab01 busy for seconds).
/// `frame` is the image's size and view (its output is the reference's own).
fn lab01_image(context: &Context, frame: &MandelbrotArgs) -> Result<Vec<u8>, Fault> {
    let lab02 = REFERENCE.stand_in;
    let args = MandelbrotArgs {
        output: Some(PathBuf::from("reference.ppm")),
        ..frame.clone()
    };
    made(context, lab02, &args.to_args(), "reference.ppm")
}

/// `args` writing its image to `name` in the sandbox's output folder.
fn to_out(args: &MandelbrotArgs, name: &str) -> MandelbrotArgs {
    MandelbrotArgs {
        output: Some(Path::new(OUT).join(name)),
        ..args.clone()
    }
}

fn os(args: &[String]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// The lab's image against lab01's. A CPU lab's comes from the student's binary; a GPU lab's
/// (with `kernel`) from this workspace's host code running the student's kernel, and counts
/// only once the student's host code has run a kernel the grader planted ([`host_proven`]).
fn image(
    context: &Context,
    lab: &'static Lab,
    deadline: Instant,
    (size, view): (Size, &rubric::View),
    max_differing: u64,
    kernel: Option<&Path>,
) -> Earned {
    let (program, host) = match kernel {
        Some(kernel) => (
            Program::SolutionWithKernel(kernel),
            Some(host_proven(context, lab, deadline)?),
        ),
        None => (Program::Student, None),
    };
    let frame = view.lab_args(size);
    let expected = lab01_image(context, &frame)?;
    let mut args = to_out(&frame, "image.ppm").to_args();
    if host == Some(Host::Fuses) {
        args.extend(fused());
    }
    let run = sandboxed(context, lab, &program, &args, deadline)?;
    let got = output_file(run.out.path(), "image.ppm", expected.len() as u64 + 64)
        .map_err(Fault::Student)?;
    let how = match host {
        None => "",
        Some(Host::Exact) => " (its kernel, run by the solution's host code)",
        Some(Host::Fuses) => {
            " (its kernel, run by the solution's host code with multiply-adds fused, as its \
             own NVRTC options fuse them)"
        }
    };
    compare_images(context, expected, got, max_differing)
        .map(|(fraction, what)| (fraction, format!("{what}{how}")))
        .map_err(|fault| fault.map_student(|what| format!("{what}{how}")))
}

/// What the planted kernel showed of a student's host code: it runs the kernel it is given
/// as this workspace's does, or does so with multiply-adds fused (its NVRTC options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    Exact,
    Fuses,
}

/// The arguments after which this workspace's host code compiles a kernel with fused
/// multiply-adds (NVRTC takes the last `--fmad`), as a student's options may.
fn fused() -> Vec<OsString> {
    KernelArg {
        path: None,
        options: vec!["--fmad=true".to_string()],
    }
    .to_args()
}

/// Whether the student's host code of `lab` runs the kernel it is given, on the device: run
/// with a kernel the grader writes for this grade ([`planted::kernel`]), it must write
/// exactly what this workspace's host code writes with it, with multiply-adds fused or not.
/// Found once per grade and lab.
fn host_proven(context: &Context, lab: &'static Lab, deadline: Instant) -> Result<Host, Fault> {
    if let Some(known) = context.caches.hosts.borrow().get(lab.name) {
        return known.clone();
    }
    let proven = run_planted(context, lab, deadline);
    context
        .caches
        .hosts
        .borrow_mut()
        .insert(lab.name, proven.clone());
    proven
}

fn run_planted(context: &Context, lab: &'static Lab, deadline: Instant) -> Result<Host, Fault> {
    let key = lab_key(context, lab);
    let extent = rubric::Rubric::load()
        .ok()
        .and_then(|rubric| rubric.image_extent(lab, context.settings.cpu_device.is_some()));
    let planted = extent.and_then(|extent| planted::kernel(lab.name, key, extent));
    let (source, size) = planted.ok_or_else(|| {
        Fault::Grader(format!("the grader has no kernel to plant in {}", lab.name))
    })?;
    let dir = tempfile::Builder::new()
        .prefix("planted-")
        .tempdir_in(context.settings.scratch)
        .map_err(|e| Fault::Grader(format!("cannot make a folder for the planted kernel: {e}")))?;
    let file = dir.path().join("planted.cu");
    fs::write(&file, source)
        .map_err(|e| Fault::Grader(format!("cannot write the planted kernel: {e}")))?;
    let args = to_out(&MandelbrotArgs::new(size.width, size.height), "image.ppm").to_args();
    let planted = |student: bool, args: &[OsString]| {
        let program = Program::Planted {
            student,
            file: &file,
        };
        let run = sandboxed(context, lab, &program, args, deadline)?;
        output_file(run.out.path(), "image.ppm", ppm_bytes(size)).map_err(|why| match student {
            true => Fault::Student(why),
            false => solutions_output(why),
        })
    };
    let want = planted(false, &args)?;
    let got = planted(true, &args).map_err(|fault| {
        fault.map_student(|why| {
            format!("its host code, run with a kernel the grader planted: {why}")
        })
    })?;
    if got == want {
        return Ok(Host::Exact);
    }
    // Only where it differs: the same kernel with multiply-adds fused, which the planted
    // kernel's third byte shows (lab04's options are the student's).
    let mut fused_args = args.clone();
    fused_args.extend(fused());
    if got == planted(false, &fused_args)? {
        return Ok(Host::Fuses);
    }
    let differing = if got.len() == want.len() {
        let at = want.iter().zip(&got).position(|(a, b)| a != b).unwrap_or(0);
        let count = want.iter().zip(&got).filter(|(a, b)| a != b).count();
        format!("{count} bytes differ, the first at byte {at}")
    } else {
        format!("{} bytes, the solution's {}", got.len(), want.len())
    };
    Err(Fault::Student(format!(
        "its host code, run with a kernel the grader planted, did not write what the \
         solution's host code writes with it ({differing}): its launch, arguments or copy \
         back do not run the kernel they are given, so its images are not counted"
    )))
}

/// The solution's run wrote no output the grader can read (`why`): the grader's failure.
fn solutions_output(why: String) -> Fault {
    Fault::Grader(format!("the solution's output: {why}"))
}

/// The most a PPM image of `size` takes, its header included.
fn ppm_bytes(size: Size) -> u64 {
    3 * u64::from(size.width) * u64::from(size.height) + 64
}

/// Byte-identical, or how many pixels differ and the first one.
fn compare_images(
    context: &Context,
    expected: Vec<u8>,
    got: Vec<u8>,
    max_differing: u64,
) -> Earned {
    if got == expected {
        return Ok((1.0, "identical".to_string()));
    }
    // The grader's own work here (its folder, the reference image) fails as the grader's.
    let grader =
        |e: &dyn std::fmt::Display| Fault::Grader(format!("cannot compare the images: {e:#}"));
    let dir = tempfile::tempdir_in(context.settings.scratch).map_err(|e| grader(&e))?;
    let (a, b) = (dir.path().join("a.ppm"), dir.path().join("b.ppm"));
    fs::write(&a, &expected)
        .and_then(|()| fs::write(&b, &got))
        .map_err(|e| grader(&e))?;
    let expected = ppm::open(&a).map_err(|e| grader(&e))?;
    let got = ppm::open(&b).map_err(|_| Fault::Student("wrote no valid PPM image".to_string()))?;
    if (got.width, got.height) != (expected.width, expected.height) {
        return Err(Fault::Student(format!(
            "wrote a {}x{} image",
            got.width, got.height
        )));
    }
    let diff = ppm::diff(expected, got).map_err(|e| grader(&e))?;
    match diff.first {
        None => Ok((1.0, "identical".to_string())),
        Some((row, column, want, have)) => {
            let what = format!(
                "{} pixels differ, the first at file row {row}, column {column}: {want:?} \
                 expected, {have:?} found",
                diff.pixels
            );
            if diff.pixels <= max_differing {
                Ok((1.0, format!("{what} (up to {max_differing} allowed)")))
            } else {
                Err(Fault::Student(what))
            }
        }
    }
}

/// The file a lab05 run writes in the sandbox's output folder and the grader compares: the
/// raw canvas (the PNG beside it is only lab05's to write).
const CANVAS: &str = "out.raw";

/// lab05's `args` on the GPU, writing [`CANVAS`] in the sandbox's output folder.
fn gpu_canvas(args: &rubric::Buddhabrot) -> lab05::Args {
    lab05::Args {
        raw: Some(Path::new(OUT).join(CANVAS)),
        output: Path::new(OUT).join("out.png"),
        ..args.lab_args(Backend::Gpu)
    }
}

/// A canvas check's runs: this workspace's CPU backend, and its GPU backend with the
/// student's kernel.
fn canvas_args(args: &rubric::Buddhabrot) -> (Vec<OsString>, Vec<OsString>) {
    let reference = lab05::Args {
        raw: Some(PathBuf::from("canvas.raw")),
        output: PathBuf::from("canvas.png"),
        ..args.lab_args(Backend::Cpu)
    };
    (reference.to_args(), gpu_canvas(args).to_args())
}

fn canvas(
    context: &Context,
    lab: &'static Lab,
    deadline: Instant,
    kernel: &Path,
    args: &rubric::Buddhabrot,
) -> Earned {
    let (reference_args, gpu_args) = canvas_args(args);
    let expected = made(context, lab, &reference_args, "canvas.raw")?;
    let run = sandboxed(
        context,
        lab,
        &Program::SolutionWithKernel(kernel),
        &gpu_args,
        deadline,
    )?;
    let got = output_file(run.out.path(), CANVAS, expected.len() as u64).map_err(Fault::Student)?;
    if got == expected {
        return Ok((1.0, format!("identical ({} bytes)", got.len())));
    }
    if got.len() != expected.len() {
        return Err(Fault::Student(format!(
            "the canvas has {} bytes, the reference {}",
            got.len(),
            expected.len()
        )));
    }
    let differing = expected
        .chunks(4)
        .zip(got.chunks(4))
        .filter(|(a, b)| a != b)
        .count();
    Err(Fault::Student(format!(
        "{differing} counters differ from the reference"
    )))
}

/// lab06's sums at a length of the grade's own choosing, so that no sum can be known in
/// advance; each variant through the abstraction it is about. The one-thread CPU variants
/// run in the grader's harness with the grader's operation ([`cpu_variant`]), the `-rayon`
/// ones in the student's lab06 (the same functions, through the given `split`); the GPU
/// kernels in this workspace's lab06, built with the grader's `add.cuh` ([`gpu_variants`]).
fn sums(
    context: &Context,
    lab: &'static Lab,
    deadline: Instant,
    kernel: Option<&Path>,
    args: rubric::SumArgs,
    variants: &[rubric::SumVariant],
) -> Earned {
    let sized = with_unpredictable_n(args, context.settings.noise);
    let expected = expected_sum(context, lab, sized)?;
    let mut said = Vec::new();
    for function in variants.iter().filter_map(|v| v.harnessed()) {
        said.push(cpu_variant(context, lab, deadline, function)?);
    }
    let in_lab: Vec<rubric::SumVariant> = variants
        .iter()
        .copied()
        .filter(|v| v.harnessed().is_none())
        .collect();
    let staged = kernel
        .map(|kernel| stage_lab06_kernel(context, lab, kernel))
        .transpose()?;
    let program = match &staged {
        Some(staged) => Program::StagedKernel {
            dir: staged.dir.path(),
            file: &staged.file,
        },
        None => Program::Student,
    };
    let run_args = lab06::Args {
        variants: in_lab.iter().map(|v| v.variant()).collect(),
        json: true,
        save_ptx: staged
            .as_ref()
            .map(|_| PathBuf::from(format!("{OUT}/{PTX}"))),
        ..sized.lab_args()
    };
    let run = sandboxed(context, lab, &program, &run_args.to_args(), deadline)?;
    let report: LabReport = serde_json::from_slice(&run.stdout)
        .map_err(|_| Fault::Student("printed no valid --json report".to_string()))?;
    for variant in in_lab.iter().map(|v| v.name()) {
        let key = format!("{}_sum", variant.replace('-', "_"));
        let wrong = match report.metrics.get(&key).and_then(serde_json::Value::as_f64) {
            Some(sum) if sum == expected => continue,
            Some(sum) => format!("{variant} summed to {sum}, expected {expected}"),
            None => format!("no sum for {variant}"),
        };
        return Err(Fault::Student(wrong));
    }
    if let Some(staged) = &staged {
        let ptx = output_file(run.out.path(), PTX, 64 << 20).map_err(solutions_output)?;
        said.push(through_abstractions(&in_lab, &staged.planted, &ptx)?);
    }
    said.push(format!("every sum exact ({expected})"));
    Ok((1.0, said.join("; ")))
}

/// Where this workspace's lab06 writes the PTX of the student's kernels.
const PTX: &str = "reduce.ptx";

/// The key of `lab`'s planted code in this grade: the grade's number, each lab its own.
fn lab_key(context: &Context, lab: &Lab) -> u64 {
    context.settings.noise ^ (u64::from(lab.name.bytes().fold(0u8, |a, b| a ^ b)) << 56)
}

/// One of lab06's CPU variants (`function` of `src/cpu/variants.rs`) in the grader's harness,
/// handed the grader's operation `acc + f(x)` ([`planted::Lab06Draw`]): it must return the
/// total of f over the elements, calling the operation once per element.
fn cpu_variant(
    context: &Context,
    lab: &'static Lab,
    deadline: Instant,
    function: &str,
) -> Result<String, Fault> {
    let bins = &context.settings.student.bins;
    if !bins.join(planted::LAB06_HARNESS).is_file() {
        let why = fs::read_to_string(bins.join(format!("{}.error", planted::LAB06_HARNESS)))
            .map_err(|_| Fault::Grader("lab06's harness was not built".to_string()))?;
        return Err(Fault::Student(format!(
            "src/cpu/variants.rs does not build on its own, beside the grader's Combine and \
             LANES (it may use only those of its parent module, and std): {why}"
        )));
    }
    let draw = planted::Lab06Draw::new(lab_key(context, lab));
    let mut args = vec![function.to_string()];
    args.extend(draw.args());
    let run = sandboxed(
        context,
        lab,
        &Program::Harness(planted::LAB06_HARNESS),
        &os(&args),
        deadline,
    )?;
    let printed = String::from_utf8_lossy(&run.stdout);
    let mut words = printed.split_whitespace();
    let (sum, calls) = match (words.next(), words.next(), words.next()) {
        (Some(sum), Some(calls), None) => (sum.parse::<f64>().ok(), calls.parse::<u64>().ok()),
        _ => (None, None),
    };
    let (Some(sum), Some(calls)) = (sum, calls) else {
        return Err(Fault::Student(format!(
            "{function}, run by the grader's harness, printed other lines than its sum and \
             its operation's calls"
        )));
    };
    let expected = draw.expected();
    if sum == expected as f64 && calls == draw.n {
        return Ok(format!(
            "{function} folds with the operation it is handed, once per element"
        ));
    }
    Err(Fault::Student(format!(
        "{function}, handed the grader's operation (acc + f(x), f a permutation of 1, 2, 3 \
         drawn in this grade) and {n} elements, returned {sum} (expected {expected}) and \
         called the operation {calls} times (expected {n}): each element must be folded in \
         with the operation the variant is handed, by one call",
        n = draw.n
    )))
}

/// The student's kernel file staged beside the grader's `add.cuh`, and the name of the
/// function that header's `add` calls.
struct Staged {
    dir: tempfile::TempDir,
    file: String,
    planted: String,
}

fn stage_lab06_kernel(context: &Context, lab: &Lab, kernel: &Path) -> Result<Staged, Fault> {
    let from = context.settings.student.src.join(kernel);
    let source = fs::read(&from).map_err(|_| {
        Fault::Student(format!(
            "no {} was taken from the submission",
            kernel.display()
        ))
    })?;
    let file = kernel
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .ok_or_else(|| Fault::Grader(format!("{} names no file", kernel.display())))?;
    let dir = tempfile::Builder::new()
        .prefix("kernels-")
        .tempdir_in(context.settings.scratch)
        .map_err(|e| Fault::Grader(format!("cannot make a folder for the kernel: {e}")))?;
    let (header, planted) = planted::lab06_header(lab_key(context, lab));
    // The folder is mounted whole, so its own mode counts: the sandbox's user reads it.
    use std::os::unix::fs::PermissionsExt;
    fs::write(dir.path().join(&file), source)
        .and_then(|()| fs::write(dir.path().join("add.cuh"), header))
        .and_then(|()| fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)))
        .map_err(|e| Fault::Grader(format!("cannot stage the kernel: {e}")))?;
    Ok(Staged { dir, file, planted })
}

/// Each GPU variant of `variants` reached the grader's `add` as its lesson says, read in the
/// PTX of the student's kernels built with the grader's `add.cuh`: its kernel reaches the
/// function `planted` (which that header's `add` calls), and the virtual and pointer kernels
/// make an indirect call. A kernel that adds by itself, or calls `add` directly where the
/// lesson calls through a vtable or a pointer, fails with a line saying which.
fn through_abstractions(
    variants: &[rubric::SumVariant],
    planted: &str,
    ptx: &[u8],
) -> Result<String, Fault> {
    let module = super::ptx::Module::parse(&String::from_utf8_lossy(ptx));
    if !module.defines(planted) {
        return Err(Fault::Student(
            "its kernels, built with the grader's add.cuh, never use add()".to_string(),
        ));
    }
    let mut kernels = Vec::new();
    for variant in variants {
        let Some((kernel, indirect)) = variant.kernel() else {
            continue;
        };
        if !module.reachable(kernel).contains(planted) {
            return Err(Fault::Student(format!(
                "{kernel} never calls add() (add.cuh): its sum is not folded with the \
                 operation its abstraction stands for"
            )));
        }
        if indirect && !module.calls_indirectly(kernel) {
            return Err(Fault::Student(format!(
                "{kernel} makes no indirect call: it calls add() directly, not through the \
                 {} the lesson measures",
                if kernel == "reduce_virtual" {
                    "virtual method"
                } else {
                    "function pointer"
                }
            )));
        }
        kernels.push(kernel);
    }
    Ok(format!(
        "{} fold with add() through their abstractions (read in their PTX)",
        kernels.join(" and ")
    ))
}

/// The exact total of lab06's data for `args`, from this workspace's own plain loop (given
/// code, run here), once per grade and length.
fn expected_sum(
    context: &Context,
    lab: &'static Lab,
    sized: rubric::SumArgs,
) -> Result<f64, Fault> {
    let key = Reference::Sum { args: sized.args() };
    if let Some(Made::Sum(sum)) = known(context, &key) {
        return Ok(sum);
    }
    let plain = lab06::Args {
        variants: vec![lab06::Variant::Cpu(CpuSum::Plain, Cores::One)],
        json: true,
        ..sized.lab_args()
    };
    let mut reference = context.settings.reference.command(lab);
    reference.args(plain.to_args());
    let started = Instant::now();
    let finished = runner::run(&mut reference, runner::limit_for(1 << 24))
        .map_err(|e| Fault::Grader(format!("the reference lab06 failed: {e}")))?;
    let report: LabReport = serde_json::from_slice(&finished.stdout)
        .map_err(|e| Fault::Grader(format!("the reference lab06 printed no report: {e}")))?;
    let expected = report
        .metrics
        .get("cpu_plain_sum")
        .and_then(serde_json::Value::as_f64)
        .ok_or_else(|| Fault::Grader("the reference lab06 reported no sum".to_string()))?;
    keep(context, key, Made::Sum(expected), started.elapsed());
    Ok(expected)
}

/// A number of the grade's own, for [`with_unpredictable_n`], [`with_unpredictable_view`]
/// and the planted kernels: from the kernel's random source, or where it answers nothing
/// (it always does on Linux), the clock's nanoseconds and the process id.
pub fn noise() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: `getrandom` writes at most `bytes.len()` bytes into the buffer it is given.
    let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if got == 8 {
        return u64::from_le_bytes(bytes);
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()))
        ^ u64::from(std::process::id())
}

/// The speed check's view moved by the grade's `noise`: its centre by 1 to 64 steps of 1/512
/// of the image's width and height, each way (never by none: the rubric's own view is never
/// run), so the work is like the rubric's view while no submission can know the image in
/// advance. The size and scale stay.
fn with_unpredictable_view(frame: &rubric::Frame, noise: u64) -> MandelbrotArgs {
    let view = frame.view();
    let step = |bits: u64, pixels: u32| {
        let steps = match (bits % 128) as i32 - 64 {
            below if below < 0 => f64::from(below),
            above => f64::from(above + 1),
        };
        steps / 512.0 * f64::from(pixels) * view.scale
    };
    MandelbrotArgs {
        cx: view.cx + step(noise, view.width),
        cy: view.cy + step(noise >> 16, view.height),
        scale: Some(view.scale),
        ..MandelbrotArgs::new(view.width, view.height)
    }
}

/// `--n N` raised by 1 to 4095, by the grade's `noise`: a submission that prints a sum
/// learnt from an earlier grade prints a wrong one.
fn with_unpredictable_n(args: rubric::SumArgs, noise: u64) -> rubric::SumArgs {
    let n = args.n + 1 + noise % 4095;
    rubric::SumArgs { n, ..args }
}

/// The grader's clock around the whole process; its image is compared afterwards. The image
/// goes to a file in the page cache, as cheap to write as anything a process can write to.
fn cpu_speed(
    context: &Context,
    lab: &'static Lab,
    deadline: Instant,
    frame: &rubric::Frame,
) -> Earned {
    // A view of the grade's own choosing, so that no argument list can be recognised.
    let args = with_unpredictable_view(frame, context.settings.noise);
    let expected = lab01_image(context, &args)?;
    let run_args = to_out(&args, "image.ppm").to_args();
    let cap = expected.len() as u64;
    let mut times = (Vec::new(), Vec::new());
    for _ in 0..context.settings.speed_runs.max(1) {
        let solution = sandboxed(
            context,
            lab,
            &Program::Solution { gpu: false },
            &run_args,
            deadline,
        )?;
        let student = sandboxed(context, lab, &Program::Student, &run_args, deadline)?;
        if output_file(student.out.path(), "image.ppm", cap)
            .ok()
            .as_deref()
            != Some(&expected[..])
        {
            return Err(Fault::Student(
                "its image differs from the reference: no speed credit".to_string(),
            ));
        }
        times.0.push(solution.wall.as_secs_f64() * 1e3);
        times.1.push(student.wall.as_secs_f64() * 1e3);
    }
    credit(&times, "whole run", context.settings.speed_runs)
}

/// A kernel speed check's run, the solution's and the student's kernel alike, with its
/// report, and the file it writes in the sandbox's output folder.
fn kernel_speed_args(work: &rubric::KernelWork) -> (Vec<OsString>, &'static str) {
    match work {
        rubric::KernelWork::Mandelbrot(frame) => {
            let args = MandelbrotArgs {
                json: true,
                ..to_out(&frame.lab_args(), "out.ppm")
            };
            (args.to_args(), "out.ppm")
        }
        rubric::KernelWork::Buddhabrot(buddhabrot) => {
            let args = lab05::Args {
                json: true,
                ..gpu_canvas(buddhabrot)
            };
            (args.to_args(), CANVAS)
        }
    }
}

/// This workspace's host code launches and times the student's kernel and the solution's.
fn kernel_speed(
    context: &Context,
    lab: &'static Lab,
    deadline: Instant,
    kernel: &Path,
    work: &rubric::KernelWork,
) -> Earned {
    let gpu = context
        .settings
        .gpu
        .ok_or_else(|| Fault::Grader("no GPU information".to_string()))?;
    let (run_args, file) = kernel_speed_args(work);
    let kernel_ms = |run: &Sandboxed| -> Result<f64, String> {
        let report: LabReport = serde_json::from_slice(&run.stdout)
            .map_err(|e| format!("no report from the timing run: {e}"))?;
        report
            .phases_ms
            .get("kernel")
            .copied()
            .ok_or_else(|| "no kernel time".to_string())
    };
    let mut expected: Option<Vec<u8>> = None;
    let mut times = (Vec::new(), Vec::new());
    for _ in 0..context.settings.speed_runs.max(1) {
        let solution = sandboxed(
            context,
            lab,
            &Program::Solution { gpu: true },
            &run_args,
            deadline,
        )?;
        let ours = kernel_ms(&solution).map_err(solutions_output)?;
        if expected.is_none() {
            expected =
                Some(output_file(solution.out.path(), file, 1 << 30).map_err(solutions_output)?);
        }
        let want = expected.as_deref().unwrap_or_default();
        let student = sandboxed(
            context,
            lab,
            &Program::SolutionWithKernel(kernel),
            &run_args,
            deadline,
        )?;
        let theirs = kernel_ms(&student).map_err(Fault::Student)?;
        if output_file(student.out.path(), file, want.len() as u64).map_err(Fault::Student)? != want
        {
            return Err(Fault::Student(
                "its output differs from the solution's: no speed credit".to_string(),
            ));
        }
        times.0.push(ours);
        times.1.push(theirs);
    }
    // The least the GPU's arithmetic needs for this work: below it, a time is implausible.
    let floor = match work {
        rubric::KernelWork::Mandelbrot(frame) => {
            timing::fp64_floor_ms(timing::loop_bodies(&frame.view()), gpu.sms, gpu.clock_khz)
        }
        rubric::KernelWork::Buddhabrot(_) => {
            let canvas = expected.as_deref().unwrap_or_default();
            timing::fp32_floor_ms(timing::canvas_total(canvas), gpu.sms, gpu.clock_khz)
        }
    };
    let theirs = timing::median(&times.1);
    if theirs < floor {
        return Err(Fault::Student(format!(
            "kernel {theirs:.3} ms is below {floor:.3} ms, the least this GPU's arithmetic units \
             need for the work: implausible, no speed credit"
        )));
    }
    credit(&times, "kernel", context.settings.speed_runs)
}

fn credit(times: &(Vec<f64>, Vec<f64>), what: &str, runs: usize) -> Earned {
    let (ours, theirs) = (timing::median(&times.0), timing::median(&times.1));
    let ratio = theirs / ours;
    let fraction = timing::speed_credit(ratio);
    Ok((
        fraction,
        format!(
            "{what} {theirs:.3} ms, the solution's {ours:.3} ms (medians of {runs} runs each, alternating): \
             {ratio:.2}x, {:.0}% of the points",
            100.0 * fraction
        ),
    ))
}

/// The GPU's multiprocessors and clock, read by this workspace's own code.
pub fn gpu_info() -> Option<GpuInfo> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let gpu = shared::gpu::Gpu::open().ok()?;
    let read = |a| {
        gpu.ctx
            .attribute(a)
            .ok()
            .and_then(|v| u32::try_from(v).ok())
    };
    // The driver names its GPUs by PCI address; CUDA's numbering is another.
    let bus = match (
        read(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
        read(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
        read(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
    ) {
        (Some(domain), Some(bus), Some(device)) => {
            Some(format!("{domain:04x}:{bus:02x}:{device:02x}.0"))
        }
        _ => None,
    };
    Some(GpuInfo {
        sms: read(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        clock_khz: read(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
        device: bus.as_deref().and_then(sandbox::gpu_device),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_length_of_a_sum_changes_and_only_it() {
        let args: Vec<String> = ["--n", "100003", "--reps", "1"].map(String::from).to_vec();
        let typed = rubric::SumArgs::try_from(args.clone()).expect("lab06's arguments");
        let changed = with_unpredictable_n(typed, noise());
        assert!(
            (100_004..100_003 + 4096).contains(&changed.n),
            "{changed:?}"
        );
        assert_eq!(changed.reps, typed.reps);
        let words = changed.args();
        assert_eq!(words[..1], args[..1]);
        assert_eq!(words[1], changed.n.to_string());
        assert_eq!(words[2..], args[2..]);
    }

    #[test]
    fn the_speed_view_moves_with_the_grade_and_keeps_its_size_and_scale() {
        let args: Vec<String> = ["1024", "1024", "--cx", "-0.74364", "--scale", "2e-6"]
            .map(String::from)
            .to_vec();
        let frame = rubric::Frame::try_from(args).expect("a frame");
        let views: Vec<shared::view::View> = [0, 1, 64, 0x40_0000, u64::MAX]
            .into_iter()
            .map(|noise| with_unpredictable_view(&frame, noise).view())
            .collect();
        for moved in &views {
            assert_eq!((moved.width, moved.height, moved.scale), (1024, 1024, 2e-6));
            // At most an eighth of the image away, in each direction.
            assert!(
                (moved.cx + 0.74364).abs() <= 1024.0 * 2e-6 / 8.0 + 1e-15,
                "{moved:?}"
            );
            assert!(moved.cy.abs() <= 1024.0 * 2e-6 / 8.0 + 1e-15, "{moved:?}");
            assert_ne!(*moved, frame.view(), "the rubric's own view is never run");
        }
        assert_ne!(views[0], views[1]);
        assert_ne!(views[1], views[3]);
    }

    /// lab06's own kernels, built with the grader's add.cuh, pass the PTX check; each way of
    /// skipping an abstraction fails it, naming the kernel.
    #[test]
    #[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
    fn lab06s_kernels_pass_through_their_abstractions_and_each_cheat_fails() {
        let source = include_str!("../../../../lab06-generics-vs-virtual/kernels/reduce.cu");
        let (header, planted) = planted::lab06_header(0xfeed_beef);
        let variants = [
            "gpu-generic",
            "gpu-virtual",
            "gpu-fn-ptr-loop",
            "gpu-fn-ptr-hoisted",
        ]
        .map(|v| rubric::SumVariant::try_from(v.to_string()).expect("a variant"));
        let check = |source: String| {
            let ptx = shared::nvrtc::KernelFile {
                name: "reduce.cu",
                source: source.into(),
                headers: vec![shared::nvrtc::Header {
                    name: "add.cuh",
                    text: header.clone().into(),
                }],
                options: vec!["--std=c++17".to_string()],
            }
            .ptx("compute_90")
            .expect("compiled");
            through_abstractions(&variants, &planted, ptx.as_bytes())
        };
        let said = check(source.to_string()).expect("the solution passes");
        assert!(
            said.starts_with("reduce_generic and reduce_virtual and"),
            "{said}"
        );
        let cheats = [
            (
                "return combiner->combine(acc, x);",
                "(void)combiner; return acc + x;",
                "reduce_virtual never calls add()",
            ),
            (
                "return pointer(acc, x);",
                "(void)pointer; return add(acc, x);",
                "reduce_fn_ptr_hoisted makes no indirect call",
            ),
            (
                "return (*slot)(acc, x);",
                "(void)slot; return acc + x;",
                "reduce_fn_ptr_loop never calls add()",
            ),
            (
                "operator()(float acc, float x) const { return add(acc, x); }",
                "operator()(float acc, float x) const { return acc + x; }",
                "reduce_generic never calls add()",
            ),
        ];
        for (from, to, says) in cheats {
            assert!(source.contains(from), "{from}");
            let error = match check(source.replace(from, to)) {
                Err(Fault::Student(why)) => why,
                other => panic!("{to}: {other:?}"),
            };
            assert!(error.starts_with(says), "{to}: {error}");
        }
    }

    /// The command lines the image, canvas and kernel speed checks run, word for word: a
    /// flag of the rubric's lost or moved on its way through the typed arguments, a backend
    /// wrong, or an output or `--json` missing fails here, not on the GPU machine. (That
    /// each lab parses them is its own renderer's test: `to_args_parse_back`.)
    #[test]
    fn the_checks_run_the_command_lines_of_their_rubric() {
        let rubric = rubric::Rubric::load().expect("the rubric");
        let words = |line: &str| -> Vec<OsString> {
            line.split(' ')
                .map(|w| OsString::from(w.replace("OUT", OUT)))
                .collect()
        };
        let (mut canvases, mut speeds) = (Vec::new(), Vec::new());
        for check in &rubric.checks {
            match &check.test {
                Test::Canvas { args, .. } => canvases.push(canvas_args(args)),
                Test::KernelSpeed { args, .. } => speeds.push(kernel_speed_args(args)),
                _ => {}
            }
        }
        let out = "-o OUT/out.png --raw OUT/out.raw";
        let first = "--samples 4000000 --seed 7";
        let second = "--width 301 --height 499 --samples 3000000 --seed 11";
        let switches = "--no-stratify --no-symmetry";
        assert_eq!(
            canvases,
            [
                (
                    words(&format!("{first} -o canvas.png --raw canvas.raw")),
                    words(&format!("--backend gpu {first} {out}")),
                ),
                (
                    words(&format!(
                        "{second} -o canvas.png --raw canvas.raw {switches}"
                    )),
                    words(&format!("--backend gpu {second} {out} {switches}")),
                ),
            ]
        );
        assert_eq!(
            speeds,
            [
                (words("8192 8192 -o OUT/out.ppm --json"), "out.ppm"),
                (
                    words(&format!("--backend gpu --samples 200000000 {out} --json")),
                    "out.raw"
                ),
            ]
        );
        let image = to_out(
            &rubric::Frame::try_from(["333", "517", "--cy", "0.25"].map(String::from).to_vec())
                .expect("a frame")
                .lab_args(),
            "image.ppm",
        );
        assert_eq!(
            [image.to_args(), fused()].concat(),
            words("333 517 --cy 0.25 -o OUT/image.ppm --nvrtc-option=--fmad=true")
        );
    }
}
