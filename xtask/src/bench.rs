//! `cargo xtask bench`: time the Mandelbrot labs over a range of square sizes, several runs
//! each, and write the medians as a Markdown table, a CSV file and an SVG chart.
//!
//! Each run records the lab's own `--json` phases and the whole-process wall time, measured
//! here from spawn to exit. Speedups compare wall times: that is what a user waits for, and
//! it is measured the same way for every lab, whatever the lab reports about itself.
//!
//! lab05 and lab06 (`--include`) are not Mandelbrot renderers: they run with their own
//! defaults and their numeric metrics go into a second table, `extras.csv`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use shared::timing::{LabReport, Phase};

use crate::bins::Bins;
use crate::labs::{self, Lab, LABS};
use crate::{chart, gpu};

#[derive(clap::Args)]
pub struct Args {
    /// Use the binaries in this folder (from `cargo xtask dist`) instead of building
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Square image sides to time, e.g. `--sizes 512,2048` [default: 512, 1024, ..., 16384]
    #[arg(long, value_delimiter = ',', value_parser = parse_side)]
    sizes: Vec<u32>,
    /// Runs per lab and size; the tables show the median
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// The Mandelbrot labs to time, e.g. `--labs lab01,lab04` [default: lab01 to lab04]
    #[arg(long, value_delimiter = ',')]
    labs: Vec<String>,
    /// The largest side the CPU labs (lab01, lab02) are timed at: sequential lab01 takes
    /// about 15 s per run at 16384 on one core; pass 16384 to time them everywhere
    #[arg(long, default_value_t = 8192, value_parser = parse_side)]
    max_cpu_size: u32,
    /// Also run these labs with their defaults and tabulate their metrics: lab05, lab06
    #[arg(long, value_delimiter = ',')]
    include: Vec<String>,
    /// lab05's `--samples` when it is included [default: lab05's own]
    #[arg(long, value_name = "N")]
    lab05_samples: Option<u64>,
    /// Where bench.md, bench.csv, bench.svg and extras.csv go (and the images, while they last)
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
}

/// One successful run of a lab.
struct Run {
    report: LabReport,
    wall_ms: f64,
}

/// The medians of one Mandelbrot lab at one size: a line of the table and of the CSV.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub lab: String,
    pub size: u32,
    pub device: String,
    pub runs: usize,
    /// Median milliseconds per phase, `total` included.
    pub phases: BTreeMap<String, f64>,
    pub wall_ms: f64,
}

/// The median of one metric of lab05 or lab06.
#[derive(Debug, Clone, PartialEq)]
struct Extra {
    lab: String,
    metric: String,
    median: f64,
}

/// The labs speedups are measured against, where they were timed.
const BASELINES: [&str; 2] = ["lab01", "lab02"];

fn baselines(rows: &[Row]) -> Vec<&'static str> {
    BASELINES
        .into_iter()
        .filter(|base| rows.iter().any(|row| row.lab == *base))
        .collect()
}

/// Phases in the order work happens; `total` has a column of its own.
const PHASES: [Phase; 8] = [
    Phase::Context,
    Phase::Compile,
    Phase::Allocate,
    Phase::Compute,
    Phase::Colour,
    Phase::Kernel,
    Phase::CopyBack,
    Phase::Write,
];

pub fn run(args: Args) -> crate::Result<()> {
    let mandelbrot = choose(&args.labs, true)?;
    let extras = choose(&args.include, false)?;
    let sizes = if args.sizes.is_empty() {
        (9..=14).map(|power| 1 << power).collect()
    } else {
        args.sizes.clone()
    };

    let mut notes = Vec::new();
    let mandelbrot = runnable(mandelbrot, &mut notes);
    let jobs = plan(&mandelbrot, &sizes, args.max_cpu_size, &mut notes);
    if jobs.is_empty() && extras.is_empty() {
        return Err(format!("nothing to time: {}", notes.join("; ")));
    }

    let needed: Vec<Lab> = mandelbrot.iter().chain(&extras).copied().collect();
    let bins = Bins::locate(args.bin_dir.clone(), &needed)?;
    fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;

    let bar = progress_bar((jobs.len() + extras.len()) as u64 * u64::from(args.runs));
    let mut rows = Vec::new();
    for &(lab, size) in &jobs {
        let label = format!("{} at {size}", lab.name);
        let runs = repeat(&bar, args.runs, &label, &mut notes, || {
            time_mandelbrot(&bins, &lab, size, &args.out)
        });
        rows.extend(summarise(lab.name, size, &runs));
    }
    let mut extra_rows = Vec::new();
    for lab in &extras {
        let runs = repeat(&bar, args.runs, lab.name, &mut notes, || {
            time_extra(&bins, lab, args.lab05_samples, &args.out)
        });
        extra_rows.extend(summarise_extras(lab.name, &runs));
    }
    bar.finish_and_clear();
    if rows.is_empty() && extra_rows.is_empty() {
        return Err(format!("no run succeeded: {}", notes.join("; ")));
    }
    report(&args.out, &rows, &extra_rows, &notes, args.runs)
}

/// The table on stdout, and the files.
fn report(
    out: &Path,
    rows: &[Row],
    extras: &[Extra],
    notes: &[String],
    runs: u32,
) -> crate::Result<()> {
    let markdown = markdown(rows, extras, notes, runs);
    print!("{markdown}");
    write(&out.join("bench.md"), &markdown)?;
    write(&out.join("bench.csv"), &csv(rows))?;
    if !rows.is_empty() {
        chart::draw(&out.join("bench.svg"), rows)?;
    }
    if !extras.is_empty() {
        write(&out.join("extras.csv"), &extras_csv(extras))?;
    }
    eprintln!("bench: results in {}", out.display());
    Ok(())
}

/// The labs this machine can run: without a GPU, the GPU labs are noted with the reason.
fn runnable(labs: Vec<Lab>, notes: &mut Vec<String>) -> Vec<Lab> {
    if !labs.iter().any(|lab| lab.gpu) {
        return labs;
    }
    let Err(why) = gpu::probe() else {
        return labs;
    };
    let (gpu_labs, cpu_labs): (Vec<Lab>, Vec<Lab>) = labs.into_iter().partition(|lab| lab.gpu);
    notes.push(format!("{}: skipped, {why}", names(&gpu_labs)));
    cpu_labs
}

/// The labs named on the command line (all of the kind if none), each once, in lab order.
fn choose(names: &[String], mandelbrot: bool) -> crate::Result<Vec<Lab>> {
    let (flag, kind) = if mandelbrot {
        ("--labs", "a Mandelbrot lab (lab01 to lab04)")
    } else {
        ("--include", "lab05 or lab06")
    };
    let mut chosen = Vec::new();
    for name in names {
        let lab = labs::find(name)?;
        if lab.mandelbrot != mandelbrot {
            return Err(format!("{flag} takes {kind}, not {}", lab.name));
        }
        chosen.push(lab);
    }
    if names.is_empty() && mandelbrot {
        chosen = LABS.iter().copied().filter(|lab| lab.mandelbrot).collect();
    }
    Ok(LABS
        .into_iter()
        .filter(|lab| chosen.contains(lab))
        .collect())
}

/// Every (lab, size) to time, smallest sizes first so early results cover every lab. The CPU
/// labs stop at `max_cpu_size`.
fn plan(
    labs: &[Lab],
    sizes: &[u32],
    max_cpu_size: u32,
    notes: &mut Vec<String>,
) -> Vec<(Lab, u32)> {
    let capped: Vec<Lab> = labs.iter().copied().filter(|lab| !lab.gpu).collect();
    if !capped.is_empty() && sizes.iter().any(|&size| size > max_cpu_size) {
        notes.push(format!(
            "{}: sizes above {max_cpu_size} skipped (raise --max-cpu-size to time them)",
            names(&capped)
        ));
    }
    let mut jobs = Vec::new();
    for &size in sizes {
        for lab in labs {
            if lab.gpu || size <= max_cpu_size {
                jobs.push((*lab, size));
            }
        }
    }
    jobs
}

fn names(labs: &[Lab]) -> String {
    labs.iter()
        .map(|lab| lab.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A bar on stderr, hidden when stderr is not a terminal (indicatif's own rule). No steady
/// tick: a redraw thread would compete with the CPU labs for cores.
fn progress_bar(len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {elapsed} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

/// `count` runs of `once`; the first failure is noted and ends the series, since the next
/// run would fail the same way (lab03 at sizes wider than its block limit, say).
fn repeat(
    bar: &ProgressBar,
    count: u32,
    label: &str,
    notes: &mut Vec<String>,
    mut once: impl FnMut() -> crate::Result<Run>,
) -> Vec<Run> {
    let mut runs = Vec::new();
    for done in 0..count {
        bar.set_message(format!("{label}, run {}/{count}", done + 1));
        match once() {
            Ok(run) => runs.push(run),
            Err(e) => {
                let note = format!("{label}: failed after {done} run(s): {e}");
                bar.suspend(|| eprintln!("bench: {note}"));
                notes.push(note);
                bar.inc(u64::from(count - done));
                break;
            }
        }
        bar.inc(1);
    }
    runs
}

/// One Mandelbrot run; its image goes to a file in `out` that is deleted at once (the 16384
/// image is 805 MB).
fn time_mandelbrot(bins: &Bins, lab: &Lab, size: u32, out: &Path) -> crate::Result<Run> {
    let image = out.join(format!(".bench-{}-{size}.ppm", lab.name));
    let mut command = bins.command(lab);
    command
        .arg(size.to_string())
        .arg(size.to_string())
        .arg("-o")
        .arg(&image);
    let run = time_json(command);
    // The labs write atomically, so a failed run leaves no file; a finished one does.
    let _ = fs::remove_file(&image);
    run
}

/// One run of lab05 or lab06 with its defaults (lab05's picture goes into `out`, then away).
fn time_extra(
    bins: &Bins,
    lab: &Lab,
    lab05_samples: Option<u64>,
    out: &Path,
) -> crate::Result<Run> {
    let mut command = bins.command(lab);
    let picture = out.join(format!(".bench-{}.png", lab.name));
    if lab.name == "lab05" {
        command.arg("-o").arg(&picture);
        if let Some(samples) = lab05_samples {
            command.arg("--samples").arg(samples.to_string());
        }
    }
    let run = time_json(command);
    let _ = fs::remove_file(&picture);
    run
}

/// Run a lab with `--json`, timing it from spawn to exit, and read its report.
fn time_json(mut command: std::process::Command) -> crate::Result<Run> {
    command.arg("--json");
    let started = Instant::now();
    let output = command
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("no message");
        return Err(format!("{} ({last})", output.status));
    }
    let report = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("its --json output is not a lab report: {e}"))?;
    Ok(Run { report, wall_ms })
}

/// The median, the mean of the middle two for an even count; `None` for no values.
fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[mid]),
        _ => Some((sorted[mid - 1] + sorted[mid]) / 2.0),
    }
}

/// The medians of a series of runs, each phase over the runs that report it.
fn summarise(lab: &str, size: u32, runs: &[Run]) -> Option<Row> {
    let mut phases: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in runs {
        for (phase, &ms) in &run.report.phases_ms {
            phases.entry(phase.clone()).or_default().push(ms);
        }
    }
    let walls: Vec<f64> = runs.iter().map(|run| run.wall_ms).collect();
    Some(Row {
        lab: lab.to_string(),
        size,
        device: runs.first()?.report.device.clone(),
        runs: runs.len(),
        phases: phases
            .into_iter()
            .filter_map(|(phase, ms)| Some((phase, median(&ms)?)))
            .collect(),
        wall_ms: median(&walls)?,
    })
}

/// The medians of every numeric metric of lab05 or lab06, with its phases and wall time.
fn summarise_extras(lab: &str, runs: &[Run]) -> Vec<Extra> {
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in runs {
        let mut leaves = Vec::new();
        for (key, value) in &run.report.metrics {
            numeric_leaves(key, value, &mut leaves);
        }
        for (phase, &ms) in &run.report.phases_ms {
            leaves.push((format!("{phase}_ms"), ms));
        }
        leaves.push(("wall_ms".to_string(), run.wall_ms));
        for (metric, value) in leaves {
            values.entry(metric).or_default().push(value);
        }
    }
    values
        .into_iter()
        .filter_map(|(metric, series)| {
            Some(Extra {
                lab: lab.to_string(),
                metric,
                median: median(&series)?,
            })
        })
        .collect()
}

/// The numbers inside a metric, named by their path (`variants.plain.gbps`): lab06 may nest
/// its per-variant figures. Text and flags have no median and are left out.
fn numeric_leaves(name: &str, value: &serde_json::Value, out: &mut Vec<(String, f64)>) {
    match value {
        serde_json::Value::Number(n) => out.extend(n.as_f64().map(|v| (name.to_string(), v))),
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                numeric_leaves(&format!("{name}.{key}"), inner, out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                numeric_leaves(&format!("{name}.{i}"), inner, out);
            }
        }
        _ => {}
    }
}

/// How many times faster `row` is than `baseline` at the same size, by wall time.
fn speedup(rows: &[Row], row: &Row, baseline: &str) -> Option<f64> {
    rows.iter()
        .find(|other| other.lab == baseline && other.size == row.size)
        .map(|base| base.wall_ms / row.wall_ms)
}

/// The phases any row reports, `total` aside, in the order work happens; unknown ones after.
fn phase_columns(rows: &[Row]) -> Vec<String> {
    let mut columns: Vec<String> = rows
        .iter()
        .flat_map(|row| row.phases.keys().cloned())
        .filter(|phase| phase != Phase::Total.name())
        .collect();
    columns.sort_by_key(|phase| {
        let known = PHASES.iter().position(|p| p.name() == phase);
        (known.unwrap_or(PHASES.len()), phase.clone())
    });
    columns.dedup();
    columns
}

/// Milliseconds with three significant figures or so, for a person.
fn ms(value: f64) -> String {
    match value {
        v if v >= 100.0 => format!("{v:.0}"),
        v if v >= 10.0 => format!("{v:.1}"),
        v => format!("{v:.2}"),
    }
}

fn markdown(rows: &[Row], extras: &[Extra], notes: &[String], runs: u32) -> String {
    let mut md = String::new();
    if !rows.is_empty() {
        md += &mandelbrot_table(rows, runs);
    }
    if !extras.is_empty() {
        md += &format!("\n## Other labs: median of {runs} run(s)\n\n| lab | metric | median |\n|---|---|---:|\n");
        for extra in extras {
            md += &format!(
                "| {} | {} | {} |\n",
                extra.lab,
                extra.metric,
                number(extra.median)
            );
        }
    }
    if !notes.is_empty() {
        md += "\nNot timed:\n\n";
        for note in notes {
            md += &format!("- {note}\n");
        }
    }
    md
}

fn mandelbrot_table(rows: &[Row], runs: u32) -> String {
    let phases = phase_columns(rows);
    let mut md = format!("## Mandelbrot labs: median of {runs} run(s), milliseconds\n\n");
    md += &devices_line(rows);
    md += "`total` is the lab's own clock; `wall` is the whole process, spawn to exit; \
           speedups compare `wall` at the same size.\n\n";
    let mut header = vec!["lab".to_string(), "size".to_string()];
    header.extend(phases.iter().cloned());
    header.extend(["total", "wall"].map(String::from));
    let bases = baselines(rows);
    header.extend(bases.iter().map(|base| format!("vs {base}")));
    md += &format!("| {} |\n", header.join(" | "));
    md += &format!("|---|{}\n", "---:|".repeat(header.len() - 1));
    for row in rows {
        let mut cells = vec![row.lab.clone(), row.size.to_string()];
        for phase in phases.iter().map(String::as_str).chain(["total"]) {
            cells.push(row.phases.get(phase).map_or("-".to_string(), |&v| ms(v)));
        }
        cells.push(ms(row.wall_ms));
        for &base in &bases {
            let times = speedup(rows, row, base);
            cells.push(times.map_or("-".to_string(), |x| format!("{x:.2}x")));
        }
        md += &format!("| {} |\n", cells.join(" | "));
    }
    md
}

/// "Devices: CPU, 2 threads (lab01, lab02); NVIDIA H100 (lab03, lab04)."
fn devices_line(rows: &[Row]) -> String {
    let mut devices: Vec<(String, Vec<String>)> = Vec::new();
    for row in rows {
        match devices.iter_mut().find(|(device, _)| *device == row.device) {
            Some((_, labs)) if labs.contains(&row.lab) => {}
            Some((_, labs)) => labs.push(row.lab.clone()),
            None => devices.push((row.device.clone(), vec![row.lab.clone()])),
        }
    }
    let parts: Vec<String> = devices
        .iter()
        .map(|(device, labs)| format!("{device} ({})", labs.join(", ")))
        .collect();
    format!("Devices: {}.\n\n", parts.join("; "))
}

/// A metric's median, without a float's noise.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value:.4}")
    }
}

/// One row per lab and size: `lab,size,device,runs,<phase>_ms...,total_ms,wall_ms,
/// speedup_vs_lab01,speedup_vs_lab02` (for the baselines timed); a phase a lab does not
/// have is left empty.
fn csv(rows: &[Row]) -> String {
    let phases = phase_columns(rows);
    let mut header: Vec<String> = ["lab", "size", "device", "runs"].map(String::from).to_vec();
    header.extend(phases.iter().map(|phase| format!("{phase}_ms")));
    header.extend(["total_ms", "wall_ms"].map(String::from));
    let bases = baselines(rows);
    header.extend(bases.iter().map(|base| format!("speedup_vs_{base}")));
    let mut text = header.join(",") + "\n";
    for row in rows {
        let mut fields = vec![
            csv_field(&row.lab),
            row.size.to_string(),
            csv_field(&row.device),
            row.runs.to_string(),
        ];
        for phase in phases.iter().map(String::as_str).chain(["total"]) {
            fields.push(
                row.phases
                    .get(phase)
                    .map_or(String::new(), |v| format!("{v:.3}")),
            );
        }
        fields.push(format!("{:.3}", row.wall_ms));
        for &base in &bases {
            let times = speedup(rows, row, base);
            fields.push(times.map_or(String::new(), |x| format!("{x:.3}")));
        }
        text += &(fields.join(",") + "\n");
    }
    text
}

fn extras_csv(extras: &[Extra]) -> String {
    let mut text = "lab,metric,median\n".to_string();
    for extra in extras {
        text += &format!(
            "{},{},{}\n",
            csv_field(&extra.lab),
            csv_field(&extra.metric),
            extra.median
        );
    }
    text
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180); device
/// names such as "CPU, 16 threads" do.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn write(path: &Path, text: &str) -> crate::Result<()> {
    fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn parse_side(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}' is not a positive whole number of pixels")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(lab: &str, size: u32, wall_ms: f64, phases: &[(&str, f64)]) -> Row {
        Row {
            lab: lab.to_string(),
            size,
            device: "CPU, 2 threads".to_string(),
            runs: 3,
            phases: phases.iter().map(|&(p, ms)| (p.to_string(), ms)).collect(),
            wall_ms,
        }
    }

    #[test]
    fn median_of_odd_even_and_no_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn speedup_compares_wall_time_at_the_same_size() {
        let rows = [
            row("lab01", 512, 100.0, &[]),
            row("lab01", 1024, 400.0, &[]),
            row("lab02", 1024, 50.0, &[]),
        ];
        assert_eq!(speedup(&rows, &rows[2], "lab01"), Some(8.0));
        assert_eq!(speedup(&rows, &rows[2], "lab02"), Some(1.0));
        assert_eq!(speedup(&rows, &rows[0], "lab02"), None);
    }

    #[test]
    fn csv_quotes_only_what_needs_it() {
        assert_eq!(csv_field("lab01"), "lab01");
        assert_eq!(csv_field("CPU, 2 threads"), "\"CPU, 2 threads\"");
        assert_eq!(csv_field("a \"b\""), "\"a \"\"b\"\"\"");
    }

    #[test]
    fn csv_has_one_row_per_lab_and_size_with_phases_in_work_order() {
        let rows = [
            row(
                "lab01",
                512,
                10.0,
                &[
                    ("write", 1.0),
                    ("compute", 6.0),
                    ("colour", 2.0),
                    ("total", 9.0),
                ],
            ),
            row("lab02", 512, 5.0, &[("compute", 2.5), ("total", 4.0)]),
        ];
        let text = csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "lab,size,device,runs,compute_ms,colour_ms,write_ms,total_ms,wall_ms,speedup_vs_lab01,speedup_vs_lab02",
                "lab01,512,\"CPU, 2 threads\",3,6.000,2.000,1.000,9.000,10.000,1.000,0.500",
                "lab02,512,\"CPU, 2 threads\",3,2.500,,,4.000,5.000,2.000,1.000",
            ]
        );
    }

    #[test]
    fn markdown_marks_missing_phases_and_speedups() {
        let rows = [
            row("lab01", 1024, 40.0, &[("colour", 2.0)]),
            row("lab02", 512, 5.0, &[("compute", 2.5), ("total", 4.0)]),
        ];
        let md = markdown(&rows, &[], &["lab03: skipped".to_string()], 3);
        let header = "| lab | size | compute | colour | total | wall | vs lab01 | vs lab02 |";
        assert!(md.contains(header), "{md}");
        assert!(md.contains("| lab02 | 512 | 2.50 | - | 4.00 | 5.00 | - | 1.00x |"));
        assert!(md.contains("- lab03: skipped"));
        let without_lab01 = markdown(&rows[1..], &[], &[], 3);
        assert!(
            !without_lab01.contains("vs lab01"),
            "a column only for a baseline timed"
        );
    }

    #[test]
    fn metrics_flatten_to_named_numbers() {
        let value =
            serde_json::json!({"plain": {"gbps": 2.5, "best": "256x1024"}, "sweep": [1, 2]});
        let mut leaves = Vec::new();
        numeric_leaves("gpu", &value, &mut leaves);
        assert_eq!(
            leaves,
            [
                ("gpu.plain.gbps".to_string(), 2.5),
                ("gpu.sweep.0".to_string(), 1.0),
                ("gpu.sweep.1".to_string(), 2.0),
            ]
        );
    }

    #[test]
    fn cpu_labs_stop_at_the_cap_and_say_so() {
        let chosen = choose(&[], true).expect("the default labs");
        let mut notes = Vec::new();
        let jobs = plan(&chosen, &[512, 16384], 8192, &mut notes);
        let at_16384: Vec<&str> = jobs
            .iter()
            .filter(|(_, size)| *size == 16384)
            .map(|(lab, _)| lab.name)
            .collect();
        assert_eq!(at_16384, ["lab03", "lab04"]);
        assert_eq!(jobs.len(), 6);
        assert!(notes[0].starts_with("lab01, lab02: sizes above 8192 skipped"));
    }

    #[test]
    fn labs_and_include_take_their_own_kind() {
        assert!(choose(&["lab05".to_string()], true).is_err());
        assert!(choose(&["lab01".to_string()], false).is_err());
        let picked = choose(
            &["2".to_string(), "lab01".to_string(), "lab02".to_string()],
            true,
        );
        assert_eq!(
            picked.map(|labs| names(&labs)),
            Ok("lab01, lab02".to_string())
        );
    }
}
