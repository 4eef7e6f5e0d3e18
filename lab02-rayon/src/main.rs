//! lab02-rayon: the same pixels as lab01, on every CPU core.
//!
//! Three changes, one per bottleneck of lab01:
//! 1. rows are computed in parallel (rayon's work stealing balances them: a row through
//!    the set costs hundreds of times more than a row outside it);
//! 2. each pixel is coloured as soon as its counter is known (no second pass);
//! 3. rows are produced directly in file order (bottom row first), so the image is written
//!    with one call instead of one per row.
//!
//! Two switches make the comparison with the GPU fair, and keep the pixels byte-identical:
//! `--simd` runs the escape loop on the CPU's widest vector lanes (see `src/lanes.rs`), and
//! `--shortcuts` skips the work lab04's kernel skips, with the same plan (`shared::plan`):
//! mirror rows computed once, points in the cardioid and the period-2 bulb black at once.
//! Without them, every pixel is lab01's own function, untouched.

use std::process::ExitCode;

use clap::Parser;
// BEGIN SOLUTION
// stub: use lab02_rayon::lanes::Lanes;
use lab02_rayon::lanes::{Lanes, Row};
use rayon::prelude::*;
// END SOLUTION
use shared::error::try_alloc_bytes;
use shared::output::ImageFile;
use shared::plan::{NearSet, RowPlan};
use shared::progress::Progress;
use shared::timing::{Phase, Timer};
use shared::view::MandelbrotArgs;
use shared::Result;

#[derive(Parser)]
#[command(
    name = "lab02",
    version,
    about = "Parallel CPU Mandelbrot with rayon",
    allow_negative_numbers = true
)]
struct Args {
    #[command(flatten)]
    mandelbrot: MandelbrotArgs,

    /// Run the escape loop on the CPU's widest f64 lanes (AVX-512, AVX2 or portable, chosen
    /// at run time)
    #[arg(long)]
    simd: bool,

    /// Skip what lab04 skips: rows that mirror another row, and points in the main cardioid
    /// or the period-2 bulb
    #[arg(long)]
    shortcuts: bool,
}

fn main() -> ExitCode {
    shared::cli::run("lab02", run)
}

fn run(args: Args) -> Result<()> {
    let Args {
        mandelbrot: args,
        simd,
        shortcuts,
    } = args;
    let mut timer = Timer::start("lab02", args.width, args.height);
    let view = args.view();
    // Opened before the work, so that a path that cannot be written fails now; and the
    // worker threads started now, so that a process limit is one clear line.
    let file = ImageFile::create(
        &args.output_or("lab02-mandelbrot.ppm"),
        view.width,
        view.height,
    )?;
    shared::cli::start_threads()?;
    let lanes = simd.then(Lanes::detect);

    let mut image = timer.time(Phase::Allocate, || {
        try_alloc_bytes(view.rgb_bytes(), "the image")
    })?;

    // Rows counted for a progress bar on a terminal, on a long run (`shared::progress`).
    let progress = Progress::start(view.height.into(), "rows");
    let computed_rows = timer.time(Phase::Compute, || {
        // Every column's and row's coordinate, by lab01's own mapping; the rows to compute;
        // the box where the cardioid and period-2 tests can hold (lab04's plan).
        let xs: Vec<f64> = (0..view.width).map(|j| view.x(j)).collect();
        let ys: Vec<f64> = (0..view.height).map(|i| view.y(i)).collect();
        let near = NearSet::find(&xs, &ys);
        let plan = RowPlan::new(&ys, shortcuts);
        // BEGIN SOLUTION
        // stub: let computed_rows: usize = shared::unfinished!(
        // stub:     "the planned rows on rayon tasks, in file order, each pixel coloured at once",
        // stub:     &mut image,
        // stub:     near,
        // stub:     plan,
        // stub:     progress
        // stub: );
        // One task per computed row; rayon splits the list and idle threads steal the rest,
        // so the expensive rows through the set do not leave the other cores waiting.
        let jobs = row_jobs(&mut image, view.width as usize * 3, &plan);
        let computed_rows = jobs.len();
        jobs.into_par_iter().for_each(|RowJob { i, out, mirror }| {
            let row = Row {
                xs: &xs,
                y: ys[i],
                near: near.columns(i),
                early_exits: shortcuts,
            };
            match lanes {
                Some(lanes) => lanes.colour(&row, out),
                None => row.colour_one_by_one(out),
            }
            if let Some(mirror) = mirror {
                mirror.copy_from_slice(out);
                progress.add(1);
            }
            progress.add(1);
        });
        // END SOLUTION
        computed_rows
    });
    progress.finish();

    timer.time(Phase::Write, || file.write_all_and_commit(&image))?;

    timer.metric("lanes", lanes.map_or("none", Lanes::name));
    timer.metric("computed_rows", computed_rows);
    timer.finish(args.json)?;
    Ok(())
}

// BEGIN SOLUTION
/// One task: image row `i`, its place in the file-order buffer, and the place of the row
/// that mirrors it, if any.
struct RowJob<'a> {
    i: usize,
    out: &'a mut [u8],
    mirror: Option<&'a mut [u8]>,
}

/// The tasks for the rows the plan computes. The file starts with the bottom row
/// (i = height - 1), so the buffer's rows are taken in reverse.
fn row_jobs<'a>(image: &'a mut [u8], row_bytes: usize, plan: &RowPlan) -> Vec<RowJob<'a>> {
    let mut rows: Vec<Option<&mut [u8]>> =
        image.chunks_exact_mut(row_bytes).rev().map(Some).collect();
    let mut take = |i: i32| {
        rows[i as usize]
            .take()
            .expect("the plan produces each row once")
    };
    plan.rows
        .iter()
        .zip(&plan.mirrors)
        .map(|(&i, &m)| RowJob {
            i: i as usize,
            out: take(i),
            mirror: (m >= 0).then(|| take(m)),
        })
        .collect()
}
// END SOLUTION
