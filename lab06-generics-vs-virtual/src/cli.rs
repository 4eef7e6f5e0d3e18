//! The command line: how many floats, how many repetitions, which variants.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;

use crate::cpu::{Cores, CpuRun, CpuSum};
use crate::gpu::GpuSum;

/// 2 Gi floats (8 GiB) at most: past that the request is a typo, not a benchmark.
const MAX_N: usize = 2 << 30;

#[derive(Parser)]
#[command(
    name = "lab06",
    version,
    about = "One sum of N floats written plain, generic, virtual and through function pointers, \
             on the CPU and the GPU: what each abstraction costs",
    allow_negative_numbers = true
)]
pub struct Args {
    /// How many floats to sum (a number, or with a Ki, Mi or Gi suffix). The default, 128 MiB
    /// of floats, is larger than most last-level caches (and the CPU runs flush the caches
    /// before each run)
    #[arg(long, default_value = "32Mi", allow_hyphen_values = true, value_parser = parse_n)]
    pub n: usize,

    /// Timed runs per variant, the median counts (on the GPU: per launch shape, and each
    /// run a batch of 10 launches); at most 1000
    #[arg(long, default_value_t = 10, allow_hyphen_values = true, value_parser = parse_reps)]
    pub reps: u16,

    /// Only these variants, comma-separated (peaks always run): cpu-plain, cpu-generic,
    /// cpu-dyn, cpu-box-fn, cpu-fn-ptr, the same with -rayon, gpu-plain, gpu-generic,
    /// gpu-virtual, gpu-fn-ptr-loop, gpu-fn-ptr-hoisted [default: all]
    #[arg(long, value_delimiter = ',', value_parser = parse_variant, value_name = "LIST",
          conflicts_with_all = ["cpu_only", "gpu_only"])]
    pub variants: Vec<Variant>,

    /// Only the CPU variants
    #[arg(long, conflicts_with = "gpu_only")]
    pub cpu_only: bool,

    /// Only the GPU variants (fails if there is no usable GPU)
    #[arg(long)]
    pub gpu_only: bool,

    /// Also write the PTX that NVRTC makes of kernels/reduce.cu to FILE (needs the GPU, for
    /// its architecture)
    #[arg(long, value_name = "FILE")]
    pub save_ptx: Option<PathBuf>,

    /// Print the report as one JSON object on stdout
    #[arg(long)]
    pub json: bool,

    /// Time only this block size (threads per block, a multiple of 32 up to 1024) instead of
    /// the sweep's 128, 256, 512 and 1024
    #[arg(long, value_name = "N", value_parser = parse_threads_per_block)]
    pub threads_per_block: Option<u32>,

    /// Time only this many blocks per multiprocessor (1 to 32) instead of the sweep's 1, 2,
    /// 4 and 8
    #[arg(long, value_name = "M", value_parser = parse_blocks_per_sm)]
    pub blocks_per_sm: Option<u32>,

    #[command(flatten)]
    pub kernel: shared::nvrtc::KernelArg,

    #[command(flatten)]
    pub device: shared::gpu::DeviceArg,
}

/// One way of writing the sum, on one kind of processor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Cpu(CpuSum, Cores),
    Gpu(GpuSum),
}

impl Variant {
    /// Every variant, in the order the tables list them.
    pub const ALL: [Variant; 15] = [
        Variant::Cpu(CpuSum::Plain, Cores::One),
        Variant::Cpu(CpuSum::Generic, Cores::One),
        Variant::Cpu(CpuSum::Dyn, Cores::One),
        Variant::Cpu(CpuSum::BoxFn, Cores::One),
        Variant::Cpu(CpuSum::FnPtr, Cores::One),
        Variant::Cpu(CpuSum::Plain, Cores::All),
        Variant::Cpu(CpuSum::Generic, Cores::All),
        Variant::Cpu(CpuSum::Dyn, Cores::All),
        Variant::Cpu(CpuSum::BoxFn, Cores::All),
        Variant::Cpu(CpuSum::FnPtr, Cores::All),
        Variant::Gpu(GpuSum::Plain),
        Variant::Gpu(GpuSum::Generic),
        Variant::Gpu(GpuSum::Virtual),
        Variant::Gpu(GpuSum::FnPtrLoop),
        Variant::Gpu(GpuSum::FnPtrHoisted),
    ];

    /// The name on the command line and in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Cpu(CpuSum::Plain, Cores::One) => "cpu-plain",
            Variant::Cpu(CpuSum::Generic, Cores::One) => "cpu-generic",
            Variant::Cpu(CpuSum::Dyn, Cores::One) => "cpu-dyn",
            Variant::Cpu(CpuSum::BoxFn, Cores::One) => "cpu-box-fn",
            Variant::Cpu(CpuSum::FnPtr, Cores::One) => "cpu-fn-ptr",
            Variant::Cpu(CpuSum::Plain, Cores::All) => "cpu-plain-rayon",
            Variant::Cpu(CpuSum::Generic, Cores::All) => "cpu-generic-rayon",
            Variant::Cpu(CpuSum::Dyn, Cores::All) => "cpu-dyn-rayon",
            Variant::Cpu(CpuSum::BoxFn, Cores::All) => "cpu-box-fn-rayon",
            Variant::Cpu(CpuSum::FnPtr, Cores::All) => "cpu-fn-ptr-rayon",
            Variant::Gpu(GpuSum::Plain) => "gpu-plain",
            Variant::Gpu(GpuSum::Generic) => "gpu-generic",
            Variant::Gpu(GpuSum::Virtual) => "gpu-virtual",
            Variant::Gpu(GpuSum::FnPtrLoop) => "gpu-fn-ptr-loop",
            Variant::Gpu(GpuSum::FnPtrHoisted) => "gpu-fn-ptr-hoisted",
        }
    }
}

/// What to run, decided from the flags.
pub struct Selection {
    /// CPU sums (the peak is not among them: it always runs).
    pub cpu: Vec<CpuRun>,
    pub gpu: Vec<GpuSum>,
    /// The GPU was asked for explicitly and nothing else: without one, fail rather than skip.
    pub gpu_required: bool,
}

impl Args {
    /// lab06 run with no arguments: every flag at its default. (LABS_EMULATE, which
    /// `--emulate` also reads, is left out: this is what the command line alone gives.)
    pub fn defaults() -> Args {
        let args = Args::try_parse_from(["lab06"]).expect("lab06's defaults parse");
        Args {
            device: Default::default(),
            ..args
        }
    }

    /// The command line that parses back to these arguments, for a program that runs lab06
    /// (a grader): each flag whose value is not its default, in the order above. Written
    /// here, beside the flags, so that each is spelt once: one renamed above and not here
    /// fails the test `to_args_parse_back`.
    pub fn to_args(&self) -> Vec<OsString> {
        let default = Args::defaults();
        let mut args: Vec<OsString> = Vec::new();
        let mut value = |flag: &str, value: String, default: String| {
            if value != default {
                args.extend([flag.into(), value.into()]);
            }
        };
        value("--n", self.n.to_string(), default.n.to_string());
        value("--reps", self.reps.to_string(), default.reps.to_string());
        if !self.variants.is_empty() {
            let names: Vec<&str> = self.variants.iter().map(|v| v.name()).collect();
            args.extend(["--variants".into(), names.join(",").into()]);
        }
        let switches = [("--cpu-only", self.cpu_only), ("--gpu-only", self.gpu_only)];
        args.extend(switches.into_iter().filter(|s| s.1).map(|s| s.0.into()));
        if let Some(file) = &self.save_ptx {
            args.extend(["--save-ptx".into(), file.clone().into_os_string()]);
        }
        if self.json {
            args.push("--json".into());
        }
        if let Some(threads) = self.threads_per_block {
            args.extend(["--threads-per-block".into(), threads.to_string().into()]);
        }
        if let Some(blocks) = self.blocks_per_sm {
            args.extend(["--blocks-per-sm".into(), blocks.to_string().into()]);
        }
        args.extend(self.kernel.to_args());
        args.extend(self.device.to_args());
        args
    }

    /// The variants to run, in table order.
    ///
    /// Without a GPU, the GPU variants are skipped (with the reason, once) and the CPU ones
    /// still run; but if only GPU variants were asked for (`--gpu-only`, or a `--variants`
    /// list of GPU variants alone), or `--save-ptx`, there is nothing sensible to do without
    /// one, and the run fails.
    pub fn selection(&self) -> Selection {
        let wanted = |v: &Variant| match v {
            Variant::Cpu(..) if self.gpu_only => false,
            Variant::Gpu(_) if self.cpu_only => false,
            _ => self.variants.is_empty() || self.variants.contains(v),
        };
        let mut selection = Selection {
            cpu: Vec::new(),
            gpu: Vec::new(),
            gpu_required: false,
        };
        for variant in Variant::ALL.iter().filter(|v| wanted(v)) {
            match *variant {
                Variant::Cpu(sum, cores) => selection.cpu.push(CpuRun::Sum(sum, cores)),
                Variant::Gpu(sum) => selection.gpu.push(sum),
            }
        }
        selection.gpu_required =
            self.save_ptx.is_some() || (selection.cpu.is_empty() && !selection.gpu.is_empty());
        selection
    }
}

fn parse_threads_per_block(s: &str) -> Result<u32, String> {
    let n = shared::number::whole("the block size", s, 32, 1024)?;
    if n % 32 != 0 {
        return Err(format!(
            "the block size must be a multiple of 32 (a whole number of warps), not {n}"
        ));
    }
    Ok(n as u32)
}

fn parse_blocks_per_sm(s: &str) -> Result<u32, String> {
    shared::number::whole("the blocks per multiprocessor", s, 1, 32).map(|n| n as u32)
}

fn parse_variant(s: &str) -> Result<Variant, String> {
    Variant::ALL
        .into_iter()
        .find(|v| v.name() == s.trim())
        .ok_or_else(|| {
            let names: Vec<_> = Variant::ALL.iter().map(|v| v.name()).collect();
            format!("unknown variant; the variants are {}", names.join(", "))
        })
}

fn parse_n(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let out_of_range = format!("N must be between 1 and {MAX_N} (2Gi floats, 8 GiB)");
    if s.starts_with('-') {
        return Err(out_of_range);
    }
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => s.split_at(at),
        None => (s, ""),
    };
    let scale: u128 = match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        _ => return Err("N must be a whole number, optionally with Ki, Mi or Gi".to_string()),
    };
    if digits.is_empty() {
        return Err("N must be a whole number, optionally with Ki, Mi or Gi".to_string());
    }
    let n = u128::from(
        shared::number::whole("N", digits, 0, u64::MAX).map_err(|_| out_of_range.clone())?,
    )
    .saturating_mul(scale);
    match usize::try_from(n) {
        Ok(n) if (1..=MAX_N).contains(&n) => Ok(n),
        _ => Err(out_of_range),
    }
}

/// At most this many timed runs per variant: each CPU run first flushes the caches (a buffer
/// the size of the last-level cache), so 65535 runs of every variant took about 44 minutes,
/// and a median of 1000 runs is as steady as it gets.
const MAX_REPS: u16 = 1000;

fn parse_reps(s: &str) -> Result<u16, String> {
    shared::number::whole("the repetition count", s, 1, MAX_REPS.into()).map(|n| n as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field changed from its default comes back as it went, and none is written
    /// where it is the default: a flag renamed in the attributes and not in `to_args`, or a
    /// field `to_args` forgets, fails here.
    #[test]
    fn to_args_parse_back() {
        let given = Args {
            n: 100_003,
            reps: 3,
            variants: vec![
                Variant::Cpu(CpuSum::Dyn, Cores::All),
                Variant::Gpu(GpuSum::Virtual),
            ],
            cpu_only: false,
            gpu_only: false,
            save_ptx: Some(PathBuf::from("out/reduce.ptx")),
            json: true,
            threads_per_block: Some(256),
            blocks_per_sm: Some(4),
            kernel: shared::nvrtc::KernelArg {
                path: Some(PathBuf::from("mine/reduce.cu")),
                options: vec!["-lineinfo".to_string()],
            },
            device: shared::gpu::DeviceArg {
                emulate: true,
                ..Default::default()
            },
        };
        let argv = std::iter::once(OsString::from("lab06")).chain(given.to_args());
        let back = match Args::try_parse_from(argv) {
            Ok(back) => back,
            Err(e) => panic!("{:?} does not parse: {e}", given.to_args()),
        };
        assert_eq!(
            (back.n, back.reps, &back.variants, &back.save_ptx, back.json),
            (
                given.n,
                given.reps,
                &given.variants,
                &given.save_ptx,
                given.json
            )
        );
        assert_eq!(
            (back.threads_per_block, back.blocks_per_sm),
            (given.threads_per_block, given.blocks_per_sm)
        );
        assert_eq!(format!("{:?}", back.kernel), format!("{:?}", given.kernel));
        assert_eq!(format!("{:?}", back.device), format!("{:?}", given.device));
        for (cpu_only, gpu_only) in [(true, false), (false, true)] {
            let given = Args {
                cpu_only,
                gpu_only,
                ..Args::defaults()
            };
            let back = Args::try_parse_from(
                std::iter::once(OsString::from("lab06")).chain(given.to_args()),
            )
            .expect("parses");
            assert_eq!((back.cpu_only, back.gpu_only), (cpu_only, gpu_only));
        }
        assert!(Args::defaults().to_args().is_empty());
    }

    #[test]
    fn reps_are_capped_at_a_thousand() {
        assert_eq!(parse_reps("1000"), Ok(1000));
        let error = parse_reps("65535").unwrap_err();
        assert!(error.contains("between 1 and 1000"), "{error}");
    }

    #[test]
    fn n_accepts_numbers_and_binary_suffixes() {
        assert_eq!(parse_n("1000"), Ok(1000));
        assert_eq!(parse_n("32Mi"), Ok(32 << 20));
        assert_eq!(parse_n("2Gi"), Ok(MAX_N));
        for bad in [
            "0",
            "",
            "-5",
            "3x",
            "2.5Mi",
            "3Gi",
            "99999999999999999999999999999999999",
        ] {
            assert!(parse_n(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn variant_names_round_trip() {
        for v in Variant::ALL {
            assert_eq!(parse_variant(v.name()), Ok(v));
        }
        assert!(parse_variant("gpu-magic").is_err());
    }

    fn selection(args: &[&str]) -> Selection {
        let args = Args::try_parse_from(std::iter::once("lab06").chain(args.iter().copied()));
        args.unwrap().selection()
    }

    #[test]
    fn the_gpu_is_required_only_when_nothing_else_was_asked_for() {
        let all = selection(&[]);
        assert_eq!(
            (all.cpu.len(), all.gpu.len(), all.gpu_required),
            (10, 5, false)
        );
        let cpu = selection(&["--cpu-only"]);
        assert_eq!(
            (cpu.cpu.len(), cpu.gpu.len(), cpu.gpu_required),
            (10, 0, false)
        );
        assert!(selection(&["--gpu-only"]).gpu_required);
        assert!(selection(&["--variants", "gpu-plain,gpu-virtual"]).gpu_required);
        assert!(!selection(&["--variants", "gpu-plain,cpu-dyn"]).gpu_required);
        assert!(selection(&["--cpu-only", "--save-ptx", "x.ptx"]).gpu_required);
    }
}
