//! lab01-cpu-baseline: the Mandelbrot program as a student receives it.
//!
//! Sequential and faithful to the C original, on purpose: this is the "before" picture and
//! the reference every other lab must match byte for byte. The coursework report "Mandelbrot
//! CUDA Assignment" profiled three bottlenecks in it; each is marked below, and each later lab
//! removes one.

use std::process::ExitCode;

use clap::Parser;
use shared::error::{try_alloc_bytes, try_with_capacity};
use shared::mandelbrot::escape_count;
use shared::output::ImageFile;
use shared::palette::{colour, Rgb};
use shared::progress::Progress;
use shared::timing::{Phase, Timer};
use shared::view::MandelbrotArgs;
use shared::Result;

#[derive(Parser)]
#[command(
    name = "lab01",
    version,
    about = "Sequential CPU Mandelbrot: the reference",
    allow_negative_numbers = true
)]
struct Args {
    #[command(flatten)]
    mandelbrot: MandelbrotArgs,
}

fn main() -> ExitCode {
    shared::cli::run("lab01", run)
}

fn run(args: Args) -> Result<()> {
    let args = args.mandelbrot;
    let mut timer = Timer::start("lab01", args.width, args.height);
    let view = args.view();
    let width = view.width as usize;
    // Opened before the work, so that a path that cannot be written fails now.
    let file = ImageFile::create(
        &args.output_or("cpu-mandelbrot.ppm"),
        view.width,
        view.height,
    )?;

    // The image, and one pointer per row into it (`rgb_t **row_ptrs` in C).
    let mut img_data = timer.time(Phase::Allocate, || {
        try_alloc_bytes(view.rgb_bytes(), "the image")
    })?;
    let mut row_ptrs: Vec<&mut [u8]> = try_with_capacity(view.height as usize, "the row pointers")?;
    row_ptrs.extend(img_data.chunks_exact_mut(width * 3));

    // Bottleneck 1, the sequential loop: one pixel after another, on one core, although no
    // pixel depends on any other. lab02 spreads the rows over every core; the GPU labs give
    // each pixel a thread of its own.
    let progress = Progress::start(view.height.into(), "rows");
    timer.time(Phase::Compute, || {
        for (i, row) in row_ptrs.iter_mut().enumerate() {
            let y = view.y(i as u32);
            for (j, px) in row.chunks_exact_mut(3).enumerate() {
                // The counter is stored in all three channels until the colouring pass.
                px.fill(escape_count(view.x(j as u32), y));
            }
            // Not in the C program: a row counted for the progress bar a terminal shows on a
            // long run (one atomic add; `shared::progress`).
            progress.add(1);
        }
    });
    progress.finish();

    // Bottleneck 2, the double iteration: a second pass over every pixel just to turn
    // counters into colours. lab02 colours each pixel as soon as it is computed.
    timer.time(Phase::Colour, || {
        for row in row_ptrs.iter_mut() {
            for px in row.chunks_exact_mut(3) {
                map_colour(px);
            }
        }
    });

    // Bottleneck 3, the chunked reversed write: the rows go out from the last to the first,
    // one write call each. lab02 produces the rows in file order and writes once.
    timer.time(Phase::Write, || screen_dump(file, &row_ptrs))?;

    timer.finish(args.json)?;
    Ok(())
}

/// Replace a pixel's counter (in every channel) by its colour.
fn map_colour(px: &mut [u8]) {
    let rgb: Rgb = colour(px[0]);
    px.copy_from_slice(&rgb);
}

/// Write the rows from `height - 1` down to `0`, one write per row, after the header that
/// `ImageFile::create` wrote.
fn screen_dump(mut file: ImageFile, row_ptrs: &[&mut [u8]]) -> Result<()> {
    for row in row_ptrs.iter().rev() {
        file.write_rows(row)?;
    }
    file.commit()
}
