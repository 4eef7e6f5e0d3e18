//! `cargo xtask verify`: every Mandelbrot lab against the reference, byte for byte, at
//! sizes chosen to break things (1x1, odd, non-square, large), and lab05's two backends
//! against each other.
//!
//! lab01 is the reference. At 16384x16384 (run where a GPU is present) lab02 stands in for
//! it: lab02 is itself verified identical to lab01 at every other size, and is 16 times
//! faster. lab03 may differ (it keeps NVRTC's default fused multiply-adds); the table shows
//! by how much and a PNG shows where. Any other difference fails the command.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bins::Bins;
use crate::labs::{self, Lab, LABS};
use crate::{gpu, ppm};

#[derive(clap::Args)]
pub struct Args {
    /// Use the binaries in this folder (from `cargo xtask dist`) instead of building
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Sizes to try, e.g. `--sizes 1x1,640x480` [default: 1x1, 7x5, 333x517, 1024x1024,
    /// 1920x1080, 3001x2001, 4096x4096, and 16384x16384 where a GPU is present]
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    sizes: Vec<(u32, u32)>,
    /// Where the images, raw canvases and difference PNGs go
    #[arg(long, default_value = "verify-out")]
    out: PathBuf,
    /// Keep the PPM files (they are deleted once compared)
    #[arg(long)]
    keep: bool,
}

/// One line of the table.
struct Row {
    lab: &'static str,
    size: String,
    against: &'static str,
    result: String,
    failed: bool,
}

const LARGE: (u32, u32) = (16384, 16384);

/// One image to compare: a size, and view flags beyond the defaults.
struct Case {
    width: u32,
    height: u32,
    view: &'static [&'static str],
}

/// A zoom into the boundary, where orbits are long and chaotic: the place where one
/// rounding difference most often changes a pixel.
const SEAHORSE_VALLEY: Case = Case {
    width: 1024,
    height: 1024,
    view: &["--cx", "-0.74364", "--cy", "0.13182", "--scale", "1e-6"],
};

pub fn run(args: Args) -> crate::Result<()> {
    let gpu = gpu::probe();
    let labs: Vec<Lab> = LABS.iter().copied().filter(|l| l.name != "lab06").collect();
    let bins = Bins::locate(args.bin_dir, &labs)?;
    fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;

    let mut sizes = args.sizes.clone();
    if sizes.is_empty() {
        sizes = vec![
            (1, 1),
            (7, 5),
            (333, 517),
            (1024, 1024),
            (1920, 1080),
            (3001, 2001),
            (4096, 4096),
        ];
        if gpu.is_ok() {
            sizes.push(LARGE);
        }
    }

    let mut rows = Vec::new();
    for &(width, height) in &sizes {
        let case = Case {
            width,
            height,
            view: &[],
        };
        rows.extend(verify_mandelbrot(&bins, &args.out, &case, &gpu, args.keep)?);
    }
    if args.sizes.is_empty() {
        rows.extend(verify_mandelbrot(
            &bins,
            &args.out,
            &SEAHORSE_VALLEY,
            &gpu,
            args.keep,
        )?);
    }
    rows.push(verify_buddhabrot(&bins, &args.out, &gpu));

    print_table(&rows);
    let failures = rows.iter().filter(|r| r.failed).count();
    match (&gpu, failures) {
        (Ok(name), 0) => {
            eprintln!("verify: all labs that must match do, on {name}");
            Ok(())
        }
        (Err(why), 0) => {
            eprintln!("verify: the CPU labs match; GPU labs skipped ({why})");
            Ok(())
        }
        (_, n) => Err(format!("{n} check(s) failed")),
    }
}

fn verify_mandelbrot(
    bins: &Bins,
    out: &Path,
    case: &Case,
    gpu: &Result<String, String>,
    keep: bool,
) -> crate::Result<Vec<Row>> {
    let (width, height) = (case.width, case.height);
    let size = format!("{width}x{height} {}", case.view.join(" "))
        .trim_end()
        .to_string();
    let file_tag = format!(
        "{width}x{height}{}",
        if case.view.is_empty() { "" } else { "-zoom" }
    );
    let large = (width, height) == LARGE;
    let reference = labs::find(if large { "lab02" } else { "lab01" })?;
    let reference_file = out.join(format!("{}-{file_tag}.ppm", reference.name));
    render(bins, &reference, case, &reference_file)
        .map_err(|e| format!("the reference {} failed at {size}: {e}", reference.name))?;
    let expected = ppm::read(&reference_file)?;

    let mut rows = Vec::new();
    for lab in LABS
        .iter()
        .filter(|l| l.mandelbrot && l.name != reference.name)
    {
        if large && lab.name == "lab01" {
            continue;
        }
        let mut row = Row {
            lab: lab.name,
            size: size.clone(),
            against: reference.name,
            result: String::new(),
            failed: false,
        };
        let may_differ = lab.name == "lab03";
        if let (true, Err(why)) = (lab.gpu, gpu) {
            row.result = format!("skipped: {why}");
            rows.push(row);
            continue;
        }
        let file = out.join(format!("{}-{file_tag}.ppm", lab.name));
        if let Err(e) = render(bins, lab, case, &file) {
            row.result = format!("did not run: {e}");
            row.failed = !may_differ;
            rows.push(row);
            continue;
        }
        let got = ppm::read(&file)?;
        if (got.width, got.height) != (expected.width, expected.height) {
            row.result = format!("wrong size {}x{}", got.width, got.height);
            row.failed = true;
        } else {
            let diff = ppm::diff(&expected, &got);
            match diff.first {
                None => row.result = "identical".to_string(),
                Some((file_row, column, want, have)) => {
                    let share = 100.0 * diff.pixels as f64 / (f64::from(width) * f64::from(height));
                    row.result = format!(
                        "{} pixels differ ({share:.4}%), first at file row {file_row}, column {column}: {want:?} expected, {have:?} found",
                        diff.pixels
                    );
                    row.failed = !may_differ;
                    if u64::from(width) * u64::from(height) <= 4096 * 4096 {
                        let png = out.join(format!("{}-{file_tag}-diff.png", lab.name));
                        ppm::write_marked_png(&expected, &got, &png)?;
                        row.result
                            .push_str(&format!(" (marked in {})", png.display()));
                    }
                }
            }
        }
        if may_differ && !row.result.starts_with("identical") {
            row.result
                .push_str(" [allowed: lab03 keeps fused multiply-adds]");
        }
        if !keep {
            let _ = fs::remove_file(&file);
        }
        rows.push(row);
    }
    if !keep {
        let _ = fs::remove_file(&reference_file);
    }
    Ok(rows)
}

/// lab05 on both backends with one seed: the raw canvases must be identical.
fn verify_buddhabrot(bins: &Bins, out: &Path, gpu: &Result<String, String>) -> Row {
    let mut row = Row {
        lab: "lab05",
        size: "gpu vs cpu".to_string(),
        against: "lab05",
        result: String::new(),
        failed: false,
    };
    if let Err(why) = gpu {
        row.result = format!("skipped: {why}");
        return row;
    }
    let Ok(lab05) = labs::find("lab05") else {
        row.result = "lab05 is not a known lab".to_string();
        row.failed = true;
        return row;
    };
    let mut canvases = Vec::new();
    for backend in ["cpu", "gpu"] {
        let raw = out.join(format!("lab05-{backend}.raw"));
        let png = out.join(format!("lab05-{backend}.png"));
        let status = run_lab(
            bins.command(&lab05)
                .args([
                    "--backend",
                    backend,
                    "--samples",
                    "4000000",
                    "--seed",
                    "7",
                    "--raw",
                ])
                .arg(&raw)
                .arg("-o")
                .arg(&png),
        );
        match status.and_then(|()| fs::read(&raw).map_err(|e| e.to_string())) {
            Ok(bytes) => canvases.push(bytes),
            Err(e) => {
                row.result = format!("{backend} backend did not run: {e}");
                row.failed = true;
                return row;
            }
        }
    }
    if canvases[0] == canvases[1] {
        row.result = format!("identical raw canvases ({} bytes)", canvases[0].len());
    } else {
        let differing = canvases[0]
            .chunks(4)
            .zip(canvases[1].chunks(4))
            .filter(|(a, b)| a != b)
            .count();
        row.result = format!("canvases differ in {differing} counters");
        row.failed = true;
    }
    row
}

fn render(bins: &Bins, lab: &Lab, case: &Case, file: &Path) -> crate::Result<()> {
    run_lab(
        bins.command(lab)
            .arg(case.width.to_string())
            .arg(case.height.to_string())
            .args(case.view)
            .arg("-o")
            .arg(file),
    )
}

/// Run a lab quietly; on failure, its own one-line message.
fn run_lab(command: &mut Command) -> crate::Result<()> {
    let output = command
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(stderr
        .lines()
        .last()
        .unwrap_or("failed with no message")
        .to_string())
}

fn print_table(rows: &[Row]) {
    println!("| lab | size | against | result |");
    println!("|---|---|---|---|");
    for row in rows {
        let mark = if row.failed { "FAIL: " } else { "" };
        println!(
            "| {} | {} | {} | {mark}{} |",
            row.lab, row.size, row.against, row.result
        );
    }
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once('x')
        .ok_or("a size is WIDTHxHEIGHT, e.g. 640x480")?;
    let side = |v: &str| match v.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{v}' is not a positive whole number")),
    };
    Ok((side(w)?, side(h)?))
}
