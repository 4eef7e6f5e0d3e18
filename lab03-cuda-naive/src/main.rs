//! lab03-cuda-naive: the first GPU port.
//!
//! The loop body of lab01 becomes a kernel (kernels/mandelbrot_naive.cu), launched with one
//! block per row and one thread per column. Everything else is the simplest thing that
//! works: the palette is copied to global memory, NVRTC gets no options but the target
//! architecture, and the whole image is copied back before it is written.
//!
//! Two lessons wait here for lab04: the launch shape caps the width at the threads-per-block
//! limit, and NVRTC's default fused multiply-adds change some pixels.

use std::process::ExitCode;

use clap::Parser;
// BEGIN SOLUTION
use cudarc::driver::{sys, LaunchConfig, PushKernelArg};
// END SOLUTION
use shared::error::{try_alloc_bytes, CudaResultExt};
// BEGIN SOLUTION
// stub: use shared::gpu::{DeviceArg, Gpu};
use shared::gpu::{elapsed_ms, DeviceArg, Gpu};
// END SOLUTION
use shared::nvrtc::KernelArg;
use shared::output::ImageFile;
use shared::palette::PALETTE;
use shared::timing::{Phase, Timer};
use shared::view::MandelbrotArgs;
use shared::Result;

#[derive(Parser)]
#[command(
    name = "lab03",
    version,
    about = "Naive CUDA Mandelbrot: one block per row, default compiler flags",
    allow_negative_numbers = true
)]
struct Args {
    #[command(flatten)]
    mandelbrot: MandelbrotArgs,

    #[command(flatten)]
    kernel: KernelArg,

    #[command(flatten)]
    device: DeviceArg,
}

fn main() -> ExitCode {
    shared::cli::run("lab03", run)
}

fn run(args: Args) -> Result<()> {
    args.device.select()?;
    // `--kernel FILE` compiles another kernel of the same signature with the same options.
    let kernel = args.kernel.apply(lab03_cuda_naive::kernel_file())?;
    let args = args.mandelbrot;
    let mut timer = Timer::start("lab03", args.width, args.height);
    let view = args.view();
    // One thread per column in one block: a limit every CUDA GPU shares, so it is checked
    // before anything is opened.
    lab03_cuda_naive::check_width(view.width)?;
    // Opened before the work, so that a path that cannot be written fails now.
    let file = ImageFile::create(
        &args.output_or("lab03-mandelbrot.ppm"),
        view.width,
        view.height,
    )?;

    let gpu = timer.time(Phase::Context, Gpu::open)?;
    timer.device(gpu.name.clone());

    let kernels = timer.time(Phase::Compile, || {
        gpu.compile(kernel.name, &kernel.source, &kernel.options)
    })?;
    let escape_colour = kernels.function("escape_colour_naive")?;

    let stream = &gpu.stream;
    let (d_image, d_palette, mut image) = timer.time(Phase::Allocate, || -> Result<_> {
        gpu.check_fits(view.rgb_bytes(), "the image")?;
        let d_image = stream
            .alloc_zeros::<u8>(view.rgb_bytes())
            .cuda("allocating the image on the device")?;
        let d_palette = stream
            .clone_htod(PALETTE.as_flattened())
            .cuda("copying the palette")?;
        let image = try_alloc_bytes(view.rgb_bytes(), "the image")?;
        Ok((d_image, d_palette, image))
    })?;

    // BEGIN SOLUTION
    // stub: let () = shared::unfinished!(
    // stub:     "the launch: one block per row, one thread per column, timed with events",
    // stub:     escape_colour,
    // stub:     d_image,
    // stub:     d_palette
    // stub: );
    let config = LaunchConfig {
        grid_dim: (view.height, 1, 1),
        block_dim: (view.width, 1, 1),
        shared_mem_bytes: 0,
    };
    let (width, height) = (view.width as i32, view.height as i32);
    let mut launch = stream.launch_builder(&escape_colour);
    launch
        .arg(&d_image)
        .arg(&d_palette)
        .arg(&width)
        .arg(&height)
        .arg(&view.cx)
        .arg(&view.cy)
        .arg(&view.scale);
    launch.record_kernel_launch(sys::CUevent_flags::CU_EVENT_DEFAULT);
    // SAFETY: the arguments match the kernel's signature, and the grid covers exactly the
    // `width x height` pixels of `d_image`.
    let events = unsafe { launch.launch(config) }.cuda("launching the kernel")?;
    if let Some((start, end)) = events {
        timer.record(Phase::Kernel, elapsed_ms(&start, &end)?);
    }
    // END SOLUTION

    timer.time(Phase::CopyBack, || {
        stream
            .memcpy_dtoh(&d_image, &mut image)
            .cuda("copying the image back")
    })?;
    timer.time(Phase::Write, || file.write_all_and_commit(&image))?;

    timer.metric("nvrtc_options", kernels.options_line());
    timer.finish(args.json)?;
    Ok(())
}
