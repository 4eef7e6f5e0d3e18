//! The rubric (`xtask/instructor/rubric.toml`, compiled in): the checks and their points.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

use xtask::labs::{self, Device};

/// The rubric file, built into the instructor binary so that `dist/instructor grade` carries it.
pub const RUBRIC: &str = include_str!("../../rubric.toml");

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
    /// The lab's binary name, e.g. "lab02".
    pub lab: String,
    pub points: f64,
    /// Shown to the student only once grades are published.
    #[serde(default)]
    pub hidden: bool,
    #[serde(flatten)]
    pub test: Test,
}

/// What a check runs and compares (rubric.toml's header describes each kind).
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Test {
    Image {
        size: String,
        #[serde(default)]
        view: Vec<String>,
        #[serde(default)]
        max_differing: u64,
        /// A GPU lab's kernel file: the image is this workspace's host code running it, and
        /// the student's host code is proven with a planted kernel (`checks::host_proven`).
        #[serde(default)]
        kernel: Option<PathBuf>,
    },
    Canvas {
        kernel: PathBuf,
        args: Vec<String>,
    },
    Sums {
        #[serde(default)]
        kernel: Option<PathBuf>,
        args: Vec<String>,
        variants: Vec<String>,
    },
    CpuSpeed {
        args: Vec<String>,
    },
    KernelSpeed {
        kernel: PathBuf,
        args: Vec<String>,
    },
}

impl Rubric {
    /// The limits of each check's whole process tree.
    pub fn tree_limits(&self) -> super::sandbox::TreeLimits {
        super::sandbox::TreeLimits {
            memory: self.memory_limit_mib << 20,
            disk: Some(self.disk_limit_mib << 20),
            files: Some(self.files_limit),
            ..super::sandbox::TreeLimits::DEFAULT
        }
    }

    pub fn load() -> Result<Rubric> {
        Rubric::parse(RUBRIC)
    }

    fn parse(text: &str) -> Result<Rubric> {
        let rubric: Rubric =
            toml::from_str(text).context("xtask/instructor/rubric.toml is not valid")?;
        for check in &rubric.checks {
            let lab = labs::find(&check.lab).context("xtask/instructor/rubric.toml")?;
            if let Test::Image { size, kernel, .. } = &check.test {
                parse_size(size).context("xtask/instructor/rubric.toml")?;
                // A GPU lab's image must come from its kernel run by this workspace's host
                // code: the student's binary alone could make it on the CPU.
                let gpu = lab.first().variant.device == Device::Gpu;
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
                if variants.iter().any(|v| v.starts_with("gpu-")) {
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
    /// The check's name, starting with its lab: `lab02: identical to the reference at 333x517`.
    pub fn name(&self) -> String {
        let what = match &self.test {
            Test::Image {
                size,
                view,
                max_differing,
                ..
            } => {
                let at = [size.as_str()]
                    .into_iter()
                    .chain(view.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" ");
                match max_differing {
                    0 => format!("identical to the reference at {at}"),
                    n => format!("the reference's image, up to {n} pixels apart, at {at}"),
                }
            }
            Test::Canvas { args, .. } => format!(
                "GPU canvas identical to the CPU reference with {}",
                args.join(" ")
            ),
            // The variants' operation is drawn in each grade (`checks::modulus`).
            Test::Sums { variants, .. } => format!(
                "{} sum exactly, modulo a number drawn in each grade",
                variants.join(" and ")
            ),
            // The view is moved in each grade (`checks::with_unpredictable_view`): the name
            // gives the rubric's, which is never run as such.
            Test::CpuSpeed { args } => format!(
                "whole-run time against the solution's near {}, moved in each grade",
                args.join(" ")
            ),
            Test::KernelSpeed { args, .. } => format!(
                "kernel time against the solution's kernel with {}",
                args.join(" ")
            ),
        };
        format!("{}: {what}", self.lab)
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
            Test::Sums { variants, .. } => variants.iter().any(|v| v.starts_with("gpu-")),
            Test::Image { .. } => {
                labs::find(&self.lab).is_ok_and(|lab| lab.first().variant.device == Device::Gpu)
            }
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

/// `WIDTHxHEIGHT` as two arguments.
pub fn parse_size(size: &str) -> Result<(String, String)> {
    let parsed = size
        .split_once('x')
        .filter(|(w, h)| w.parse::<u32>().is_ok() && h.parse::<u32>().is_ok());
    let (w, h) = parsed.with_context(|| format!("'{size}' is not a size WIDTHxHEIGHT"))?;
    Ok((w.to_string(), h.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rubric_loads_and_every_name_starts_with_its_lab() {
        let rubric = Rubric::load().unwrap();
        assert!(!rubric.checks.is_empty());
        for check in &rubric.checks {
            assert!(check.name().starts_with(&format!("{}: ", check.lab)));
            assert!(check.points > 0.0, "{}", check.name());
        }
        let names: Vec<String> = rubric.checks.iter().map(Check::name).collect();
        assert!(
            names.contains(&"lab02: identical to the reference at 333x517 --cy 0.25".to_string())
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
            let lab = &check.lab;
            let off_axis = rubric.checks.iter().any(|c| {
                &c.lab == lab
                    && !c.hidden
                    && matches!(&c.test, Test::Image { view, .. }
                        if view.windows(2).any(|w| w[0] == "--cy" && w[1].parse::<f64>().is_ok_and(|y| y != 0.0)))
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
            .map(|c| c.lab.clone())
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
}
