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
    ptx_with(case, &[])
}

/// NVRTC's PTX of `case` compiled with `options`.
fn ptx_with(case: &Case, options: &[&str]) -> String {
    KernelFile {
        name: "instructions.cu",
        source: case.source.into(),
        headers: Vec::new(),
        options: options.iter().map(|o| o.to_string()).collect(),
    }
    .ptx("compute_90")
    .unwrap_or_else(|e| panic!("NVRTC refused {}: {e}", case.name))
}

/// `case` run on the CPU device: `out` afterwards, and what its printfs printed.
fn run(case: &Case) -> (Vec<u64>, String) {
    run_with_room(case, cpu_device::printf::FIFO_BYTES)
}

/// `case` run on the CPU device with `room` bytes left in the printf buffer.
fn run_with_room(case: &Case, room: usize) -> (Vec<u64>, String) {
    run_ptx(case, &ptx(case), room)
}

/// `case`, as compiled to `ptx`, run on the CPU device.
fn run_ptx(case: &Case, ptx: &str, room: usize) -> (Vec<u64>, String) {
    let options = exec::Options {
        printf_room: room,
        ..exec::Options::default()
    };
    let (ran, words, _) = launch(case, ptx, &options, 2);
    if let Err(fault) = ran.result {
        panic!("{} faults: {}", case.name, fault.message);
    }
    (words, String::from_utf8_lossy(&ran.printed).into_owned())
}

/// `case`, as compiled to `ptx`, run on one host thread (the first warp to fault is the
/// first in block order): the fault that stopped it, and the address of its `out`.
fn fault_of(case: &Case, ptx: &str) -> (exec::Fault, u64) {
    let (ran, _, out) = launch(case, ptx, &exec::Options::default(), 1);
    let fault = ran
        .result
        .err()
        .unwrap_or_else(|| panic!("{} ran to its end", case.name));
    (fault, out)
}

/// `case`, as compiled to `ptx`, launched on `threads` host threads with `options`: what
/// the launch did, `out` afterwards, and `out`'s address.
fn launch(
    case: &Case,
    ptx: &str,
    options: &exec::Options,
    threads: usize,
) -> (exec::Ran, Vec<u64>, u64) {
    let memory = Memory::default();
    let module =
        load(ptx, &memory).unwrap_or_else(|e| panic!("the CPU device refuses {}: {e}", case.name));
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
    let ran = exec::run_with(&launch, threads, options);
    let mut bytes = vec![0u8; case.words * 8];
    memory.read(out.address, &mut bytes).expect("read back");
    let words = bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .collect();
    (ran, words, out.address)
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

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn printf_past_the_buffer_drops_whole_lines_from_the_first_that_does_not_fit() {
    let (_, all) = run(&PRINTF);
    let lines: Vec<&str> = all.split_inclusive('\n').collect();
    for room in [0, 10, 150, 400, all.len() - 1] {
        let (out, printed) = run_with_room(&PRINTF, room);
        let mut fits = 0;
        let mut used = 0;
        while fits < lines.len() && used + lines[fits].len() <= room {
            used += lines[fits].len();
            fits += 1;
        }
        assert_eq!(printed, lines[..fits].concat(), "room {room}");
        assert_eq!(
            out[3], 1011,
            "a dropped line's printf still returns its count"
        );
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

const WARP_AND_BLOCK: Case = Case {
    name: "warp and block reductions",
    source: r#"
extern "C" __global__ void k(unsigned long long *out)
{
    unsigned t = threadIdx.x;
    unsigned long long *o = out + 8 * (t + blockIdx.x * blockDim.x);
    int x = (int)(t * 2654435761u >> 20) - 2000;
    o[0] = (unsigned)__syncthreads_count(x > 0);
    o[1] = __syncthreads_and(x > -3000) * 2 + __syncthreads_or(t == 70);
    unsigned half = t % 32 < 16 ? 0x0000ffffu : 0xffff0000u;
    o[2] = (unsigned)__reduce_add_sync(half, x) | (unsigned long long)__reduce_xor_sync(half, t) << 32;
    o[3] = (unsigned)__reduce_min_sync(half, x) | (unsigned long long)__reduce_max_sync(half, t * 7u) << 32;
    o[4] = (unsigned)__reduce_max_sync(half, x) | (unsigned long long)__reduce_min_sync(half, t * 7u) << 32;
    o[5] = __reduce_and_sync(half, t | 0xf0u) | (unsigned long long)__reduce_or_sync(half, t) << 32;
    o[6] = __match_any_sync(0xffffffffu, t % 5) | (unsigned long long)__match_any_sync(0xffffffffu, 1ull << 40 | t / 8) << 32;
    int pred;
    unsigned all = __match_all_sync(0xffffffffu, t / 32, &pred);
    int pred2;
    unsigned not_all = __match_all_sync(0xffffffffu, (unsigned long long)t << 33, &pred2);
    o[7] = all | (unsigned long long)pred << 32 | (unsigned long long)not_all << 33 | (unsigned long long)pred2 << 63;
}
"#,
    grid: 2,
    block: 96,
    words: 8 * 192,
};

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn block_and_warp_reductions_give_what_the_host_computes() {
    let (out, _) = run(&WARP_AND_BLOCK);
    let x = |t: u32| (t.wrapping_mul(2654435761) >> 20) as i32 - 2000;
    for b in 0..2u32 {
        let block: Vec<u32> = (0..96).collect();
        let count = block.iter().filter(|&&t| x(t) > 0).count() as u64;
        let and = block.iter().all(|&t| x(t) > -3000);
        for t in 0..96u32 {
            let o = &out[8 * (b * 96 + t) as usize..][..8];
            assert_eq!(o[0], count, "__syncthreads_count, thread {t}");
            assert_eq!(
                o[1],
                u64::from(and) * 2 + 1,
                "__syncthreads_and/or, thread {t}"
            );
            let lanes: Vec<u32> = (0..96)
                .filter(|&u| u / 32 == t / 32 && (u % 32 < 16) == (t % 32 < 16))
                .collect();
            let sum = lanes.iter().fold(0i32, |s, &u| s.wrapping_add(x(u)));
            let xor = lanes.iter().fold(0, |s, &u| s ^ u);
            assert_eq!(
                o[2],
                u64::from(sum as u32) | u64::from(xor) << 32,
                "add/xor {t}"
            );
            let min = lanes.iter().map(|&u| x(u)).min().expect("lanes");
            let max = lanes.iter().map(|&u| x(u)).max().expect("lanes");
            let (umin, umax) = (lanes[0] * 7, lanes[lanes.len() - 1] * 7);
            assert_eq!(
                o[3],
                u64::from(min as u32) | u64::from(umax) << 32,
                "min/max {t}"
            );
            assert_eq!(
                o[4],
                u64::from(max as u32) | u64::from(umin) << 32,
                "max/min {t}"
            );
            let and = lanes.iter().fold(u32::MAX, |s, &u| s & (u | 0xf0));
            let or = lanes.iter().fold(0, |s, &u| s | u);
            assert_eq!(o[5], u64::from(and) | u64::from(or) << 32, "and/or {t}");
            let warp = t / 32 * 32;
            let same = |f: &dyn Fn(u32) -> u32| {
                (0..32)
                    .filter(|&l| f(warp + l) == f(t))
                    .fold(0u32, |m, l| m | 1 << l)
            };
            let any = u64::from(same(&|u| u % 5)) | u64::from(same(&|u| u / 8)) << 32;
            assert_eq!(o[6], any, "__match_any_sync {t}");
            assert_eq!(o[7], 0xffff_ffff | 1 << 32, "__match_all_sync {t}");
        }
    }
}

const BITS: Case = Case {
    name: "bit manipulation",
    source: r#"
__device__ unsigned v(unsigned i)
{
    const unsigned edge[8] = {0u, 1u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x00ff00ffu, 0x12345678u, 0xfffffff0u};
    return i < 8 ? edge[i] : i * 2654435761u ^ (i << 13);
}

extern "C" __global__ void k(unsigned long long *out)
{
    unsigned t = threadIdx.x + blockIdx.x * blockDim.x;
    unsigned a = v(t), b = v(t / 3 + 5), s = v(t / 7) % 40;
    unsigned long long *o = out + 12 * t;
    long long wide = (long long)a << 32 | b;
    o[0] = (unsigned)__ffs((int)a) | (unsigned long long)__ffsll(wide) << 32;
    o[1] = (unsigned)__clz((int)a) | (unsigned long long)__clzll(wide) << 32;
    o[2] = __funnelshift_l(a, b, s) | (unsigned long long)__funnelshift_lc(a, b, s) << 32;
    o[3] = __funnelshift_r(a, b, s) | (unsigned long long)__funnelshift_rc(a, b, s) << 32;
    o[4] = (unsigned)__mul24((int)a, (int)b) | (unsigned long long)__umul24(a, b) << 32;
    o[5] = (unsigned)__dp4a((int)a, (int)b, (int)s) | (unsigned long long)__dp4a(a, b, s) << 32;
    o[6] = (unsigned)__dp2a_lo((int)a, (int)b, (int)s) | (unsigned long long)__dp2a_hi(a, b, s) << 32;
    o[7] = __brev(a) | (unsigned long long)__popc(a) << 32;
    o[8] = __byte_perm(a, b, s * 0x1111u) | (unsigned long long)(unsigned)__fns(a, 0, 1) << 32;
    o[9] = (unsigned)__mulhi((int)a, (int)b) | (unsigned long long)__umulhi(a, b) << 32;
    o[10] = __brevll(wide);
    o[11] = (unsigned)(31 - __clz((int)a)) | (unsigned long long)(unsigned)__ffs(~a) << 32;
}
"#,
    grid: 2,
    block: 64,
    words: 12 * 128,
};

/// The kernel's `v`: edge values first, then a hash.
fn edge(i: u32) -> u32 {
    const EDGE: [u32; 8] = [
        0,
        1,
        u32::MAX,
        0x8000_0000,
        0x7fff_ffff,
        0x00ff_00ff,
        0x1234_5678,
        0xffff_fff0,
    ];
    EDGE.get(i as usize)
        .copied()
        .unwrap_or(i.wrapping_mul(2654435761) ^ (i << 13))
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn bit_manipulation_gives_what_the_host_computes() {
    let (out, _) = run(&BITS);
    let pair = |lo: u32, hi: u32| u64::from(lo) | u64::from(hi) << 32;
    let ffs = |x: u64| if x == 0 { 0 } else { x.trailing_zeros() + 1 };
    let funnel_left =
        |a: u32, b: u32, n: u32| ((u64::from(b) << 32 | u64::from(a)) << n >> 32) as u32;
    let funnel_right = |a: u32, b: u32, n: u32| ((u64::from(b) << 32 | u64::from(a)) >> n) as u32;
    let bytes = |x: u32, signed: bool| -> [i64; 4] {
        x.to_le_bytes().map(|b| {
            if signed {
                i64::from(b as i8)
            } else {
                i64::from(b)
            }
        })
    };
    let halves = |x: u32, signed: bool| -> [i64; 2] {
        [x as u16, (x >> 16) as u16].map(|h| {
            if signed {
                i64::from(h as i16)
            } else {
                i64::from(h)
            }
        })
    };
    for t in 0..128u32 {
        let (a, b, s) = (edge(t), edge(t / 3 + 5), edge(t / 7) % 40);
        let wide = u64::from(a) << 32 | u64::from(b);
        let o = &out[12 * t as usize..][..12];
        assert_eq!(o[0], pair(ffs(u64::from(a)), ffs(wide)), "__ffs {t}");
        assert_eq!(
            o[1],
            pair(a.leading_zeros(), wide.leading_zeros()),
            "__clz {t}"
        );
        assert_eq!(
            o[2],
            pair(funnel_left(a, b, s & 31), funnel_left(a, b, s.min(32))),
            "shf.l {t}"
        );
        assert_eq!(
            o[3],
            pair(funnel_right(a, b, s & 31), funnel_right(a, b, s.min(32))),
            "shf.r {t}"
        );
        let s24 = |x: u32| i64::from((x << 8) as i32 >> 8);
        let u24 = |x: u32| i64::from(x & 0xff_ffff);
        assert_eq!(
            o[4],
            pair((s24(a) * s24(b)) as u32, (u24(a) * u24(b)) as u32),
            "mul24 {t}"
        );
        let dot4 = |sg: bool| {
            let (x, y) = (bytes(a, sg), bytes(b, sg));
            (i64::from(s) + (0..4).map(|i| x[i] * y[i]).sum::<i64>()) as u32
        };
        assert_eq!(o[5], pair(dot4(true), dot4(false)), "dp4a {t}");
        let dot2 = |sg: bool, hi: usize| {
            let (x, y) = (halves(a, sg), bytes(b, sg));
            (i64::from(s) + x[0] * y[2 * hi] + x[1] * y[2 * hi + 1]) as u32
        };
        assert_eq!(o[6], pair(dot2(true, 0), dot2(false, 1)), "dp2a {t}");
        assert_eq!(
            o[7],
            pair(a.reverse_bits(), a.count_ones()),
            "brev/popc {t}"
        );
        let sel = s.wrapping_mul(0x1111);
        let all = u64::from(b) << 32 | u64::from(a);
        // __byte_perm reads three bits of each selector (NVRTC masks them with 0x7777).
        let perm = (0..4).fold(0u32, |p, i| {
            let k = sel >> (4 * i) & 7;
            p | u32::from((all >> (8 * k)) as u8) << (8 * i)
        });
        let fns = if a == 0 { u32::MAX } else { a.trailing_zeros() };
        assert_eq!(o[8], pair(perm, fns), "prmt/fns {t}");
        let hi_s = ((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32;
        let hi_u = ((u64::from(a) * u64::from(b)) >> 32) as u32;
        assert_eq!(o[9], pair(hi_s, hi_u), "mul.hi {t}");
        assert_eq!(o[10], wide.reverse_bits(), "brev.b64 {t}");
        assert_eq!(
            o[11],
            pair(31u32.wrapping_sub(a.leading_zeros()), ffs(u64::from(!a))),
            "{t}"
        );
    }
}

const CARRIES: Case = Case {
    name: "carry chains",
    source: r#"
__device__ unsigned long long w(unsigned i)
{
    const unsigned long long edge[6] = {0ull, 1ull, ~0ull, 1ull << 63, ~0ull >> 1, 0xffffffff00000000ull};
    unsigned long long h = (unsigned long long)i * 0x9e3779b97f4a7c15ull;
    return i < 6 ? edge[i] : h ^ h >> 29;
}

extern "C" __global__ void k(unsigned long long *out)
{
    unsigned t = threadIdx.x + blockIdx.x * blockDim.x;
    unsigned long long a0 = w(t), a1 = w(t / 6), b0 = w(t % 6 + 3 * (t / 36)), b1 = w(t / 2);
    unsigned long long *o = out + 12 * t;
    unsigned long long s0, s1, s2, d0, d1, d2;
    // 128-bit sum and difference through 64-bit chains, with the carry and borrow out.
    asm("add.cc.u64 %0, %3, %5;\n\taddc.cc.u64 %1, %4, %6;\n\taddc.u64 %2, 0, 0;"
        : "=l"(s0), "=l"(s1), "=l"(s2) : "l"(a0), "l"(a1), "l"(b0), "l"(b1));
    asm("sub.cc.u64 %0, %3, %5;\n\tsubc.cc.u64 %1, %4, %6;\n\tsubc.u64 %2, 0, 0;"
        : "=l"(d0), "=l"(d1), "=l"(d2) : "l"(a0), "l"(a1), "l"(b0), "l"(b1));
    o[0] = s0; o[1] = s1; o[2] = s2; o[3] = d0; o[4] = d1; o[5] = d2;
    // The 64-bit product of 32-bit words through mad.lo.cc, madc.hi, and 32-bit chains.
    unsigned x = (unsigned)a0, y = (unsigned)b0, z = (unsigned)(a1 >> 7);
    unsigned p0, p1, q0, q1, q2;
    asm("mad.lo.cc.u32 %0, %2, %3, %4;\n\tmadc.hi.u32 %1, %2, %3, 0;"
        : "=r"(p0), "=r"(p1) : "r"(x), "r"(y), "r"(z));
    asm("add.cc.s32 %0, %3, %4;\n\taddc.cc.s32 %1, %3, %4;\n\tmadc.lo.cc.u32 %2, %3, %4, %5;"
        : "=r"(q0), "=r"(q1), "=r"(q2) : "r"(x), "r"(y), "r"(z));
    unsigned r0, r1;
    asm("mad.hi.cc.s32 %0, %2, %3, %4;\n\tmadc.hi.cc.s32 %1, %2, %3, %4;"
        : "=r"(r0), "=r"(r1) : "r"(x), "r"(y), "r"(z));
    unsigned carry;
    asm("addc.u32 %0, 0, 0;" : "=r"(carry));
    o[6] = p0 | (unsigned long long)p1 << 32;
    o[7] = q0 | (unsigned long long)q1 << 32;
    o[8] = q2 | (unsigned long long)r0 << 32;
    o[9] = r1 | (unsigned long long)carry << 32;
    o[10] = __double_as_longlong(sin(__longlong_as_double((long long)(a0 & 0x7fefffffffffffffull))));
    o[11] = __double_as_longlong(cos(1e15 + (double)t * 12345.678));
}
"#,
    grid: 2,
    block: 64,
    words: 12 * 128,
};

/// The kernel's `w`: edge values first, then a hash.
fn word(i: u32) -> u64 {
    const EDGE: [u64; 6] = [
        0,
        1,
        u64::MAX,
        1 << 63,
        u64::MAX >> 1,
        0xffff_ffff_0000_0000,
    ];
    let h = u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    EDGE.get(i as usize).copied().unwrap_or(h ^ h >> 29)
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn carry_chains_add_subtract_and_multiply_wide_numbers() {
    let (out, _) = run(&CARRIES);
    for t in 0..128u32 {
        let (a0, a1, b0, b1) = (
            word(t),
            word(t / 6),
            word(t % 6 + 3 * (t / 36)),
            word(t / 2),
        );
        let a = u128::from(a1) << 64 | u128::from(a0);
        let b = u128::from(b1) << 64 | u128::from(b0);
        let o = &out[12 * t as usize..][..12];
        let (sum, carry) = a.overflowing_add(b);
        assert_eq!(
            o[..3],
            [sum as u64, (sum >> 64) as u64, u64::from(carry)],
            "add {t}"
        );
        let (difference, borrow) = a.overflowing_sub(b);
        // subc.u64 0, 0 with the borrow in: 0 - (0 + 1), all ones.
        let borrowed = if borrow { u64::MAX } else { 0 };
        assert_eq!(
            o[3..6],
            [difference as u64, (difference >> 64) as u64, borrowed],
            "sub {t}"
        );
        let (x, y, z) = (a0 as u32, b0 as u32, (a1 >> 7) as u32);
        let product = u64::from(x) * u64::from(y);
        let lo = u64::from(product as u32) + u64::from(z);
        let p1 = ((product >> 32) + (lo >> 32)) as u32;
        assert_eq!(
            o[6],
            u64::from(lo as u32) | u64::from(p1) << 32,
            "mad.lo.cc/madc.hi {t}"
        );
        let q0 = u64::from(x) + u64::from(y);
        let q1 = u64::from(x) + u64::from(y) + (q0 >> 32);
        let q2 = u64::from(x.wrapping_mul(y)) + u64::from(z) + (q1 >> 32);
        assert_eq!(
            o[7],
            (q0 & 0xffff_ffff) | (q1 & 0xffff_ffff) << 32,
            "add.cc/addc.cc {t}"
        );
        let hi = ((i64::from(x as i32) * i64::from(y as i32)) >> 32) as u32;
        let r0 = u64::from(hi) + u64::from(z);
        let r1 = u64::from(hi) + u64::from(z) + (r0 >> 32);
        assert_eq!(
            o[8],
            (q2 & 0xffff_ffff) | (r0 & 0xffff_ffff) << 32,
            "madc.lo/mad.hi.cc {t}"
        );
        assert_eq!(
            o[9],
            (r1 & 0xffff_ffff) | (r1 >> 32) << 32,
            "madc.hi.cc {t}"
        );
        // libdevice's sin and cos are within 2 ulp of the true value (CUDA's table of
        // maximum errors), and reduce huge arguments through carry chains.
        let x = f64::from_bits(a0 & 0x7fef_ffff_ffff_ffff);
        let y = 1e15 + f64::from(t) * 12345.678;
        for (got, want, what) in [(o[10], x.sin(), "sin"), (o[11], y.cos(), "cos")] {
            let got = f64::from_bits(got);
            let ulps = (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs();
            assert!(
                ulps <= 2 || (got - want).abs() < 1e-300,
                "{what} {t}: {got:e}, the host {want:e}"
            );
        }
    }
}

const PTX_FORMS: Case = Case {
    name: "PTX forms CUDA C++ reaches through inline asm",
    source: r#"
__device__ unsigned v(unsigned i)
{
    const unsigned edge[8] = {0u, 1u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x00ff00ffu, 0x12345678u, 0xfffffff0u};
    return i < 8 ? edge[i] : i * 2654435761u ^ (i << 13);
}

#define PRMT(mode, d) asm("prmt.b32." mode " %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(s))

extern "C" __global__ void k(unsigned long long *out)
{
    unsigned t = threadIdx.x + blockIdx.x * blockDim.x;
    unsigned a = v(t), b = v(t / 3 + 5), s = v(t / 7) % 40, n = v(t / 5) % 40;
    unsigned long long *o = out + 10 * t;
    unsigned r[16];
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r[0]) : "r"(a), "r"(b), "r"(s * 0x1235u));
    PRMT("f4e", r[1]); PRMT("b4e", r[2]); PRMT("rc8", r[3]);
    PRMT("ecl", r[4]); PRMT("ecr", r[5]); PRMT("rc16", r[6]);
    asm("bmsk.clamp.b32 %0, %1, %2;" : "=r"(r[7]) : "r"(s), "r"(n));
    asm("bmsk.wrap.b32 %0, %1, %2;" : "=r"(r[8]) : "r"(s), "r"(n));
    asm("szext.clamp.s32 %0, %1, %2;" : "=r"(r[9]) : "r"(a), "r"(n));
    asm("szext.wrap.u32 %0, %1, %2;" : "=r"(r[10]) : "r"(a), "r"(n));
    asm("bfind.s32 %0, %1;" : "=r"(r[11]) : "r"(a));
    asm("bfind.shiftamt.u64 %0, %1;" : "=r"(r[12]) : "l"((unsigned long long)b << (s % 33)));
    asm("mul24.hi.s32 %0, %1, %2;" : "=r"(r[13]) : "r"(a), "r"(b));
    asm("mad24.lo.u32 %0, %1, %2, %3;" : "=r"(r[14]) : "r"(a), "r"(b), "r"(n));
    asm("dp2a.lo.u32.s32 %0, %1, %2, %3;" : "=r"(r[15]) : "r"(a), "r"(b), "r"(n));
    for (int i = 0; i < 8; i++) {
        o[i] = r[2 * i] | (unsigned long long)r[2 * i + 1] << 32;
    }
    unsigned long long bits = (unsigned long long)a << 32 | b;
    unsigned shifted;
    asm("bfind.s64 %0, %1;" : "=r"(shifted) : "l"(bits));
    o[8] = shifted;
    asm("mul24.hi.u32 %0, %1, %2;" : "=r"(shifted) : "r"(a), "r"(b));
    o[9] = shifted;
}
"#,
    grid: 2,
    block: 64,
    words: 11 * 128,
};

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn ptx_forms_behave_as_the_ptx_isa_describes() {
    let (out, _) = run(&PTX_FORMS);
    for t in 0..128u32 {
        let (a, b, s, n) = (edge(t), edge(t / 3 + 5), edge(t / 7) % 40, edge(t / 5) % 40);
        let all = u64::from(b) << 32 | u64::from(a);
        let byte = |k: u32| (all >> (8 * (k & 7))) as u8;
        let from =
            |f: &dyn Fn(u32) -> u32| (0..4).fold(0u32, |p, i| p | u32::from(byte(f(i))) << (8 * i));
        let sel = s.wrapping_mul(0x1235);
        let default = (0..4).fold(0u32, |p, i| {
            let k = sel >> (4 * i) & 0xf;
            let x = byte(k);
            let x = if k & 8 == 0 {
                x
            } else if x & 0x80 != 0 {
                0xff
            } else {
                0
            };
            p | u32::from(x) << (8 * i)
        });
        let c = s & 3;
        // The PTX ISA's tables of prmt's modes, byte 0 first.
        let f4e = from(&|i| c + i);
        let b4e = from(&|i| (8 + c - i) & 7);
        let rc8 = from(&|_| c);
        let ecl = from(&|i| if i < c { c } else { i });
        let ecr = from(&|i| if i > c { c } else { i });
        let rc16 = from(&|i| 2 * (c & 1) + (i & 1));
        // bmsk: `n` ones from bit `s` (bits past 31 dropped): `.clamp` takes the width up to
        // 32 and gives none from a start past 31, `.wrap` takes both modulo 32.
        let ones = |start: u32, width: u32| (((1u64 << width) - 1) << start) as u32;
        let clamp_mask = if s >= 32 { 0 } else { ones(s, n.min(32)) };
        let wrap_mask = ones(s & 31, n & 31);
        let sext = if n >= 32 {
            a
        } else if n == 0 {
            0
        } else {
            ((a << (32 - n)) as i32 >> (32 - n)) as u32
        };
        let zext = if n & 31 == 0 {
            0
        } else {
            a & ((1 << (n & 31)) - 1)
        };
        let bfind_s32 = {
            let x = if (a as i32) < 0 { !a } else { a };
            if x == 0 {
                u32::MAX
            } else {
                31 - x.leading_zeros()
            }
        };
        let wide = u64::from(b) << (s % 33);
        let bfind_u64 = if wide == 0 {
            u32::MAX
        } else {
            wide.leading_zeros()
        };
        let s24 = |x: u32| i64::from((x << 8) as i32 >> 8);
        let u24 = |x: u32| u64::from(x & 0xff_ffff);
        let mul24_hi_s = ((s24(a) * s24(b)) >> 16) as u32;
        let mad24_lo_u = ((u24(a) * u24(b)) as u32).wrapping_add(n);
        let dp2a = i64::from(n)
            + i64::from(a as u16) * i64::from(b as u8 as i8)
            + i64::from((a >> 16) as u16) * i64::from((b >> 8) as u8 as i8);
        let want = [
            default,
            f4e,
            b4e,
            rc8,
            ecl,
            ecr,
            rc16,
            clamp_mask,
            wrap_mask,
            sext,
            zext,
            bfind_s32,
            bfind_u64,
            mul24_hi_s,
            mad24_lo_u,
            dp2a as u32,
        ];
        let o = &out[10 * t as usize..][..10];
        for i in 0..16 {
            let got = (o[i / 2] >> (32 * (i % 2))) as u32;
            assert_eq!(
                got, want[i],
                "thread {t} result {i}: a {a:#x} b {b:#x} s {s} n {n}"
            );
        }
        let all_bits = u64::from(a) << 32 | u64::from(b);
        let x = if (all_bits as i64) < 0 {
            !all_bits
        } else {
            all_bits
        };
        let bfind_s64 = if x == 0 {
            u32::MAX
        } else {
            63 - x.leading_zeros()
        };
        assert_eq!(o[8], u64::from(bfind_s64), "bfind.s64 {t}");
        assert_eq!(
            o[9],
            u64::from(((u24(a) * u24(b)) >> 16) as u32),
            "mul24.hi.u32 {t}"
        );
    }
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn kernels_compiled_with_line_information_or_for_the_debugger_load_and_agree() {
    for case in [&PRINTF, &BITS, &CARRIES] {
        let plain = run(case);
        for option in ["-lineinfo", "-G"] {
            let ptx = ptx_with(case, &[option]);
            assert!(ptx.contains(".loc"), "{option} gives .loc directives");
            let with = run_ptx(case, &ptx, cpu_device::printf::FIFO_BYTES);
            assert_eq!(with, plain, "{} with {option}", case.name);
        }
    }
}

/// A kernel whose `assert` fails in threads 5, 20, 42 and 79 of 100, run as 2 blocks of 64:
/// twice in the first warp. (`tests/assert.rs` runs it on the GPU.)
const ASSERTS: Case = Case {
    name: "assert",
    source: include_str!("kernels/assert.cu"),
    grid: 2,
    block: 64,
    words: 128,
};

/// A failed `assert` stops the launch as an assert, and reports each asserting thread of
/// the first warp that failed in the GPU's words (an H100, CUDA 13's driver, printed
/// `a.cu:11: void check(const int *, int *, int): block: [0,0,0], thread: [42,0,0]
/// Assertion `xs[i] >= 0` failed.` for a kernel of this shape). Catches an assert run as
/// a call with no body (refused at load), a report in other words, and a launch that
/// goes on past the assert.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn a_failed_assert_stops_the_launch_and_reports_in_the_gpus_words() {
    let (fault, _) = fault_of(&ASSERTS, &ptx(&ASSERTS));
    let report = match &fault.kind {
        exec::FaultKind::Assert { report } => report.clone(),
        other => panic!("not an assert: {other:?} {}", fault.message),
    };
    let line = |t: u32| {
        format!(
            "instructions.cu:6: void k(unsigned long long *): block: [0,0,0], thread: [{t},0,0] \
             Assertion `i % 37 != 5 && i != 20` failed.\n"
        )
    };
    assert_eq!(report, line(5) + &line(20));
    assert_eq!((fault.block, fault.thread), ([0, 0, 0], [5, 0, 0]));
    assert_eq!(
        fault.message,
        "an assert failed: `i % 37 != 5 && i != 20` (instructions.cu:6)"
    );
}

/// Each thread takes a block of the heap, fills it, sums it and gives it back; and asks for
/// more than the heap holds (8 MiB by default on the GPU), which gives a null pointer.
const MALLOC: Case = Case {
    name: "malloc",
    source: r#"
extern "C" __global__ void k(unsigned long long *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n = i % 5 + 1;
    int *p = (int *)malloc(n * sizeof(int));
    if (p == nullptr) { out[i] = ~0ull; return; }
    for (int j = 0; j < n; ++j) p[j] = i * 10 + j;
    unsigned long long s = 0;
    for (int j = 0; j < n; ++j) s += p[j];
    free(p);
    void *big = malloc(64ull << 20);
    out[i] = s * 2 + (big == nullptr);
    free(big);
}
"#,
    grid: 2,
    block: 64,
    words: 128,
};

/// Device `malloc` and `free` run on the CPU device: every thread's block its own (the
/// sums are each thread's alone), a request past the heap a null pointer, the blocks given
/// back. Catches `malloc` refused at load, blocks that overlap, and a heap with no limit.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn malloc_gives_each_thread_its_own_block_and_null_past_the_heap() {
    let (out, _) = run(&MALLOC);
    let expected: Vec<u64> = (0..128u64)
        .map(|i| {
            let n = i % 5 + 1;
            2 * (n * i * 10 + n * (n - 1) / 2) + 1
        })
        .collect();
    assert_eq!(out, expected);
}

/// A `free` of what `malloc` never gave (here the kernel's own output) stops the launch
/// with the pointer and the `.cu` line: on the GPU it is undefined, and a student's bug.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn a_free_of_what_malloc_never_gave_stops_the_launch() {
    let case = Case {
        name: "bad free",
        source: r#"
extern "C" __global__ void k(unsigned long long *out)
{
    free(out);
}
"#,
        grid: 1,
        block: 1,
        words: 1,
    };
    let (fault, out) = fault_of(&case, &ptx_with(&case, &["-lineinfo"]));
    let want = format!(
        "free(0x{:x}): not a pointer that malloc returned and free has not taken back \
         (instructions.cu line 4",
        out
    );
    assert!(fault.message.starts_with(&want), "{}", fault.message);
}

/// The CUDA math library's single-precision functions that NVRTC builds from the
/// approximate instructions (`ex2`, `lg2`, `rcp`, `rsqrt`, `div` `.approx`): with default flags
/// `expf`, `exp2f`, `powf`, `tanhf`, `erff`, `rsqrtf`, and the fast intrinsics that
/// `--use_fast_math` puts in their place, over inputs from -24 to 24.
const MATH: Case = Case {
    name: "math",
    source: r#"
extern "C" __global__ void k(unsigned long long *out)
{
    int i = threadIdx.x;
    // Exact in float, fused or not: the host computes the same inputs.
    float x = (i - 64) * 0.375f + 0.0078125f * (i % 7);
    float a = fabsf(x);
    float r[11] = {expf(x), exp2f(x), powf(a, 1.7f), tanhf(x), erff(x), rsqrtf(a),
                   __expf(x), __log2f(a), __logf(a), __powf(a, 0.3f), __fdividef(1.0f, x)};
    for (int f = 0; f < 11; ++f)
        out[f * 128 + i] = __float_as_uint(r[f]);
}
"#,
    grid: 1,
    block: 128,
    words: 11 * 128,
};

/// The math functions run, each within a few units in the last place of the exact value
/// (the H100's own bits are `kernels_equal_the_gpu_bit_for_bit`'s to hold). Catches an
/// approximation refused at load, a table read at the wrong place, a result scaled wrongly.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn math_functions_built_on_approximations_run_close_to_exact() {
    let (out, _) = run(&MATH);
    let exact: [fn(f64) -> f64; 11] = [
        f64::exp,
        f64::exp2,
        |x| x.abs().powf(1.7),
        f64::tanh,
        // erf: no exact value on the host here; the GPU test holds its bits.
        |_| f64::NAN,
        |x| 1.0 / x.abs().sqrt(),
        f64::exp,
        |x| x.abs().log2(),
        |x| x.abs().ln(),
        |x| x.abs().powf(0.3),
        |x| 1.0 / x,
    ];
    for (f, exact) in exact.iter().enumerate() {
        for i in 0..128 {
            let x = (i as f64 - 64.0) * 0.375 + 0.0078125 * (i % 7) as f64;
            let got = f64::from(f32::from_bits(out[f * 128 + i] as u32));
            let want = exact(x);
            if want.is_nan() || want.is_infinite() || want.abs() < 1e-30 {
                continue;
            }
            // The fast intrinsics are good to about 2^-21 relative; the others to 2^-22.
            assert!(
                ((got - want) / want).abs() < 1e-6,
                "function {f} of {x}: {got}, exact {want}"
            );
        }
    }
}

/// Every kernel of this file.
const CASES: [&Case; 7] = [
    &PRINTF,
    &WARP_AND_BLOCK,
    &BITS,
    &CARRIES,
    &PTX_FORMS,
    &MALLOC,
    &MATH,
];

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_equal_the_gpu_bit_for_bit() {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    use shared::gpu::Gpu;

    // Under LABS_EMULATE=1 the "GPU" is the CPU device behind the driver's API: the same
    // interpreter, reached through the labs' own path (printf through the driver's buffer).
    if shared::testing::on_cpu_device() {
        shared::gpu::use_cpu_device().expect("the CPU device loads");
    }
    let gpu = Gpu::open().unwrap_or_else(|e| panic!("{e}"));
    for case in CASES {
        let (on_cpu, _) = run(case);
        let compiled = gpu
            .compile("instructions.cu", case.source, &[] as &[&str])
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let function = compiled.function("k").expect("the kernel k");
        let mut d_out = gpu
            .stream
            .clone_htod(&vec![0u64; case.words])
            .expect("copied in");
        let config = LaunchConfig {
            grid_dim: (case.grid, 1, 1),
            block_dim: (case.block, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = gpu.stream.launch_builder(&function);
        launch.arg(&mut d_out);
        // SAFETY: `k` takes one pointer to `words` 64-bit words, as allocated here.
        unsafe { launch.launch(config) }.expect("launched");
        let on_gpu = gpu.stream.clone_dtoh(&d_out).expect("copied back");
        let first = (0..case.words).find(|&i| on_cpu[i] != on_gpu[i]);
        assert!(
            first.is_none(),
            "{}: word {first:?} differs: CPU device {:#x}, {} {:#x}",
            case.name,
            first.map_or(0, |i| on_cpu[i]),
            gpu.name,
            first.map_or(0, |i| on_gpu[i]),
        );
    }
}
