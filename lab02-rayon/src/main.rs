//! lab02-rayon: the same pixels as lab01, on every CPU core.
//!
//! Three changes, one per bottleneck of lab01:
//! 1. rows are computed in parallel (rayon's work stealing balances them: a row through
//!    the set costs hundreds of times more than a row outside it);
//! 2. each pixel is coloured as soon as its counter is known (no second pass);
//! 3. rows are produced directly in file order (bottom row first), so the image is written
//!    with one call instead of one per row.
//!
//! The per-pixel arithmetic is lab01's own function, untouched: the output is byte-identical.

use std::process::ExitCode;

use clap::Parser;
// BEGIN SOLUTION
use rayon::prelude::*;
// END SOLUTION
use shared::error::try_alloc_bytes;
// BEGIN SOLUTION
use shared::mandelbrot::escape_count;
// END SOLUTION
use shared::output::ImageFile;
// BEGIN SOLUTION
use shared::palette::colour;
// END SOLUTION
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
}

fn main() -> ExitCode {
    shared::cli::run("lab02", run)
}

fn run(args: Args) -> Result<()> {
    let args = args.mandelbrot;
    let mut timer = Timer::start("lab02", args.width, args.height);
    let view = args.view();
    let row_bytes = view.width as usize * 3;
    // Opened before the work, so that a path that cannot be written fails now; and the
    // worker threads started now, so that a process limit is one clear line.
    let file = ImageFile::create(
        &args.output_or("lab02-mandelbrot.ppm"),
        view.width,
        view.height,
    )?;
    shared::cli::start_threads()?;

    let mut image = timer.time(Phase::Allocate, || {
        try_alloc_bytes(view.rgb_bytes(), "the image")
    })?;

    timer.time(Phase::Compute, || {
        // BEGIN SOLUTION
        // stub: let () = shared::unfinished!(
        // stub:     "the rows, in parallel, each pixel coloured at once, in file order",
        // stub:     &mut image,
        // stub:     row_bytes
        // stub: );
        // One task per row; rayon splits the range and idle threads steal the rest, so the
        // expensive rows through the set do not leave the other cores waiting.
        image
            .par_chunks_exact_mut(row_bytes)
            .enumerate()
            .for_each(|(file_row, row)| {
                // The file starts with the bottom row of the image (i = height - 1).
                let i = view.height - 1 - file_row as u32;
                let y = view.y(i);
                for (j, px) in row.chunks_exact_mut(3).enumerate() {
                    px.copy_from_slice(&colour(escape_count(view.x(j as u32), y)));
                }
            });
        // END SOLUTION
    });

    timer.time(Phase::Write, || file.write_all_and_commit(&image))?;

    timer.finish(args.json)?;
    Ok(())
}
