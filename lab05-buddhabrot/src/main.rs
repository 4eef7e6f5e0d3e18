//! lab05: a Buddhabrot, on every CPU core or on the GPU.
//!
//! Parse, open the output files, compute the canvas on the chosen backend, write the PNG
//! (and the raw counts), report. The library (src/lib.rs) holds each step.

use std::process::ExitCode;

use lab05_buddhabrot::config::{Args, Backend};
use lab05_buddhabrot::output::{self, Files, Stats};
use lab05_buddhabrot::{cpu, gpu};
use shared::progress::Progress;
use shared::timing::{Phase, Timer};
use shared::Result;

fn main() -> ExitCode {
    shared::cli::run("lab05", run)
}

fn run(args: Args) -> Result<()> {
    args.device.select()?;
    let mut timer = Timer::start("lab05", args.width, args.height);
    let params = args.params()?;
    let gpus = args.gpus()?;

    // Opened first, so that an unwritable path fails now, not after the computation; and
    // the worker threads started now, so that a process limit is one clear line.
    let files = Files::create(&args.output, args.raw.as_deref())?;
    shared::cli::start_threads()?;

    // A bar on a terminal, once the run has taken a second (`shared::progress`).
    let progress = Progress::start(args.samples, "samples");
    let (canvas, compute_ms) = match args.backend {
        Backend::Cpu => {
            let canvases = timer.time(Phase::Allocate, || cpu::allocate(&params))?;
            let start = std::time::Instant::now();
            let canvas = cpu::render(&params, args.samples, canvases, &progress);
            let ms = start.elapsed().as_secs_f64() * 1e3;
            timer.record(Phase::Compute, ms);
            (canvas, ms)
        }
        Backend::Gpu => gpu::render(
            &params,
            args.samples,
            &gpus,
            &args.kernel,
            &progress,
            &mut timer,
        )?,
    };
    progress.finish();

    let stats = Stats::of(&canvas);
    timer.time(Phase::Write, || {
        let grey = output::tone(&canvas, stats.max)?;
        files.write(&grey, &canvas, params.width, params.height)
    })?;

    // The statistics the Code Review answer's Buddhabrot printed. Counts per second use the
    // compute (CPU) or kernel (GPU) time: the work itself, without start-up and file writing.
    timer.metric("samples", args.samples);
    timer.metric("total_counts", stats.total);
    timer.metric(
        "counts_per_pixel",
        stats.total as f64 / params.pixels() as f64,
    );
    timer.metric("max_count", stats.max);
    timer.metric("min_count", stats.min);
    timer.metric("counts_per_second", stats.total as f64 / (compute_ms / 1e3));
    timer.finish(args.json)?;
    Ok(())
}
