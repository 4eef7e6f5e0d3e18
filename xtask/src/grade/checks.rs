//! Running one check: the student's lab against this workspace's reference, within the
//! check's time limit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use shared::timing::LabReport;

use super::rubric::{parse_size, Check, Test};
use crate::bins::Bins;
use crate::labs::{self, Lab};
use crate::{ppm, runner};

pub struct Context<'a> {
    pub student: &'a Bins,
    pub reference: &'a Bins,
    pub scratch: &'a Path,
    pub time_limit: Duration,
    pub speed_runs: usize,
}

pub enum Outcome {
    Scored { score: f64, output: String },
    NotGraded(String),
}

impl Outcome {
    pub fn score(score: f64, output: impl Into<String>) -> Outcome {
        Outcome::Scored {
            score,
            output: output.into(),
        }
    }
}

/// Run `check`; whatever goes wrong with the student's program is a failed check.
pub fn run(check: &Check, context: &Context) -> Outcome {
    let deadline = Instant::now() + context.time_limit;
    let dir = context.scratch.join(format!("check-{}", unique()));
    let result = std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))
        .and_then(|()| match &check.test {
            Test::Image {
                size,
                view,
                max_differing,
            } => image(check, context, &dir, deadline, size, view, *max_differing),
            Test::Canvas { args } => canvas(check, context, &dir, deadline, args),
            Test::Sums { args, variants } => sums(check, context, deadline, args, variants),
            Test::Speed {
                args,
                phase,
                compare,
            } => speed(check, context, &dir, deadline, args, phase, compare),
        });
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok((fraction, output)) => Outcome::score(check.points * fraction, output),
        Err(output) => Outcome::score(0.0, output),
    }
}

/// The share of the points earned, and what to tell the student.
type Earned = Result<(f64, String), String>;

fn image(
    check: &Check,
    context: &Context,
    dir: &Path,
    deadline: Instant,
    size: &str,
    view: &[String],
    max_differing: u64,
) -> Earned {
    let (width, height) = parse_size(size).map_err(|e| e.to_string())?;
    let lab01 = find("lab01")?;
    let lab = find(&check.lab)?;
    let expected_file = dir.join("reference.ppm");
    let got_file = dir.join("student.ppm");
    let render = |bins: &Bins, lab: &Lab, file: &Path| {
        let mut command = bins.command(lab);
        command
            .args([&width, &height])
            .args(view)
            .arg("-o")
            .arg(file);
        command
    };
    // The reference is this workspace's business: if it fails, grading cannot go on.
    run_limited(
        &mut render(context.reference, lab01, &expected_file),
        deadline,
    )
    .map_err(|e| format!("the reference lab01 failed (not the student's fault): {e}"))?;
    run_limited(&mut render(context.student, lab, &got_file), deadline)?;
    let expected = ppm::open(&expected_file).map_err(|e| format!("{e:#}"))?;
    let got = ppm::open(&got_file).map_err(|e| format!("wrote no valid image: {e:#}"))?;
    if (got.width, got.height) != (expected.width, expected.height) {
        return Err(format!("wrote a {}x{} image", got.width, got.height));
    }
    let diff = ppm::diff(expected, got).map_err(|e| format!("{e:#}"))?;
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
                Err(what)
            }
        }
    }
}

fn canvas(
    check: &Check,
    context: &Context,
    dir: &Path,
    deadline: Instant,
    args: &[String],
) -> Earned {
    let lab = find(&check.lab)?;
    let mut canvases = Vec::new();
    for (bins, backend) in [(context.reference, "cpu"), (context.student, "gpu")] {
        let raw = dir.join(format!("{backend}.raw"));
        let mut command = bins.command(lab);
        command
            .args(["--backend", backend])
            .args(args)
            .arg("--raw")
            .arg(&raw)
            .arg("-o")
            .arg(dir.join(format!("{backend}.png")));
        run_limited(&mut command, deadline).map_err(|e| match backend {
            "cpu" => format!("the reference CPU canvas failed (not the student's fault): {e}"),
            _ => e,
        })?;
        canvases.push(std::fs::read(&raw).map_err(|e| format!("wrote no canvas: {e}"))?);
    }
    if canvases[0] == canvases[1] {
        return Ok((1.0, format!("identical ({} bytes)", canvases[0].len())));
    }
    if canvases[0].len() != canvases[1].len() {
        return Err(format!(
            "the canvas has {} bytes, the reference {}",
            canvases[1].len(),
            canvases[0].len()
        ));
    }
    let differing = canvases[0]
        .chunks(4)
        .zip(canvases[1].chunks(4))
        .filter(|(a, b)| a != b)
        .count();
    Err(format!("{differing} counters differ from the reference"))
}

fn sums(
    check: &Check,
    context: &Context,
    deadline: Instant,
    args: &[String],
    variants: &[String],
) -> Earned {
    let lab = find(&check.lab)?;
    let mut command = context.student.command(lab);
    command
        .args(args)
        .arg("--variants")
        .arg(variants.join(","))
        .arg("--json");
    let stdout = run_limited(&mut command, deadline)?;
    let report: LabReport = serde_json::from_str(stdout.trim())
        .map_err(|e| format!("printed no valid --json report: {e}"))?;
    if report.metrics.get("sums_ok") != Some(&serde_json::Value::Bool(true)) {
        return Err("the report does not say every sum was exact".to_string());
    }
    let missing: Vec<&str> = variants
        .iter()
        .filter(|v| {
            !report
                .metrics
                .contains_key(&format!("{}_gbps", v.replace('-', "_")))
        })
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(format!("no figure for {}", missing.join(", ")));
    }
    Ok((1.0, "every sum exact".to_string()))
}

/// Alternate the student's and the solution's runs, so drifting clocks hit both alike.
fn speed(
    check: &Check,
    context: &Context,
    dir: &Path,
    deadline: Instant,
    args: &[String],
    phase: &str,
    compare: &str,
) -> Earned {
    let lab = find(&check.lab)?;
    let mut best = BTreeMap::new();
    for run in 0..context.speed_runs.max(1) {
        for (who, bins) in [
            ("solution", context.reference),
            ("student", context.student),
        ] {
            let out = dir.join(format!("{who}-{run}"));
            let out = out.to_string_lossy();
            let expand = |s: &String| PathBuf::from(s.replace("{out}", &out));
            let mut command = bins.command(lab);
            command.args(args.iter().map(expand));
            let stdout = run_limited(&mut command, deadline).map_err(|e| match who {
                "solution" => format!("the solution failed (not the student's fault): {e}"),
                _ => e,
            })?;
            let report: LabReport = serde_json::from_str(stdout.trim())
                .map_err(|e| format!("printed no valid --json report: {e}"))?;
            let ms = *report
                .phases_ms
                .get(phase)
                .ok_or_else(|| format!("reported no {phase} time"))?;
            let entry = best.entry(who).or_insert(f64::INFINITY);
            *entry = f64::min(*entry, ms);
            if run == 0 && who == "student" {
                let theirs = std::fs::read(expand(&compare.to_string()));
                let ours = std::fs::read(PathBuf::from(
                    compare.replace("{out}", &dir.join("solution-0").to_string_lossy()),
                ));
                match (ours, theirs) {
                    (Ok(a), Ok(b)) if a == b => {}
                    _ => {
                        return Err(
                            "its output differs from the solution's: no speed credit".to_string()
                        )
                    }
                }
            }
        }
        // The images of a large speed check take hundreds of MB each: keep one round's only.
        for who in ["solution", "student"] {
            for extension in ["ppm", "raw", "png"] {
                let _ = std::fs::remove_file(dir.join(format!("{who}-{run}.{extension}")));
            }
        }
    }
    let (ours, theirs) = (best["solution"], best["student"]);
    let ratio = theirs / ours;
    let fraction = speed_credit(ratio);
    Ok((
        fraction,
        format!(
            "{phase} {theirs:.3} ms, the solution's {ours:.3} ms (min of {} runs): {ratio:.2}x, {:.0}% of the points",
            context.speed_runs,
            100.0 * fraction
        ),
    ))
}

/// Stanford CS149's rule: full credit up to 1.2 times the reference's time, none from 10
/// times on, linear between.
fn speed_credit(ratio: f64) -> f64 {
    ((10.0 - ratio) / (10.0 - 1.2)).clamp(0.0, 1.0)
}

/// Run `command` with the time left before `deadline`: its stdout if it succeeded, else
/// one line saying how it failed (a hang is killed at the deadline, a crash is named).
fn run_limited(command: &mut Command, deadline: Instant) -> Result<String, String> {
    let left = deadline.saturating_duration_since(Instant::now());
    match runner::run(command, left) {
        Ok(finished) => Ok(String::from_utf8_lossy(&finished.stdout).into_owned()),
        Err(runner::Failure::TimedOut(_)) => {
            Err("did not finish within the check's time limit".to_string())
        }
        Err(failure) => Err(failure.to_string()),
    }
}

/// A lab of the rubric, as a check's error.
fn find(name: &str) -> Result<&'static Lab, String> {
    labs::find(name).map_err(|e| e.to_string())
}

/// A number no other check of this process has used.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_credit_follows_cs149() {
        assert_eq!(speed_credit(0.5), 1.0);
        assert_eq!(speed_credit(1.2), 1.0);
        assert!((speed_credit(5.6) - 0.5).abs() < 1e-12);
        assert_eq!(speed_credit(10.0), 0.0);
        assert_eq!(speed_credit(40.0), 0.0);
    }

    #[test]
    fn a_hang_fails_the_check_at_its_deadline() {
        let start = Instant::now();
        let error = run_limited(
            Command::new("sleep").arg("30"),
            Instant::now() + Duration::from_millis(200),
        )
        .unwrap_err();
        assert_eq!(error, "did not finish within the check's time limit");
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
