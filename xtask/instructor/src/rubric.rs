//! The rubric (`xtask/instructor/rubric.toml`, compiled in): the checks and their points.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use lab05_buddhabrot::config::{self as lab05, Backend};
use lab06_generics_vs_virtual::cli as lab06;
use serde::{Deserialize, Deserializer};
use shared::view::MandelbrotArgs;

use xtask::labs::{self, Device, Lab, Work};

/// The rubric file, built into the instructor binary so that `dist/instructor grade` carries it.
pub const RUBRIC: &str = include_str!("../rubric.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rubric {
    /// Seconds each check may take, all its runs together.
    pub time_limit_s: u64,
    /// Seconds each lab's build may take.
    pub build_time_limit_s: u64,
    /// Runs of the student's program and of the solution per speed check.
    pub speed_runs: usize,
    /// MiB of memory a check's processes may hold together.
    pub memory_limit_mib: u64,
    /// MiB a check's processes may write to disk together.
    pub disk_limit_mib: u64,
    /// Files and folders a check's processes may make together.
    pub files_limit: u64,
    /// A GPU check's time limit is this many times the reference's time for the same work...
    pub gpu_time_factor: f64,
    /// ...plus these seconds of start-up (the CUDA context, NVRTC), within `time_limit_s`.
    pub gpu_start_up_s: f64,
    #[serde(rename = "check")]
    pub checks: Vec<Check>,
}

#[derive(Debug, Deserialize)]
pub struct Check {
    /// The lab, from xtask's table: a name the table does not know fails the rubric's load.
    #[serde(deserialize_with = "lab")]
    pub lab: &'static Lab,
    pub points: f64,
    /// Shown to the student only once grades are published.
    #[serde(default)]
    pub hidden: bool,
    #[serde(flatten)]
    pub test: Test,
    /// The fields that give the check smaller work where the CPU device stands in for the
    /// GPU (rubric.toml's header), read into `smaller` by [`Rubric::parse`].
    #[serde(default)]
    on_cpu_device: Option<toml::Table>,
    #[serde(skip)]
    smaller: Option<Test>,
}

/// The fields `on_cpu_device` may give a check anew: its work, nothing of what it checks.
const SMALLER_WORK: &[&str] = &["size", "view", "args"];

/// What a check runs and compares (rubric.toml's header describes each kind).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Test {
    Image {
        size: Size,
        #[serde(default)]
        view: View,
        #[serde(default)]
        max_differing: u64,
        /// A GPU lab's kernel file: the image is this workspace's host code running it, and
        /// the student's host code is proven with a planted kernel (`checks::host_proven`).
        #[serde(default)]
        kernel: Option<PathBuf>,
    },
    Canvas {
        kernel: PathBuf,
        args: Buddhabrot,
    },
    Sums {
        #[serde(default)]
        kernel: Option<PathBuf>,
        args: SumArgs,
        variants: Vec<SumVariant>,
    },
    CpuSpeed {
        /// `WIDTH HEIGHT` and the view's flags, as the lab takes them.
        args: Frame,
    },
    KernelSpeed {
        kernel: PathBuf,
        args: KernelWork,
    },
}

impl Rubric {
    /// The limits of each check's whole process tree.
    pub fn tree_limits(&self) -> crate::sandbox::TreeLimits {
        crate::sandbox::TreeLimits {
            memory: self.memory_limit_mib << 20,
            disk: Some(self.disk_limit_mib << 20),
            files: Some(self.files_limit),
            ..crate::sandbox::TreeLimits::DEFAULT
        }
    }

    pub fn load() -> Result<Rubric> {
        Rubric::parse(RUBRIC)
    }

    /// As wide as the widest of `lab`'s image checks and as tall as the tallest: a GPU lab's
    /// planted kernel runs at least this large, so that the student's host code is proven
    /// over every column and row its images are graded at (`None`: no image check).
    /// `cpu_device`: of the checks' work where the CPU device stands in for the GPU.
    pub fn image_extent(&self, lab: &Lab, cpu_device: bool) -> Option<Size> {
        self.checks
            .iter()
            .filter(|check| check.lab == lab)
            .filter_map(|check| match check.test_on(cpu_device) {
                Test::Image { size, .. } => Some(*size),
                _ => None,
            })
            .reduce(|a, b| Size {
                width: a.width.max(b.width),
                height: a.height.max(b.height),
            })
    }

    fn parse(text: &str) -> Result<Rubric> {
        let mut rubric: Rubric = toml::from_str(text).map_err(|e| invalid(text, &e))?;
        // A check's `on_cpu_device` replaces the check's own fields, and the check so changed
        // is read again as a whole, every field checked as the check's own.
        let raw: toml::Table = toml::from_str(text).map_err(|e| invalid(text, &e))?;
        let raw = raw.get("check").and_then(toml::Value::as_array);
        for (index, check) in rubric.checks.iter_mut().enumerate() {
            let whole = raw
                .and_then(|checks| checks.get(index))
                .and_then(toml::Value::as_table);
            if let (Some(work), Some(whole)) = (check.on_cpu_device.take(), whole) {
                check.smaller = Some(check.smaller_work(whole.clone(), work)?);
            }
        }
        for check in &rubric.checks {
            // The arguments are read by their shape alone: the lab's table says what it takes.
            let work = check.test.work();
            if work != check.lab.work {
                anyhow::bail!(
                    "xtask/instructor/rubric.toml: {}: its arguments are for {work:?} work, its \
                     lab does {:?} work",
                    check.name(),
                    check.lab.work
                );
            }
            if let Test::Image { kernel, .. } = &check.test {
                // A GPU lab's image must come from its kernel run by this workspace's host
                // code: the student's binary alone could make it on the CPU.
                let gpu = check.lab.first().variant.device == Device::Gpu;
                if gpu != kernel.is_some() {
                    anyhow::bail!(
                        "xtask/instructor/rubric.toml: {}: an image check names its kernel file exactly \
                         when its lab runs on the GPU",
                        check.name()
                    );
                }
            }
            if let Test::Sums {
                kernel: None,
                variants,
                ..
            } = &check.test
            {
                if variants.iter().any(|v| v.on_gpu()) {
                    anyhow::bail!(
                        "xtask/instructor/rubric.toml: {}: GPU variants need the kernel file",
                        check.name()
                    );
                }
            }
        }
        Ok(rubric)
    }

    /// The files the checks take from the submission beyond the binaries: kernel sources.
    pub fn kernels(&self) -> Vec<&Path> {
        let mut kernels: Vec<&Path> = self.checks.iter().filter_map(|c| c.kernel()).collect();
        kernels.sort();
        kernels.dedup();
        kernels
    }
}

impl Check {
    /// The check's test with `work`'s fields in place of its own (`on_cpu_device`), or why
    /// that is no check of the same thing.
    fn smaller_work(&self, mut whole: toml::Table, work: toml::Table) -> Result<Test> {
        let name = self.name();
        whole.remove("on_cpu_device");
        if !self.needs_gpu() || self.times_a_kernel() {
            anyhow::bail!(
                "xtask/instructor/rubric.toml: {name}: on_cpu_device is for a check the CPU \
                 device grades in the GPU's place"
            );
        }
        for (key, value) in work {
            if !SMALLER_WORK.contains(&key.as_str()) {
                anyhow::bail!(
                    "xtask/instructor/rubric.toml: {name}: on_cpu_device gives only the work, \
                     the check's own {}: not `{key}`",
                    SMALLER_WORK.join(", ")
                );
            }
            whole.insert(key, value);
        }
        let check: Check = toml::Value::Table(whole).try_into().map_err(|e| {
            let e = e.to_string();
            let e = e.lines().next().unwrap_or_default();
            anyhow::anyhow!("xtask/instructor/rubric.toml: {name}: on_cpu_device: {e}")
        })?;
        Ok(check.test)
    }

    /// What the check runs: where the CPU device stands in for the GPU (`cpu_device`), the
    /// smaller work the rubric gives it there, if any.
    pub fn test_on(&self, cpu_device: bool) -> &Test {
        match (&self.smaller, cpu_device) {
            (Some(smaller), true) => smaller,
            _ => &self.test,
        }
    }

    /// The check's name, starting with its lab: `lab02: identical to the reference at 333x517`.
    pub fn name(&self) -> String {
        format!("{}: {}", self.lab.name, self.test.describe())
    }

    /// The kernel file this check takes from the submission, if any.
    pub fn kernel(&self) -> Option<&Path> {
        match &self.test {
            Test::Canvas { kernel, .. } | Test::KernelSpeed { kernel, .. } => Some(kernel),
            Test::Sums { kernel, .. } | Test::Image { kernel, .. } => kernel.as_deref(),
            Test::CpuSpeed { .. } => None,
        }
    }

    /// Whether the check can only run on a GPU.
    pub fn needs_gpu(&self) -> bool {
        match &self.test {
            Test::KernelSpeed { .. } | Test::Canvas { .. } => true,
            Test::CpuSpeed { .. } => false,
            Test::Sums { variants, .. } => variants.iter().any(|v| v.on_gpu()),
            Test::Image { .. } => self.lab.first().variant.device == Device::Gpu,
        }
    }

    /// Whether the check times a kernel: only a GPU can grade it (the CPU device grades
    /// every other GPU check where there is none).
    pub fn times_a_kernel(&self) -> bool {
        matches!(self.test, Test::KernelSpeed { .. })
    }

    /// Whether the check runs the student's own binary (else this workspace's, with the
    /// student's kernel file). A GPU lab's image check runs both: the student's binary with
    /// the planted kernel.
    pub fn runs_student_binary(&self) -> bool {
        match &self.test {
            Test::Image { .. } | Test::CpuSpeed { .. } => true,
            Test::Sums { kernel, .. } => kernel.is_none(),
            Test::Canvas { .. } | Test::KernelSpeed { .. } => false,
        }
    }
}

impl Test {
    /// What the test checks, with its work's arguments.
    pub fn describe(&self) -> String {
        match self {
            Test::Image {
                size,
                view,
                max_differing,
                ..
            } => {
                let flags = view.lab_args(*size).view_args();
                let at = match flags.is_empty() {
                    true => size.to_string(),
                    false => format!("{size} {}", flags.join(" ")),
                };
                match max_differing {
                    0 => format!("identical to the reference at {at}"),
                    n => format!("the reference's image, up to {n} pixels apart, at {at}"),
                }
            }
            Test::Canvas { args, .. } => format!(
                "GPU canvas identical to the CPU reference with {}",
                args.args().join(" ")
            ),
            // The length is drawn in each grade (`checks::with_unpredictable_n`), and each
            // abstract variant is checked through its abstraction (`checks::sums`).
            Test::Sums { variants, .. } => format!(
                "{} sum exactly, each through its abstraction",
                SumVariant::list(variants, " and ")
            ),
            // The view is moved in each grade (`checks::with_unpredictable_view`): the name
            // gives the rubric's, which is never run as such.
            Test::CpuSpeed { args } => format!(
                "whole-run time against the solution's near {}, moved in each grade",
                words(&args.lab_args().to_args()).join(" ")
            ),
            Test::KernelSpeed { args, .. } => format!(
                "kernel time against the solution's kernel with {}",
                args.describe().join(" ")
            ),
        }
    }

    /// The work the check's arguments describe, which its lab must do (xtask's table).
    fn work(&self) -> Work {
        match self {
            Test::Image { .. } | Test::CpuSpeed { .. } => Work::Mandelbrot,
            Test::Canvas { .. } => Work::Buddhabrot,
            Test::Sums { .. } => Work::Reduction,
            Test::KernelSpeed {
                args: KernelWork::Mandelbrot(_),
                ..
            } => Work::Mandelbrot,
            Test::KernelSpeed {
                args: KernelWork::Buddhabrot(_),
                ..
            } => Work::Buddhabrot,
        }
    }
}

/// One line for a rubric that does not load: the file, the line and what is wrong there
/// (toml's own message spans several lines, with a drawing of the line). A check's kind
/// and its fields are read together (`Check::test` is flattened), so what is wrong in them
/// is given at the check's `[[check]]` line.
fn invalid(text: &str, error: &toml::de::Error) -> anyhow::Error {
    let line = error
        .span()
        .and_then(|span| text.get(..span.start))
        .map(|before| before.matches('\n').count() + 1);
    let at = line.map_or(String::new(), |line| format!(":{line}"));
    anyhow::anyhow!(
        "xtask/instructor/rubric.toml{at}: {}",
        error.message().trim().replace('\n', " ")
    )
}

/// A check's lab, looked up in xtask's table once, as the rubric loads.
fn lab<'de, D: Deserializer<'de>>(deserializer: D) -> Result<&'static Lab, D::Error> {
    let name = String::deserialize(deserializer)?;
    labs::find(&name).map_err(|e| serde::de::Error::custom(format!("{e:#}")))
}

/// An image's size, `WIDTHxHEIGHT` in the rubric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Size {
    pub width: u32,
    pub height: u32,
}

impl TryFrom<String> for Size {
    type Error = String;

    fn try_from(size: String) -> Result<Size, String> {
        let parsed = size
            .split_once('x')
            .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)));
        let (width, height) =
            parsed.ok_or_else(|| format!("'{size}' is not a size WIDTHxHEIGHT"))?;
        Ok(Size { width, height })
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// An image's size and view, as a Mandelbrot lab's arguments (`WIDTH HEIGHT` and flags).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "Vec<String>")]
pub struct Frame {
    pub size: Size,
    pub view: View,
}

impl TryFrom<Vec<String>> for Frame {
    type Error = String;

    fn try_from(args: Vec<String>) -> Result<Frame, String> {
        let number = |i: usize| args.get(i).and_then(|a| a.parse::<u32>().ok());
        let (Some(width), Some(height)) = (number(0), number(1)) else {
            return Err(format!(
                "'{}' does not start with WIDTH HEIGHT",
                args.join(" ")
            ));
        };
        let view = View::try_from(args[2..].to_vec())?;
        Ok(Frame {
            size: Size { width, height },
            view,
        })
    }
}

impl Frame {
    /// The lab's arguments, typed as the Mandelbrot labs take them: no output file, no
    /// report (each check adds its own).
    pub fn lab_args(&self) -> MandelbrotArgs {
        self.view.lab_args(self.size)
    }

    /// The view the lab draws, the lab's own defaults where the rubric gives none.
    pub fn view(&self) -> shared::view::View {
        self.lab_args().view()
    }
}

/// Arguments rendered for a line a person reads (a check's name, a Classroom 50 command):
/// the grader's own paths and numbers, all UTF-8.
pub fn words(args: &[std::ffi::OsString]) -> Vec<String> {
    args.iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect()
}

/// lab05's flags that say what its canvas holds (lab05-buddhabrot/src/config.rs), each at
/// most once; those left out are lab05's defaults. The rubric's words are read here, for a
/// one-line error naming the rubric's line; the test `the_rubric_s_command_lines_parse_as_
/// the_labs_own` parses them with lab05's own parser too, and what lab05 is run with is
/// rendered by lab05's own `Args::to_args`. The backend is no part of it: each check picks
/// its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Vec<String>")]
pub struct Buddhabrot {
    pub samples: u64,
    pub seed: Option<u32>,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub symmetry: bool,
    pub stratify: bool,
}

/// The flags [`Buddhabrot`] takes, for its errors.
const BUDDHABROT_FLAGS: &str = "--samples, --seed, --width, --height, --no-symmetry, --no-stratify";

impl TryFrom<Vec<String>> for Buddhabrot {
    type Error = String;

    fn try_from(args: Vec<String>) -> Result<Buddhabrot, String> {
        let (mut samples, mut seed, mut width, mut height) = (None, None, None, None);
        let (mut symmetry, mut stratify) = (true, true);
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "--samples" => once(&mut samples, flag, args.next())?,
                "--seed" => once(&mut seed, flag, args.next())?,
                "--width" => once(&mut width, flag, args.next())?,
                "--height" => once(&mut height, flag, args.next())?,
                "--no-symmetry" => off(&mut symmetry, flag)?,
                "--no-stratify" => off(&mut stratify, flag)?,
                _ => return Err(format!("'{flag}' is not a lab05 flag ({BUDDHABROT_FLAGS})")),
            }
        }
        let samples = samples.ok_or("lab05's flags give no --samples")?;
        let sizes = [
            ("--samples", Some(samples)),
            ("--width", width.map(u64::from)),
            ("--height", height.map(u64::from)),
        ];
        if let Some((flag, _)) = sizes.iter().find(|(_, n)| *n == Some(0)) {
            return Err(format!("lab05's {flag} is 0"));
        }
        Ok(Buddhabrot {
            samples,
            seed,
            width,
            height,
            symmetry,
            stratify,
        })
    }
}

/// A lab05 flag's whole number, given once.
fn once<T: std::str::FromStr>(
    slot: &mut Option<T>,
    flag: &str,
    value: Option<&String>,
) -> Result<(), String> {
    let value = value.ok_or_else(|| format!("lab05's {flag} has no value"))?;
    let number = value
        .parse()
        .map_err(|_| format!("lab05's {flag} '{value}' is not a whole number"))?;
    match slot.replace(number) {
        Some(_) => Err(format!("lab05's flags give {flag} twice")),
        None => Ok(()),
    }
}

/// A lab05 flag that turns something off, given once.
fn off(on: &mut bool, flag: &str) -> Result<(), String> {
    if !*on {
        return Err(format!("lab05's flags give {flag} twice"));
    }
    *on = false;
    Ok(())
}

impl Buddhabrot {
    /// lab05's flags as the rubric writes them, in the order of [`BUDDHABROT_FLAGS`], for a
    /// check's name (lab05's own order would rename the checks: results are keyed by name).
    pub fn args(&self) -> Vec<String> {
        let numbers = [
            ("--samples", Some(self.samples)),
            ("--seed", self.seed.map(u64::from)),
            ("--width", self.width.map(u64::from)),
            ("--height", self.height.map(u64::from)),
        ];
        let switches = [
            ("--no-symmetry", !self.symmetry),
            ("--no-stratify", !self.stratify),
        ];
        numbers
            .into_iter()
            .filter_map(|(flag, n)| Some([flag.to_string(), n?.to_string()]))
            .flatten()
            .chain(
                switches
                    .into_iter()
                    .filter(|s| s.1)
                    .map(|s| s.0.to_string()),
            )
            .collect()
    }

    /// lab05's arguments on `backend`, typed as lab05 takes them: its defaults where the
    /// rubric gives none, no output file (each check adds its own).
    pub fn lab_args(&self, backend: Backend) -> lab05::Args {
        let default = lab05::Args::defaults();
        lab05::Args {
            backend,
            samples: self.samples,
            seed: self.seed.unwrap_or(default.seed),
            width: self.width.unwrap_or(default.width),
            height: self.height.unwrap_or(default.height),
            no_symmetry: !self.symmetry,
            no_stratify: !self.stratify,
            ..default
        }
    }
}

/// What a kernel speed check times, read from the shape of its arguments: a Mandelbrot frame
/// starts with its size, lab05's flags with a flag (the load checks it against the lab's work).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "Vec<String>")]
pub enum KernelWork {
    Mandelbrot(Frame),
    Buddhabrot(Buddhabrot),
}

impl TryFrom<Vec<String>> for KernelWork {
    type Error = String;

    fn try_from(args: Vec<String>) -> Result<KernelWork, String> {
        match args.first() {
            Some(first) if first.starts_with("--") => {
                Buddhabrot::try_from(args).map(KernelWork::Buddhabrot)
            }
            _ => Frame::try_from(args).map(KernelWork::Mandelbrot),
        }
    }
}

impl KernelWork {
    /// The work for a check's name: a Buddhabrot's kernel runs on lab05's GPU backend.
    fn describe(&self) -> Vec<String> {
        match self {
            KernelWork::Mandelbrot(frame) => words(&frame.lab_args().to_args()),
            KernelWork::Buddhabrot(buddhabrot) => {
                let backend = lab05::Args {
                    backend: Backend::Gpu,
                    ..lab05::Args::defaults()
                };
                let mut words = words(&backend.to_args());
                words.extend(buddhabrot.args());
                words
            }
        }
    }
}

/// lab06's length and repetitions: `--n N --reps R` in the rubric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Vec<String>")]
pub struct SumArgs {
    pub n: u64,
    pub reps: u32,
}

impl TryFrom<Vec<String>> for SumArgs {
    type Error = String;

    fn try_from(args: Vec<String>) -> Result<SumArgs, String> {
        let (mut n, mut reps) = (None, None);
        for pair in args.chunks(2) {
            let value = pair.get(1);
            let wrong = || format!("lab06's '{}' is not a flag and a number", pair.join(" "));
            match pair[0].as_str() {
                "--n" => n = Some(value.and_then(|v| v.parse().ok()).ok_or_else(wrong)?),
                "--reps" => reps = Some(value.and_then(|v| v.parse().ok()).ok_or_else(wrong)?),
                flag => return Err(format!("'{flag}' is not lab06's --n or --reps")),
            }
        }
        match (n, reps) {
            (Some(n), Some(reps)) => Ok(SumArgs { n, reps }),
            _ => Err("lab06's arguments are --n N --reps R".to_string()),
        }
    }
}

impl SumArgs {
    /// lab06's own arguments for this length and these repetitions (the rest at their
    /// defaults), which a check adds its flags to and renders with `Args::to_args`.
    pub fn lab_args(&self) -> lab06::Args {
        lab06::Args {
            n: usize::try_from(self.n).unwrap_or(usize::MAX),
            reps: u16::try_from(self.reps).unwrap_or(u16::MAX),
            ..lab06::Args::defaults()
        }
    }

    /// The arguments lab06 is given, as lab06 renders them.
    pub fn args(&self) -> Vec<String> {
        words(&self.lab_args().to_args())
    }
}

/// One of lab06's variants, by the name its `--variants` takes (`lab06::Variant::name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SumVariant(lab06::Variant);

// By hand: serde's derive would borrow the `&'static str` from the rubric's text.
impl<'de> Deserialize<'de> for SumVariant {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SumVariant, D::Error> {
        let name = String::deserialize(deserializer)?;
        SumVariant::try_from(name).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<String> for SumVariant {
    type Error = String;

    fn try_from(name: String) -> Result<SumVariant, String> {
        let known = lab06::Variant::ALL.iter().find(|v| v.name() == name);
        known.map(|&v| SumVariant(v)).ok_or_else(|| {
            let names: Vec<&str> = lab06::Variant::ALL.iter().map(|v| v.name()).collect();
            format!("'{name}' is not a lab06 variant ({})", names.join(", "))
        })
    }
}

impl SumVariant {
    /// The name lab06 takes in `--variants`.
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// lab06's own variant.
    pub fn variant(self) -> lab06::Variant {
        self.0
    }

    /// Whether lab06 runs it on the GPU, with the kernel file.
    pub fn on_gpu(self) -> bool {
        matches!(self.0, lab06::Variant::Gpu(_))
    }

    /// The function of `src/cpu/variants.rs` a one-thread abstract CPU variant runs, which
    /// the grader's harness calls with its own operation (`checks::cpu_variant`); `None` for
    /// the others, run by lab06 itself.
    pub fn harnessed(self) -> Option<&'static str> {
        match self.name() {
            "cpu-generic" => Some("sum_generic"),
            "cpu-dyn" => Some("sum_dyn"),
            "cpu-box-fn" => Some("sum_boxed"),
            "cpu-fn-ptr" => Some("sum_fn_ptr"),
            _ => None,
        }
    }

    /// An abstract GPU variant's kernel in `kernels/reduce.cu`, and whether the lesson
    /// reaches `add` from it through an indirect call (a vtable, a pointer).
    pub fn kernel(self) -> Option<(&'static str, bool)> {
        match self.name() {
            "gpu-generic" => Some(("reduce_generic", false)),
            "gpu-virtual" => Some(("reduce_virtual", true)),
            "gpu-fn-ptr-loop" => Some(("reduce_fn_ptr_loop", true)),
            "gpu-fn-ptr-hoisted" => Some(("reduce_fn_ptr_hoisted", true)),
            _ => None,
        }
    }

    /// The variants' names joined with `between`.
    pub fn list(variants: &[SumVariant], between: &str) -> String {
        let names: Vec<&str> = variants.iter().map(|v| v.name()).collect();
        names.join(between)
    }
}

/// A Mandelbrot view: the flags `--cx`, `--cy`, `--scale` in the rubric, each at most once;
/// those left out are the lab's defaults. Read here for a one-line error naming the
/// rubric's line; the test `the_rubric_s_command_lines_parse_as_the_labs_own` parses them
/// with the labs' own parser too, and what a lab is run with is rendered by the labs' own
/// `MandelbrotArgs::to_args` (which writes each number as the rubric does: `1e-5`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(try_from = "Vec<String>")]
pub struct View {
    pub cx: Option<f64>,
    pub cy: Option<f64>,
    pub scale: Option<f64>,
}

impl TryFrom<Vec<String>> for View {
    type Error = String;

    fn try_from(flags: Vec<String>) -> Result<View, String> {
        let mut view = View::default();
        for pair in flags.chunks(2) {
            let [flag, text] = pair else {
                return Err(format!("the view's '{}' has no value", pair[0]));
            };
            let slot = match flag.as_str() {
                "--cx" => &mut view.cx,
                "--cy" => &mut view.cy,
                "--scale" => &mut view.scale,
                _ => return Err(format!("'{flag}' is not a view flag (--cx, --cy, --scale)")),
            };
            let value: f64 = text
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| format!("the view's {flag} '{text}' is not a number"))?;
            if slot.replace(value).is_some() {
                return Err(format!("the view gives {flag} twice"));
            }
        }
        if view.scale.is_some_and(|s| s <= 0.0) {
            return Err("the view's --scale is not above 0".to_string());
        }
        Ok(view)
    }
}

impl View {
    /// A `size` image of this view, typed as the Mandelbrot labs take it: the lab's defaults
    /// where the rubric gives none, no output file, no report.
    pub fn lab_args(&self, size: Size) -> MandelbrotArgs {
        let default = MandelbrotArgs::new(size.width, size.height);
        MandelbrotArgs {
            cx: self.cx.unwrap_or(default.cx),
            cy: self.cy.unwrap_or(default.cy),
            scale: self.scale.or(default.scale),
            ..default
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rubric_loads_and_every_name_starts_with_its_lab() {
        let rubric = Rubric::load().unwrap();
        assert!(!rubric.checks.is_empty());
        for check in &rubric.checks {
            assert!(check.name().starts_with(&format!("{}: ", check.lab.name)));
            assert!(check.points > 0.0, "{}", check.name());
        }
        let names: Vec<String> = rubric.checks.iter().map(Check::name).collect();
        assert!(
            names.contains(&"lab02: identical to the reference at 333x517 --cy 0.25".to_string())
        );
    }

    /// Today's check names: the report, Gradescope's results and tests match on them, so
    /// typing the arguments must leave every one as it was.
    #[test]
    fn every_check_name_of_the_rubric_is_unchanged() {
        let rubric = Rubric::load().unwrap();
        let names: Vec<String> = rubric.checks.iter().map(Check::name).collect();
        let at = "lab02: identical to the reference at";
        let near = "the reference's image, up to 100 pixels apart, at";
        let lab04 = "lab04: identical to the reference at";
        let canvas = "lab05: GPU canvas identical to the CPU reference with";
        let sum = "sum exactly, each through its abstraction";
        let want = [
            format!("{at} 333x517 --cy 0.25"),
            format!("{at} 1x1"),
            format!("{at} 1031x7 --cy -0.1 --scale 0.003"),
            format!("{at} 257x1999 --cx -0.74364 --cy 0.13182 --scale 1e-5"),
            "lab02: whole-run time against the solution's near 1024 1024 --cx -0.74364 \
             --cy 0.13182 --scale 2e-6, moved in each grade"
                .to_string(),
            format!("lab03: {near} 1024x1024 --cy 0.3"),
            format!("lab03: {near} 999x333 --cx -0.74364 --cy 0.13182 --scale 1e-6"),
            format!("{lab04} 1024x1024"),
            format!("{lab04} 3001x2001 --cx -0.74364 --cy 0.13182 --scale 1e-9"),
            format!("{lab04} 1024x1024 --cx -0.74364 --cy 0.13182 --scale 1e-6"),
            format!("{lab04} 4097x3 --cx -0.7436439 --cy 0.1318259 --scale 1e-12"),
            format!("{lab04} 777x1555 --cx -0.7436447 --cy 0.1318252 --scale 2e-9"),
            "lab04: kernel time against the solution's kernel with 8192 8192".to_string(),
            format!("{canvas} --samples 4000000 --seed 7"),
            format!(
                "{canvas} --samples 3000000 --seed 11 --width 301 --height 499 \
                 --no-symmetry --no-stratify"
            ),
            "lab05: kernel time against the solution's kernel with --backend gpu \
             --samples 200000000"
                .to_string(),
            format!("lab06: cpu-generic and cpu-generic-rayon {sum}"),
            format!("lab06: cpu-dyn and cpu-dyn-rayon {sum}"),
            format!("lab06: cpu-box-fn and cpu-box-fn-rayon {sum}"),
            format!("lab06: cpu-fn-ptr and cpu-fn-ptr-rayon {sum}"),
            format!("lab06: gpu-generic and gpu-virtual {sum}"),
            format!("lab06: gpu-fn-ptr-loop and gpu-fn-ptr-hoisted {sum}"),
        ];
        assert_eq!(names, want);
    }

    /// lab06's checks cover every abstract variant through its abstraction: each CPU
    /// function in the grader's harness once, each abstract kernel's PTX once, the virtual
    /// and pointer kernels through an indirect call.
    #[test]
    fn lab06s_checks_cover_every_abstraction_once() {
        let rubric = Rubric::load().unwrap();
        let variants: Vec<SumVariant> = rubric
            .checks
            .iter()
            .filter_map(|check| match &check.test {
                Test::Sums { variants, .. } => Some(variants.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        let functions: Vec<&str> = variants.iter().filter_map(|v| v.harnessed()).collect();
        assert_eq!(
            functions,
            ["sum_generic", "sum_dyn", "sum_boxed", "sum_fn_ptr"]
        );
        let kernels: Vec<(&str, bool)> = variants.iter().filter_map(|v| v.kernel()).collect();
        assert_eq!(
            kernels,
            [
                ("reduce_generic", false),
                ("reduce_virtual", true),
                ("reduce_fn_ptr_loop", true),
                ("reduce_fn_ptr_hoisted", true)
            ]
        );
        // Each -rayon variant beside its one-thread one, in the student's binary.
        assert_eq!(
            variants
                .iter()
                .filter(|v| v.name().ends_with("-rayon"))
                .count(),
            4
        );
    }

    /// The typed arguments give the lab back exactly what the rubric wrote: no flag lost,
    /// reordered or reformatted on the way in.
    #[test]
    fn typed_arguments_give_back_the_rubric_s_own() {
        let rubric = Rubric::load().unwrap();
        let text: toml::Table = RUBRIC.parse().unwrap();
        let written: Vec<Vec<String>> = text["check"]
            .as_array()
            .unwrap()
            .iter()
            .map(|check| match check.get("args") {
                Some(args) => args.clone().try_into().unwrap(),
                None => Vec::new(),
            })
            .collect();
        let typed: Vec<Vec<String>> = rubric
            .checks
            .iter()
            .map(|check| match &check.test {
                Test::Canvas { args, .. }
                | Test::KernelSpeed {
                    args: KernelWork::Buddhabrot(args),
                    ..
                } => args.args(),
                Test::KernelSpeed {
                    args: KernelWork::Mandelbrot(frame),
                    ..
                }
                | Test::CpuSpeed { args: frame } => words(&frame.lab_args().to_args()),
                Test::Sums { args, .. } => args.args(),
                Test::Image { .. } => Vec::new(),
            })
            .collect();
        assert_eq!(typed, written);
        let canvases = rubric.checks.iter().filter_map(|c| match &c.test {
            Test::Canvas { args, .. } => Some(*args),
            _ => None,
        });
        let default = Buddhabrot {
            samples: 4_000_000,
            seed: Some(7),
            width: None,
            height: None,
            symmetry: true,
            stratify: true,
        };
        let odd = Buddhabrot {
            samples: 3_000_000,
            seed: Some(11),
            width: Some(301),
            height: Some(499),
            symmetry: false,
            stratify: false,
        };
        assert_eq!(canvases.collect::<Vec<_>>(), [default, odd]);
    }

    /// Every lab command line the rubric writes, parsed by the lab's own parser, is what the
    /// grader reads it as: a flag a lab renamed (the rubric's `--cy` no longer the lab's),
    /// or a rubric flag the grader reads into another field, fails here. (lab06's are left
    /// to its own rewrite of its command line.)
    #[test]
    fn the_rubric_s_command_lines_parse_as_the_labs_own() {
        use clap::Parser;
        /// A Mandelbrot lab's command line, as lab01 to lab04 flatten it.
        #[derive(Parser)]
        #[command(allow_negative_numbers = true)]
        struct Mandelbrot {
            #[command(flatten)]
            args: MandelbrotArgs,
        }
        let mandelbrot = |words: Vec<String>| -> shared::view::View {
            let argv = std::iter::once("lab".to_string()).chain(words.iter().cloned());
            match Mandelbrot::try_parse_from(argv) {
                Ok(parsed) => parsed.args.view(),
                Err(e) => panic!("{words:?}: {e}"),
            }
        };
        let buddhabrot = |words: &[String]| -> String {
            let argv = std::iter::once("lab05".to_string()).chain(words.iter().cloned());
            match lab05::Args::try_parse_from(argv) {
                // LABS_EMULATE, read by `--emulate`, is no part of the rubric's line.
                Ok(parsed) => format!(
                    "{:?}",
                    lab05::Args {
                        device: Default::default(),
                        ..parsed
                    }
                ),
                Err(e) => panic!("{words:?}: {e}"),
            }
        };
        let text: toml::Table = RUBRIC.parse().unwrap();
        let rubric = Rubric::load().unwrap();
        let mut parsed = 0;
        for (written, check) in text["check"].as_array().unwrap().iter().zip(&rubric.checks) {
            let words = |key: &str| -> Vec<String> {
                written
                    .get(key)
                    .map_or(Vec::new(), |words| words.clone().try_into().unwrap())
            };
            match &check.test {
                Test::Image { size, view, .. } => {
                    let mut line = vec![size.width.to_string(), size.height.to_string()];
                    line.extend(words("view"));
                    assert_eq!(
                        mandelbrot(line),
                        view.lab_args(*size).view(),
                        "{}",
                        check.name()
                    );
                }
                Test::CpuSpeed { args: frame }
                | Test::KernelSpeed {
                    args: KernelWork::Mandelbrot(frame),
                    ..
                } => assert_eq!(mandelbrot(words("args")), frame.view(), "{}", check.name()),
                Test::Canvas { args, .. }
                | Test::KernelSpeed {
                    args: KernelWork::Buddhabrot(args),
                    ..
                } => assert_eq!(
                    buddhabrot(&words("args")),
                    format!("{:?}", args.lab_args(Backend::Cpu)),
                    "{}",
                    check.name()
                ),
                Test::Sums { args, variants, .. } => {
                    let mut line = words("args");
                    let names: Vec<&str> = variants.iter().map(|v| v.name()).collect();
                    line.extend(["--variants".to_string(), names.join(",")]);
                    let argv = std::iter::once("lab06".to_string()).chain(line.iter().cloned());
                    let parsed = match lab06::Args::try_parse_from(argv) {
                        Ok(parsed) => parsed,
                        Err(e) => panic!("{line:?}: {e}"),
                    };
                    let graded = args.lab_args();
                    assert_eq!(
                        (parsed.n, parsed.reps, &parsed.variants),
                        (
                            graded.n,
                            graded.reps,
                            &variants.iter().map(|v| v.variant()).collect()
                        ),
                        "{}",
                        check.name()
                    );
                }
            }
            parsed += 1;
        }
        assert!(
            parsed >= 21,
            "every Mandelbrot, Buddhabrot and sum check: {parsed}"
        );
    }

    /// A frame's view is the lab's default where the rubric gives none.
    #[test]
    fn a_frame_s_view_has_the_lab_s_defaults() {
        let args = ["8192", "4096", "--cy", "0.5"].map(String::from).to_vec();
        let view = Frame::try_from(args).unwrap().view();
        assert_eq!(
            (view.width, view.height, view.cx, view.cy),
            (8192, 4096, -0.6, 0.5)
        );
        assert_eq!(view.scale, 4.0 / 8192.0);
    }

    /// A canvas or kernel speed check whose lab05 flags are wrong, or whose arguments are not
    /// of its lab's work, fails the load with one line naming the check, never in a grade.
    #[test]
    fn wrong_lab05_flags_fail_the_load_with_one_line() {
        let check = |kind: &str, lab: &str, args: &str| {
            one_image_check(&format!(
                "lab = \"{lab}\"\nkernel = \"lab05-buddhabrot/kernels/buddhabrot.cu\"\n\
                 args = [{args}]\n"
            ))
            .replace("kind = \"image\"", &format!("kind = \"{kind}\""))
        };
        let good = "\"--samples\", \"8\", \"--height\", \"3\", \"--no-stratify\"";
        let rubric = Rubric::parse(&check("canvas", "lab05", good)).expect("a good rubric");
        assert_eq!(
            rubric.checks[0].name(),
            "lab05: GPU canvas identical to the CPU reference with --samples 8 --height 3 \
             --no-stratify"
        );
        let rubric = Rubric::parse(&check("kernel_speed", "lab05", good)).expect("a good rubric");
        assert_eq!(
            rubric.checks[0].name(),
            "lab05: kernel time against the solution's kernel with --backend gpu --samples 8 \
             --height 3 --no-stratify"
        );
        for kind in ["canvas", "kernel_speed"] {
            for (args, said) in [
                (
                    "\"--samples\", \"8\", \"--backend\", \"gpu\"",
                    "'--backend' is not a lab05 flag (--samples, --seed",
                ),
                (
                    "\"--samples\", \"8\", \"--zoom\"",
                    "'--zoom' is not a lab05 flag",
                ),
                (
                    "\"--samples\", \"8\", \"--seed\"",
                    "lab05's --seed has no value",
                ),
                (
                    "\"--samples\", \"many\"",
                    "lab05's --samples 'many' is not a whole number",
                ),
                (
                    "\"--samples\", \"8\", \"--width\", \"-3\"",
                    "lab05's --width '-3' is not a whole number",
                ),
                (
                    "\"--samples\", \"8\", \"--seed\", \"1\", \"--seed\", \"2\"",
                    "lab05's flags give --seed twice",
                ),
                (
                    "\"--samples\", \"8\", \"--no-symmetry\", \"--no-symmetry\"",
                    "lab05's flags give --no-symmetry twice",
                ),
                ("\"--seed\", \"1\"", "lab05's flags give no --samples"),
                ("\"--samples\", \"0\"", "lab05's --samples is 0"),
                (
                    "\"--samples\", \"8\", \"--height\", \"0\"",
                    "lab05's --height is 0",
                ),
            ] {
                let error = format!(
                    "{:#}",
                    Rubric::parse(&check(kind, "lab05", args)).unwrap_err()
                );
                let want = format!("xtask/instructor/rubric.toml:9: {said}");
                assert!(error.starts_with(&want), "{kind}: {error}");
                assert!(!error.contains('\n'), "{error}");
            }
        }
        // A lab's arguments are read by their shape: a shape its lab does not take is refused.
        for (kind, lab, args, said) in [
            (
                "kernel_speed",
                "lab04",
                good,
                "its arguments are for Buddhabrot work, its lab does Mandelbrot",
            ),
            (
                "kernel_speed",
                "lab05",
                "\"64\", \"64\"",
                "its arguments are for Mandelbrot work, its lab does Buddhabrot",
            ),
            (
                "canvas",
                "lab04",
                good,
                "its arguments are for Buddhabrot work, its lab does Mandelbrot",
            ),
        ] {
            let error = format!("{:#}", Rubric::parse(&check(kind, lab, args)).unwrap_err());
            assert!(
                error.starts_with("xtask/instructor/rubric.toml: "),
                "{error}"
            );
            assert!(
                error.contains(&format!("{lab}: ")) && error.contains(said),
                "{error}"
            );
        }
        let error = format!(
            "{:#}",
            Rubric::parse(&check("kernel_speed", "lab04", "\"64\"")).unwrap_err()
        );
        assert!(
            error.starts_with(
                "xtask/instructor/rubric.toml:9: '64' does not start with WIDTH HEIGHT"
            ),
            "{error}"
        );
    }

    /// A view symmetric about the real axis hides rows written in the wrong order: every lab
    /// with image checks has a visible one off the axis.
    #[test]
    fn every_lab_shows_a_view_off_the_real_axis() {
        let rubric = Rubric::load().unwrap();
        for check in rubric
            .checks
            .iter()
            .filter(|c| matches!(c.test, Test::Image { .. }))
        {
            let lab = check.lab.name;
            let off_axis = rubric.checks.iter().any(|c| {
                c.lab.name == lab
                    && !c.hidden
                    && matches!(&c.test, Test::Image { view, .. }
                        if view.cy.is_some_and(|y| y != 0.0))
            });
            assert!(off_axis, "{lab} has no visible view off the real axis");
        }
    }

    /// A GPU lab's image from the student's binary alone could be made on the CPU: every GPU
    /// lab's image check names the kernel the solution's host code runs, and no CPU lab's.
    #[test]
    fn an_image_check_names_its_kernel_exactly_for_a_gpu_lab() {
        let rubric = Rubric::load().unwrap();
        let gpu_images = rubric
            .checks
            .iter()
            .filter(|c| matches!(c.test, Test::Image { .. }) && c.needs_gpu());
        assert!(gpu_images.clone().count() >= 7);
        assert!(gpu_images.clone().all(|c| c.kernel().is_some()));
        let check = |lab: &str, kernel: &str| {
            format!(
                "time_limit_s = 1\nbuild_time_limit_s = 1\nspeed_runs = 1\n\
                 memory_limit_mib = 1\ndisk_limit_mib = 1\nfiles_limit = 1\n\
                 gpu_time_factor = 1\ngpu_start_up_s = 1\n[[check]]\n\
                 lab = \"{lab}\"\nkind = \"image\"\nsize = \"8x8\"\npoints = 1\n{kernel}"
            )
        };
        let kernel = "kernel = \"lab04-cuda-optimized/kernels/mandelbrot.cu\"\n";
        assert!(Rubric::parse(&check("lab04", kernel)).is_ok());
        for (lab, kernel) in [("lab04", ""), ("lab02", kernel)] {
            let error = format!("{:#}", Rubric::parse(&check(lab, kernel)).unwrap_err());
            assert!(error.contains("names its kernel file"), "{lab}: {error}");
        }
    }

    #[test]
    fn cpu_checks_are_told_from_gpu_checks() {
        let rubric = Rubric::load().unwrap();
        let cpu: Vec<String> = rubric
            .checks
            .iter()
            .filter(|c| !c.needs_gpu())
            .map(|c| c.lab.name.to_string())
            .collect();
        assert!(
            cpu.iter().all(|lab| lab == "lab02" || lab == "lab06"),
            "{cpu:?}"
        );
        // lab02's speed is a CPU lab's: graded on a machine without a GPU.
        assert!(rubric
            .checks
            .iter()
            .any(|c| matches!(c.test, Test::CpuSpeed { .. }) && !c.needs_gpu()));
        assert!(cpu.contains(&"lab02".to_string()) && cpu.contains(&"lab06".to_string()));
    }

    /// A rubric whose one check is lab02's image check with these lines.
    fn one_image_check(lines: &str) -> String {
        format!(
            "time_limit_s = 1\nbuild_time_limit_s = 1\nspeed_runs = 1\n\
             memory_limit_mib = 1\ndisk_limit_mib = 1\nfiles_limit = 1\n\
             gpu_time_factor = 1\ngpu_start_up_s = 1\n[[check]]\n\
             kind = \"image\"\npoints = 1\n{lines}"
        )
    }

    /// `on_cpu_device` changes the work of a check the CPU device grades, and nothing else:
    /// another field, a check that needs no GPU, or a wrong size fails the load with one line.
    #[test]
    fn on_cpu_device_gives_only_smaller_work_to_a_check_it_grades() {
        let kernel = "kernel = \"lab04-cuda-optimized/kernels/mandelbrot.cu\"\n";
        let check = |smaller: &str| {
            one_image_check(&format!(
                "lab = \"lab04\"\n{kernel}size = \"9x7\"\non_cpu_device = {{ {smaller} }}\n"
            ))
        };
        let rubric = Rubric::parse(&check("size = \"3x5\"")).expect("a good rubric");
        let check_of =
            |rubric: &Rubric, cpu_device| rubric.checks[0].test_on(cpu_device).describe();
        assert_eq!(
            check_of(&rubric, false),
            "identical to the reference at 9x7"
        );
        assert_eq!(check_of(&rubric, true), "identical to the reference at 3x5");
        // A view the check leaves at its default may be given there; `args` is no image's.
        let viewed = Rubric::parse(&check("size = \"3x5\", view = [\"--cy\", \"0.5\"]"))
            .expect("a view where the check has none");
        assert_eq!(
            check_of(&viewed, true),
            "identical to the reference at 3x5 --cy 0.5"
        );
        let error = format!("{:#}", Rubric::parse(&check("args = []")).unwrap_err());
        assert!(
            error.contains("on_cpu_device") && !error.contains('\n'),
            "{error}"
        );
        assert_eq!(
            rubric.checks[0].name(),
            "lab04: identical to the reference at 9x7"
        );
        for (smaller, said) in [
            ("points = 9", "not `points`"),
            ("kernel = \"other.cu\"", "not `kernel`"),
            ("max_differing = 9", "not `max_differing`"),
            ("size = \"3by5\"", "'3by5' is not a size"),
        ] {
            let error = format!("{:#}", Rubric::parse(&check(smaller)).unwrap_err());
            assert!(!error.contains('\n'), "{error}");
            assert!(
                error.contains("on_cpu_device") || error.contains(said),
                "{error}"
            );
            assert!(error.contains(said), "{error}");
        }
        let lab02 = one_image_check(
            "lab = \"lab02\"\nsize = \"9x7\"\non_cpu_device = { size = \"3x5\" }\n",
        );
        let error = format!("{:#}", Rubric::parse(&lab02).unwrap_err());
        assert!(
            error.contains("for a check the CPU device grades"),
            "{error}"
        );
    }

    /// The rubric's smaller work is smaller, of the same kind and kernel: fewer pixels,
    /// samples or elements than the check's own (a swapped pair would make the CPU device's
    /// checks the slow ones), odd sizes kept odd.
    #[test]
    fn the_cpu_device_s_work_is_smaller_and_of_the_same_check() {
        let rubric = Rubric::load().expect("the rubric");
        let mut smaller = 0;
        for check in &rubric.checks {
            let (own, there) = (&check.test, check.test_on(true));
            if std::ptr::eq(own, there) {
                continue;
            }
            smaller += 1;
            let name = check.name();
            match (own, there) {
                (
                    Test::Image {
                        size: a,
                        kernel: k,
                        max_differing: m,
                        ..
                    },
                    Test::Image {
                        size: b,
                        kernel: l,
                        max_differing: n,
                        ..
                    },
                ) => {
                    assert!(
                        u64::from(b.width) * u64::from(b.height) * 4
                            <= u64::from(a.width) * u64::from(a.height),
                        "{name}"
                    );
                    assert_eq!((k, m), (l, n), "{name}");
                    assert_eq!(
                        (a.width % 2, a.height % 2),
                        (b.width % 2, b.height % 2),
                        "{name}"
                    );
                }
                (Test::Canvas { args: a, kernel: k }, Test::Canvas { args: b, kernel: l }) => {
                    assert!(b.args() != a.args() && k == l, "{name}");
                }
                (
                    Test::Sums {
                        args: a,
                        kernel: k,
                        variants: v,
                    },
                    Test::Sums {
                        args: b,
                        kernel: l,
                        variants: w,
                    },
                ) => {
                    assert!(b.n * 4 <= a.n && k == l && v == w, "{name}");
                }
                _ => panic!("{name}: another kind of check on the CPU device"),
            }
        }
        assert_eq!(
            smaller, 10,
            "the GPU checks the CPU device grades, but lab04's 4097x3"
        );
    }

    /// An unknown lab, a malformed size or a bad view fails the load with one line naming
    /// the rubric's line, never later in a grade.
    #[test]
    fn a_wrong_lab_size_or_view_fails_the_load_with_one_line() {
        let good = "lab = \"lab02\"\nsize = \"8x8\"\nview = [\"--cy\", \"1e-5\"]\n";
        let rubric = Rubric::parse(&one_image_check(good)).expect("a good rubric");
        assert_eq!(
            rubric.checks[0].name(),
            "lab02: identical to the reference at 8x8 --cy 1e-5"
        );
        for (lines, said) in [
            (
                "lab = \"lab99\"\nsize = \"8x8\"\n",
                ":12: no lab called 'lab99'",
            ),
            (
                "lab = \"lab02\"\nsize = \"8by8\"\n",
                ":9: '8by8' is not a size WIDTHxHEIGHT",
            ),
            (
                "lab = \"lab02\"\nsize = \"8x-1\"\n",
                ":9: '8x-1' is not a size",
            ),
            (
                "lab = \"lab02\"\nsize = \"8x8\"\nview = [\"--zoom\", \"2\"]\n",
                ":9: '--zoom' is not a view flag",
            ),
            (
                "lab = \"lab02\"\nsize = \"8x8\"\nview = [\"--cy\", \"up\"]\n",
                ":9: the view's --cy 'up' is not a number",
            ),
            (
                "lab = \"lab02\"\nsize = \"8x8\"\nview = [\"--cy\"]\n",
                ":9: the view's '--cy' has no value",
            ),
        ] {
            let error = format!("{:#}", Rubric::parse(&one_image_check(lines)).unwrap_err());
            assert!(!error.contains('\n'), "{error}");
            assert!(
                error.starts_with("xtask/instructor/rubric.toml:"),
                "{error}"
            );
            assert!(error.contains(said), "{error}");
        }
        for (args, variant, said) in [
            (
                "\"--n\", \"8\", \"--reps\", \"1\"",
                "cpu-fast",
                "'cpu-fast' is not a lab06 variant",
            ),
            (
                "\"--n\", \"many\", \"--reps\", \"1\"",
                "cpu-dyn",
                "lab06's '--n many' is not",
            ),
            (
                "\"--n\", \"8\"",
                "cpu-dyn",
                "lab06's arguments are --n N --reps R",
            ),
        ] {
            let lines = format!("lab = \"lab06\"\nargs = [{args}]\nvariants = [\"{variant}\"]\n");
            let sums = one_image_check(&lines).replace("kind = \"image\"", "kind = \"sums\"");
            let error = format!("{:#}", Rubric::parse(&sums).unwrap_err());
            let want = format!("xtask/instructor/rubric.toml:9: {said}");
            assert!(error.starts_with(&want), "{error}");
        }
    }
}
