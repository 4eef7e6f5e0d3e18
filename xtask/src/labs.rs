//! The labs, as the tasks see them: one table of data. `verify`, `bench` and `run` read what
//! a lab computes, where it runs and how it is checked from here, never from its name.

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

/// One lab.
#[derive(Debug, PartialEq, Eq)]
pub struct Lab {
    /// Binary name, e.g. "lab04".
    pub name: &'static str,
    /// Cargo package, e.g. "lab04-cuda-optimized".
    pub package: &'static str,
    pub work: Work,
    pub exact: Exact,
    /// The first is the lab as it runs with no flags (the one a reference uses).
    pub variants: &'static [Variant],
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
    },
    Lab {
        name: "lab02",
        package: "lab02-rayon",
        work: Work::Mandelbrot,
        exact: Exact::Required,
        variants: LAB02_VARIANTS,
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

/// The labs that compute `work`, in lab order.
pub fn doing(work: Work) -> impl Iterator<Item = &'static Lab> {
    LABS.iter().filter(move |lab| lab.work == work)
}

/// Every variant of the labs that compute `work`, in lab order.
pub fn programs(work: Work) -> impl Iterator<Item = Program> {
    doing(work).flat_map(Lab::runs)
}

/// Find a lab by "lab04", "4", "04" or its package name.
pub fn find(name: &str) -> Result<&'static Lab> {
    let number = |n: &str| {
        n.trim_start_matches("lab")
            .trim_start_matches('0')
            .to_string()
    };
    let found = LABS
        .iter()
        .find(|lab| lab.name == name || lab.package == name || number(lab.name) == number(name));
    match found {
        Some(lab) => Ok(lab),
        None => {
            let names: Vec<_> = LABS.iter().map(|l| l.name).collect();
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
    fn lab02_best_cpu_has_both_switches() {
        let lab02 = find("lab02").expect("lab02");
        assert_eq!(lab02.first().variant.flags, [] as [&str; 0]);
        let best: Vec<_> = lab02.variants[1..].iter().map(|v| v.flags).collect();
        assert_eq!(best, [["--simd", "--shortcuts"]]);
    }
}
