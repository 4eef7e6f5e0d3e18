//! The approximate instructions held to a GPU over every input: each f32 form (`rcp`,
//! `rsqrt`, `sqrt`, `ex2`, `lg2` `.approx`, with and without `.ftz`) for all 2^32 inputs, the
//! f64 forms for every high word, each compared bit for bit with `cpu_device::approx`; and
//! the tables it is made from, compared with the GPU's own results (with
//! `CPU_DEVICE_WRITE_TABLES=DIR`, written there from the GPU, as `src/approx/` holds them).
//! On the CPU device (`LABS_EMULATE=1`) the same kernels run through the interpreter for a
//! spread of inputs: the loader's and the dispatch's way to the same functions.

use std::io::Write;

use cpu_device::approx::{self, TABLES};
use cpu_device::ir::Approx;

/// Each kernel writes its instruction's result for the inputs `base + i * stride`.
const KERNELS: &str = r#"
#define F32(name, ptx) \
    extern "C" __global__ void name(unsigned *out, unsigned base, unsigned stride) \
    { \
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x; \
        float y; \
        asm(ptx " %0, %1;" : "=f"(y) : "f"(__uint_as_float(base + i * stride))); \
        out[i] = __float_as_uint(y); \
    }
#define F64(name, ptx) \
    extern "C" __global__ void name(unsigned *out, unsigned base, unsigned stride) \
    { \
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x; \
        double y; \
        asm(ptx " %0, %1;" : "=d"(y) : "d"(__hiloint2double(base + i * stride, 0))); \
        out[i] = __double2hiint(y); \
    }
F32(rcp_ftz, "rcp.approx.ftz.f32")
F32(rcp_plain, "rcp.approx.f32")
F32(rsqrt_ftz, "rsqrt.approx.ftz.f32")
F32(rsqrt_plain, "rsqrt.approx.f32")
F32(sqrt_ftz, "sqrt.approx.ftz.f32")
F32(sqrt_plain, "sqrt.approx.f32")
F32(ex2_ftz, "ex2.approx.ftz.f32")
F32(ex2_plain, "ex2.approx.f32")
F32(lg2_ftz, "lg2.approx.ftz.f32")
F32(lg2_plain, "lg2.approx.f32")
F64(rcp64, "rcp.approx.ftz.f64")
F64(rsqrt64, "rsqrt.approx.ftz.f64")
"#;

/// (kernel, instruction, `.ftz`, f64)
const FORMS: [(&str, Approx, bool, bool); 12] = [
    ("rcp_ftz", Approx::Rcp, true, false),
    ("rcp_plain", Approx::Rcp, false, false),
    ("rsqrt_ftz", Approx::Rsqrt, true, false),
    ("rsqrt_plain", Approx::Rsqrt, false, false),
    ("sqrt_ftz", Approx::Sqrt, true, false),
    ("sqrt_plain", Approx::Sqrt, false, false),
    ("ex2_ftz", Approx::Ex2, true, false),
    ("ex2_plain", Approx::Ex2, false, false),
    ("lg2_ftz", Approx::Lg2, true, false),
    ("lg2_plain", Approx::Lg2, false, false),
    ("rcp64", Approx::Rcp, true, true),
    ("rsqrt64", Approx::Rsqrt, true, true),
];

/// The model's result for the input bits `x` (an f64's high word for the f64 forms).
fn model(op: Approx, ftz: bool, f64_form: bool, x: u32) -> u32 {
    if f64_form {
        (approx::f64(op, f64::from_bits(u64::from(x) << 32)).to_bits() >> 32) as u32
    } else {
        approx::f32(op, x, ftz)
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn approximations_equal_the_gpu_for_every_input() {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    use shared::gpu::Gpu;

    let emulated = shared::testing::on_cpu_device();
    if emulated {
        shared::gpu::use_cpu_device().expect("the CPU device loads");
    }
    let gpu = Gpu::open().unwrap_or_else(|e| panic!("{e}"));
    let kernels = gpu
        .compile("approx.cu", KERNELS, &[] as &[&str])
        .unwrap_or_else(|e| panic!("{e}"));
    // Every input in chunks of 2^28 on a GPU; on the CPU device 2^14 inputs spread over the
    // whole range (an odd stride reaches every exponent and sign, and many mantissas).
    let (chunk, chunks, stride) = if emulated {
        (1u32 << 14, 1u64, 262_147u32)
    } else {
        (1u32 << 28, 16, 1)
    };
    let write = std::env::var_os("CPU_DEVICE_WRITE_TABLES").map(std::path::PathBuf::from);
    let stream = &gpu.stream;
    let mut out = stream
        .alloc_zeros::<u32>(chunk as usize)
        .expect("device memory");
    let mut report = Vec::new();
    let mut failures = 0;
    for (kernel, op, ftz, f64_form) in FORMS {
        let function = kernels.function(kernel).expect("the kernel");
        // The tables this form's results fill: the unit's own (`.ftz`) results.
        let mut tables: Vec<_> = TABLES
            .iter()
            .filter(|(_, table_op, table_f64)| ftz && *table_op == op && *table_f64 == f64_form)
            .map(|(table, ..)| (table, vec![0u32; table.len]))
            .collect();
        let mut wrong = 0u64;
        let mut shown = Vec::new();
        for c in 0..chunks {
            let base = (c * u64::from(chunk)) as u32;
            let config = LaunchConfig {
                grid_dim: (chunk / 256, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut launch = stream.launch_builder(&function);
            launch.arg(&mut out).arg(&base).arg(&stride);
            // SAFETY: the kernel writes `chunk` words of `out`, one per thread.
            unsafe { launch.launch(config) }.expect("launched");
            let results = stream.clone_dtoh(&out).expect("copied back");
            let input = |i: usize| base.wrapping_add((i as u32).wrapping_mul(stride));
            let differing = differences(&results, &input, |x| model(op, ftz, f64_form, x));
            wrong += differing.len() as u64;
            for i in differing
                .into_iter()
                .take(4usize.saturating_sub(shown.len()))
            {
                shown.push(format!(
                    "{kernel}({:08x}): GPU {:08x}, CPU device {:08x}",
                    input(i),
                    results[i],
                    model(op, ftz, f64_form, input(i))
                ));
            }
            if stride == 1 {
                for (table, values) in &mut tables {
                    for (j, value) in values.iter_mut().enumerate() {
                        let x = (table.input)(j as u32);
                        if let Some(offset) = x.checked_sub(base).filter(|&o| o < chunk) {
                            *value = results[offset as usize];
                        }
                    }
                }
            }
        }
        failures += wrong;
        report.push(format!("{kernel}: {wrong} inputs differ"));
        report.extend(shown);
        if stride == 1 {
            for (table, values) in &tables {
                let stored = table.values();
                let differ = values.iter().zip(stored).filter(|(a, b)| a != b).count();
                failures += differ as u64;
                report.push(format!("  table {}: {differ} entries differ", table.name));
                if let Some(dir) = &write {
                    let mut deflated =
                        flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
                    deflated
                        .write_all(&approx::encode(values))
                        .expect("deflated");
                    let bytes = deflated.finish().expect("deflated");
                    std::fs::write(dir.join(table.name), bytes).expect("the table written");
                }
            }
        }
    }
    let text = report.join("\n");
    shared::cli::eprint_line(&format!("on {}:\n{text}", gpu.name));
    assert_eq!(failures, 0, "on {}:\n{text}", gpu.name);
}

/// The indices of `results` whose input the model answers differently, counted on every
/// core (2^28 inputs a chunk).
fn differences(
    results: &[u32],
    input: &(dyn Fn(usize) -> u32 + Sync),
    model: impl Fn(u32) -> u32 + Sync,
) -> Vec<usize> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = results.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = results
            .chunks(per)
            .enumerate()
            .map(|(t, part)| {
                let model = &model;
                scope.spawn(move || {
                    part.iter()
                        .enumerate()
                        .filter(|&(i, &r)| model(input(t * per + i)) != r)
                        .map(|(i, _)| t * per + i)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a counting thread"))
            .collect()
    })
}
