//! The GPU side: compile kernels/reduce.cu with NVRTC, build the objects the virtual and
//! function-pointer variants call through, and time every kernel over a sweep of launch
//! shapes with CUDA events.

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaEvent, CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use shared::error::CudaResultExt;
use shared::gpu::{elapsed_ms, Gpu, Kernels};
use shared::nvrtc::KernelArg;
use shared::output::Output;
use shared::timing::{Phase, Timer};
use shared::{Error, Result};

use crate::report::{gbps, is_exact, median, Measured};

/// The launch shapes swept for every kernel: threads per block, and blocks per
/// multiprocessor (the grid is that times the device's multiprocessor count, so every
/// multiprocessor gets work at every setting; the kernels' grid-stride loops cover any n).
const BLOCK_SIZES: [u32; 4] = [128, 256, 512, 1024];
const BLOCKS_PER_SM: [u32; 4] = [1, 2, 4, 8];

/// Launches per timed sample, back to back between one pair of events. One sum of the
/// default 128 MiB takes about 46 microseconds on an H100, and submitting a launch takes the
/// host a few: timed alone, a launch would count them too. In a batch the host submits the
/// next launch while the GPU runs the last one, so the events see the kernels.
const BATCH: usize = 10;

/// Launches per sample on the CPU device, whose times are the CPU's and say nothing of a
/// GPU's: one launch checks the sums as well as ten, and a launch there costs every thread
/// of the grid on the CPU (ten made each lab06 run on the CPU device ten times as long).
const BATCH_ON_THE_CPU_DEVICE: usize = 1;

/// The ways to write the sum, as kernels/reduce.cu writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuSum {
    Plain,
    Generic,
    Virtual,
    FnPtrLoop,
    FnPtrHoisted,
}

/// A kernel to time: the read that sets the peak, or one of the sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    Peak,
    Sum(GpuSum),
}

impl Kernel {
    /// The kernel's `extern "C"` name in kernels/reduce.cu.
    fn function_name(self) -> &'static str {
        match self {
            Kernel::Peak => "read_peak",
            Kernel::Sum(GpuSum::Plain) => "reduce_plain",
            Kernel::Sum(GpuSum::Generic) => "reduce_generic",
            Kernel::Sum(GpuSum::Virtual) => "reduce_virtual",
            Kernel::Sum(GpuSum::FnPtrLoop) => "reduce_fn_ptr_loop",
            Kernel::Sum(GpuSum::FnPtrHoisted) => "reduce_fn_ptr_hoisted",
        }
    }
}

/// The compiled kernels, the data on the device, and what the kernels write to.
pub struct GpuBench {
    gpu: Gpu,
    kernels: Kernels,
    multiprocessors: u32,
    n: u64,
    data: CudaSlice<f32>,
    /// Where the sums add their block totals, one slot per launch of a batch; zeroed before
    /// every batch.
    totals: CudaSlice<f32>,
    /// Where the peak kernel would write if its impossible test passed.
    sink: CudaSlice<u32>,
    /// An `Adder` object, constructed on the device by `build_adder`.
    adder: CudaSlice<u64>,
    /// The address of the device function `add`, stored by `store_add_pointer`.
    add_pointer: CudaSlice<u64>,
    start: CudaEvent,
    end: CudaEvent,
    /// Launches per timed sample: `BATCH` on a GPU, `BATCH_ON_THE_CPU_DEVICE` on the CPU device.
    batch: usize,
    /// The launch shapes timed: threads per block, and blocks per multiprocessor.
    block_sizes: Vec<u32>,
    blocks_per_sm: Vec<u32>,
    /// One launch of each sum kernel measured so far (its median at its best shape), summed:
    /// the report's `kernel` phase. The peak is the yardstick, not counted.
    pub kernel_ms: f64,
}

/// What `--threads-per-block` and `--blocks-per-sm` ask to be timed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shape {
    pub threads_per_block: Option<u32>,
    pub blocks_per_sm: Option<u32>,
}

impl Shape {
    /// The block sizes and blocks per multiprocessor to time: the flags' own, else the sweep.
    /// The CPU device's times say nothing of a GPU's: there, one shape checks the sums, the
    /// largest block, so that every thread index a block can have runs (and has its
    /// accesses checked).
    fn sweep(self, emulated: bool) -> (Vec<u32>, Vec<u32>) {
        let pick = |given: Option<u32>, all: &[u32], alone: u32| match given {
            Some(n) => vec![n],
            None if emulated => vec![alone],
            None => all.to_vec(),
        };
        (
            pick(self.threads_per_block, &BLOCK_SIZES, BLOCK_SIZES[3]),
            pick(self.blocks_per_sm, &BLOCKS_PER_SM, BLOCKS_PER_SM[0]),
        )
    }
}

impl GpuBench {
    /// Compile the kernels, copy `data` to the device, and build the `Adder` object and the
    /// function pointer on the device.
    pub fn new(
        gpu: Gpu,
        data: &[f32],
        kernel: &KernelArg,
        shape: Shape,
        timer: &mut Timer,
    ) -> Result<Self> {
        // The file, its header and its options (`--std=c++17`) are in src/lib.rs.
        let kernel = kernel.apply(crate::kernel_file())?;
        let kernels = timer.time(Phase::Compile, || gpu.compile_file(&kernel))?;
        let multiprocessors = gpu
            .ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .cuda("reading the multiprocessor count")?;
        gpu.check_fits(std::mem::size_of_val(data) + (1 << 20), "the data")?;

        let batch = if gpu.emulated {
            BATCH_ON_THE_CPU_DEVICE
        } else {
            BATCH
        };
        let stream = gpu.stream.clone();
        let (data, totals, sink, mut adder, mut add_pointer) =
            timer.time(Phase::Allocate, || -> Result<_> {
                Ok((
                    stream
                        .clone_htod(data)
                        .cuda("copying the data to the device")?,
                    stream
                        .alloc_zeros::<f32>(batch)
                        .cuda("allocating the totals")?,
                    stream.alloc_zeros::<u32>(1).cuda("allocating the sink")?,
                    // An Adder is one vtable pointer: 8 bytes.
                    stream.alloc_zeros::<u64>(1).cuda("allocating the Adder")?,
                    stream
                        .alloc_zeros::<u64>(1)
                        .cuda("allocating the pointer")?,
                ))
            })?;

        let one_thread = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let build_adder = kernels.function("build_adder")?;
        let store_add_pointer = kernels.function("store_add_pointer")?;
        // SAFETY: each kernel takes one pointer to device memory large enough for what it
        // writes (8 bytes).
        unsafe {
            stream
                .launch_builder(&build_adder)
                .arg(&mut adder)
                .launch(one_thread)
                .cuda("building the Adder object on the device")?;
            stream
                .launch_builder(&store_add_pointer)
                .arg(&mut add_pointer)
                .launch(one_thread)
                .cuda("storing the function pointer on the device")?;
        }

        let start = gpu.timing_event()?;
        let end = gpu.timing_event()?;
        let (block_sizes, blocks_per_sm) = shape.sweep(gpu.emulated);
        Ok(GpuBench {
            n: data.len() as u64,
            multiprocessors: multiprocessors as u32,
            gpu,
            kernels,
            data,
            totals,
            sink,
            adder,
            add_pointer,
            start,
            end,
            batch,
            block_sizes,
            blocks_per_sm,
            kernel_ms: 0.0,
        })
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.gpu.name
    }

    /// Whether this is the CPU device, whose times say nothing of a GPU.
    pub fn emulated(&self) -> bool {
        self.gpu.emulated
    }

    /// Time `kernel` at every launch shape of the sweep: one warm-up batch, then `reps`
    /// timed batches, every launch's sum checked. The result is the shape with the best
    /// median, and a sum that differs from `expected` if any launch got one.
    pub fn measure(&mut self, kernel: Kernel, reps: usize, expected: u64) -> Result<Measured> {
        let function = self.kernels.function(kernel.function_name())?;
        let max_threads = function
            .max_threads_per_block()
            .cuda("reading a kernel's block-size limit")?;
        let registers = function
            .num_regs()
            .cuda("reading a kernel's register count")?;

        let mut best: Option<(f64, LaunchConfig)> = None;
        let mut sum = expected as f32;
        // Batch 0 is the warm-up on a GPU: the first touch of the code and the data. The CPU
        // device has nothing to warm, and each of its batches costs the whole grid on the CPU.
        let first = usize::from(self.gpu.emulated);
        let (block_sizes, blocks_per_sm) = (self.block_sizes.clone(), self.blocks_per_sm.clone());
        for &block in block_sizes.iter().filter(|&&b| b as i32 <= max_threads) {
            for &per_sm in &blocks_per_sm {
                let shape = LaunchConfig {
                    grid_dim: (self.multiprocessors * per_sm, 1, 1),
                    block_dim: (block, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut times = Vec::with_capacity(reps);
                for rep in first..=reps {
                    let (ms, totals) = self.batch(&function, kernel, shape)?;
                    let wrong = totals.iter().copied().find(|&t| !is_exact(t, expected));
                    if let (Kernel::Sum(_), Some(wrong)) = (kernel, wrong) {
                        sum = wrong;
                    }
                    if rep > 0 {
                        times.push(ms / self.batch as f64);
                    }
                }
                let ms = median(&mut times);
                if best.is_none_or(|(best_ms, _)| ms < best_ms) {
                    best = Some((ms, shape));
                }
            }
        }
        let Some((ms, shape)) = best else {
            return Err(Error::Usage(format!(
                "{} cannot run with {} threads per block on this GPU (its limit is {max_threads})",
                kernel.function_name(),
                self.block_sizes[0]
            )));
        };
        if kernel != Kernel::Peak {
            self.kernel_ms += ms;
        }
        Ok(Measured {
            gbps: gbps(self.n as usize, ms),
            sum: (kernel != Kernel::Peak).then_some(sum),
            launch: Some(format!(
                "{} x {}, {registers} regs",
                shape.grid_dim.0, shape.block_dim.0
            )),
        })
    }

    /// `self.batch` launches back to back between two timing events: their time in
    /// milliseconds, and the totals they wrote (zeros for the peak kernel, which writes
    /// none).
    fn batch(
        &mut self,
        function: &CudaFunction,
        kernel: Kernel,
        shape: LaunchConfig,
    ) -> Result<(f64, Vec<f32>)> {
        let stream = self.gpu.stream.clone();
        stream
            .memset_zeros(&mut self.totals)
            .cuda("zeroing the totals")?;
        self.start.record(&stream).cuda("recording an event")?;
        for slot in 0..self.batch {
            let mut total = self.totals.slice_mut(slot..slot + 1);
            let mut launch = stream.launch_builder(function);
            launch.arg(&self.data).arg(&self.n);
            match kernel {
                Kernel::Peak => launch.arg(&mut self.sink),
                Kernel::Sum(GpuSum::Plain | GpuSum::Generic) => launch.arg(&mut total),
                Kernel::Sum(GpuSum::Virtual) => launch.arg(&self.adder).arg(&mut total),
                Kernel::Sum(GpuSum::FnPtrLoop | GpuSum::FnPtrHoisted) => {
                    launch.arg(&self.add_pointer).arg(&mut total)
                }
            };
            // SAFETY: the arguments are the kernel's parameters in kernels/reduce.cu, in
            // order: the data and its length, then the object or pointer slot if any, then
            // the output. `data` holds `n` floats; the slots and outputs hold what the
            // kernels read and write.
            unsafe { launch.launch(shape) }.cuda("launching a kernel")?;
        }
        self.end.record(&stream).cuda("recording an event")?;

        let ms = elapsed_ms(&self.start, &self.end)?;
        let totals = stream
            .clone_dtoh(&self.totals)
            .cuda("copying the totals back")?;
        Ok((ms, totals))
    }
}

/// Write the PTX NVRTC makes of kernels/reduce.cu for this GPU, with the options the lab
/// compiles with, into `file` (opened before the work). (The lab itself loads a cubin; the
/// PTX is the readable step before it.)
pub fn save_ptx(gpu: &Gpu, kernel: &KernelArg, mut file: Output) -> Result<()> {
    // A virtual architecture (compute_XX): NVRTC stops at PTX for it.
    let ptx = kernel
        .apply(crate::kernel_file())?
        .ptx(&gpu.arch.replace("sm_", "compute_"))?;
    file.write_all(ptx.as_bytes())?;
    file.commit()
}
