//! CUDA C++ that students write, compiled by NVRTC, run on the CPU device: each family of
//! instructions the interpreter runs (printf, block and warp reductions, bit manipulation,
//! carry chains), checked against values computed here on the host. The same kernels run
//! on the GPU beside the CPU device (`kernels_equal_the_gpu_bit_for_bit`).

use cpu_device::exec::{self, Launch};
use cpu_device::load::load;
use cpu_device::memory::Memory;
use shared::nvrtc::KernelFile;

/// A kernel of this file: its source, and its launch (blocks, threads a block).
struct Case {
    name: &'static str,
    source: &'static str,
    grid: u32,
    block: u32,
    /// Words of `out` (u64 each).
    words: usize,
}

/// NVRTC's PTX of `case` for the H100's virtual architecture.
fn ptx(case: &Case) -> String {
    KernelFile {
        name: "instructions.cu",
        source: case.source.into(),
        options: Vec::new(),
    }
    .ptx("compute_90")
    .unwrap_or_else(|e| panic!("NVRTC refused {}: {e}", case.name))
}

/// `case` run on the CPU device: `out` afterwards, and what its printfs printed.
fn run(case: &Case) -> (Vec<u64>, String) {
    let memory = Memory::default();
    let module = load(&ptx(case), &memory)
        .unwrap_or_else(|e| panic!("the CPU device refuses {}: {e}", case.name));
    let out = memory
        .alloc(case.words as u64 * 8, "out")
        .expect("allocated");
    let params = out.address.to_le_bytes();
    let snapshot = memory.snapshot().expect("a snapshot");
    let launch = Launch {
        module: &module,
        function: module.function("k").expect("the kernel k"),
        grid: [case.grid, 1, 1],
        block: [case.block, 1, 1],
        dynamic_shared: 0,
        params: &params,
        memory: &snapshot,
    };
    let (result, printed) = exec::run_printing(&launch, 2, cpu_device::printf::FIFO_BYTES);
    if let Err(fault) = result {
        panic!("{} faults: {}", case.name, fault.message);
    }
    let mut bytes = vec![0u8; case.words * 8];
    memory.read(out.address, &mut bytes).expect("read back");
    let words = bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .collect();
    (words, String::from_utf8_lossy(&printed).into_owned())
}

const PRINTF: Case = Case {
    name: "printf",
    source: r#"
extern "C" __global__ void k(unsigned long long *out)
{
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    if (t % 16 == 3) {
        float f = 1.5f * t;
        double d = -2.0 / (t + 1);
        int n = printf("t=%d u=%u x=%#06x X=%X o=%o c=%c|%-4d|%+5i|% d|%05d\n",
                       t, 4000000000u, t * 255, t * 48879, t, 'A' + t, t, t, t, -t);
        int m = printf("f=%f F=%.2F e=%e E=%.3E g=%g G=%G a=%a s=%s %.3s|%8s|%-8s|\n",
                       f, d, d, f, 1e-5 * t, 1e20 * d, 0.75, "str", "truncated", "right", "left");
        printf("ll=%lld llu=%llu lx=%lx ld=%ld %%%% p=%p %5.1f%%\n",
               -1234567890123LL * t, 18446744073709551615ull, 0xdeadbeefcafeULL, -7L,
               (void *)0, 99.95);
        out[t] = n * 100 + m;
    }
}
"#,
    grid: 2,
    block: 32,
    words: 64,
};

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn printf_prints_each_threads_line_whole_in_cudas_format() {
    let (out, printed) = run(&PRINTF);
    // A warp runs each printf for its lanes in turn, lowest first, before the next
    // printf: threads 3 and 19 share a warp (a block), as do 35 and 51.
    let first = |t: i64| {
        format!(
            "t={t} u=4000000000 x={:#06x} X={:X} o={:o} c={}|{:<4}|{:>+5}| {}|-{:04}\n",
            t * 255,
            t * 48879,
            t,
            char::from(b'A' + t as u8),
            t,
            t,
            t,
            t
        )
    };
    let second = |t: i64| {
        let f = 1.5f32 * t as f32;
        let d = -2.0 / (t + 1) as f64;
        format!(
            "f={:.6} F={d:.2} e={} E={} g={} G={} a=0x1.8p-1 s=str tru|   right|left    |\n",
            f64::from(f),
            c_exponent(d, 6, 'e'),
            c_exponent(f64::from(f), 3, 'E'),
            c_general(1e-5 * t as f64),
            c_general(1e20 * d).to_uppercase(),
        )
    };
    let third = |t: i64| {
        format!(
            "ll={} llu=18446744073709551615 lx=deadbeefcafe ld=-7 %% p=(nil) 100.0%\n",
            -1234567890123i64 * t
        )
    };
    let mut want = String::new();
    for warp in [[3i64, 19], [35, 51]] {
        for line in [&first as &dyn Fn(i64) -> String, &second, &third] {
            for t in warp {
                want += &line(t);
            }
        }
    }
    assert_eq!(printed, want);
    for t in [3usize, 19, 35, 51] {
        assert_eq!(out[t], 10 * 100 + 11, "printf returns its arguments' count");
    }
}

/// C's `%.{p}e`: Rust's mantissa, C's signed two-digit exponent.
fn c_exponent(x: f64, p: usize, letter: char) -> String {
    let s = format!("{x:.p$e}");
    let (m, e) = s.split_once('e').expect("an exponent");
    let e: i32 = e.parse().expect("a number");
    format!("{m}{letter}{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// C's `%g` for the values of this file (6 significant digits, trailing zeros dropped).
fn c_general(x: f64) -> String {
    let s = format!("{x:.5e}");
    let (_, e) = s.split_once('e').expect("an exponent");
    let e: i32 = e.parse().expect("a number");
    if (-4..6).contains(&e) {
        let fixed = format!("{x:.*}", (5 - e) as usize);
        let fixed = fixed.trim_end_matches('0').trim_end_matches('.');
        fixed.to_string()
    } else {
        let m = format!("{:.5}", x / 10f64.powi(e));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    }
}
