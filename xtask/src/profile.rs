//! `cargo xtask profile LAB [-- ARGS]`: one lab under Nsight Compute (`ncu`), a small named
//! set of metrics per kernel, printed as a table.
//!
//! Where a kernel's time goes, in the few numbers that explain the labs: how long it ran,
//! how full the SMs were kept (achieved occupancy), how busy they and the FP64 pipe were,
//! how much of L2's and DRAM's bandwidth it used, how many of a warp's 32 lanes did useful
//! work, and what the warps waited on most. Only the first launch of each kernel is profiled:
//! ncu replays a launch once per group of metrics, and lab06 launches each kernel hundreds of
//! times.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::bins::Bins;
use crate::labs;

#[derive(clap::Args)]
pub struct Args {
    /// The lab: lab03 ... lab06
    lab: String,
    /// Use the binaries in this folder (from `cargo xtask dist`) instead of building
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Arguments for the lab, after `--`
    #[arg(last = true)]
    args: Vec<String>,
}

/// A column of the table: its heading and the ncu metric behind it.
struct Metric {
    heading: &'static str,
    name: &'static str,
}

const METRICS: &[Metric] = &[
    Metric {
        heading: "time (us)",
        name: "gpu__time_duration.sum",
    },
    Metric {
        heading: "occupancy %",
        name: "sm__warps_active.avg.pct_of_peak_sustained_active",
    },
    Metric {
        heading: "SM %",
        name: "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    },
    Metric {
        heading: "FP64 pipe %",
        name: "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active",
    },
    Metric {
        heading: "L2 %",
        name: "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    },
    Metric {
        heading: "DRAM %",
        name: "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    },
    Metric {
        heading: "lanes active /32",
        name: "smsp__thread_inst_executed_per_inst_executed.ratio",
    },
];

/// The stall reasons: ncu's cycles per issued instruction that warps spent waiting on each.
const STALL_PREFIX: &str = "smsp__average_warps_issue_stalled_";
const STALL_SUFFIX: &str = "_per_issue_active.ratio";

/// The lab's run if no ARGS are given: small enough to profile in seconds.
const SMALL_RUNS: &[(&str, &[&str])] = &[
    ("lab03", &["1024", "1024"]),
    ("lab04", &["4096", "4096"]),
    ("lab05", &["--backend", "gpu", "--samples", "20000000"]),
    ("lab06", &["--gpu-only", "--reps", "1"]),
];

/// One kernel's row: its name and the metrics' values, as ncu printed them.
#[derive(Debug, PartialEq)]
struct Row {
    kernel: String,
    values: Vec<String>,
    /// The three stall reasons with the most cycles, largest first.
    stalls: Vec<(String, f64)>,
}

pub fn run(args: Args) -> Result<()> {
    let lab = labs::find(&args.lab)?;
    let Some((_, small)) = SMALL_RUNS.iter().find(|(name, _)| *name == lab.name) else {
        bail!(
            "{} runs no kernel; profile one of {}",
            lab.name,
            SMALL_RUNS
                .iter()
                .map(|r| r.0)
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    let ncu = find_ncu().context(
        "ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin: it comes with the \
         CUDA toolkit (https://developer.nvidia.com/nsight-compute) on a machine with an \
         NVIDIA GPU",
    )?;
    let bins = Bins::locate(args.bin_dir, [lab])?;
    let scratch = tempfile::tempdir().context("cannot make a scratch folder")?;
    let mut metrics: Vec<String> = METRICS.iter().map(|m| m.name.to_string()).collect();
    metrics.push(format!("regex:^{STALL_PREFIX}.*{STALL_SUFFIX}$"));
    let mut command = Command::new(&ncu);
    command
        .args(["--csv", "--page", "raw", "--kernel-id", ":::1", "--metrics"])
        .arg(metrics.join(","))
        .arg(std::path::absolute(bins.path(lab.name)).context("cannot find the lab binary")?)
        .current_dir(scratch.path());
    if args.args.is_empty() {
        command.args(*small);
    } else {
        command.args(&args.args);
    }
    shared::cli::eprint_line(&format!(
        "xtask: {} under ncu (each kernel's first launch, replayed once per metric group) ...",
        lab.name
    ));
    let ran = command
        .output()
        .with_context(|| format!("cannot run {}", ncu.display()))?;
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let rows = read_csv(&stdout);
    if rows.is_empty() {
        bail!(
            "ncu profiled no kernel of {} ({}): {}",
            lab.name,
            ran.status,
            String::from_utf8_lossy(&ran.stderr)
                .lines()
                .chain(stdout.lines())
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("no message")
        );
    }
    shared::cli::print_line(&table(&rows))?;
    Ok(())
}

fn find_ncu() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/local/cuda/bin")])
        .map(|dir| dir.join("ncu"))
        .find(|p| p.is_file())
}

/// The kernels' rows of `ncu --csv --page raw`: a heading line, a units line, then one line
/// per profiled launch (lines before the heading are the lab's own output and ncu's notes).
fn read_csv(text: &str) -> Vec<Row> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("\"ID\""))
        .map(fields);
    let Some(heading) = lines.next() else {
        return Vec::new();
    };
    let column = |name: &str| heading.iter().position(|h| h == name);
    let Some(kernel) = column("Kernel Name") else {
        return Vec::new();
    };
    let wanted: Vec<Option<usize>> = METRICS.iter().map(|m| column(m.name)).collect();
    let stall_columns: Vec<(usize, String)> = heading
        .iter()
        .enumerate()
        .filter_map(|(i, h)| {
            let reason = h.strip_prefix(STALL_PREFIX)?.strip_suffix(STALL_SUFFIX)?;
            Some((i, reason.to_string()))
        })
        .collect();
    let Some(units) = lines.next() else {
        return Vec::new();
    };
    lines
        .filter(|cells| cells.len() == heading.len())
        .map(|cells| {
            let mut stalls: Vec<(String, f64)> = stall_columns
                .iter()
                .filter_map(|(i, reason)| Some((reason.clone(), number(&cells[*i])?)))
                .filter(|(_, cycles)| *cycles > 0.0)
                .collect();
            stalls.sort_by(|a, b| b.1.total_cmp(&a.1));
            stalls.truncate(3);
            Row {
                kernel: cells[kernel].clone(),
                values: wanted
                    .iter()
                    .map(|i| match i {
                        Some(i) => in_us(&cells[*i], units.get(*i).map_or("", String::as_str)),
                        None => "n/a".to_string(),
                    })
                    .collect(),
                stalls,
            }
        })
        .collect()
}

/// The fields of one CSV line as ncu writes it: every field in double quotes.
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    out.push(field);
    out
}

/// A duration in microseconds, from ncu's value and unit; any other value as it is.
fn in_us(value: &str, unit: &str) -> String {
    let scale = match unit {
        "nsecond" | "ns" => 1e-3,
        "usecond" | "us" => 1.0,
        "msecond" | "ms" => 1e3,
        _ => return value.to_string(),
    };
    number(value).map_or_else(|| value.to_string(), |x| format!("{:.1}", x * scale))
}

/// `1,234.5` as ncu may print it.
fn number(text: &str) -> Option<f64> {
    text.replace(',', "").trim().parse().ok()
}

fn table(rows: &[Row]) -> String {
    let mut text = String::from("| kernel |");
    for metric in METRICS {
        text.push_str(&format!(" {} |", metric.heading));
    }
    text.push_str(" top stalls (cycles per issue) |\n|---|");
    text.push_str(&"---:|".repeat(METRICS.len()));
    text.push_str("---|\n");
    for row in rows {
        text.push_str(&format!("| {} |", row.kernel));
        for value in &row.values {
            let shown = number(value).map_or_else(|| value.clone(), |x| format!("{x:.1}"));
            text.push_str(&format!(" {shown} |"));
        }
        let stalls: Vec<String> = row
            .stalls
            .iter()
            .map(|(reason, cycles)| format!("{reason} {cycles:.1}"))
            .collect();
        text.push_str(&format!(" {} |\n", stalls.join(", ")));
    }
    text.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of `ncu --csv --page raw`: the lab's own lines first, a heading, units,
    /// then a line per launch.
    fn sample() -> String {
        let mut heading = vec!["\"ID\"".to_string(), "\"Kernel Name\"".to_string()];
        let mut units = vec!["\"\"".to_string(), "\"\"".to_string()];
        let mut row = vec!["\"0\"".to_string(), "\"escape_colour\"".to_string()];
        for (i, metric) in METRICS.iter().enumerate() {
            heading.push(format!("\"{}\"", metric.name));
            units.push(if i == 0 { "\"nsecond\"" } else { "\"%\"" }.to_string());
            row.push(format!(
                "\"{}\"",
                if i == 0 { "1,234,000" } else { "61.25" }
            ));
        }
        for (reason, cycles) in [
            ("wait", "0.5"),
            ("long_scoreboard", "4.25"),
            ("barrier", "0"),
        ] {
            heading.push(format!("\"{STALL_PREFIX}{reason}{STALL_SUFFIX}\""));
            units.push("\"\"".to_string());
            row.push(format!("\"{cycles}\""));
        }
        format!(
            "lab04: 4096x4096 ...\n==PROF== Disconnected\n{}\n{}\n{}\n",
            heading.join(","),
            units.join(","),
            row.join(",")
        )
    }

    #[test]
    fn each_profiled_launch_is_a_row_with_its_top_stalls() {
        let rows = read_csv(&sample());
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].kernel, "escape_colour");
        assert_eq!(rows[0].values[0], "1234.0", "microseconds");
        assert_eq!(
            rows[0].stalls,
            vec![
                ("long_scoreboard".to_string(), 4.25),
                ("wait".to_string(), 0.5)
            ]
        );
        let text = table(&rows);
        assert!(text.contains("| escape_colour | 1234.0 | 61.2 |"), "{text}");
        assert!(text.ends_with("long_scoreboard 4.2, wait 0.5 |"), "{text}");
    }

    #[test]
    fn no_heading_is_no_row() {
        assert!(read_csv("==ERROR== the lab failed\n").is_empty());
    }

    #[test]
    fn quoted_fields_keep_their_commas() {
        assert_eq!(
            fields("\"a\",\"1,234.5\",\"say \"\"x\"\"\""),
            ["a", "1,234.5", "say \"x\""]
        );
        assert_eq!(number("1,234.5"), Some(1234.5));
    }

    #[test]
    fn every_small_run_is_a_gpu_lab() {
        for (name, _) in SMALL_RUNS {
            let lab = labs::find(name).expect("a lab");
            assert!(
                lab.variants.iter().any(|v| v.device != labs::Device::Cpu),
                "{name}"
            );
        }
    }
}
