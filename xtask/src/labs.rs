//! The labs, as the tasks see them: one table of data. `run`, `verify`, `bench`, `profile`,
//! `sanitize` and `dist` read what a lab computes, where it runs, how it is checked and how
//! NVIDIA's tools run it from here, never from its name: a new lab is one entry.

use anyhow::{bail, Result};

/// What a lab computes, which decides how a task runs it and what it compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// The Mandelbrot image of labs 01-04: `labNN WIDTH HEIGHT [VIEW] -o FILE.ppm [--json]`,
    /// compared byte for byte with the reference image.
    Mandelbrot,
    /// lab05's Buddhabrot canvas: `--raw FILE` holds the counts; every variant must give the
    /// same canvas for the same seed.
    Buddhabrot,
    /// lab06's sums, each checked exactly by the lab itself; timed with its defaults.
    Reduction,
}

/// Where a variant runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Cpu,
    /// Needs a CUDA GPU: skipped, with the reason, where none opens.
    Gpu,
    /// Needs this many CUDA GPUs (two or more): skipped, with the reason, where fewer open.
    Gpus(usize),
    /// The GPU variant labelled so, its kernels run on the CPU device (`--emulate`): runs
    /// wherever NVRTC is found, GPU or not, and where a GPU opens too, must equal that
    /// variant's output byte for byte.
    Emulated(&'static str),
}

/// Whether a lab's output must equal the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exact {
    /// Byte-identical, or the check fails.
    Required,
    /// Shown, never failed: a difference, or a clean refusal to run (a size the lab says it
    /// cannot do), is reported with this reason.
    MayDiffer(&'static str),
}

/// One way to run a lab: the flags added to every run of it, and where it runs. A task
/// shows each variant as a row of its own, named by its label.
#[derive(Debug, PartialEq, Eq)]
pub struct Variant {
    /// The name in tables, CSV files and charts: the lab's name, then what sets it apart.
    pub label: &'static str,
    pub flags: &'static [&'static str],
    pub device: Device,
}

/// How NVIDIA's tools run a GPU lab: each a run of its own, since a profile wants one
/// launch of a realistic size and a sanitizer wants odd edges in seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelRuns {
    /// `profile LAB` without ARGS: small enough to profile in seconds.
    pub profile: &'static [&'static str],
    /// `profile all`, as `docs/profile-h100.csv` records it: the run the lab's README
    /// discusses, and which launch of each kernel to profile.
    pub recorded: (&'static [&'static str], u32),
    /// `sanitize`: a small run whose edge blocks lie partly outside the data, where an
    /// unchecked access would land.
    pub sanitize: &'static [&'static str],
    /// Its kernels share memory between a block's threads and wait at barriers: racecheck
    /// and synccheck apply, beside memcheck.
    pub shared_memory: bool,
    /// `model`: runs whose kernel times change for known reasons, each timed on the GPU and
    /// predicted by the CPU device's H100 model; the first is the one the others are
    /// compared with.
    pub model: &'static [ModelRun],
    /// Kernels the lab launches outside its `kernel` phase (set-up, a yardstick): `model`
    /// leaves their launches out of its prediction, as the lab leaves them out of its time.
    pub untimed: &'static [&'static str],
    /// Its kernels are timed as batches of launches back to back, where each launch's start
    /// hides behind the last one's work: `model` leaves the launch's own time out.
    pub back_to_back: bool,
}

/// One run `model` compares: what it changes, and the lab's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRun {
    pub name: &'static str,
    pub args: &'static [&'static str],
}

const fn model_run(name: &'static str, args: &'static [&'static str]) -> ModelRun {
    ModelRun { name, args }
}

/// One lab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lab {
    /// Binary name, e.g. "lab04".
    pub name: &'static str,
    /// Cargo package, e.g. "lab04-cuda-optimized".
    pub package: &'static str,
    pub work: Work,
    pub exact: Exact,
    /// The first is the lab as it runs with no flags (the one a reference uses).
    pub variants: &'static [Variant],
    /// How the GPU tools run it; `None` for a lab that runs no kernel.
    pub kernels: Option<KernelRuns>,
}

impl Work {
    /// The kind of image file the lab writes with `--output`, if it writes one.
    pub fn image_extension(self) -> Option<&'static str> {
        match self {
            Work::Mandelbrot => Some("ppm"),
            Work::Buddhabrot => Some("png"),
            Work::Reduction => None,
        }
    }
}

impl Lab {
    /// The lab as it runs with its first variant: no flags, or the reference backend.
    pub fn first(&'static self) -> Program {
        Program {
            lab: self,
            variant: &self.variants[0],
        }
    }

    /// The lab with each of its variants.
    pub fn runs(&'static self) -> impl Iterator<Item = Program> {
        self.variants
            .iter()
            .map(move |variant| Program { lab: self, variant })
    }
}

/// A lab and one of its variants: what a task runs and shows as one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Program {
    pub lab: &'static Lab,
    pub variant: &'static Variant,
}

impl Program {
    pub fn label(&self) -> &'static str {
        self.variant.label
    }

    /// Whether it runs GPU code: on a GPU, or on the CPU device.
    pub fn gpu(&self) -> bool {
        self.variant.device != Device::Cpu
    }

    /// The GPUs it needs: none, one, or several.
    pub fn gpus(&self) -> usize {
        match self.variant.device {
            Device::Cpu | Device::Emulated(_) => 0,
            Device::Gpu => 1,
            Device::Gpus(n) => n,
        }
    }

    /// The GPU variant whose kernels this one runs on the CPU device, if it does.
    pub fn emulates(&self) -> Option<&'static str> {
        match self.variant.device {
            Device::Emulated(label) => Some(label),
            _ => None,
        }
    }
}

/// Why `program` cannot run on a machine where `gpu` is the first GPU's name (or why none
/// opened) and `gpus` GPUs open; `None` if it can.
pub fn cannot_run(
    program: Program,
    gpu: &std::result::Result<String, String>,
    gpus: usize,
) -> Option<String> {
    if program.emulates().is_some() {
        return crate::nvrtc::find().err();
    }
    match (program.gpus(), gpu) {
        (0, _) => None,
        (_, Err(why)) => Some(why.clone()),
        (needed, Ok(_)) if needed > gpus => {
            Some(format!("needs {needed} GPUs, and {gpus} opened here"))
        }
        _ => None,
    }
}

/// A variant that takes no flags.
const fn no_flags(label: &'static str, device: Device) -> Variant {
    Variant {
        label,
        flags: &[],
        device,
    }
}

/// A GPU variant's twin on the CPU device: the same flags and `--emulate`.
const fn on_cpu_device(
    label: &'static str,
    of: &'static str,
    flags: &'static [&'static str],
) -> Variant {
    Variant {
        label,
        flags,
        device: Device::Emulated(of),
    }
}

/// lab02 plain, and the fair CPU competitor for the GPU labs: every f64 lane and lab04's
/// shortcuts, "best CPU" in `verify`, `bench`, the CSV and the chart.
const LAB02_VARIANTS: &[Variant] = &[
    no_flags("lab02", Device::Cpu),
    Variant {
        label: "lab02 best CPU",
        flags: &["--simd", "--shortcuts"],
        device: Device::Cpu,
    },
];

pub static LABS: [Lab; 6] = [
    Lab {
        name: "lab01",
        package: "lab01-cpu-baseline",
        work: Work::Mandelbrot,
        exact: Exact::Required,
        variants: &[no_flags("lab01", Device::Cpu)],
        kernels: None,
    },
    Lab {
        name: "lab02",
        package: "lab02-rayon",
        work: Work::Mandelbrot,
        exact: Exact::Required,
        variants: LAB02_VARIANTS,
        kernels: None,
    },
    Lab {
        name: "lab03",
        package: "lab03-cuda-naive",
        work: Work::Mandelbrot,
        exact: Exact::MayDiffer("lab03 keeps NVRTC's fused multiply-adds"),
        variants: &[
            no_flags("lab03", Device::Gpu),
            on_cpu_device("lab03 CPU device", "lab03", &["--emulate"]),
        ],
        // At its widest image: lab03 runs one block per row, one thread per column.
        kernels: Some(KernelRuns {
            profile: &["1024", "1024"],
            recorded: (&["1024", "1024"], 1),
            sanitize: &["333", "201"],
            shared_memory: false,
            untimed: &[],
            back_to_back: false,
            model: &[
                model_run("1024x1024", &["1024", "1024"]),
                model_run("4096 rows", &["1024", "4096"]),
                model_run("512 wide", &["512", "2048"]),
                model_run(
                    "zoom on the edge",
                    &[
                        "1024", "2048", "--cx", "-0.7453", "--cy", "0.1127", "--scale", "0.000002",
                    ],
                ),
                model_run("zoomed out", &["1024", "4096", "--scale", "0.05"]),
            ],
        }),
    },
    Lab {
        name: "lab04",
        package: "lab04-cuda-optimized",
        work: Work::Mandelbrot,
        exact: Exact::Required,
        variants: &[
            no_flags("lab04", Device::Gpu),
            on_cpu_device("lab04 CPU device", "lab04", &["--emulate"]),
        ],
        // Recorded at 16384x16384, where lab01's loop bodies are counted; sanitized in the
        // zoom, where the early exits take every path.
        kernels: Some(KernelRuns {
            profile: &["4096", "4096"],
            recorded: (&["16384", "16384"], 1),
            sanitize: &[
                "333", "201", "--cx", "-0.74364", "--cy", "0.13182", "--scale", "1e-5",
            ],
            shared_memory: false,
            untimed: &[],
            back_to_back: false,
            model: &[
                model_run("4096x4096", &["4096", "4096"]),
                model_run("1024x1024", &["1024", "1024"]),
                model_run("blocks 16x16", &["4096", "4096", "--block", "16x16"]),
                model_run("blocks 8x8", &["4096", "4096", "--block", "8x8"]),
                model_run("blocks 32x4", &["4096", "4096", "--block", "32x4"]),
                model_run("blocks 64x4", &["4096", "4096", "--block", "64x4"]),
                model_run("blocks 32x32", &["4096", "4096", "--block", "32x32"]),
                model_run("blocks 256x1", &["4096", "4096", "--block", "256x1"]),
                model_run("blocks 8x32", &["4096", "4096", "--block", "8x32"]),
                model_run("no mirror rows", &["4096", "4096", "--no-mirror-rows"]),
                model_run("no period-2 exit", &["4096", "4096", "--no-period2-exit"]),
                model_run(
                    "periodicity check",
                    &["4096", "4096", "--periodicity-check"],
                ),
                model_run(
                    "no shortcut",
                    &["4096", "4096", "--no-period2-exit", "--no-mirror-rows"],
                ),
                model_run("2048x2048", &["2048", "2048"]),
                model_run("odd 3001x1999", &["3001", "1999"]),
                model_run(
                    "zoom on the edge",
                    &[
                        "2048", "2048", "--cx", "-0.7453", "--cy", "0.1127", "--scale", "0.000002",
                    ],
                ),
                model_run("zoomed out", &["4096", "4096", "--scale", "0.01"]),
            ],
        }),
    },
    Lab {
        name: "lab05",
        package: "lab05-buddhabrot",
        work: Work::Buddhabrot,
        exact: Exact::Required,
        // The CPU backend first: it is the reference the GPU canvas must equal.
        variants: &[
            Variant {
                label: "lab05 cpu",
                flags: &["--backend", "cpu"],
                device: Device::Cpu,
            },
            Variant {
                label: "lab05 gpu",
                flags: &["--backend", "gpu"],
                device: Device::Gpu,
            },
            on_cpu_device(
                "lab05 CPU device",
                "lab05 gpu",
                &["--backend", "gpu", "--emulate"],
            ),
            // The samples split across several GPUs, the canvases summed: still the CPU's.
            Variant {
                label: "lab05 2 GPUs",
                flags: &["--backend", "gpu", "--devices", "2"],
                device: Device::Gpus(2),
            },
            Variant {
                label: "lab05 4 GPUs",
                flags: &["--backend", "gpu", "--devices", "4"],
                device: Device::Gpus(4),
            },
            Variant {
                label: "lab05 8 GPUs",
                flags: &["--backend", "gpu", "--devices", "8"],
                device: Device::Gpus(8),
            },
        ],
        // Recorded at its default samples (one launch).
        kernels: Some(KernelRuns {
            profile: &["--backend", "gpu", "--samples", "20000000"],
            recorded: (&["--backend", "gpu"], 1),
            sanitize: &[
                "--backend",
                "gpu",
                "--samples",
                "300000",
                "--width",
                "301",
                "--height",
                "199",
            ],
            shared_memory: false,
            untimed: &[],
            back_to_back: false,
            model: &[
                model_run("2M samples", &["--backend", "gpu", "--samples", "2000000"]),
                model_run(
                    "no bulb check",
                    &[
                        "--backend",
                        "gpu",
                        "--samples",
                        "2000000",
                        "--no-bulb-check",
                    ],
                ),
                model_run(
                    "no symmetry",
                    &["--backend", "gpu", "--samples", "2000000", "--no-symmetry"],
                ),
                model_run(
                    "no stratification",
                    &["--backend", "gpu", "--samples", "2000000", "--no-stratify"],
                ),
                model_run("8M samples", &["--backend", "gpu", "--samples", "8000000"]),
            ],
        }),
    },
    Lab {
        name: "lab06",
        package: "lab06-generics-vs-virtual",
        work: Work::Reduction,
        exact: Exact::Required,
        variants: &[
            no_flags("lab06", Device::Gpu),
            on_cpu_device("lab06 CPU device", "lab06", &["--emulate"]),
        ],
        // Recorded at its default N, launch 151 of each kernel: with `--reps 1` every launch
        // shape of its sweep takes 20 launches (a warm-up batch of 10, a timed batch of 10),
        // so 151 is the first timed launch of the eighth shape, 256 threads x 8 blocks per SM
        // (every thread slot of an H100's SM), not the first launch's one block of 128 per SM.
        // Its block reduction shares memory between threads.
        kernels: Some(KernelRuns {
            profile: &["--gpu-only", "--reps", "1"],
            recorded: (&["--gpu-only", "--reps", "1"], 151),
            sanitize: &["--gpu-only", "--n", "1000003", "--reps", "1"],
            shared_memory: true,
            untimed: &["read_peak", "build_adder", "store_add_pointer"],
            back_to_back: true,
            // None: the variants' times side by side are the lab's exercise to measure.
            model: &[],
        }),
    },
];

/// The image `verify` compares every Mandelbrot lab with: lab01's, the executable definition;
/// from `stand_in_from` pixels on, `stand_in`'s, which `verify` finds identical to lab01 at
/// every smaller size and which is 16 times faster on 16 threads.
pub struct Reference {
    pub lab: &'static Lab,
    pub stand_in: &'static Lab,
    pub stand_in_from: u64,
}

pub static REFERENCE: Reference = Reference {
    lab: &LABS[0],
    stand_in: &LABS[1],
    stand_in_from: 16384 * 16384,
};

impl Reference {
    /// The lab whose image is the reference at `width` x `height`.
    pub fn at(&self, width: u32, height: u32) -> &'static Lab {
        if u64::from(width) * u64::from(height) >= self.stand_in_from {
            self.stand_in
        } else {
            self.lab
        }
    }
}

/// The labs a task reads: [`LABS`], or a test's table with a lab added.
pub type Table = &'static [Lab];

/// The labs that compute `work`, in lab order.
pub fn doing(work: Work) -> impl Iterator<Item = &'static Lab> {
    doing_in(&LABS, work)
}

/// [`doing`] in `table`.
pub fn doing_in(table: Table, work: Work) -> impl Iterator<Item = &'static Lab> {
    table.iter().filter(move |lab| lab.work == work)
}

/// The labs that run kernels, with how the GPU tools run them, in lab order.
pub fn with_kernels(table: Table) -> impl Iterator<Item = (&'static Lab, &'static KernelRuns)> {
    table
        .iter()
        .filter_map(|lab| lab.kernels.as_ref().map(|kernels| (lab, kernels)))
}

/// Every variant of the labs that compute `work`, in lab order.
pub fn programs(work: Work) -> impl Iterator<Item = Program> {
    doing(work).flat_map(Lab::runs)
}

/// Find a lab by "lab04", "4", "04" or its package name.
pub fn find(name: &str) -> Result<&'static Lab> {
    find_in(&LABS, name)
}

/// [`find`] in `table`.
pub fn find_in(table: Table, name: &str) -> Result<&'static Lab> {
    let number = |n: &str| {
        n.trim_start_matches("lab")
            .trim_start_matches('0')
            .to_string()
    };
    let found = table
        .iter()
        .find(|lab| lab.name == name || lab.package == name || number(lab.name) == number(name));
    match found {
        Some(lab) => Ok(lab),
        None => {
            let names: Vec<_> = table.iter().map(|l| l.name).collect();
            bail!("no lab called '{name}'; the labs are {}", names.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_labs_by_any_of_their_names() {
        assert_eq!(
            find("lab04").map(|l| l.package).ok(),
            Some("lab04-cuda-optimized")
        );
        assert_eq!(find("4").map(|l| l.name).ok(), Some("lab04"));
        assert_eq!(find("04").map(|l| l.name).ok(), Some("lab04"));
        assert_eq!(find("lab02-rayon").map(|l| l.name).ok(), Some("lab02"));
        let missing = find("lab09").err().map(|e| e.to_string());
        assert_eq!(
            missing.as_deref(),
            Some("no lab called 'lab09'; the labs are lab01, lab02, lab03, lab04, lab05, lab06")
        );
        assert!(find("").is_err(), "an empty name is no lab");
    }

    #[test]
    fn every_lab_is_a_package_with_its_own_name_and_labels() {
        let mut labels = Vec::new();
        for lab in &LABS {
            assert!(lab.package.starts_with(lab.name), "{lab:?}");
            assert!(!lab.variants.is_empty(), "{} has no variant", lab.name);
            assert!(lab.first().variant.flags.is_empty() || lab.work == Work::Buddhabrot);
            for program in lab.runs() {
                assert!(program.label().starts_with(lab.name), "{program:?}");
                labels.push(program.label());
            }
        }
        let count = labels.len();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), count, "a label names one row: {labels:?}");
    }

    #[test]
    fn the_mandelbrot_labs_are_01_to_04_and_only_lab03_may_differ() {
        let names: Vec<_> = doing(Work::Mandelbrot).map(|l| l.name).collect();
        assert_eq!(names, ["lab01", "lab02", "lab03", "lab04"]);
        let may_differ: Vec<_> = LABS
            .iter()
            .filter(|l| matches!(l.exact, Exact::MayDiffer(_)))
            .map(|l| l.name)
            .collect();
        assert_eq!(may_differ, ["lab03"]);
        let cpu_only: Vec<_> = LABS
            .iter()
            .filter(|l| l.runs().all(|p| !p.gpu()))
            .map(|l| l.name)
            .collect();
        assert_eq!(cpu_only, ["lab01", "lab02"]);
    }

    #[test]
    fn lab01_is_the_reference_and_lab02_stands_in_from_16384_squared() {
        assert_eq!(REFERENCE.at(4096, 4096).name, "lab01");
        assert_eq!(REFERENCE.at(16383, 16384).name, "lab01");
        assert_eq!(REFERENCE.at(16384, 16384).name, "lab02");
        assert_eq!(REFERENCE.at(65536, 4096).name, "lab02");
        assert_eq!(REFERENCE.lab.work, Work::Mandelbrot);
        assert_eq!(REFERENCE.stand_in.exact, Exact::Required);
    }

    #[test]
    fn lab05_checks_the_gpu_canvases_against_the_cpu_one() {
        let lab05 = doing(Work::Buddhabrot).next().expect("a Buddhabrot lab");
        let devices: Vec<_> = lab05.variants.iter().map(|v| v.device).collect();
        assert_eq!(
            devices,
            [
                Device::Cpu,
                Device::Gpu,
                Device::Emulated("lab05 gpu"),
                Device::Gpus(2),
                Device::Gpus(4),
                Device::Gpus(8)
            ]
        );
        assert_eq!(lab05.first().variant.flags, ["--backend", "cpu"]);
        for program in lab05.runs().filter(|p| p.gpus() > 1) {
            let asked = program.gpus().to_string();
            assert_eq!(program.variant.flags[2..], ["--devices", asked.as_str()]);
        }
    }

    #[test]
    fn a_variant_runs_only_where_its_gpus_open() {
        let lab05 = find("lab05").expect("lab05");
        let [cpu, one, emulated, two] = [0, 1, 2, 3].map(|i| Program {
            lab: lab05,
            variant: &lab05.variants[i],
        });
        let none: std::result::Result<String, String> = Err("no usable GPU".to_string());
        let h200: std::result::Result<String, String> = Ok("NVIDIA H200".to_string());
        assert_eq!(cannot_run(cpu, &none, 0), None);
        assert_eq!(cannot_run(one, &none, 0).as_deref(), Some("no usable GPU"));
        assert_eq!(cannot_run(two, &none, 0).as_deref(), Some("no usable GPU"));
        assert_eq!(cannot_run(one, &h200, 1), None);
        assert_eq!(
            cannot_run(two, &h200, 1).as_deref(),
            Some("needs 2 GPUs, and 1 opened here")
        );
        assert_eq!(cannot_run(two, &h200, 2), None);
        // The CPU device needs no GPU, only NVRTC.
        assert_eq!(emulated.emulates(), Some("lab05 gpu"));
        assert_eq!(cannot_run(emulated, &none, 0), crate::nvrtc::find().err());
    }

    #[test]
    fn the_gpu_tools_run_the_labs_with_a_gpu_variant_and_only_those() {
        for lab in &LABS {
            let gpu = lab.runs().any(|program| program.gpu());
            assert_eq!(lab.kernels.is_some(), gpu, "{}", lab.name);
        }
        let shared_memory: Vec<_> = with_kernels(&LABS)
            .filter(|(_, kernels)| kernels.shared_memory)
            .map(|(lab, _)| lab.name)
            .collect();
        assert_eq!(shared_memory, ["lab06"]);
    }

    #[test]
    fn lab02_best_cpu_has_both_switches() {
        let lab02 = find("lab02").expect("lab02");
        assert_eq!(lab02.first().variant.flags, [] as [&str; 0]);
        let best: Vec<_> = lab02.variants[1..].iter().map(|v| v.flags).collect();
        assert_eq!(best, [["--simd", "--shortcuts"]]);
    }
}
