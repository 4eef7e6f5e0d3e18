//! The rubric (`xtask/rubric.toml`, compiled in): the checks and their points.

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::labs::{self, Device};

/// The rubric file, built into the xtask binary so that `dist/xtask grade` carries it.
const RUBRIC: &str = include_str!("../../rubric.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rubric {
    /// Seconds each check may take, all its runs together.
    pub time_limit_s: u64,
    /// Runs of the student's lab and of the solution per speed check.
    pub speed_runs: usize,
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
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Test {
    Image {
        size: String,
        #[serde(default)]
        view: Vec<String>,
        #[serde(default)]
        max_differing: u64,
    },
    Canvas {
        args: Vec<String>,
    },
    Sums {
        args: Vec<String>,
        variants: Vec<String>,
    },
    Speed {
        args: Vec<String>,
        phase: String,
        compare: String,
    },
}

impl Rubric {
    pub fn load() -> Result<Rubric> {
        let rubric: Rubric = toml::from_str(RUBRIC).context("xtask/rubric.toml is not valid")?;
        for check in &rubric.checks {
            labs::find(&check.lab).context("xtask/rubric.toml")?;
            if let Test::Image { size, .. } = &check.test {
                parse_size(size).context("xtask/rubric.toml")?;
            }
        }
        Ok(rubric)
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
            Test::Canvas { args } => format!(
                "GPU canvas identical to the CPU reference with {}",
                args.join(" ")
            ),
            Test::Sums { variants, .. } => format!("{} sum exactly", variants.join(" and ")),
            Test::Speed { args, phase, .. } => {
                // The arguments that say what is timed: not the output files, not --json.
                let mut shown = Vec::new();
                for (index, arg) in args.iter().enumerate() {
                    let names_output = args.get(index + 1).is_some_and(|a| a.contains("{out}"));
                    if !(arg.contains("{out}") || names_output || arg == "--json") {
                        shown.push(arg.as_str());
                    }
                }
                format!(
                    "{phase} time against the solution's with {}",
                    shown.join(" ")
                )
            }
        };
        format!("{}: {what}", self.lab)
    }

    /// Whether the check can only run on a GPU (every speed check is measured on the GPU
    /// machine).
    pub fn needs_gpu(&self) -> bool {
        match &self.test {
            Test::Speed { .. } => true,
            Test::Sums { variants, .. } => variants.iter().any(|v| v.starts_with("gpu-")),
            Test::Canvas { .. } => true,
            Test::Image { .. } => {
                labs::find(&self.lab).is_ok_and(|lab| lab.first().variant.device == Device::Gpu)
            }
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
        assert!(names.contains(&"lab02: identical to the reference at 333x517".to_string()));
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
        assert!(cpu.contains(&"lab02".to_string()) && cpu.contains(&"lab06".to_string()));
    }
}
