//! The GPU backend: one thread per sample at a time, many samples per thread, atomic adds
//! into one canvas in device memory.
//!
//! With several GPUs (`--devices`), each takes a range of the sample indices into a canvas
//! of its own (`src/devices.rs`), and the canvases are summed into the first GPU's
//! (`src/reduce.rs`). One host thread per GPU opens it, compiles the kernel and allocates
//! its canvas, all at once; then this thread queues every GPU's launches (they return at
//! once) and waits for them together.

use std::ops::Range;
use std::time::Instant;

use cudarc::driver::{sys, CudaFunction, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};
use shared::error::CudaResultExt;
use shared::gpu::{elapsed_ms, Gpu};
use shared::nvrtc::{KernelArg, KernelFile};
use shared::progress::Progress;
use shared::timing::{Phase, Timer};
use shared::{Error, Result};

use crate::config::Gpus;
use crate::cpu;
use crate::devices::split;
use crate::orbit::{Params, GRID_LOG2, VISIT_LOG2};
use crate::reduce::{self, Method, Nccl};

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
/// The cell constants come from the Rust side, so both backends stratify the same way.
pub fn kernel_file() -> KernelFile {
    KernelFile::new(
        "buddhabrot.cu",
        include_str!("../kernels/buddhabrot.cu"),
        // BEGIN SOLUTION
        // stub: &[],
        // A fused multiply-add rounds once where the CPU rounds twice; one orbit point a
        // last bit off is sooner or later a count in another pixel, and the canvases would
        // differ. No --use_fast_math: it would also fuse, and flush tiny values to zero.
        &["--fmad=false"],
        // END SOLUTION
    )
    .with_option(format!("-DGRID_LOG2={GRID_LOG2}"))
    .with_option(format!("-DVISIT_LOG2={VISIT_LOG2}"))
}

/// The most samples `--profile-png` places: 64 MiB of places, four times the pixels of
/// the default canvas (1440 x 2560); the later samples of a longer run are left undrawn.
const MOST_PLACED: u64 = 1 << 24;

/// With `--profile-png` (on the CPU device): draw the first launch as the canvas, each
/// sample where its point c lies, in its warp's colour, so that the picture shows where in
/// the plane the warps spend and lose their lanes. The first launch is the first GPU's
/// first batch, and the kernel's grid-stride loop gives its sample `first + k` to thread
/// `k` (modulo the grid's threads): the order `shared::profile::place` reads the places in.
/// With more samples than the grid has threads, a warp's colour is what it spent on all of
/// its samples, drawn where each of them lies.
fn place_samples(params: &Params, samples: &Range<u64>) {
    if shared::profile::drawing() {
        let first = samples.start;
        let end = samples.end.min(first + BATCH.min(MOST_PLACED));
        let places = params.start_pixels(first..end);
        shared::profile::place(params.width, params.height, places);
    }
}

/// The canvas after `samples` samples, and the milliseconds of the work itself: the kernel
/// time of the slowest GPU, plus the sum of the canvases where there are several.
pub fn render(
    params: &Params,
    samples: u64,
    gpus: &Gpus,
    kernel: &KernelArg,
    progress: &Progress,
    timer: &mut Timer,
) -> Result<(Vec<u32>, f64)> {
    let count = timer
        .time(Phase::Context, shared::gpu::device_count)
        .map_err(run_on_the_cpu)?;
    let ordinals = gpus.devices.resolve(count)?;
    // Chosen before anything starts: `--reduce nccl` without NCCL fails at once.
    let method = match ordinals.len() {
        1 => None,
        _ => Some(reduce::choose(gpus.reduce)?),
    };
    let kernel = kernel.apply(kernel_file())?;
    let mut workers = open_all(&ordinals, split(samples, ordinals.len()), params, &kernel)?;
    place_samples(params, &workers[0].samples);
    for phase in [Phase::Context, Phase::Compile, Phase::Allocate] {
        // The GPUs are set up side by side: the phase lasts as long as the slowest one.
        let slowest = workers
            .iter()
            .map(|w| w.setup_ms(phase))
            .fold(0.0, f64::max);
        timer.record(phase, slowest);
    }
    timer.device(describe(&workers));
    timer.metric("nvrtc_options", workers[0].options.clone());
    timer.metric("launch", workers[0].launch_line());
    timer.metric("gpus", workers.len());

    let finish = match method {
        None => Finish::Alone,
        Some(Method::Nccl) => Finish::Nccl(timer.time(Phase::Connect, || connect(&mut workers))?),
        Some(Method::Host { why }) => Finish::Host { why },
    };

    let kernel_ms = run_kernels(&workers, params, progress)?;
    let slowest = kernel_ms.iter().copied().fold(0.0, f64::max);
    timer.record(Phase::Kernel, slowest);
    if workers.len() > 1 {
        timer.metric("kernel_ms_per_gpu", kernel_ms);
    }

    let (counts, reduce_ms) = sum_canvases(finish, &mut workers, timer)?;
    Ok((counts, slowest + reduce_ms))
}

/// The first GPU's canvas, copied back once every GPU's is added into it; and the
/// milliseconds the adding took.
fn sum_canvases(
    finish: Finish,
    workers: &mut [Worker],
    timer: &mut Timer,
) -> Result<(Vec<u32>, f64)> {
    match finish {
        Finish::Alone => Ok((timer.time(Phase::CopyBack, || workers[0].copy_back())?, 0.0)),
        Finish::Nccl(nccl) => {
            let first = &workers[0].gpu;
            let stream = first.stream.clone();
            let (start, stop) = (first.timing_event()?, first.timing_event()?);
            start.record(&stream).cuda("recording the start event")?;
            nccl.reduce(workers.iter_mut().map(|w| &mut w.canvas))?;
            stop.record(&stream).cuda("recording the stop event")?;
            let ms = elapsed_ms(&start, &stop)?;
            // Every GPU done with its part before its communicator goes.
            for worker in workers.iter() {
                let stream = &worker.gpu.stream;
                stream.synchronize().cuda("finishing the reduce")?;
            }
            timer.record(Phase::Reduce, ms);
            let onto = workers[0].gpu.ctx.ordinal();
            let how = format!("NCCL {}: ncclReduce onto GPU {onto}", nccl.version);
            timer.metric("reduction", how);
            Ok((timer.time(Phase::CopyBack, || workers[0].copy_back())?, ms))
        }
        Finish::Host { why } => {
            let first = timer.time(Phase::CopyBack, || workers[0].copy_back())?;
            let clock = Instant::now();
            let mut canvases = vec![first];
            for worker in &workers[1..] {
                canvases.push(worker.copy_back()?);
            }
            let sum = cpu::sum(canvases);
            let ms = elapsed(clock);
            timer.record(Phase::Reduce, ms);
            let mut how = "host: each canvas copied back and added on the CPU".to_string();
            if let Some(why) = why {
                how += &format!(" (NCCL not used: {why})");
            }
            timer.metric("reduction", how);
            Ok((sum, ms))
        }
    }
}

/// NCCL's communicators for these GPUs, ready to sum their canvases.
///
/// NCCL sets up the links between GPUs at a communicator's first collective, not when it is
/// made (its default since 2.22): on two H200s the first reduce of a 14.7 MB canvas took
/// 26-31 ms, the same reduce once connected 0.3 ms. So one reduce runs here, on the canvases
/// while they are still zero (a sum of zeros changes nothing), and the reduce phase then
/// times the sum itself.
fn connect(workers: &mut [Worker]) -> Result<Nccl> {
    let nccl = Nccl::connect(workers.iter().map(|w| w.gpu.stream.clone()).collect())?;
    nccl.reduce(workers.iter_mut().map(|w| &mut w.canvas))?;
    for worker in workers.iter() {
        let stream = &worker.gpu.stream;
        stream.synchronize().cuda("connecting the GPUs")?;
    }
    Ok(nccl)
}

/// How a run ends once the kernels are done.
enum Finish {
    /// One GPU: its canvas is the result.
    Alone,
    /// Several GPUs, summed by NCCL into the first one's canvas.
    Nccl(Nccl),
    /// Several GPUs, summed on the host; `why` NCCL was not used, if it was not asked for.
    Host { why: Option<String> },
}

/// One GPU's share of the run: its context, its compiled kernel, its canvas, its samples.
struct Worker {
    gpu: Gpu,
    kernel: CudaFunction,
    config: LaunchConfig,
    canvas: CudaSlice<u32>,
    samples: Range<u64>,
    /// The NVRTC options, as one line for the report.
    options: String,
    /// Milliseconds to open the GPU, compile the kernel and allocate the canvas.
    context_ms: f64,
    compile_ms: f64,
    allocate_ms: f64,
}

impl Worker {
    /// Open GPU `ordinal`, compile the kernel for it, size the launch and allocate a zeroed
    /// canvas, for the samples `samples`.
    fn open(
        ordinal: usize,
        samples: Range<u64>,
        params: &Params,
        kernel: &KernelFile,
    ) -> Result<Worker> {
        let clock = Instant::now();
        let gpu = Gpu::open_device(ordinal).map_err(run_on_the_cpu)?;
        let context_ms = elapsed(clock);

        let clock = Instant::now();
        let kernels = gpu.compile(kernel.name, &kernel.source, &kernel.options)?;
        let compile_ms = elapsed(clock);
        let function = kernels.function("buddhabrot")?;

        // The grid is sized from the GPU, not from the sample count: each thread loops over
        // many samples (a grid-stride loop). Never more threads than samples, though: a short
        // run (4 million samples on an H100's 17 million threads) would launch threads that
        // only exit, which the CPU device runs one by one (3.3 s of its 3.5 s for 300,000
        // samples, 0.3 s once capped).
        let sms = gpu
            .ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .cuda("reading the SM count")?;
        let blocks_per_sm = function
            .occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
            .cuda("asking the occupancy calculator")?;
        let waves = (sms.unsigned_abs() * blocks_per_sm.max(1)).saturating_mul(WAVES);
        let needed = (samples.end - samples.start)
            .div_ceil(u64::from(BLOCK))
            .max(1);
        let blocks = waves.min(u32::try_from(needed).unwrap_or(u32::MAX));
        let config = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };

        let bytes = params.pixels() * std::mem::size_of::<u32>();
        gpu.check_fits(bytes, "the canvas")?;
        let clock = Instant::now();
        let canvas = gpu
            .stream
            .alloc_zeros::<u32>(params.pixels())
            .cuda("allocating the canvas")?;
        let allocate_ms = elapsed(clock);
        Ok(Worker {
            gpu,
            kernel: function,
            config,
            canvas,
            samples,
            options: kernels.options_line(),
            context_ms,
            compile_ms,
            allocate_ms,
        })
    }

    fn setup_ms(&self, phase: Phase) -> f64 {
        match phase {
            Phase::Context => self.context_ms,
            Phase::Compile => self.compile_ms,
            Phase::Allocate => self.allocate_ms,
            _ => 0.0,
        }
    }

    fn copy_back(&self) -> Result<Vec<u32>> {
        self.gpu
            .stream
            .clone_dtoh(&self.canvas)
            .cuda("copying a canvas back")
    }

    fn launch_line(&self) -> String {
        format!("{} blocks of {BLOCK} threads", self.config.grid_dim.0)
    }
}

/// Open every GPU at once, one thread each: contexts, compilations and allocations overlap.
fn open_all(
    ordinals: &[usize],
    shares: Vec<Range<u64>>,
    params: &Params,
    kernel: &KernelFile,
) -> Result<Vec<Worker>> {
    std::thread::scope(|scope| {
        let mut threads = Vec::new();
        for (&ordinal, samples) in ordinals.iter().zip(shares) {
            let thread = std::thread::Builder::new()
                .name(format!("gpu {ordinal}"))
                .spawn_scoped(scope, move || {
                    Worker::open(ordinal, samples, params, kernel)
                })
                .map_err(|e| {
                    Error::Environment(format!(
                        "cannot start a thread for GPU {ordinal} ({e}); a limit on processes \
                         (ulimit -u) or memory (ulimit -v) is too low: raise it, or ask for \
                         fewer GPUs"
                    ))
                })?;
            threads.push(thread);
        }
        threads
            .into_iter()
            .map(|thread| {
                // A panic in a GPU's thread is a bug: let it go on as this thread's.
                thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// Queue every GPU's batches, each followed by an event, then wait for the events in the
/// order they were queued to move the progress bar. The batches go round the GPUs, so the
/// bar moves as all of them progress. Returns each GPU's kernel time in milliseconds.
fn run_kernels(workers: &[Worker], params: &Params, progress: &Progress) -> Result<Vec<f64>> {
    let mut starts = Vec::new();
    for worker in workers {
        let start = worker.gpu.timing_event()?;
        start
            .record(&worker.gpu.stream)
            .cuda("recording the start event")?;
        starts.push(start);
    }
    let rounds = workers
        .iter()
        .map(|w| (w.samples.end - w.samples.start).div_ceil(BATCH))
        .max()
        .unwrap_or(0);
    let mut batches = Vec::new();
    for round in 0..rounds {
        for worker in workers {
            let first = worker.samples.start + round * BATCH;
            if first >= worker.samples.end {
                continue;
            }
            let end = worker.samples.end.min(first + BATCH);
            let stream = &worker.gpu.stream;
            let mut launch = stream.launch_builder(&worker.kernel);
            launch.arg(&worker.canvas).arg(params).arg(&first).arg(&end);
            // SAFETY: the arguments match the kernel's signature (canvas, Params, first,
            // end), and the kernel writes only inside the canvas (it checks every index).
            unsafe { launch.launch(worker.config) }.cuda("launching the kernel")?;
            let done = stream
                .record_event(None)
                .cuda("recording a progress event")?;
            batches.push((end - first, done));
        }
    }
    let mut stops = Vec::new();
    for worker in workers {
        let stop = worker.gpu.timing_event()?;
        stop.record(&worker.gpu.stream)
            .cuda("recording the stop event")?;
        stops.push(stop);
    }
    for (size, done) in batches {
        done.synchronize().cuda("running the kernel")?;
        progress.add(size);
    }
    starts
        .iter()
        .zip(&stops)
        .map(|(start, stop)| elapsed_ms(start, stop))
        .collect()
}

/// "NVIDIA H200" for one GPU, "2 x NVIDIA H200" for two alike, the names joined otherwise.
fn describe(workers: &[Worker]) -> String {
    let first = &workers[0].gpu.name;
    if workers.len() == 1 {
        first.clone()
    } else if workers.iter().all(|w| &w.gpu.name == first) {
        format!("{} x {first}", workers.len())
    } else {
        let names: Vec<&str> = workers.iter().map(|w| w.gpu.name.as_str()).collect();
        names.join(" + ")
    }
}

/// A missing GPU, with what runs instead.
fn run_on_the_cpu(error: Error) -> Error {
    match error {
        Error::NoGpu(why) => Error::NoGpu(format!(
            "{why} Here, that is this same run with --backend cpu: the canvas is identical."
        )),
        other => other,
    }
}

fn elapsed(clock: Instant) -> f64 {
    clock.elapsed().as_secs_f64() * 1e3
}
