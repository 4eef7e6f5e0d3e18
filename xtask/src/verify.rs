//! `cargo xtask verify`: every Mandelbrot lab, each of its variants, against the reference,
//! byte for byte, at sizes chosen to break things (1x1, odd, non-square, large), and each
//! Buddhabrot variant against the first (lab05's GPU canvases, on one GPU and split across
//! several where they open, against its CPU one).
//!
//! The reference and which labs may differ are data ([`labs::REFERENCE`], [`labs::Exact`]).
//! Every run has a time limit, and anything a lab does wrong (a crash, a hang, a malformed
//! file) is a failed row: verify carries on, prints the whole table, and removes the images
//! it made however it ends.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};

use crate::bins::Bins;
use crate::labs::{self, Exact, Lab, Program, Table, Work, LABS, REFERENCE};
use crate::runner::{self, Failure};
use crate::{gpu, ppm};

#[derive(clap::Args)]
pub struct Args {
    /// Use the binaries in this folder (from `cargo xtask dist`) instead of building
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Sizes to try, e.g. `--sizes 1x1,640x480` [default: 1x1, 7x5, 333x517, 1024x1024,
    /// 1920x1080, 3001x2001, 4096x4096, 16384x16384 where a GPU is present, and a 1024x1024
    /// zoom into the boundary, where rounding most often changes a pixel]
    #[arg(long, value_delimiter = ',', value_parser = parse_size, allow_hyphen_values = true)]
    sizes: Vec<(u32, u32)>,
    /// The folder for the difference PNGs (and, with --keep, the images and raw canvases)
    #[arg(long, value_name = "DIR", default_value = "verify-out")]
    out: PathBuf,
    /// Keep the images and canvases (they are deleted once compared)
    #[arg(long)]
    keep: bool,
    /// Seconds one lab run may take before it is killed and its row fails
    /// [default: 60, plus 2 per megapixel of the image]
    #[arg(
        long,
        value_name = "SECONDS",
        value_parser = crate::values::at_least_one("the time limit in seconds", u64::MAX),
        allow_hyphen_values = true
    )]
    time_limit: Option<u64>,
}

/// One line of the table.
#[derive(Debug)]
pub struct Row {
    /// The variant checked (its label).
    pub label: &'static str,
    pub case: String,
    /// The variant it was compared with.
    pub against: &'static str,
    pub result: String,
    pub failed: bool,
}

/// One image to compare: a size, and view flags beyond the defaults.
pub struct Case {
    pub width: u32,
    pub height: u32,
    pub view: &'static [&'static str],
}

impl Case {
    fn pixels(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// "333x517", or "1024x1024 --cx ..." with its view.
    fn describe(&self) -> String {
        let mut text = format!("{}x{}", self.width, self.height);
        for flag in self.view {
            text = text + " " + flag;
        }
        text
    }

    /// The part of a file name that tells cases apart.
    fn tag(&self) -> String {
        let zoom = if self.view.is_empty() { "" } else { "-zoom" };
        format!("{}x{}{zoom}", self.width, self.height)
    }
}

/// A zoom into the boundary, where orbits are long and chaotic: the place where one
/// rounding difference most often changes a pixel.
const SEAHORSE_VALLEY: Case = Case {
    width: 1024,
    height: 1024,
    view: &["--cx", "-0.74364", "--cy", "0.13182", "--scale", "1e-6"],
};

/// The sizes verified without `--sizes`; the reference's stand-in size is added where a GPU
/// is present (the CPU labs alone take minutes there and add nothing the smaller sizes miss).
const SIZES: [(u32, u32); 7] = [
    (1, 1),
    (7, 5),
    (333, 517),
    (1024, 1024),
    (1920, 1080),
    (3001, 2001),
    (4096, 4096),
];

/// A difference image is drawn up to this many pixels (a 4096x4096 PNG is about 2 MB).
const MARKED_UP_TO: u64 = 4096 * 4096;

/// lab05's run: one seed, enough samples to reach every part of the canvas.
const BUDDHABROT_RUN: [&str; 4] = ["--samples", "4000000", "--seed", "7"];
/// lab06's run: a length that is no multiple of anything, one timed batch, its GPU sums
/// only (each checked exactly by the lab, which exits non-zero on a wrong one).
const REDUCTION_RUN: [&str; 5] = ["--gpu-only", "--n", "1000003", "--reps", "1"];

/// lab05's default canvas, for its time limit.
const BUDDHABROT_PIXELS: u64 = 1440 * 2560;

pub fn run(args: Args) -> Result<()> {
    let gpu = gpu::probe();
    let gpus = if gpu.is_ok() { gpu::count() } else { 0 };
    let nvrtc = crate::nvrtc::find();
    // Said first, once, before the build's minutes: the rows only point back to it.
    let unchecked = not_checked(&LABS, &gpu, gpus, &nvrtc);
    if let (Err(why), false) = (&gpu, unchecked.is_empty()) {
        shared::cli::eprint_line(&format!(
            "verify: {} will not be checked: no GPU opened ({why}), and the CPU device that \
             runs their kernels without one needs NVRTC; {}",
            unchecked.join(", "),
            crate::nvrtc::install_hint()
        ));
    }
    let bins = Bins::locate(args.bin_dir.clone(), checked(&LABS))?;
    let folder = OutFolder::create(&args.out)?;
    let verifier = Verifier {
        labs: &LABS,
        bins: &bins,
        out: &args.out,
        gpu: &gpu,
        gpus,
        time_limit: args.time_limit.map(Duration::from_secs),
        keep: args.keep,
    };

    let sizes = if args.sizes.is_empty() {
        &SIZES[..]
    } else {
        &args.sizes[..]
    };
    let mut cases: Vec<Case> = sizes
        .iter()
        .map(|&(width, height)| Case {
            width,
            height,
            view: &[],
        })
        .collect();
    // Without --sizes, also the reference's stand-in size (GPU only, see SIZES) and the
    // zoom where one rounding difference most often changes a pixel.
    if args.sizes.is_empty() {
        if gpu.is_ok() {
            let side = REFERENCE.stand_in_from.isqrt() as u32;
            cases.push(Case {
                width: side,
                height: side,
                view: &[],
            });
        }
        cases.push(SEAHORSE_VALLEY);
    }

    let mut rows = Vec::new();
    for case in &cases {
        rows.extend(verifier.mandelbrot(case));
    }
    for lab in labs::doing_in(verifier.labs, Work::Buddhabrot) {
        rows.extend(verifier.buddhabrot(lab));
    }
    for lab in labs::doing_in(verifier.labs, Work::Reduction) {
        rows.extend(verifier.reduction(lab));
    }
    drop(folder);

    shared::cli::print_line(table(&rows).trim_end())?;
    let failures = rows.iter().filter(|r| r.failed).count();
    // Labs not checked are named in the last line, as at the top: a machine with Rust and a
    // C compiler alone passes verify (the README's promise), and says what it did not see.
    let not_checked_line = format!(
        "{} not checked: no GPU opened ({}) and no NVRTC for the CPU device (`cargo xtask \
         install-nvrtc` installs it)",
        unchecked.join(", "),
        gpu.as_ref().err().map_or("", String::as_str)
    );
    match (&gpu, failures) {
        (Ok(name), 0) => {
            shared::cli::eprint_line(&format!("verify: all labs that must match do, on {name}"))
        }
        (Err(_), 0) if !unchecked.is_empty() => shared::cli::eprint_line(&format!(
            "verify: the labs checked match; {not_checked_line}"
        )),
        (Err(why), 0) => shared::cli::eprint_line(&format!(
            "verify: all labs that must match do, the GPU labs on the CPU device (no GPU \
             opened: {why})"
        )),
        (_, n) => {
            let unwritten = match not_written(&rows)[..] {
                [] => String::new(),
                ref labs => format!(
                    "; not written yet: {} (each lab's README says, under Exercise, what to \
                     write)",
                    labs.join(", ")
                ),
            };
            let skipped = match (&gpu, unchecked.is_empty()) {
                (Ok(_), _) => String::new(),
                (Err(_), false) => format!("; {not_checked_line}"),
                (Err(why), true) => {
                    format!("; the GPU labs ran on the CPU device (no GPU opened: {why})")
                }
            };
            bail!("{n} check(s) failed; the rows marked FAIL say why{unwritten}{skipped}")
        }
    }
    Ok(())
}

/// The variants whose rows failed because the lab stopped at a part of the exercise not
/// written yet (`shared::exercise`): on a fresh hand-out, the labs still to do.
fn not_written(rows: &[Row]) -> Vec<&'static str> {
    let stopped = rows
        .iter()
        .filter(|row| row.failed && row.result.contains(": not written yet"))
        .map(|row| row.label);
    crate::format::distinct(stopped)
}

/// The labs of `table` that `verify` compares and cannot check here: those with GPU
/// variants of which none can run (no GPU opened, and NVRTC missing for the CPU device).
fn not_checked(
    table: Table,
    gpu: &std::result::Result<String, String>,
    gpus: usize,
    nvrtc: &std::result::Result<crate::nvrtc::Nvrtc, String>,
) -> Vec<&'static str> {
    let runs = |program: Program| match program.emulates() {
        Some(_) => nvrtc.is_ok(),
        None => labs::cannot_run(program, gpu, gpus).is_none(),
    };
    checked(table)
        .filter(|lab| lab.runs().any(|p| p.gpu()) && !lab.runs().filter(Program::gpu).any(runs))
        .map(|lab| lab.name)
        .collect()
}

/// The labs `verify` compares: every Mandelbrot lab with the reference image, each
/// Buddhabrot lab's variants with its first, each reduction lab's GPU sums with the exact
/// total.
pub fn checked(table: Table) -> impl Iterator<Item = &'static Lab> {
    labs::doing_in(table, Work::Mandelbrot)
        .chain(labs::doing_in(table, Work::Buddhabrot))
        .chain(labs::doing_in(table, Work::Reduction))
}

/// A skipped row's result: why `program` cannot run here. Where no GPU opened at all, or
/// NVRTC is missing for the CPU device, the lines before and under the table say why once,
/// not every row.
fn skipped(
    program: Program,
    gpu: &std::result::Result<String, String>,
    gpus: usize,
) -> Option<String> {
    let why = labs::cannot_run(program, gpu, gpus)?;
    Some(match (gpu, program.emulates()) {
        (_, Some(_)) => "not checked: no NVRTC (why: above and below the table)".to_string(),
        (Err(_), None) => "skipped: no GPU (why: below the table)".to_string(),
        (Ok(_), None) => format!("skipped: {why}"),
    })
}

/// What checking needs: where the labs and the files are, whether a GPU opened, the limits.
pub struct Verifier<'a> {
    pub labs: Table,
    pub bins: &'a Bins,
    pub out: &'a Path,
    pub gpu: &'a std::result::Result<String, String>,
    /// How many GPUs open: a variant that needs more is skipped.
    pub gpus: usize,
    /// A fixed limit per run; `None` scales it with the image ([`runner::limit_for`]).
    pub time_limit: Option<Duration>,
    pub keep: bool,
}

impl Verifier<'_> {
    fn limit(&self, pixels: u64) -> Duration {
        self.time_limit.unwrap_or_else(|| runner::limit_for(pixels))
    }

    /// Every variant of every Mandelbrot lab against the reference image at `case`.
    pub fn mandelbrot(&self, case: &Case) -> Vec<Row> {
        let mut scratch = Scratch::new(self.keep);
        let reference_lab = REFERENCE.at(case.width, case.height);
        let reference = reference_lab.first();
        let row = |program: Program, result: String, failed: bool| Row {
            label: program.label(),
            case: case.describe(),
            against: reference.label(),
            result,
            failed,
        };
        let expected = scratch.add(self.image_path(reference, case));
        let rendered = self
            .render(reference, case, &expected)
            .map_err(anyhow::Error::from)
            .and_then(|()| ppm::open(&expected).map(drop));
        if let Err(e) = rendered {
            let result = format!("the reference did not run: {e:#}");
            return vec![row(reference, result, true)];
        }

        let mut rows = Vec::new();
        for lab in labs::doing_in(self.labs, Work::Mandelbrot) {
            for program in lab.runs() {
                if program == reference {
                    continue;
                }
                if lab == REFERENCE.lab && reference_lab != REFERENCE.lab {
                    let why = format!("not run at this size: {} stands in", reference.label());
                    rows.push(row(program, why, false));
                    continue;
                }
                if let Some(skipped) = skipped(program, self.gpu, self.gpus) {
                    rows.push(row(program, skipped, false));
                    continue;
                }
                let file = scratch.add(self.image_path(program, case));
                let (result, failed) = self.compare(program, case, &expected, &file);
                rows.push(row(program, result, failed));
            }
        }
        rows.extend(self.twins(case));
        rows
    }

    /// Each CPU device variant against the GPU variant it emulates, where both wrote an
    /// image: they must be byte-identical, whatever either is against the reference (lab03's
    /// fused pixels included).
    fn twins(&self, case: &Case) -> Vec<Row> {
        let mut rows = Vec::new();
        for program in labs::doing_in(self.labs, Work::Mandelbrot).flat_map(Lab::runs) {
            let Some(twin) = program.emulates() else {
                continue;
            };
            let Some(gpu) = program.lab.runs().find(|p| p.label() == twin) else {
                continue;
            };
            let (mine, theirs) = (self.image_path(program, case), self.image_path(gpu, case));
            let (Ok(mine), Ok(theirs)) = (fs::read(mine), fs::read(theirs)) else {
                continue;
            };
            let differing = mine.iter().zip(&theirs).filter(|(a, b)| a != b).count()
                + mine.len().abs_diff(theirs.len());
            rows.push(Row {
                label: program.label(),
                case: case.describe(),
                against: gpu.label(),
                result: if differing == 0 {
                    "identical".to_string()
                } else {
                    format!("{differing} bytes differ from the GPU's image")
                },
                failed: differing != 0,
            });
        }
        rows
    }

    /// Run `program` at `case` and compare its image with `expected`: the row's result, and
    /// whether the check failed.
    fn compare(
        &self,
        program: Program,
        case: &Case,
        expected: &Path,
        file: &Path,
    ) -> (String, bool) {
        let allowed = match program.lab.exact {
            Exact::Required => None,
            Exact::MayDiffer(why) => Some(why),
        };
        let mut result = match self.render(program, case, file) {
            Ok(()) => match self.differences(program, case, expected, file) {
                Ok(None) => return ("identical".to_string(), false),
                Ok(Some(differences)) => differences,
                Err(e) => return (format!("{e:#}"), true),
            },
            // A lab that may differ may also refuse a size (lab03 past its block limit); a
            // crash, a hang or a malformed report is a fault all the same.
            Err(refusal @ Failure::Refused { .. }) => format!("did not run: {refusal}"),
            Err(fault) => return (format!("did not run: {fault}"), true),
        };
        match allowed {
            Some(why) => {
                result += &format!(" [allowed: {why}]");
                (result, false)
            }
            None => (result, true),
        }
    }

    /// How `file` differs from `expected`, with a PNG marking where: `None` if identical.
    fn differences(
        &self,
        program: Program,
        case: &Case,
        expected: &Path,
        file: &Path,
    ) -> Result<Option<String>> {
        let (want, got) = (ppm::open(expected)?, ppm::open(file)?);
        if (got.width, got.height) != (case.width, case.height) {
            bail!("wrong size {}x{}", got.width, got.height);
        }
        let diff = ppm::diff(want, got)?;
        let Some((file_row, column, want, have)) = diff.first else {
            return Ok(None);
        };
        let share = 100.0 * diff.pixels as f64 / case.pixels() as f64;
        let mut result = format!(
            "{} pixels differ ({share:.4}%), first at file row {file_row}, column {column}: \
             {want:?} expected, {have:?} found",
            diff.pixels
        );
        if case.pixels() <= MARKED_UP_TO {
            let png = self
                .out
                .join(format!("{}-{}-diff.png", slug(program), case.tag()));
            let written = ppm::open(expected)
                .and_then(|want| ppm::marked_png(want, ppm::open(file)?))
                .and_then(|bytes| Ok(shared::output::write_file(&png, &bytes)?));
            match written {
                Ok(()) => result += &format!(" (marked in {})", png.display()),
                Err(e) => result += &format!(" (no difference image: {e:#})"),
            }
        }
        Ok(Some(result))
    }

    fn render(&self, program: Program, case: &Case, file: &Path) -> Result<(), Failure> {
        let mut command = self.bins.program(program);
        command
            .arg(case.width.to_string())
            .arg(case.height.to_string())
            .args(case.view)
            .arg("-o")
            .arg(file);
        runner::run(&mut command, self.limit(case.pixels())).map(drop)
    }

    fn image_path(&self, program: Program, case: &Case) -> PathBuf {
        self.out
            .join(format!("{}-{}.ppm", slug(program), case.tag()))
    }

    /// Every variant of a Buddhabrot lab with one seed against its first: the raw canvases
    /// must be identical.
    pub fn buddhabrot(&self, lab: &'static Lab) -> Vec<Row> {
        let mut scratch = Scratch::new(self.keep);
        let reference = lab.first();
        let case = BUDDHABROT_RUN.join(" ");
        let row = |program: Program, result: String, failed: bool| Row {
            label: program.label(),
            case: case.clone(),
            against: reference.label(),
            result,
            failed,
        };
        let mut expected = None;
        let mut rows = Vec::new();
        for program in lab.runs().filter(|&p| p != reference) {
            if let Some(skipped) = skipped(program, self.gpu, self.gpus) {
                rows.push(row(program, skipped, false));
                continue;
            }
            if expected.is_none() {
                match self.canvas(reference, &mut scratch) {
                    Ok(bytes) => expected = Some(bytes),
                    Err(e) => {
                        let result = format!("the reference did not run: {e:#}");
                        rows.push(row(reference, result, true));
                        return rows;
                    }
                }
            }
            let want = expected.as_deref().unwrap_or_default();
            rows.push(match self.canvas(program, &mut scratch) {
                Ok(got) if got == want => row(
                    program,
                    format!("identical raw canvases ({} bytes)", got.len()),
                    false,
                ),
                Ok(got) => {
                    let differing = want
                        .chunks(4)
                        .zip(got.chunks(4))
                        .filter(|(a, b)| a != b)
                        .count();
                    let sizes = if want.len() == got.len() {
                        String::new()
                    } else {
                        format!(", and {} bytes against {}", got.len(), want.len())
                    };
                    row(
                        program,
                        format!("canvases differ in {differing} counters{sizes}"),
                        true,
                    )
                }
                Err(e) => row(program, format!("did not run: {e:#}"), true),
            });
        }
        rows
    }

    /// Every GPU variant of a reduction lab: each of its sums must be exact.
    pub fn reduction(&self, lab: &'static Lab) -> Vec<Row> {
        let case = REDUCTION_RUN.join(" ");
        let mut rows = Vec::new();
        for program in lab.runs().filter(|p| p.gpu()) {
            let (result, failed) = match skipped(program, self.gpu, self.gpus) {
                Some(why) => (why, false),
                None => {
                    let mut command = self.bins.program(program);
                    command.args(REDUCTION_RUN);
                    match runner::run(&mut command, self.limit(0)) {
                        Ok(_) => ("every sum exact".to_string(), false),
                        Err(e) => (format!("{e}"), true),
                    }
                }
            };
            rows.push(Row {
                label: program.label(),
                case: case.clone(),
                against: "its exact total",
                result,
                failed,
            });
        }
        rows
    }

    /// Run a Buddhabrot variant and read its raw canvas.
    fn canvas(&self, program: Program, scratch: &mut Scratch) -> Result<Vec<u8>> {
        let raw = scratch.add(self.out.join(format!("{}.raw", slug(program))));
        let png = scratch.add(self.out.join(format!("{}.png", slug(program))));
        let mut command = self.bins.program(program);
        command
            .args(BUDDHABROT_RUN)
            .arg("--raw")
            .arg(&raw)
            .arg("-o")
            .arg(&png);
        runner::run(&mut command, self.limit(BUDDHABROT_PIXELS))?;
        fs::read(&raw).with_context(|| format!("cannot read {}", raw.display()))
    }
}

/// A label as a file name: "lab02 best CPU" -> "lab02-best-CPU".
fn slug(program: Program) -> String {
    program
        .label()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The files one check makes, removed when it ends however it ends (an error, a panic),
/// unless they are to be kept.
struct Scratch {
    files: Vec<PathBuf>,
    keep: bool,
}

impl Scratch {
    fn new(keep: bool) -> Self {
        Scratch {
            files: Vec::new(),
            keep,
        }
    }

    fn add(&mut self, path: PathBuf) -> PathBuf {
        self.files.push(path.clone());
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            for file in &self.files {
                // A lab that failed made no file: nothing to remove is fine.
                let _ = fs::remove_file(file);
            }
        }
    }
}

/// The output folder: created if missing, and removed again if verify leaves nothing in it.
struct OutFolder {
    path: PathBuf,
    created: bool,
}

impl OutFolder {
    fn create(path: &Path) -> Result<Self> {
        if path.exists() && !path.is_dir() {
            bail!(
                "--out {} is a file; verify needs a folder for its difference images \
                 (it makes one if missing)",
                path.display()
            );
        }
        let created = !path.exists();
        fs::create_dir_all(path)
            .with_context(|| format!("cannot create the folder {}", path.display()))?;
        Ok(OutFolder {
            path: path.to_path_buf(),
            created,
        })
    }
}

impl Drop for OutFolder {
    fn drop(&mut self) {
        if self.created {
            // Fails, as it should, when the folder holds a difference image or kept files.
            let _ = fs::remove_dir(&self.path);
        }
    }
}

fn table(rows: &[Row]) -> String {
    let mut text = "| lab | case | against | result |\n|---|---|---|---|\n".to_string();
    for row in rows {
        let mark = if row.failed { "FAIL: " } else { "" };
        text += &format!(
            "| {} | {} | {} | {mark}{} |\n",
            row.label, row.case, row.against, row.result
        );
    }
    text
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once('x')
        .ok_or("a size is WIDTHxHEIGHT, e.g. 640x480")?;
    let side = crate::values::at_least_one_u32("an image side");
    Ok((side(w)?, side(h)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_width_by_height_above_zero() {
        assert_eq!(parse_size("640x480"), Ok((640, 480)));
        assert!(parse_size("640").is_err_and(|e| e.contains("WIDTHxHEIGHT")));
        assert!(parse_size("0x5").is_err_and(|e| e.contains("between 1 and")));
        assert!(parse_size("-3x5").is_err_and(|e| e.contains("between 1 and")));
    }

    #[test]
    fn cases_name_their_files_and_rows() {
        assert_eq!(SEAHORSE_VALLEY.tag(), "1024x1024-zoom");
        assert!(SEAHORSE_VALLEY
            .describe()
            .starts_with("1024x1024 --cx -0.74364"));
        let plain = Case {
            width: 7,
            height: 5,
            view: &[],
        };
        assert_eq!(
            (plain.tag(), plain.describe()),
            ("7x5".into(), "7x5".into())
        );
    }

    #[test]
    fn the_reason_for_no_gpu_is_said_once_not_in_every_row() {
        let none = Err("no usable GPU: the CUDA driver was not found".to_string());
        let h100 = Ok("NVIDIA H100".to_string());
        let lab04 = labs::find("lab04").expect("lab04").first();
        let lab02 = labs::find("lab02").expect("lab02").first();
        let [_, _, emulated, two, ..] = labs::find("lab05")
            .expect("lab05")
            .runs()
            .collect::<Vec<_>>()[..]
        else {
            panic!("lab05 has its multi-GPU variants");
        };
        // The CPU device needs NVRTC, not a GPU: where it is missing, the row says so
        // without the install command, which is said once.
        assert_eq!(
            skipped(emulated, &none, 0),
            crate::nvrtc::find()
                .err()
                .map(|_| "not checked: no NVRTC (why: above and below the table)".to_string())
        );
        assert_eq!(
            skipped(lab04, &none, 0).as_deref(),
            Some("skipped: no GPU (why: below the table)")
        );
        assert_eq!(skipped(lab02, &none, 0), None);
        assert_eq!(skipped(lab04, &h100, 1), None);
        assert_eq!(
            skipped(two, &h100, 1).as_deref(),
            Some("skipped: needs 2 GPUs, and 1 opened here")
        );
    }

    /// With no GPU and no NVRTC, the four GPU labs are named as not checked; NVRTC or a GPU
    /// checks every one of them.
    #[test]
    fn the_gpu_labs_left_unchecked_are_named() {
        use crate::nvrtc::Nvrtc;
        let none = Err("no usable GPU".to_string());
        let h100 = Ok("NVIDIA H100".to_string());
        let missing = Err("NVRTC not found".to_string());
        assert_eq!(
            not_checked(&LABS, &none, 0, &missing),
            ["lab03", "lab04", "lab05", "lab06"]
        );
        assert!(not_checked(&LABS, &none, 0, &Ok(Nvrtc::System)).is_empty());
        assert!(not_checked(&LABS, &h100, 1, &missing).is_empty());
    }

    #[test]
    fn labs_not_written_yet_are_named_once() {
        let row = |label, result: &str| Row {
            label,
            case: "7x5".into(),
            against: "lab01",
            result: result.into(),
            failed: result != "identical",
        };
        let unwritten = "did not run: lab02-rayon/src/main.rs:60: not written yet: the rows";
        let rows = [
            row("lab02", unwritten),
            row("lab02", unwritten),
            row("lab03", "timed out"),
            row("lab04", "identical"),
        ];
        assert_eq!(not_written(&rows), ["lab02"]);
        assert!(not_written(&rows[2..]).is_empty());
    }

    #[test]
    fn a_failed_row_is_marked_in_the_table() {
        let rows = [
            Row {
                label: "lab04",
                case: "7x5".into(),
                against: "lab01",
                result: "timed out".into(),
                failed: true,
            },
            Row {
                label: "lab02",
                case: "7x5".into(),
                against: "lab01",
                result: "identical".into(),
                failed: false,
            },
        ];
        let text = table(&rows);
        assert!(
            text.contains("| lab04 | 7x5 | lab01 | FAIL: timed out |"),
            "{text}"
        );
        assert!(
            text.contains("| lab02 | 7x5 | lab01 | identical |"),
            "{text}"
        );
    }

    #[test]
    fn scratch_files_go_however_the_check_ends() {
        let dir = tempfile::tempdir().expect("a folder");
        let file = dir.path().join("lab01-7x5.ppm");
        let outcome = std::panic::catch_unwind(|| {
            let mut scratch = Scratch::new(false);
            let path = scratch.add(file.clone());
            fs::write(&path, "image").expect("written");
            panic!("a check that fails half way");
        });
        assert!(outcome.is_err());
        assert!(!file.exists(), "the guard removed it");
        {
            let mut kept = Scratch::new(true);
            fs::write(kept.add(file.clone()), "image").expect("written");
        }
        assert!(file.exists(), "--keep keeps it");
    }

    #[test]
    fn a_file_as_the_out_folder_is_refused_and_an_empty_new_one_removed() {
        let dir = tempfile::tempdir().expect("a folder");
        let file = dir.path().join("taken");
        fs::write(&file, "").expect("written");
        let err = OutFolder::create(&file).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("is a file; verify needs a folder")));
        let fresh = dir.path().join("verify-out");
        drop(OutFolder::create(&fresh).expect("created"));
        assert!(!fresh.exists(), "an empty folder verify made is removed");
    }
}
