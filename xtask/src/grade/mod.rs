//! `cargo xtask grade DIR`: grade a student's workspace with this workspace's checks.
//!
//! 1. Build the student's labs in release, each on its own (a lab that does not compile
//!    fails its own checks only), in one grader target folder shared by every submission, so
//!    the registry dependencies compile once.
//! 2. Run every check of the rubric (`xtask/rubric.toml`) against this workspace's own
//!    programs: never the student's tests, never the student's lab01. A check that hangs or
//!    crashes fails; it does not stop the grading.
//! 3. Print a table and the total; with `--gradescope FILE`, write Gradescope's results.json.
//!
//! A score is not an error: the command exits 0 whenever grading ran, and non-zero only when
//! it could not (DIR is not a workspace, the reference does not build).

mod checks;
mod rubric;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::bins::{target_dir, Bins};
use crate::gpu;
use crate::labs::{Lab, LABS};
use checks::Outcome;
use rubric::Rubric;

#[derive(clap::Args)]
pub struct Args {
    /// The student's workspace (a copy of `cargo xtask handout`, with their work in it)
    #[arg(value_name = "DIR", required_unless_present = "student_bin_dir")]
    dir: Option<PathBuf>,
    /// Grade the lab binaries in this folder (the student's `cargo xtask dist`) instead of
    /// building DIR: for a GPU machine without Rust
    #[arg(long, value_name = "DIR", conflicts_with = "dir")]
    student_bin_dir: Option<PathBuf>,
    /// This workspace's binaries, from `cargo xtask dist` (the reference and the solution)
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Also write Gradescope's results.json here
    #[arg(long, value_name = "FILE")]
    gradescope: Option<PathBuf>,
    /// Where the student's workspace is built [default: the grade folder in this
    /// workspace's target folder, shared by every submission]
    #[arg(long, value_name = "DIR")]
    target_dir: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<()> {
    let rubric = Rubric::load()?;
    let graded: Vec<&'static Lab> = LABS
        .iter()
        .filter(|lab| rubric.checks.iter().any(|c| c.lab == lab.name))
        .collect();
    let gpu = gpu::probe();
    if let Err(why) = &gpu {
        shared::cli::eprint_line(&format!(
            "xtask: {}: the GPU checks are listed, not graded",
            why.split(';').next().unwrap_or(why)
        ));
    }
    let student = match (&args.dir, &args.student_bin_dir) {
        (_, Some(bin_dir)) => Student::prebuilt(bin_dir, &graded)?,
        (Some(dir), None) => {
            let target = args
                .target_dir
                .clone()
                .unwrap_or_else(|| target_dir().join("grade"));
            Student::build(dir, &target, &graded)?
        }
        (None, None) => bail!("give the student's workspace DIR"),
    };
    // The reference: lab01 and the solutions, built from this workspace.
    let reference_labs = LABS
        .iter()
        .filter(|lab| lab.name == "lab01" || graded.contains(lab));
    let reference = Bins::locate(args.bin_dir.clone(), reference_labs)?;
    let scratch = tempfile::Builder::new()
        .prefix("xtask-grade-")
        .tempdir()
        .context("cannot create a scratch folder")?;

    let context = checks::Context {
        student: &student.bins,
        reference: &reference,
        scratch: scratch.path(),
        time_limit: std::time::Duration::from_secs(rubric.time_limit_s),
        speed_runs: rubric.speed_runs,
    };
    let mut results = Vec::new();
    for check in &rubric.checks {
        let name = check.name();
        shared::cli::eprint_line(&format!("xtask: grading {name}"));
        let outcome = match (check.needs_gpu(), &gpu, student.broken(&check.lab)) {
            (true, Err(_), _) => Outcome::NotGraded("not graded here: needs a GPU".to_string()),
            (_, _, Some(error)) => Outcome::score(0.0, format!("did not build: {error}")),
            _ => checks::run(check, &context),
        };
        results.push(Graded {
            name,
            max: check.points,
            hidden: check.hidden,
            outcome,
        });
    }

    shared::cli::print_line(table(&results).trim_end())?;
    if let Some(path) = &args.gradescope {
        let json = serde_json::to_string_pretty(&gradescope(&results))
            .context("cannot encode the results")?;
        shared::output::write_file(path, format!("{json}\n").as_bytes())?;
        shared::cli::eprint_line(&format!("xtask: wrote {}", path.display()));
    }
    Ok(())
}

/// The student's lab binaries, and the labs that did not build with their first error.
struct Student {
    bins: Bins,
    broken: Vec<(String, String)>,
}

impl Student {
    fn prebuilt(dir: &Path, labs: &[&Lab]) -> Result<Student> {
        let missing: Vec<(String, String)> = labs
            .iter()
            .filter(|lab| !dir.join(lab.name).is_file())
            .map(|lab| {
                (
                    lab.name.to_string(),
                    format!("{} is not in {}", lab.name, dir.display()),
                )
            })
            .collect();
        Ok(Student {
            bins: Bins::at(dir.to_path_buf()),
            broken: missing,
        })
    }

    /// Build each graded lab of the workspace `dir` in release, into `target`.
    fn build(dir: &Path, target: &Path, labs: &[&Lab]) -> Result<Student> {
        let manifest = dir.join("Cargo.toml");
        let text = fs::read_to_string(&manifest)
            .with_context(|| format!("{} is not a Cargo workspace", dir.display()))?;
        if !text.contains("[workspace]") {
            bail!("{} is not a Cargo workspace", dir.display());
        }
        // Cargo names the artifacts of a workspace's own packages after their path inside
        // the workspace, so two submissions share them in one target folder and a fresh one
        // could be taken for built. Only the registry dependencies are meant to be shared.
        let mut clean = cargo_command();
        clean
            .args(["clean", "--release", "--quiet"])
            .args(["--package", "shared", "--package", "xtask"])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(target);
        for lab in LABS.iter() {
            clean.args(["--package", lab.package]);
        }
        let cleaned = clean.output().context("cannot run cargo")?;
        if !cleaned.status.success() {
            bail!(
                "cannot clear the last submission's build from {}: {}",
                target.display(),
                String::from_utf8_lossy(&cleaned.stderr).trim()
            );
        }
        let mut broken = Vec::new();
        for lab in labs {
            shared::cli::eprint_line(&format!("xtask: building the student's {}", lab.package));
            let built = cargo_command()
                .args(["build", "--release", "--quiet", "--package", lab.package])
                .arg("--manifest-path")
                .arg(&manifest)
                .arg("--target-dir")
                .arg(target)
                .output()
                .context("cannot run cargo")?;
            if !built.status.success() {
                let stderr = String::from_utf8_lossy(&built.stderr);
                broken.push((lab.name.to_string(), first_error(&stderr)));
            }
        }
        Ok(Student {
            bins: Bins::at(target.join("release")),
            broken,
        })
    }

    fn broken(&self, lab: &str) -> Option<&str> {
        self.broken
            .iter()
            .find(|(name, _)| name == lab)
            .map(|(_, error)| error.as_str())
    }
}

/// One check's result.
struct Graded {
    name: String,
    max: f64,
    hidden: bool,
    outcome: Outcome,
}

/// The `cargo` that runs this xtask (or plain `cargo`), in no particular folder.
fn cargo_command() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The first compiler error and its place: `error[E0425]: ... at lab02-rayon/src/main.rs:57:9`.
fn first_error(stderr: &str) -> String {
    let mut lines = stderr.lines().skip_while(|l| !l.starts_with("error"));
    let Some(error) = lines.next() else {
        return "cargo build failed".to_string();
    };
    match lines.find_map(|l| l.trim_start().strip_prefix("--> ")) {
        Some(place) => format!("{error} at {place}"),
        None => error.to_string(),
    }
}

/// The table on stdout, and the total.
fn table(results: &[Graded]) -> String {
    let mut text = String::from("| check | points | result |\n|---|---:|---|\n");
    let (mut score, mut max, mut not_graded) = (0.0, 0.0, 0.0);
    for r in results {
        let hidden = if r.hidden { " (hidden)" } else { "" };
        let (points, said) = match &r.outcome {
            Outcome::Scored { score: s, output } => {
                score += s;
                max += r.max;
                (format!("{}/{}", round(*s), round(r.max)), output.as_str())
            }
            Outcome::NotGraded(why) => {
                not_graded += r.max;
                (format!("-/{}", round(r.max)), why.as_str())
            }
        };
        let said = said.replace('|', "/");
        text.push_str(&format!("| {}{hidden} | {points} | {said} |\n", r.name));
    }
    text.push_str(&format!("total: {} of {} points", round(score), round(max)));
    if not_graded > 0.0 {
        text.push_str(&format!(
            "; {} more not graded here (needs a GPU)",
            round(not_graded)
        ));
    }
    text.push('\n');
    text
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Gradescope's results.json.
#[derive(Serialize)]
struct Results {
    score: f64,
    tests: Vec<TestResult>,
}

#[derive(Serialize)]
struct TestResult {
    name: String,
    score: f64,
    max_score: f64,
    output: String,
    visibility: &'static str,
}

fn gradescope(results: &[Graded]) -> Results {
    let tests: Vec<TestResult> = results
        .iter()
        .map(|r| {
            let (score, output) = match &r.outcome {
                Outcome::Scored { score, output } => (round(*score), output.clone()),
                Outcome::NotGraded(why) => (0.0, why.clone()),
            };
            TestResult {
                name: r.name.clone(),
                score,
                max_score: r.max,
                output,
                visibility: if r.hidden {
                    "after_published"
                } else {
                    "visible"
                },
            }
        })
        .collect();
    Results {
        score: round(tests.iter().map(|t| t.score).sum()),
        tests,
    }
}
