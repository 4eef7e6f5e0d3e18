//! The approximate instructions held to a GPU: each f32 form (`rcp`, `rsqrt`, `sqrt`, `ex2`,
//! `lg2`, `sin`, `cos` `.approx`, with and without `.ftz`, and `tanh.approx`), the f64 forms
//! (by their input's high word) and `div.approx`/`div.full` (on pairs of random words),
//! compared bit for bit with the CPU device's functions. On a GPU, 2^24 inputs spread over
//! the whole range each; with `CPU_DEVICE_EVERY_INPUT=1`, every one of the 2^32 (about 4
//! minutes on an H100 for the forms before `sin`, `cos` and `tanh`, whose five take about 4
//! more on an H200), and the tables `src/approx/` holds compared with the GPU's own results
//! (with `CPU_DEVICE_WRITE_TABLES=DIR`, also written there, as that folder holds them).
//! `CPU_DEVICE_APPROX_FORMS=sin_ftz,tanh_plain` (kernels' names) holds those forms alone.
//! On the CPU device (`LABS_EMULATE=1`) the same kernels run through the interpreter for
//! 2^14 inputs: the loader's and the dispatch's way to the same functions.

use std::io::Write;

use cpu_device::approx::{self, TABLES};
use cpu_device::ir::{Approx, FloatOp, Rnd, Ty};
use cpu_device::ops::float_op;

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
F32(sin_ftz, "sin.approx.ftz.f32")
F32(sin_plain, "sin.approx.f32")
F32(cos_ftz, "cos.approx.ftz.f32")
F32(cos_plain, "cos.approx.f32")
F32(tanh_plain, "tanh.approx.f32")
F64(rcp64, "rcp.approx.ftz.f64")
F64(rsqrt64, "rsqrt.approx.ftz.f64")
__device__ unsigned mix(unsigned h)
{
    h *= 0x9e3779b1u;
    h ^= h >> 15;
    h *= 0x85ebca77u;
    return h ^ (h >> 13);
}
#define DIV(name, ptx) \
    extern "C" __global__ void name(unsigned *out, unsigned base, unsigned stride) \
    { \
        unsigned i = base + (blockIdx.x * blockDim.x + threadIdx.x) * stride; \
        float y; \
        asm(ptx " %0, %1, %2;" : "=f"(y) \
            : "f"(__uint_as_float(mix(i))), "f"(__uint_as_float(mix(~i)))); \
        out[blockIdx.x * blockDim.x + threadIdx.x] = __float_as_uint(y); \
    }
DIV(div_approx, "div.approx.f32")
DIV(div_approx_ftz, "div.approx.ftz.f32")
DIV(div_full, "div.full.f32")
DIV(div_full_ftz, "div.full.ftz.f32")
"#;

/// The kernels' pseudo-random word of an index (a multiply-xorshift hash).
fn mix(h: u32) -> u32 {
    let h = h.wrapping_mul(0x9e37_79b1);
    let h = (h ^ (h >> 15)).wrapping_mul(0x85eb_ca77);
    h ^ (h >> 13)
}

/// What a kernel computes: one instruction of one input, or a division of two.
#[derive(Clone, Copy)]
enum Form {
    F32(Approx, bool),
    F64(Approx),
    Div { full: bool, ftz: bool },
}

const FORMS: [(&str, Form); 21] = [
    ("rcp_ftz", Form::F32(Approx::Rcp, true)),
    ("rcp_plain", Form::F32(Approx::Rcp, false)),
    ("rsqrt_ftz", Form::F32(Approx::Rsqrt, true)),
    ("rsqrt_plain", Form::F32(Approx::Rsqrt, false)),
    ("sqrt_ftz", Form::F32(Approx::Sqrt, true)),
    ("sqrt_plain", Form::F32(Approx::Sqrt, false)),
    ("ex2_ftz", Form::F32(Approx::Ex2, true)),
    ("ex2_plain", Form::F32(Approx::Ex2, false)),
    ("lg2_ftz", Form::F32(Approx::Lg2, true)),
    ("lg2_plain", Form::F32(Approx::Lg2, false)),
    ("sin_ftz", Form::F32(Approx::Sin, true)),
    ("sin_plain", Form::F32(Approx::Sin, false)),
    ("cos_ftz", Form::F32(Approx::Cos, true)),
    ("cos_plain", Form::F32(Approx::Cos, false)),
    ("tanh_plain", Form::F32(Approx::Tanh, false)),
    ("rcp64", Form::F64(Approx::Rcp)),
    ("rsqrt64", Form::F64(Approx::Rsqrt)),
    (
        "div_approx",
        Form::Div {
            full: false,
            ftz: false,
        },
    ),
    (
        "div_approx_ftz",
        Form::Div {
            full: false,
            ftz: true,
        },
    ),
    (
        "div_full",
        Form::Div {
            full: true,
            ftz: false,
        },
    ),
    (
        "div_full_ftz",
        Form::Div {
            full: true,
            ftz: true,
        },
    ),
];

/// The CPU device's result for the input `x`: the bits of an f32, an f64's high word, or the
/// index whose hash gives a division's two operands.
fn model(form: Form, x: u32) -> u32 {
    match form {
        Form::F32(op, ftz) => approx::f32(op, x, ftz),
        Form::F64(op) => {
            (approx::f64(op, f64::from_bits(u64::from(x) << 32)).to_bits() >> 32) as u32
        }
        Form::Div { full, ftz } => float_op(
            FloatOp::DivApprox { full },
            Ty::F32,
            Rnd::N,
            ftz,
            false,
            u64::from(mix(x)),
            u64::from(mix(!x)),
            0,
        ) as u32,
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
    // Inputs `base + i * stride`: an odd stride reaches every exponent and sign, and many
    // mantissas; stride 1 reaches them all, in chunks of 2^28.
    let write = std::env::var_os("CPU_DEVICE_WRITE_TABLES").map(std::path::PathBuf::from);
    let every = write.is_some() || std::env::var_os("CPU_DEVICE_EVERY_INPUT").is_some();
    let (chunk, chunks, stride) = match (emulated, every) {
        (true, _) => (1u32 << 14, 1u64, 262_147u32),
        (false, false) => (1 << 24, 1, 257),
        (false, true) => (1 << 28, 16, 1),
    };
    let stream = &gpu.stream;
    let mut out = stream
        .alloc_zeros::<u32>(chunk as usize)
        .expect("device memory");
    let mut report = Vec::new();
    let mut failures = 0;
    let only = std::env::var("CPU_DEVICE_APPROX_FORMS").ok();
    let chosen = |kernel: &str| {
        only.as_ref()
            .is_none_or(|o| o.split(',').any(|k| k == kernel))
    };
    for (kernel, form) in FORMS.into_iter().filter(|(kernel, _)| chosen(kernel)) {
        let function = kernels.function(kernel).expect("the kernel");
        // The tables this form's results fill: the unit's own results (`.ftz`, and `tanh`,
        // which has no `.ftz`).
        let mut tables: Vec<_> = TABLES
            .iter()
            .filter(|(_, table_op, table_f64)| match form {
                Form::F32(op, ftz) => (ftz || op == Approx::Tanh) && *table_op == op && !table_f64,
                Form::F64(op) => *table_op == op && *table_f64,
                Form::Div { .. } => false,
            })
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
            let differing = differences(&results, &input, |x| model(form, x));
            wrong += differing.len() as u64;
            for i in differing
                .into_iter()
                .take(4usize.saturating_sub(shown.len()))
            {
                shown.push(format!(
                    "{kernel}({:08x}): GPU {:08x}, CPU device {:08x}",
                    input(i),
                    results[i],
                    model(form, input(i))
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
