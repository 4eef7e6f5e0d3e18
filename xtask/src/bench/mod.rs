//! `cargo xtask bench`: time the Mandelbrot labs over a range of square sizes, several runs
//! each, and write the medians as a Markdown table, a CSV file and an SVG chart.
//!
//! Each run records the lab's own `--json` phases and the whole-process wall time, measured
//! here from spawn to exit. Speedups compare wall times: that is what a user waits for, and
//! it is measured the same way for every lab, whatever the lab reports about itself.
//!
//! Each variant of a lab (lab02's best CPU, say) is timed as its own row, CSV line and chart
//! series. lab05 and lab06 (`--include`) are not Mandelbrot renderers: they run with their
//! own defaults and their numeric metrics go into a second table, `extras.csv`.

mod chart;
mod report;
mod summary;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use shared::timing::LabReport;

use crate::bins::Bins;
use crate::gpu;
use crate::labs::{self, Lab, Program, Table, Work, LABS};
use crate::runner::{self, Failure};
use shared::output::Output;

#[derive(clap::Args)]
pub struct Args {
    /// Use the binaries in this folder (from `cargo xtask dist`) instead of building
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Square image sides to time, e.g. `--sizes 512,2048` [default: 512, 1024, ..., 16384]
    #[arg(long, value_delimiter = ',', value_parser = crate::values::at_least_one_u32("an image side"), allow_hyphen_values = true)]
    sizes: Vec<u32>,
    /// Runs per lab and size; the tables show the median
    #[arg(long, default_value_t = 5, value_parser = crate::values::at_least_one_u32("the number of runs"), allow_hyphen_values = true)]
    runs: u32,
    /// The Mandelbrot labs to time, every variant of each, e.g. `--labs lab01,lab04`
    /// [default: lab01 to lab04]
    #[arg(long, value_delimiter = ',')]
    labs: Vec<String>,
    /// The largest side the CPU labs (lab01, lab02) are timed at: sequential lab01 takes
    /// about 15 s per run at 16384 on one core; pass 16384 to time them everywhere
    #[arg(long, default_value_t = 8192, value_parser = crate::values::at_least_one_u32("an image side"), allow_hyphen_values = true)]
    max_cpu_size: u32,
    /// Also run these labs with their defaults and tabulate their metrics: lab05, lab06
    #[arg(long, value_delimiter = ',')]
    include: Vec<String>,
    /// lab05's `--samples` when it is included [default: lab05's own]
    #[arg(long, value_name = "N", value_parser = crate::values::at_least_one("the number of samples", u64::MAX), allow_hyphen_values = true)]
    lab05_samples: Option<u64>,
    /// Seconds one run may take before it is killed and its series ends
    /// [default: 60, plus 2 per megapixel; 600 for --include]
    #[arg(long, value_name = "SECONDS", value_parser = crate::values::at_least_one("the time limit in seconds", u64::MAX), allow_hyphen_values = true)]
    time_limit: Option<u64>,
    /// Also time the GPU labs' kernels on the CPU device (`--emulate`): its times are this
    /// machine's cores', beside lab02's
    #[arg(long)]
    cpu_device: bool,
    /// Where bench.md, bench.csv, bench.svg and extras.csv go (and the images, while they last)
    #[arg(long, value_name = "DIR", default_value = "bench-out")]
    out: PathBuf,
}

/// One successful run of a lab.
pub(crate) struct Run {
    report: LabReport,
    wall_ms: f64,
}

/// The medians of one Mandelbrot variant at one size: a line of the table and of the CSV.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The variant's label.
    pub lab: String,
    pub size: u32,
    pub device: String,
    pub runs: usize,
    /// Median milliseconds per phase, `total` included.
    pub phases: BTreeMap<String, f64>,
    pub wall_ms: f64,
}

/// The median of one metric of a lab run with its defaults.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Extra {
    lab: String,
    metric: String,
    median: f64,
}

/// A run of a lab timed with its defaults (`--include`) may take this long by default: lab06
/// sums 32 Mi floats many ways, several times over.
const EXTRA_LIMIT: Duration = Duration::from_secs(600);

pub fn run(args: Args) -> Result<()> {
    let mandelbrot = with_cpu_device(choose(&LABS, &args.labs, true)?, args.cpu_device);
    let extras = with_cpu_device(choose(&LABS, &args.include, false)?, args.cpu_device);
    let sizes = if args.sizes.is_empty() {
        (9..=14).map(|power| 1 << power).collect()
    } else {
        args.sizes.clone()
    };
    if args.out.exists() && !args.out.is_dir() {
        bail!(
            "--out {} is a file; bench needs a folder for its results (it makes one if missing)",
            args.out.display()
        );
    }

    let mut notes = Vec::new();
    let mandelbrot = runnable(mandelbrot, &mut notes);
    let extras = runnable(extras, &mut notes);
    let jobs = plan(&mandelbrot, &sizes, args.max_cpu_size, &mut notes);
    if jobs.is_empty() && extras.is_empty() {
        bail!("nothing to time: {}", notes.join("; "));
    }

    let needed = mandelbrot.iter().chain(&extras).map(|program| program.lab);
    let bins = Bins::locate(args.bin_dir.clone(), needed)?;
    fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create the folder {}", args.out.display()))?;
    let results = Results::create(&args.out, !jobs.is_empty(), !extras.is_empty())?;

    let limit = |pixels: u64, default: Duration| {
        args.time_limit
            .map_or(default.max(runner::limit_for(pixels)), Duration::from_secs)
    };
    let bar = progress_bar((jobs.len() + extras.len()) as u64 * u64::from(args.runs));
    let mut rows = Vec::new();
    for &(program, size) in &jobs {
        let label = format!("{} at {size}", program.label());
        let limit = limit(u64::from(size) * u64::from(size), Duration::ZERO);
        let runs = repeat(&bar, args.runs, &label, &mut notes, || {
            time_mandelbrot(&bins, program, size, &args.out, limit)
        });
        rows.extend(summary::summarise(program.label(), size, &runs));
    }
    let mut extra_rows = Vec::new();
    for &program in &extras {
        let limit = limit(0, EXTRA_LIMIT);
        let runs = repeat(&bar, args.runs, program.label(), &mut notes, || {
            time_extra(&bins, program, args.lab05_samples, &args.out, limit)
        });
        extra_rows.extend(summary::summarise_extras(program.label(), &runs));
    }
    bar.finish_and_clear();
    if rows.is_empty() && extra_rows.is_empty() {
        bail!("no run succeeded: {}", notes.join("; "));
    }
    results.write(&rows, &extra_rows, &notes, args.runs)?;
    shared::cli::eprint_line(&format!("bench: results in {}", args.out.display()));
    Ok(())
}

/// The result files, opened before the work starts so a bad `--out` fails at once.
struct Results {
    markdown: Output,
    csv: Output,
    svg: Option<Output>,
    extras: Option<Output>,
}

impl Results {
    fn create(out: &Path, mandelbrot: bool, extras: bool) -> Result<Results> {
        let open = |name: &str| Output::create(&out.join(name));
        Ok(Results {
            markdown: open("bench.md")?,
            csv: open("bench.csv")?,
            svg: mandelbrot.then(|| open("bench.svg")).transpose()?,
            extras: extras.then(|| open("extras.csv")).transpose()?,
        })
    }

    /// Write the table on stdout, and the files, committed together. A file with nothing to
    /// hold (no Mandelbrot run succeeded, say) is left as it was.
    fn write(self, rows: &[Row], extras: &[Extra], notes: &[String], runs: u32) -> Result<()> {
        let markdown = report::markdown(rows, extras, notes, runs);
        let mut files = vec![
            (self.markdown, markdown.clone()),
            (self.csv, report::csv(rows)),
        ];
        if let (Some(svg), false) = (self.svg, rows.is_empty()) {
            files.push((svg, chart::draw(rows)?));
        }
        if let (Some(file), false) = (self.extras, extras.is_empty()) {
            files.push((file, report::extras_csv(extras)));
        }
        let mut outputs = Vec::new();
        for (mut output, text) in files {
            output.write_all(text.as_bytes())?;
            outputs.push(output);
        }
        shared::output::commit_all(outputs)?;
        shared::cli::print_line(markdown.trim_end())?;
        Ok(())
    }
}

/// The variants this machine can run: those that need more GPUs than open are noted with
/// the reason.
fn runnable(programs: Vec<Program>, notes: &mut Vec<String>) -> Vec<Program> {
    if !programs.iter().any(Program::gpu) {
        return programs;
    }
    let gpu = gpu::probe();
    let gpus = if gpu.is_ok() { gpu::count() } else { 0 };
    let mut skipped: Vec<(String, Vec<Program>)> = Vec::new();
    let mut kept = Vec::new();
    for program in programs {
        match labs::cannot_run(program, &gpu, gpus) {
            None => kept.push(program),
            Some(why) => match skipped.iter_mut().find(|(reason, _)| *reason == why) {
                Some((_, same)) => same.push(program),
                None => skipped.push((why, vec![program])),
            },
        }
    }
    for (why, programs) in skipped {
        notes.push(format!("{}: skipped, {why}", names(&programs)));
    }
    kept
}

/// Every variant of the labs named on the command line, in lab order: Mandelbrot labs for
/// `--labs` (all of them if none is named), the others for `--include`.
pub fn choose(table: Table, names: &[String], mandelbrot: bool) -> Result<Vec<Program>> {
    let flag = if mandelbrot { "--labs" } else { "--include" };
    let fits = |lab: &Lab| (lab.work == Work::Mandelbrot) == mandelbrot;
    let mut chosen: Vec<&Lab> = Vec::new();
    for name in names {
        let lab = labs::find_in(table, name)?;
        if !fits(lab) {
            let kind: Vec<&str> = table.iter().filter(|l| fits(l)).map(|l| l.name).collect();
            bail!("{flag} takes one of {}, not {}", kind.join(", "), lab.name);
        }
        chosen.push(lab);
    }
    if names.is_empty() && mandelbrot {
        chosen = labs::doing_in(table, Work::Mandelbrot).collect();
    }
    Ok(table
        .iter()
        .filter(|lab| chosen.contains(lab))
        .flat_map(Lab::runs)
        .collect())
}

/// The CPU device's variants only when asked for (`--cpu-device`): their times are the CPU's,
/// not timed beside the GPUs' unless wanted.
fn with_cpu_device(programs: Vec<Program>, wanted: bool) -> Vec<Program> {
    programs
        .into_iter()
        .filter(|program| wanted || program.emulates().is_none())
        .collect()
}

/// Every (variant, size) to time, smallest sizes first so early results cover every lab.
/// The CPU variants stop at `max_cpu_size`.
fn plan(
    programs: &[Program],
    sizes: &[u32],
    max_cpu_size: u32,
    notes: &mut Vec<String>,
) -> Vec<(Program, u32)> {
    let capped: Vec<Program> = programs.iter().copied().filter(|p| !p.gpu()).collect();
    if !capped.is_empty() && sizes.iter().any(|&size| size > max_cpu_size) {
        notes.push(format!(
            "{}: sizes above {max_cpu_size} skipped (raise --max-cpu-size to time them)",
            names(&capped)
        ));
    }
    let mut jobs = Vec::new();
    for &size in sizes {
        for &program in programs {
            if program.gpu() || size <= max_cpu_size {
                jobs.push((program, size));
            }
        }
    }
    jobs
}

fn names(programs: &[Program]) -> String {
    programs
        .iter()
        .map(Program::label)
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
    mut once: impl FnMut() -> Result<Run, Failure>,
) -> Vec<Run> {
    let mut runs = Vec::new();
    for done in 0..count {
        bar.set_message(format!("{label}, run {}/{count}", done + 1));
        match once() {
            Ok(run) => runs.push(run),
            Err(e) => {
                let note = format!("{label}: failed after {done} run(s): {e}");
                bar.suspend(|| shared::cli::eprint_line(&format!("bench: {note}")));
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
fn time_mandelbrot(
    bins: &Bins,
    program: Program,
    size: u32,
    out: &Path,
    limit: Duration,
) -> Result<Run, Failure> {
    let image = out.join(format!(
        ".bench-{}-{size}.ppm",
        program.label().replace(' ', "-")
    ));
    let mut command = bins.program(program);
    command
        .arg(size.to_string())
        .arg(size.to_string())
        .arg("-o")
        .arg(&image);
    let run = time_json(&mut command, limit);
    // The labs write atomically, so a failed run leaves no file; a finished one does.
    let _ = fs::remove_file(&image);
    run
}

/// One run of a lab with its defaults; a Buddhabrot's picture goes into `out`, then away.
fn time_extra(
    bins: &Bins,
    program: Program,
    lab05_samples: Option<u64>,
    out: &Path,
    limit: Duration,
) -> Result<Run, Failure> {
    let mut command = bins.program(program);
    let picture = out.join(format!(".bench-{}.png", program.label().replace(' ', "-")));
    if program.lab.work == Work::Buddhabrot {
        command.arg("-o").arg(&picture);
        if let Some(samples) = lab05_samples {
            command.arg("--samples").arg(samples.to_string());
        }
    }
    let run = time_json(&mut command, limit);
    let _ = fs::remove_file(&picture);
    run
}

fn time_json(command: &mut std::process::Command, limit: Duration) -> Result<Run, Failure> {
    let (report, wall) = runner::report(command, limit)?;
    Ok(Run {
        report,
        wall_ms: wall.as_secs_f64() * 1e3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_labs_stop_at_the_cap_and_say_so() {
        let chosen = with_cpu_device(choose(&LABS, &[], true).expect("the default labs"), false);
        let mut notes = Vec::new();
        let jobs = plan(&chosen, &[512, 16384], 8192, &mut notes);
        let at_16384: Vec<&str> = jobs
            .iter()
            .filter(|(_, size)| *size == 16384)
            .map(|(program, _)| program.label())
            .collect();
        assert_eq!(at_16384, ["lab03", "lab04"]);
        assert_eq!(jobs.len(), chosen.len() + 2);
        let cpu: Vec<Program> = chosen.iter().copied().filter(|p| !p.gpu()).collect();
        let expected = format!("{}: sizes above 8192 skipped", names(&cpu));
        assert!(notes[0].starts_with(&expected), "{notes:?}");
    }

    #[test]
    fn labs_and_include_take_their_own_kind_with_every_variant() {
        assert!(choose(&LABS, &["lab05".to_string()], true).is_err());
        assert!(choose(&LABS, &["lab01".to_string()], false).is_err());
        let picked = choose(
            &LABS,
            &["2".to_string(), "lab01".to_string(), "lab02".to_string()],
            true,
        )
        .expect("two labs");
        let lab02 = labs::find("lab02").expect("lab02");
        let expected: Vec<&str> = ["lab01"]
            .into_iter()
            .chain(lab02.variants.iter().map(|v| v.label))
            .collect();
        assert_eq!(
            picked.iter().map(Program::label).collect::<Vec<_>>(),
            expected
        );
        let included = with_cpu_device(
            choose(&LABS, &["lab05".to_string()], false).expect("lab05"),
            false,
        );
        assert_eq!(
            included.iter().map(Program::label).collect::<Vec<_>>(),
            [
                "lab05 cpu",
                "lab05 gpu",
                "lab05 2 GPUs",
                "lab05 4 GPUs",
                "lab05 8 GPUs"
            ]
        );
        let asked = with_cpu_device(
            choose(&LABS, &["lab05".to_string()], false).expect("lab05"),
            true,
        );
        assert_eq!(asked.len(), included.len() + 1);
        assert!(asked.iter().any(|p| p.label() == "lab05 CPU device"));
    }
}
