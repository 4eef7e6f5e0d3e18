//! The GPU backend: one thread per sample at a time, many samples per thread, atomic adds
//! into one canvas in device memory.

use cudarc::driver::{sys, DeviceRepr, LaunchConfig, PushKernelArg};
use shared::error::CudaResultExt;
use shared::gpu::{elapsed_ms, Gpu};
use shared::nvrtc::{KernelArg, KernelFile};
use shared::progress::Progress;
use shared::timing::{Phase, Timer};
use shared::{Error, Result};

use crate::orbit::{Params, GRID_LOG2, VISIT_LOG2};

/// Threads per block: a multiple of the warp size that lets the occupancy calculator fill
/// each SM with several blocks. 128 to 1024 measured within 1% of each other on the H100.
const BLOCK: u32 = 256;

/// Blocks launched per block the GPU can hold at once. With exactly one wave (1056 blocks on
/// the H100) ncu measured 43% achieved occupancy: the warps of a block finish at different
/// times, and a block's slots are freed only when its last warp is done. With more waves,
/// new blocks take the freed slots: 16 waves gave 12% more counts per second (56% achieved
/// occupancy), 64 waves 14%; more gave nothing more.
const WAVES: u32 = 64;

/// Samples per launch. The launches are queued back to back, so splitting costs no idle
/// time on the GPU; it only lets the progress bar move.
const BATCH: u64 = 1 << 30;

// SAFETY: `Params` is `#[repr(C)]`, made of 4-byte integers and floats only (no padding, no
// pointers), and matches `struct Params` in the kernel field for field.
unsafe impl DeviceRepr for Params {}

/// The kernel file and its NVRTC options, as data (the tests compile it without a GPU).
///
/// --fmad=false: a fused multiply-add rounds once where the CPU rounds twice; one orbit
/// point a last bit off is sooner or later a count in another pixel, and the canvases would
/// differ. No --use_fast_math: it would also fuse, and flush tiny values to zero. The cell
/// constants come from the Rust side, so both backends stratify the same way.
pub fn kernel_file() -> KernelFile {
    KernelFile::new(
        "buddhabrot.cu",
        include_str!("../kernels/buddhabrot.cu"),
        &["--fmad=false"],
    )
    .with_option(format!("-DGRID_LOG2={GRID_LOG2}"))
    .with_option(format!("-DVISIT_LOG2={VISIT_LOG2}"))
}

/// The canvas after `samples` samples, and the kernel time in milliseconds.
pub fn render(
    params: &Params,
    samples: u64,
    kernel: &KernelArg,
    progress: &Progress,
    timer: &mut Timer,
) -> Result<(Vec<u32>, f64)> {
    let gpu = timer.time(Phase::Context, Gpu::open).map_err(|e| match e {
        Error::NoGpu(why) => Error::NoGpu(format!(
            "{why} Here, that is this same run with --backend cpu: the canvas is identical."
        )),
        other => other,
    })?;
    timer.device(gpu.name.clone());

    let kernel = kernel.apply(kernel_file())?;
    let kernels = timer.time(Phase::Compile, || {
        gpu.compile(kernel.name, &kernel.source, &kernel.options)
    })?;
    timer.metric("nvrtc_options", kernels.options_line());
    let kernel = kernels.function("buddhabrot")?;

    // The grid is sized from the GPU, not from the sample count: each thread loops over
    // many samples (a grid-stride loop).
    let sms = gpu
        .ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .cuda("reading the SM count")?;
    let blocks_per_sm = kernel
        .occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
        .cuda("asking the occupancy calculator")?;
    let blocks = (sms.unsigned_abs() * blocks_per_sm.max(1)).saturating_mul(WAVES);
    timer.metric("launch", format!("{blocks} blocks of {BLOCK} threads"));
    let config = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };

    let bytes = params.pixels() * std::mem::size_of::<u32>();
    gpu.check_fits(bytes, "the canvas")?;
    let canvas = timer.time(Phase::Allocate, || {
        gpu.stream
            .alloc_zeros::<u32>(params.pixels())
            .cuda("allocating the canvas")
    })?;

    // Queue every batch, each followed by an event; then wait for the events in order to
    // move the progress bar.
    let start = gpu.timing_event()?;
    start
        .record(&gpu.stream)
        .cuda("recording the start event")?;
    let mut batches = Vec::new();
    for first in (0..samples).step_by(BATCH as usize) {
        let end = samples.min(first + BATCH);
        let mut launch = gpu.stream.launch_builder(&kernel);
        launch.arg(&canvas).arg(params).arg(&first).arg(&end);
        // SAFETY: the arguments match the kernel's signature (canvas, Params, first, end),
        // and the kernel writes only inside the canvas (it checks every index).
        unsafe { launch.launch(config) }.cuda("launching the kernel")?;
        let done = gpu
            .stream
            .record_event(None)
            .cuda("recording a progress event")?;
        batches.push((end - first, done));
    }
    let stop = gpu.timing_event()?;
    stop.record(&gpu.stream).cuda("recording the stop event")?;
    for (size, done) in batches {
        done.synchronize().cuda("running the kernel")?;
        progress.add(size);
    }
    let kernel_ms = elapsed_ms(&start, &stop)?;
    timer.record(Phase::Kernel, kernel_ms);

    let counts = timer.time(Phase::CopyBack, || {
        gpu.stream
            .clone_dtoh(&canvas)
            .cuda("copying the canvas back")
    })?;
    Ok((counts, kernel_ms))
}
