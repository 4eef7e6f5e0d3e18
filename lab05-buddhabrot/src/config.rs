//! The command line, its limits, and the one place where it becomes [`Params`].

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use shared::number;
use shared::{Error, Result};

use crate::devices::{parse_devices, Devices};
use crate::orbit::{Params, SAMPLES_PER_PASS};

/// The largest canvas side. A 16384 x 16384 canvas is 1 GiB of counters, and the CPU
/// backend keeps one canvas per thread.
pub const MAX_SIDE: u32 = 16384;

/// The most samples one run may take: 2^44, about 1.8e13. That is 6 minutes on an H100 and
/// weeks on a laptop; a larger number is a typo. It also keeps the u32 counters far from
/// wrapping at the default view, where the brightest pixel collects about 3e-6 of all counts
/// (2.5 counts per sample): about 1.4e8 counts at this many samples, against 4.3e9. (A
/// counter that did wrap would wrap the same way on both backends.)
pub const MAX_SAMPLES: u64 = 1 << 44;

/// The longest orbit followed. Buddhabrot images use tens to tens of thousands of steps.
pub const MAX_ITER: u32 = 1_000_000;

/// The default sample count: two full passes over the 2^20 stratification cells. That takes
/// a few seconds on two CPU cores (3.7 s on the 2-core development machine when idle, 0.4 s
/// on 16 cores, 1.4 ms on an H100) and is enough for a recognisable, if grainy, image.
pub const DEFAULT_SAMPLES: u64 = 2 * SAMPLES_PER_PASS;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// Every CPU core, with rayon
    Cpu,
    /// The GPU, with CUDA
    Gpu,
}

/// How the canvases of several GPUs are summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Reduce {
    /// NCCL where it is installed, else the host
    #[default]
    Auto,
    /// NCCL's reduce, GPU to GPU (fails if NCCL is missing)
    Nccl,
    /// Each canvas copied back and added on the CPU
    Host,
}

/// Where `--backend gpu` runs: `--devices` and `--reduce`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gpus {
    pub devices: Devices,
    pub reduce: Reduce,
}

#[derive(Parser, Debug)]
#[command(
    name = "lab05",
    version,
    about = "Buddhabrot on the CPU or the GPU, with identical canvases for the same seed",
    allow_negative_numbers = true
)]
pub struct Args {
    /// Where to compute
    #[arg(long, value_enum, default_value_t = Backend::Cpu)]
    pub backend: Backend,

    /// Canvas width in pixels (the imaginary axis runs across)
    #[arg(long, default_value_t = 1440, allow_hyphen_values = true, value_parser = parse_width)]
    pub width: u32,

    /// Canvas height in pixels (the real axis runs down)
    #[arg(long, default_value_t = 2560, allow_hyphen_values = true, value_parser = parse_height)]
    pub height: u32,

    /// Number of sample points c
    #[arg(long, default_value_t = DEFAULT_SAMPLES, allow_hyphen_values = true, value_parser = parse_samples)]
    pub samples: u64,

    /// The GPUs for --backend gpu: `all`, a number N (the first N), or GPU numbers with
    /// commas (`0,2`); each takes a share of the samples [default: 1]
    #[arg(long, value_name = "all|N|LIST", allow_hyphen_values = true, value_parser = parse_devices)]
    pub devices: Option<Devices>,

    /// How several GPUs' canvases are summed [default: auto]
    #[arg(long, value_enum)]
    pub reduce: Option<Reduce>,

    /// Steps after which an orbit that has not escaped is dropped
    #[arg(long, default_value_t = 20, allow_hyphen_values = true, value_parser = parse_max_iter)]
    pub max_iter: u32,

    /// Seed of the random generator (same seed, same canvas, on either backend)
    #[arg(long, default_value_t = 1, allow_hyphen_values = true, value_parser = parse_seed)]
    pub seed: u32,

    /// Output image (PNG)
    #[arg(
        short,
        long,
        value_name = "FILE.png",
        default_value = "lab05-buddhabrot.png"
    )]
    pub output: PathBuf,

    /// Also write the raw canvas: "LAB05RAW", width and height as u32, then width x height
    /// u32 counts row by row, all little-endian
    #[arg(long, value_name = "FILE")]
    pub raw: Option<PathBuf>,

    /// Print the timings and statistics as one JSON object on stdout
    #[arg(long)]
    pub json: bool,

    /// Iterate points in the main cardioid and the known bulbs too (slower, same canvas)
    #[arg(long)]
    pub no_bulb_check: bool,

    /// Sample the whole rectangle at once instead of cell by cell
    #[arg(long)]
    pub no_stratify: bool,

    /// Sample both halves of the plane instead of mirroring the upper half
    #[arg(long)]
    pub no_symmetry: bool,

    /// Real part at the top edge of the canvas
    #[arg(long, default_value_t = -3.2, allow_hyphen_values = true, value_parser = number::finite_f32)]
    pub re_min: f32,
    /// Real part at the bottom edge of the canvas
    #[arg(long, default_value_t = 2.0, allow_hyphen_values = true, value_parser = number::finite_f32)]
    pub re_max: f32,
    /// Imaginary part at the left edge of the canvas
    #[arg(long, default_value_t = -1.5, allow_hyphen_values = true, value_parser = number::finite_f32)]
    pub im_min: f32,
    /// Imaginary part at the right edge of the canvas
    #[arg(long, default_value_t = 1.5, allow_hyphen_values = true, value_parser = number::finite_f32)]
    pub im_max: f32,

    /// Smallest real part of a sample point
    #[arg(long, default_value_t = -2.1, allow_hyphen_values = true, value_parser = number::finite_f32)]
    pub sample_re_min: f32,
    /// Largest real part of a sample point
    #[arg(long, default_value_t = 1.1, allow_hyphen_values = true, value_parser = number::finite_f32)]
    pub sample_re_max: f32,
    /// Smallest imaginary part of a sample point
    #[arg(long, default_value_t = -1.8, allow_hyphen_values = true, value_parser = number::finite_f32)]
    pub sample_im_min: f32,
    /// Largest imaginary part of a sample point
    #[arg(long, default_value_t = 1.8, allow_hyphen_values = true, value_parser = number::finite_f32)]
    pub sample_im_max: f32,

    #[command(flatten)]
    pub kernel: shared::nvrtc::KernelArg,

    #[command(flatten)]
    pub device: shared::gpu::DeviceArg,
}

impl Args {
    /// lab05 run with no arguments: every flag at its default. (LABS_EMULATE, which
    /// `--emulate` also reads, is left out: this is what the command line alone gives.)
    pub fn defaults() -> Args {
        let args = Args::try_parse_from(["lab05"]).expect("lab05's defaults parse");
        Args {
            device: Default::default(),
            ..args
        }
    }

    /// The command line that parses back to these arguments, for a program that runs lab05
    /// (the grader, a test): each flag whose value is not its default, in the order above.
    /// Written here, beside the flags, so that each flag is spelt once in the workspace: one
    /// renamed above and not here fails the test `to_args_parse_back`.
    pub fn to_args(&self) -> Vec<OsString> {
        let default = Args::defaults();
        // A value as its flag takes it: a value enum by its name, a number as the shortest
        // text that parses back to it (`-3.2`, not 17 digits).
        fn name(value: impl ValueEnum) -> String {
            value
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default()
        }
        let values = [
            ("--backend", name(self.backend), name(default.backend)),
            ("--width", self.width.to_string(), default.width.to_string()),
            (
                "--height",
                self.height.to_string(),
                default.height.to_string(),
            ),
            (
                "--samples",
                self.samples.to_string(),
                default.samples.to_string(),
            ),
            (
                "--max-iter",
                self.max_iter.to_string(),
                default.max_iter.to_string(),
            ),
            ("--seed", self.seed.to_string(), default.seed.to_string()),
        ];
        let bounds = [
            ("--re-min", self.re_min, default.re_min),
            ("--re-max", self.re_max, default.re_max),
            ("--im-min", self.im_min, default.im_min),
            ("--im-max", self.im_max, default.im_max),
            ("--sample-re-min", self.sample_re_min, default.sample_re_min),
            ("--sample-re-max", self.sample_re_max, default.sample_re_max),
            ("--sample-im-min", self.sample_im_min, default.sample_im_min),
            ("--sample-im-max", self.sample_im_max, default.sample_im_max),
        ];
        let bounds = bounds
            .map(|(flag, value, default)| (flag, format!("{value:?}"), format!("{default:?}")));
        let mut args: Vec<OsString> = Vec::new();
        for (flag, value, default) in values.into_iter().chain(bounds) {
            if value != default {
                args.extend([flag.into(), value.into()]);
            }
        }
        if let Some(devices) = &self.devices {
            let text = match devices {
                Devices::All => "all".to_string(),
                Devices::First(n) => n.to_string(),
                Devices::List(list) => {
                    let numbers: Vec<String> = list.iter().map(usize::to_string).collect();
                    numbers.join(",")
                }
            };
            args.extend(["--devices".into(), text.into()]);
        }
        if let Some(reduce) = self.reduce {
            args.extend(["--reduce".into(), name(reduce).into()]);
        }
        if self.output != default.output {
            args.extend(["-o".into(), self.output.clone().into_os_string()]);
        }
        if let Some(raw) = &self.raw {
            args.extend(["--raw".into(), raw.clone().into_os_string()]);
        }
        let switches = [
            ("--json", self.json),
            ("--no-bulb-check", self.no_bulb_check),
            ("--no-stratify", self.no_stratify),
            ("--no-symmetry", self.no_symmetry),
        ];
        args.extend(switches.into_iter().filter(|s| s.1).map(|s| s.0.into()));
        args.extend(self.kernel.to_args());
        args.extend(self.device.to_args());
        args
    }

    /// Check what the parser alone cannot, and work out the numbers both backends share.
    pub fn params(&self) -> Result<Params> {
        check_range("--re-min", self.re_min, "--re-max", self.re_max)?;
        check_range("--im-min", self.im_min, "--im-max", self.im_max)?;
        check_range(
            "--sample-re-min",
            self.sample_re_min,
            "--sample-re-max",
            self.sample_re_max,
        )?;
        check_range(
            "--sample-im-min",
            self.sample_im_min,
            "--sample-im-max",
            self.sample_im_max,
        )?;
        let symmetry = !self.no_symmetry;
        // The mirror image of column `col` is column `width - 1 - col` only when the canvas
        // is centred on the real axis; and sampling the upper half only stands for the whole
        // rectangle only when the rectangle is centred too.
        if symmetry && (self.im_min != -self.im_max || self.sample_im_min != -self.sample_im_max) {
            return Err(Error::Usage(
                "symmetry needs imaginary ranges centred on 0 (--im-min = -(--im-max) and \
                 --sample-im-min = -(--sample-im-max)); pass --no-symmetry for other ranges"
                    .to_string(),
            ));
        }
        // With symmetry, sample only Im(c) >= 0: half the area, each orbit counted twice.
        let sample_im_min = if symmetry { 0.0 } else { self.sample_im_min };
        Ok(Params {
            width: self.width,
            height: self.height,
            max_iter: self.max_iter,
            seed: self.seed,
            bulb_check: u32::from(!self.no_bulb_check),
            stratify: u32::from(!self.no_stratify),
            symmetry: u32::from(symmetry),
            re_min: self.re_min,
            im_min: self.im_min,
            // Computed here once, in f32, and passed to the kernel: the GPU never recomputes
            // them, so a division rounded differently there cannot move a pixel.
            row_scale: self.height as f32 / (self.re_max - self.re_min),
            col_scale: self.width as f32 / (self.im_max - self.im_min),
            sample_re_min: self.sample_re_min,
            sample_re_span: self.sample_re_max - self.sample_re_min,
            sample_im_min,
            sample_im_span: self.sample_im_max - sample_im_min,
        })
    }

    /// The GPUs to run on: refused with the CPU backend, which has no use for them, nor
    /// for `--profile` (it launches no kernel to count: the run would write its canvas and
    /// then fail for want of a launch).
    pub fn gpus(&self) -> Result<Gpus> {
        if self.backend == Backend::Cpu && (self.devices.is_some() || self.reduce.is_some()) {
            return Err(Error::Usage(
                "--devices and --reduce choose GPUs: add --backend gpu (the CPU backend \
                 always uses every core)"
                    .to_string(),
            ));
        }
        if self.backend == Backend::Cpu && self.device.profile {
            return Err(Error::Usage(
                "--profile counts the GPU kernel's launches: add --backend gpu (the CPU \
                 backend launches none)"
                    .to_string(),
            ));
        }
        Ok(Gpus {
            devices: self.devices.clone().unwrap_or_default(),
            reduce: self.reduce.unwrap_or_default(),
        })
    }
}

/// `min` must be below `max` once both are f32, and the span between them an f32 too.
fn check_range(min_name: &str, min: f32, max_name: &str, max: f32) -> Result<()> {
    let (min, max) = (Short(min), Short(max));
    let problem = if min.0 == max.0 {
        format!("{min_name} and {max_name} are the same number in single precision (f32): {min}")
    } else if min.0 > max.0 {
        format!("{min_name} ({min}) must be less than {max_name} ({max})")
    } else if !(max.0 - min.0).is_finite() {
        format!(
            "the range from {min_name} ({min}) to {max_name} ({max}) is wider than single \
             precision (f32) can hold (about 3.4e38)"
        )
    } else {
        return Ok(());
    };
    Err(Error::Usage(problem))
}

/// An f32 as a person writes it: -3.2, or -3.4e38 rather than 39 digits.
struct Short(f32);

impl std::fmt::Display for Short {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 != 0.0 && !(1e-4..1e7).contains(&self.0.abs()) {
            write!(f, "{:e}", self.0)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// A whole number in 1..=max (4e9 is accepted too: sample counts are large).
fn parse_whole(what: &str, s: &str, max: u64) -> std::result::Result<u64, String> {
    number::whole(what, s, 1, max)
}

fn parse_seed(s: &str) -> std::result::Result<u32, String> {
    number::whole("the seed", s, 0, u32::MAX.into()).map(|n| n as u32)
}

fn parse_width(s: &str) -> std::result::Result<u32, String> {
    parse_whole("the width", s, MAX_SIDE.into()).map(|n| n as u32)
}

fn parse_height(s: &str) -> std::result::Result<u32, String> {
    parse_whole("the height", s, MAX_SIDE.into()).map(|n| n as u32)
}

fn parse_max_iter(s: &str) -> std::result::Result<u32, String> {
    parse_whole("max-iter", s, MAX_ITER.into()).map(|n| n as u32)
}

fn parse_samples(s: &str) -> std::result::Result<u64, String> {
    parse_whole("the sample count", s, MAX_SAMPLES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &Args) -> Args {
        let argv = std::iter::once(OsString::from("lab05")).chain(args.to_args());
        match Args::try_parse_from(argv) {
            Ok(back) => back,
            Err(e) => panic!("{:?} does not parse: {e}", args.to_args()),
        }
    }

    /// Every field changed from its default comes back as it went, and none is written
    /// where it is the default: a flag renamed in the attributes and not in `to_args`, or a
    /// field `to_args` forgets, fails here.
    #[test]
    fn to_args_parse_back() {
        let given = Args {
            backend: Backend::Gpu,
            width: 301,
            height: 499,
            samples: 3_000_000,
            devices: Some(Devices::List(vec![2, 0])),
            reduce: Some(Reduce::Host),
            max_iter: 50,
            seed: 11,
            output: PathBuf::from("out/canvas.png"),
            raw: Some(PathBuf::from("out/canvas.raw")),
            json: true,
            no_bulb_check: true,
            no_stratify: true,
            no_symmetry: true,
            re_min: -2.5,
            re_max: 1.5,
            im_min: -1.25,
            im_max: 1.0,
            sample_re_min: -2.0,
            sample_re_max: 1.0,
            sample_im_min: -1.5,
            sample_im_max: 1.25,
            kernel: shared::nvrtc::KernelArg {
                path: Some(PathBuf::from("kernel.cu")),
                options: vec!["-lineinfo".to_string()],
            },
            device: shared::gpu::DeviceArg {
                emulate: true,
                profile: true,
                profile_png: Some(PathBuf::from("threads.png")),
            },
        };
        assert_eq!(format!("{:?}", parsed(&given)), format!("{given:?}"));
        for devices in [Devices::All, Devices::First(3)] {
            let given = Args {
                devices: Some(devices),
                ..Args::defaults()
            };
            assert_eq!(parsed(&given).devices, given.devices);
        }
        assert!(Args::defaults().to_args().is_empty());
        let gpu = Args {
            backend: Backend::Gpu,
            samples: 8,
            ..Args::defaults()
        };
        assert_eq!(gpu.to_args(), ["--backend", "gpu", "--samples", "8"]);
    }
}
