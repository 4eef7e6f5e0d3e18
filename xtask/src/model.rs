//! `cargo xtask model`: how close the CPU device's model of the H100 comes to the H100.
//!
//! Each GPU lab's model runs (`KernelRuns::model` in the labs' table) run on the GPU, timed
//! (the median of `--runs` kernel times, as each lab's `--json` reports them), and once on
//! the CPU device with `--profile`, predicted (the sum of its launches' predictions). A lab's
//! first run is the one its others are compared with: the model is asked to say how much
//! slower or faster a change makes a kernel, as a student asks it. The table gives both
//! times and both ratios, the rank correlation over every run (Spearman's), the runs whose
//! predicted ratio is more than 25% from the measured one, and with `--save`, the CSV that
//! `docs/model-h100.csv` records. `--measured FILE` takes the GPU's times from such a CSV
//! instead, so that a change to the model is measured against the same runs on a machine
//! with no GPU.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::bins::Bins;
use crate::labs::{self, Lab, ModelRun, Table, LABS};
use crate::runner::{self, Failure};

#[derive(clap::Args)]
pub struct Args {
    /// Use the binaries in this folder (from `cargo xtask dist`) instead of building
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// GPU runs of each, the median counts
    #[arg(long, default_value_t = 5, value_parser = crate::values::at_least_one_u32("--runs"))]
    runs: u32,
    /// Also write every run's figures to FILE as CSV
    #[arg(long, value_name = "FILE")]
    save: Option<PathBuf>,
    /// Take the GPU's times from FILE (a CSV `--save` wrote) instead of running the GPU
    #[arg(long, value_name = "FILE")]
    measured: Option<PathBuf>,
    /// Also write every run's profiles to FILE (JSON, by lab and arguments): the reference
    /// a lab's `--emulate --profile` sets its launches against (shared/reference-profiles.json)
    #[arg(long, value_name = "FILE")]
    record_reference: Option<PathBuf>,
}

/// The largest error of a predicted ratio the validation accepts.
const WITHIN: f64 = 0.25;

/// One run's two figures.
struct Row {
    lab: &'static Lab,
    run: &'static ModelRun,
    measured_ms: f64,
    predicted_ms: f64,
    bound: String,
}

/// The runs `model` makes, in lab order.
pub fn runs(table: Table) -> Vec<(&'static Lab, &'static ModelRun)> {
    labs::with_kernels(table)
        .flat_map(|(lab, kernels)| kernels.model.iter().map(move |run| (lab, run)))
        .collect()
}

pub fn run(args: Args) -> Result<()> {
    run_with(args, &[])
}

/// `model` with more runs: each after its lab's own (a lab's first run stays the one its
/// others are compared with; for a lab with none, its first here is).
pub fn run_with(args: Args, more: &[(&'static Lab, &'static ModelRun)]) -> Result<()> {
    if !more.is_empty() && args.record_reference.is_some() {
        bail!("--record-reference records the labs' own runs alone: use `cargo xtask model`");
    }
    let mut runs = runs(&LABS);
    for &(lab, run) in more {
        let after = runs
            .iter()
            .rposition(|(l, _)| l.name <= lab.name)
            .map_or(0, |i| i + 1);
        runs.insert(after, (lab, run));
    }
    let recorded = args.measured.as_deref().map(read_measured).transpose()?;
    let device = match &recorded {
        Some((device, _)) => device.clone(),
        None => crate::gpu::probe().map_err(|why| {
            anyhow::anyhow!(
                "the model is compared with a GPU's times, and none opens here: {why} \
                 (--measured FILE takes them from a CSV an earlier run saved)"
            )
        })?,
    };
    if !shared::nvrtc::is_present() {
        bail!("the model's predictions need the CPU device, which needs NVRTC: run `cargo xtask install-nvrtc`");
    }
    let bins = Bins::locate(args.bin_dir, runs.iter().map(|(lab, _)| *lab))?;
    let save = args
        .save
        .as_deref()
        .map(shared::output::Output::create)
        .transpose()?;
    let record = args
        .record_reference
        .as_deref()
        .map(shared::output::Output::create)
        .transpose()?;
    let mut profiles = serde_json::Map::new();
    let scratch = tempfile::tempdir().context("cannot make a scratch folder")?;
    let mut rows = Vec::new();
    for (lab, run) in runs {
        let measured_ms = match &recorded {
            Some((_, times)) => *times.get(&(lab.name.to_string(), run.name.to_string())).with_context(|| {
                format!("no measured time for {} {} in the CSV: measure it on a GPU (`cargo xtask model --save FILE`)", lab.name, run.name)
            })?,
            None => {
                let mut times = Vec::new();
                for _ in 0..args.runs {
                    let report = once(&bins, lab, run, &scratch, false)?;
                    times.push(report.phases_ms.get("kernel").copied().unwrap_or(f64::NAN));
                }
                times.sort_by(f64::total_cmp);
                times[times.len() / 2]
            }
        };
        let report = once(&bins, lab, run, &scratch, true)?;
        let launches = report
            .profile
            .as_ref()
            .and_then(|p| p.as_array())
            .filter(|launches| !launches.is_empty())
            .with_context(|| format!("{} {}: --profile reported no launch", lab.name, run.name))?;
        let (untimed, back_to_back) = lab
            .kernels
            .as_ref()
            .map_or((&[][..], false), |k| (k.untimed, k.back_to_back));
        let timed: Vec<&serde_json::Value> = launches
            .iter()
            .filter(|l| !untimed.iter().any(|u| l["kernel"] == *u))
            .collect();
        let predicted_ms = timed
            .iter()
            .map(|l| {
                let ms = l["prediction"]["ms"].as_f64().unwrap_or(f64::NAN);
                let launch = l["prediction"]["launch_ms"].as_f64().unwrap_or(0.0);
                if back_to_back {
                    ms - launch
                } else {
                    ms
                }
            })
            .sum();
        let bound = timed
            .first()
            .and_then(|l| l["prediction"]["bound"].as_str())
            .unwrap_or("")
            .to_string();
        if let serde_json::Value::Object(runs) = profiles
            .entry(lab.name)
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()))
        {
            runs.insert(run.args.join(" "), as_reference(launches));
        }
        let row = Row {
            lab,
            run,
            measured_ms,
            predicted_ms,
            bound,
        };
        shared::cli::eprint_line(&format!(
            "model: {} {}: measured {:.4} ms, predicted {:.4} ms",
            lab.name, run.name, row.measured_ms, row.predicted_ms
        ));
        rows.push(row);
    }
    let summary = Summary::of(&rows);
    shared::cli::print_line(&table(&rows, &device))?;
    shared::cli::print_line(&summary.text(rows.len()))?;
    if let Some(mut save) = save {
        save.write_all(csv(&rows, &device).as_bytes())?;
        save.commit()?;
    }
    if let Some(mut record) = record {
        let text = serde_json::to_string_pretty(&profiles)?;
        record.write_all(text.as_bytes())?;
        record.write_all(b"\n")?;
        record.commit()?;
    }
    Ok(())
}

/// Each run's measured time, by lab and run name.
type Measured = HashMap<(String, String), f64>;

/// The device and each run's time in a CSV `--save` wrote, by lab and run.
/// Launches as a reference records them: their own counts and predictions, not their
/// comparison with the reference they replace.
fn as_reference(launches: &[serde_json::Value]) -> serde_json::Value {
    let launches = launches.iter().cloned().map(|mut launch| {
        if let Some(fields) = launch.as_object_mut() {
            fields.remove("against_reference");
        }
        launch
    });
    launches.collect()
}

fn read_measured(path: &std::path::Path) -> Result<(String, Measured)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = text.lines();
    let header = lines
        .next()
        .and_then(crate::csv::fields)
        .unwrap_or_default();
    let column = |name: &str| header.iter().position(|h| h == name);
    let (Some(lab), Some(run), Some(ms), Some(device)) = (
        column("lab"),
        column("run"),
        column("measured_ms"),
        column("device"),
    ) else {
        bail!(
            "{} is not a CSV `cargo xtask model --save` wrote",
            path.display()
        );
    };
    let mut times = HashMap::new();
    let mut on = String::new();
    for (n, line) in lines.enumerate() {
        let fields = crate::csv::fields(line).unwrap_or_default();
        let (Some(l), Some(r), Some(m), Some(d)) = (
            fields.get(lab),
            fields.get(run),
            fields.get(ms),
            fields.get(device),
        ) else {
            bail!(
                "{} line {}: not a row of `cargo xtask model --save`",
                path.display(),
                n + 2
            );
        };
        let m: f64 = m
            .parse()
            .with_context(|| format!("{} line {}: {m} is not a time", path.display(), n + 2))?;
        times.insert((l.clone(), r.clone()), m);
        on.clone_from(d);
    }
    Ok((on, times))
}

/// One run of `lab` with the model run's arguments: on the GPU, or on the CPU device with
/// `--profile`.
pub(crate) fn once(
    bins: &Bins,
    lab: &'static Lab,
    run: &ModelRun,
    scratch: &tempfile::TempDir,
    predicted: bool,
) -> Result<shared::timing::LabReport> {
    let mut command = bins.command(lab);
    command.args(run.args);
    if let Some(extension) = lab.work.image_extension() {
        command
            .arg("-o")
            .arg(scratch.path().join(format!("out.{extension}")));
    }
    if predicted {
        command.args(["--emulate", "--profile"]);
        if let Some((variable, path)) = crate::nvrtc::library_path() {
            command.env(variable, path);
        }
    } else {
        command.env_remove(shared::gpu::EMULATE_VARIABLE);
    }
    let limit = std::time::Duration::from_secs(600);
    runner::report(&mut command, limit)
        .map(|(report, _)| report)
        .map_err(|e: Failure| anyhow::anyhow!("{} {}: {e}", lab.name, run.name))
}

/// Each run's ratio to its lab's first run, measured and predicted.
fn ratios(rows: &[Row]) -> Vec<(f64, f64)> {
    rows.iter()
        .map(|row| {
            let first = rows
                .iter()
                .find(|r| r.lab.name == row.lab.name)
                .unwrap_or(row);
            (
                row.measured_ms / first.measured_ms,
                row.predicted_ms / first.predicted_ms,
            )
        })
        .collect()
}

struct Summary {
    spearman: f64,
    within: usize,
    misses: Vec<String>,
}

impl Summary {
    fn of(rows: &[Row]) -> Summary {
        let measured: Vec<f64> = rows.iter().map(|r| r.measured_ms).collect();
        let predicted: Vec<f64> = rows.iter().map(|r| r.predicted_ms).collect();
        let mut within = 0;
        let mut misses = Vec::new();
        for (row, (m, p)) in rows.iter().zip(ratios(rows)) {
            if (p / m - 1.0).abs() <= WITHIN {
                within += 1;
            } else {
                misses.push(format!(
                    "{} {} (measured {m:.2}x, predicted {p:.2}x)",
                    row.lab.name, row.run.name
                ));
            }
        }
        Summary {
            spearman: spearman(&measured, &predicted),
            within,
            misses,
        }
    }

    fn text(&self, runs: usize) -> String {
        let mut text = format!(
            "rank correlation (Spearman) over {runs} runs: {:.3} (the target: 0.9 or more)\n\
             ratios to the lab's first run within {:.0}% of the measured: {} of {runs}",
            self.spearman,
            WITHIN * 100.0,
            self.within
        );
        if !self.misses.is_empty() {
            text += &format!("\nfurther off: {}", self.misses.join("; "));
        }
        text
    }
}

/// Spearman's rank correlation: Pearson's of the ranks, ties taking their mean rank.
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let mean = (n - 1.0) / 2.0;
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        cov += (x - mean) * (y - mean);
        va += (x - mean).powi(2);
        vb += (y - mean).powi(2);
    }
    cov / (va * vb).sqrt()
}

fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start;
        while end + 1 < order.len() && values[order[end + 1]] == values[order[start]] {
            end += 1;
        }
        for &i in &order[start..=end] {
            ranks[i] = (start + end) as f64 / 2.0;
        }
        start = end + 1;
    }
    ranks
}

fn table(rows: &[Row], device: &str) -> String {
    let mut out = format!(
        "Kernel times on {device} (median of the GPU's runs) and as the CPU device's H100 model predicts them\n\n\
         | lab | run | measured ms | predicted ms | measured x first | predicted x first | model's bound |\n\
         |---|---|---:|---:|---:|---:|---|\n"
    );
    for (row, (m, p)) in rows.iter().zip(ratios(rows)) {
        out += &format!(
            "| {} | {} | {:.4} | {:.4} | {m:.2} | {p:.2} | {} |\n",
            row.lab.name, row.run.name, row.measured_ms, row.predicted_ms, row.bound
        );
    }
    out
}

fn csv(rows: &[Row], device: &str) -> String {
    let mut out = String::from(
        "lab,run,args,measured_ms,predicted_ms,measured_ratio,predicted_ratio,bound,device\n",
    );
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    for (row, (m, p)) in rows.iter().zip(ratios(rows)) {
        out += &format!(
            "{},{},{},{:.5},{:.5},{m:.4},{p:.4},{},{}\n",
            row.lab.name,
            quote(row.run.name),
            quote(&row.run.args.join(" ")),
            row.measured_ms,
            row.predicted_ms,
            quote(&row.bound),
            quote(device)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same order: 1; reversed: -1; a tie takes the mean rank.
    #[test]
    fn spearman_is_the_rank_correlation() {
        let a = [1.0, 2.0, 3.0, 4.0];
        assert!((spearman(&a, &[10.0, 20.0, 30.0, 40.0]) - 1.0).abs() < 1e-12);
        assert!((spearman(&a, &[4.0, 3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        assert_eq!(ranks(&[5.0, 1.0, 5.0]), [1.5, 0.0, 1.5]);
    }

    /// A recorded reference keeps each launch's counts and prediction and drops its
    /// comparison with the reference it replaces (which would compare the next with a
    /// stale one).
    #[test]
    fn a_reference_drops_the_comparison_it_was_printed_with() {
        let launch = serde_json::json!({
            "kernel": "escape_colour",
            "prediction": {"ms": 0.1},
            "against_reference": {"time_ratio": 1.0},
        });
        let recorded = as_reference(&[launch]);
        assert_eq!(
            recorded,
            serde_json::json!([{"kernel": "escape_colour", "prediction": {"ms": 0.1}}])
        );
    }
}
