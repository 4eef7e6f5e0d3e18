//! `cargo xtask predict`: how your kernels' times on an H100 compare with the reference
//! solution's, on a machine with no GPU. Each GPU lab runs on the CPU device with
//! `--profile`, at the arguments the reference is recorded at (its first `model` run, or
//! every one with `--all`); each launch's prediction is set against the reference's (see
//! `shared/reference-profiles.json`), as the lab's own `--profile` report does. A
//! prediction, never a measurement: `docs/model-h100.csv` says how close the model comes.

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::bins::Bins;
use crate::labs::{self, Lab, ModelRun, LABS};
use crate::model;

#[derive(clap::Args)]
pub struct Args {
    /// One lab [default: every GPU lab the model covers]
    lab: Option<String>,
    /// Every recorded run of each lab, not only its first
    #[arg(long)]
    all: bool,
    /// Use the binaries in this folder (from `cargo xtask dist`) instead of building
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<()> {
    let runs = selected(args.lab.as_deref(), args.all)?;
    if !shared::nvrtc::is_present() {
        bail!(
            "the predictions run the kernels on the CPU device, which needs NVRTC: {}",
            crate::nvrtc::install_hint()
        );
    }
    let bins = Bins::locate(args.bin_dir, runs.iter().map(|(lab, _)| *lab))?;
    let scratch = tempfile::tempdir()?;
    let mut table = String::from(
        "Predicted on an H100 by the CPU device's model (not measured), against the reference solution's kernels at the same arguments\n\n\
         | lab | run | kernel | predicted ms | reference's ms | x reference | what differs most |\n\
         |---|---|---|---:|---:|---:|---|\n",
    );
    for (lab, run) in runs {
        let report = model::once(&bins, lab, run, &scratch, true)?;
        let launches = report
            .profile
            .as_ref()
            .and_then(|p| p.as_array())
            .cloned()
            .unwrap_or_default();
        for launch in launches {
            let compared = &launch["against_reference"];
            let (reference, ratio, differs) = match compared.get("outside").and_then(|o| o.as_str())
            {
                Some(why) => (
                    "-".to_string(),
                    "-".to_string(),
                    format!("the model cannot say: {why}"),
                ),
                None if compared.is_object() => (
                    format!(
                        "{:.4}",
                        compared["reference_ms"].as_f64().unwrap_or(f64::NAN)
                    ),
                    format!("{:.2}", compared["time_ratio"].as_f64().unwrap_or(f64::NAN)),
                    format!(
                        "{}; {:.0}% SIMT efficiency against {:.0}%",
                        match compared["class"].as_str() {
                            Some(class) => format!(
                                "{:.2}x the {class} instructions",
                                compared["class_ratio"].as_f64().unwrap_or(f64::NAN)
                            ),
                            None => "as many instructions of each class".to_string(),
                        },
                        100.0 * compared["simt_efficiency"].as_f64().unwrap_or(f64::NAN),
                        100.0
                            * compared["reference_simt_efficiency"]
                                .as_f64()
                                .unwrap_or(f64::NAN),
                    ),
                ),
                None => (
                    "-".to_string(),
                    "-".to_string(),
                    "no reference recorded at these arguments".to_string(),
                ),
            };
            table += &format!(
                "| {} | {} | {} | {:.4} | {reference} | {ratio} | {differs} |\n",
                lab.name,
                run.name,
                launch["kernel"].as_str().unwrap_or("?"),
                launch["prediction"]["ms"].as_f64().unwrap_or(f64::NAN),
            );
        }
    }
    shared::cli::print_line(table.trim_end())?;
    Ok(())
}

/// The runs to predict: `lab`'s (or every covered lab's), the first of each lab unless `all`.
fn selected(lab: Option<&str>, all: bool) -> Result<Vec<(&'static Lab, &'static ModelRun)>> {
    let only = lab.map(labs::find).transpose()?;
    let mut runs = model::runs(&LABS);
    runs.retain(|(lab, _)| only.is_none_or(|only| only.name == lab.name));
    if !all {
        let mut seen = Vec::new();
        runs.retain(|(lab, _)| {
            let first = !seen.contains(&lab.name);
            seen.push(lab.name);
            first
        });
    }
    if runs.is_empty() {
        let mut covered: Vec<&str> = model::runs(&LABS).iter().map(|(lab, _)| lab.name).collect();
        covered.dedup();
        bail!(
            "the model has no runs of that lab: it covers {}",
            covered.join(", ")
        );
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One run per covered lab by default, each lab's every run with `--all`, and a lab the
    /// model has no runs of named with the labs it covers (from the table, not by name).
    #[test]
    fn the_runs_are_the_first_of_each_lab_or_all_of_one() {
        let names = |runs: Vec<(&Lab, &ModelRun)>| -> Vec<&str> {
            runs.iter().map(|(lab, _)| lab.name).collect()
        };
        let covered: Vec<&str> = LABS
            .iter()
            .filter(|lab| lab.kernels.as_ref().is_some_and(|k| !k.model.is_empty()))
            .map(|lab| lab.name)
            .collect();
        assert_eq!(names(selected(None, false).expect("runs")), covered);
        let lab = covered[0];
        let all = selected(Some(lab), true).expect("runs");
        assert!(all.len() > 1 && names(all).iter().all(|name| *name == lab));
        let uncovered = LABS
            .iter()
            .find(|lab| !covered.contains(&lab.name))
            .expect("a lab without model runs");
        let why = selected(Some(uncovered.name), false)
            .expect_err("refused")
            .to_string();
        assert_eq!(
            why,
            format!(
                "the model has no runs of that lab: it covers {}",
                covered.join(", ")
            )
        );
    }
}
