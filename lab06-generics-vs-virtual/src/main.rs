//! lab06-generics-vs-virtual: what abstraction costs.
//!
//! One sum of N floats, written several ways, timed side by side on the same data:
//! - on the CPU, in Rust (src/cpu.rs, src/cpu/variants.rs): a plain loop, a generic `impl Trait`, `&dyn Trait`,
//!   `Box<dyn Fn>` and a `fn` pointer, each on one thread and on every core;
//! - on the GPU, in CUDA C++ (kernels/reduce.cu): a plain loop, a template functor, a
//!   virtual call on an object built on the device, a device function pointer read at every
//!   call, and the same pointer read once.
//!
//! Each is reported in GB/s and as a share of a peak measured in the same run on the same
//! machine (a streaming read that does no arithmetic to speak of), and every sum is checked
//! exactly. The report's size is N x 1.

// The lab's modules are its library's (src/lib.rs), so that a program that runs lab06 (a
// grader) builds its command line with the lab's own `cli::Args`.
use lab06_generics_vs_virtual::{cli, cpu, data, gpu, report};

use std::process::ExitCode;

use shared::gpu::Gpu;
use shared::output::Output;
use shared::timing::{Phase, Timer};
use shared::{Error, Result};

use cli::{Args, Selection, Variant};
use cpu::CpuRun;
use gpu::{GpuBench, Kernel};
use report::Table;

fn main() -> ExitCode {
    shared::cli::run("lab06", run)
}

fn run(args: Args) -> Result<()> {
    args.device.select()?;
    let mut timer = Timer::start("lab06", args.n as u32, 1);
    let selection = args.selection();
    let reps = usize::from(args.reps);
    // Opened before the work, so that a path that cannot be written fails now; and the
    // worker threads started now, so that a process limit is one clear line.
    let ptx_file = args.save_ptx.as_deref().map(Output::create).transpose()?;
    shared::cli::start_threads()?;

    // The data, and its exact total computed in integers.
    let (data, expected) = timer.time(Phase::Allocate, || data::make(args.n))?;

    // The GPU first, so that a run which needs one fails before the long CPU runs.
    let gpu = open_gpu(&selection, ptx_file, &data, &args, &mut timer)?;

    let mut tables = Vec::new();
    if !selection.cpu.is_empty() {
        let runs: Vec<CpuRun> = std::iter::once(CpuRun::Peak)
            .chain(selection.cpu.iter().copied())
            .collect();
        let measured = timer.time(Phase::Compute, || {
            cpu::measure(&runs, &data, reps, expected)
        })?;
        let mut table = Table::new(cpu::describe());
        timer.device(cpu::describe());
        for (run, measured) in runs.into_iter().zip(measured) {
            let name = match run {
                CpuRun::Peak => "cpu-peak",
                CpuRun::Sum(sum, cores) => Variant::Cpu(sum, cores).name(),
            };
            table.rows.push((name, measured));
        }
        tables.push(table);
    }

    if let Some(mut bench) = gpu {
        let mut table = match bench.emulated() {
            true => Table::untimed(bench.name().to_string()),
            false => Table::new(bench.name().to_string()),
        };
        table
            .rows
            .push(("gpu-peak", bench.measure(Kernel::Peak, reps, expected)?));
        for &sum in &selection.gpu {
            let measured = bench.measure(Kernel::Sum(sum), reps, expected)?;
            table.rows.push((Variant::Gpu(sum).name(), measured));
        }
        timer.record(Phase::Kernel, bench.kernel_ms);
        timer.device(format!("{} and {}", bench.name(), cpu::describe()));
        tables.push(table);
    }

    shared::cli::eprint_line(&format!(
        "sum of {} floats, expected {expected}",
        data.len()
    ));
    let wrong: usize = tables.iter().map(|t| t.report(expected, &mut timer)).sum();
    timer.metric("expected_sum", expected);
    timer.metric("sums_ok", wrong == 0);
    timer.finish(args.json)?;
    if wrong > 0 {
        return Err(Error::WrongResult(format!(
            "{wrong} variant(s) computed a wrong sum (see the table)"
        )));
    }
    Ok(())
}

/// Open the GPU and get it ready, or explain once why the GPU variants are skipped.
fn open_gpu(
    selection: &Selection,
    ptx_file: Option<Output>,
    data: &[f32],
    args: &Args,
    timer: &mut Timer,
) -> Result<Option<GpuBench>> {
    if selection.gpu.is_empty() && ptx_file.is_none() {
        return Ok(None);
    }
    let gpu = match timer.time(Phase::Context, Gpu::open) {
        Ok(gpu) => gpu,
        Err(Error::NoGpu(why)) if !selection.gpu_required => {
            shared::cli::eprint_line(&format!("lab06: skipping the GPU variants: {why}"));
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    if let Some(file) = ptx_file {
        // The report's last lines say where it went.
        gpu::save_ptx(&gpu, &args.kernel, file)?;
    }
    if selection.gpu.is_empty() {
        return Ok(None);
    }
    let shape = gpu::Shape {
        threads_per_block: args.threads_per_block,
        blocks_per_sm: args.blocks_per_sm,
    };
    GpuBench::new(gpu, data, &args.kernel, shape, timer).map(Some)
}
