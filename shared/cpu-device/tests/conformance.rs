//! Conformance kernels: one small CUDA C++ program per construct whose PTX rules are easy to
//! get wrong (`.ftz` on subnormals, conversions and loads into wider registers, `warpSize`,
//! warp-level instructions after lanes have returned), each with the words its host check
//! expects, from the PTX ISA. NVRTC compiles them here for the CPU device; on a GPU machine
//! the same kernels run on the GPU (`cargo xtask test --require-gpu`), held to the same
//! words, so the CPU device and the GPU are held to each other.

mod support;

use cpu_device::load::load;
use cpu_device::memory::Memory;
use shared::nvrtc::KernelFile;

/// One kernel, `k(unsigned *out, const unsigned *in, int n)` in one block of `threads`, and
/// the words of `out` it must leave (`out` starts zeroed, with as many words).
struct Case {
    name: &'static str,
    source: &'static str,
    options: &'static [&'static str],
    threads: u32,
    n: i32,
    input: &'static [u32],
    expect: fn() -> Vec<u32>,
}

/// f32 subnormals through `--ftz=true` (every f32 instruction `.ftz`) and without it: an
/// operand flushed (-2^-127 * 0.5), the sum of two subnormals, a comparison of two, the
/// root of a negative one, a product whose result is subnormal.
const FTZ: &str = r#"
extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    float a = __uint_as_float(in[0]), b = __uint_as_float(in[1]);
    float c = __uint_as_float(in[2]), d = __uint_as_float(in[3]);
    out[0] = __float_as_uint(a * 0.5f);
    out[1] = __float_as_uint(b + b);
    out[2] = c < b;
    out[3] = __float_as_uint(sqrtf(c));
    out[4] = __float_as_uint(d * 0.5f);
    out[5] = __float_as_uint(fminf(c, -c));
    out[6] = __double_as_longlong((double)a) >> 32;
}
"#;

const FTZ_INPUT: &[u32] = &[0x8040_0000, 0x0000_0001, 0x8000_0001, 0x0080_0000];

/// Conversions to an integer type narrower than the register (inline PTX: NVRTC's own code
/// converts through registers of the type's width): -62 is 0xc2 in 8 bits.
const NARROW: &str = r#"
#define CVT(name, ptx, out_c, out_t, in_c, in_t) \
    __device__ out_t name(in_t a) \
    { \
        out_t r; \
        asm(ptx " %0, %1;" : "=" out_c(r) : in_c(a)); \
        return r; \
    }
CVT(cvt_s16_s8, "cvt.s16.s8", "r", int, "r", int)
CVT(cvt_s8_s32, "cvt.s8.s32", "r", int, "r", int)
CVT(cvt_u8_s32, "cvt.u8.s32", "r", int, "r", int)
CVT(cvt_rzi_s16_f32, "cvt.rzi.s16.f32", "r", int, "f", float)
CVT(cvt_s8_s32_wide, "cvt.s8.s32", "l", long long, "r", int)
CVT(cvt_u16_s32_wide, "cvt.u16.s32", "l", long long, "r", int)

extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    int x = (int)in[0];
    out[0] = cvt_s16_s8(x);
    out[1] = cvt_s8_s32(x + 0x100);
    out[2] = cvt_u8_s32(x);
    out[3] = cvt_rzi_s16_f32(__uint_as_float(in[1]));
    long long w = cvt_s8_s32_wide(x);
    out[4] = (unsigned)w;
    out[5] = (unsigned)(w >> 32);
    long long u = cvt_u16_s32_wide(x);
    out[6] = (unsigned)u;
    out[7] = (unsigned)(u >> 32);
}
"#;

/// Loads of one type into a wider bit-size register (inline PTX, as hand-written PTX has
/// them): an f32's raw bits zero-extended, an s8 sign-extended, whatever the register held.
const WIDE_LOAD: &str = r#"
#define LOAD(name, ptx) \
    __device__ unsigned long long name(const unsigned *p) \
    { \
        unsigned long long r; \
        asm("{\n\t.reg .b64 w;\n\tmov.b64 w, 0x0123456789abcdef;\n\t" ptx " w, [%1];\n\t" \
            "mov.b64 %0, w;\n\t}" : "=l"(r) : "l"(p)); \
        return r; \
    }
LOAD(load_f32, "ld.global.f32")
LOAD(load_s8, "ld.global.s8")
LOAD(load_u16, "ld.global.u16")

extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    unsigned long long f = load_f32(in);
    unsigned long long s = load_s8(in + 1);
    unsigned long long h = load_u16(in + 1);
    out[0] = (unsigned)f;
    out[1] = (unsigned)(f >> 32);
    out[2] = (unsigned)s;
    out[3] = (unsigned)(s >> 32);
    out[4] = (unsigned)h;
    out[5] = (unsigned)(h >> 32);
}
"#;

/// A loose multiply and the subtraction reading it, with an instruction between (inline
/// PTX, as NVRTC leaves such pairs to ptxas): fused, a * a - c is the exact 2^-24; apart,
/// the product rounds to c and the difference is 0. ptxas keeps them apart across an
/// IEEE-rounded division, root or reciprocal and a signed division, not across a `div.u32`.
const CONTRACTION: &str = r#"
#define APART(name, between, t, c) \
    __device__ float name(float a, float b, t x, t y, t *q) \
    { \
        float r; \
        asm("{\n\t.reg .f32 p;\n\tmul.f32 p, %2, %2;\n\t" between \
            " %1, %4, %5;\n\tsub.f32 %0, p, %3;\n\t}" \
            : "=f"(r), "=" c(*q) : "f"(a), "f"(b), c(x), c(y)); \
        return r; \
    }
APART(across_div_rn_f32, "div.rn.f32", float, "f")
APART(across_div_s32, "div.s32", int, "r")
APART(across_div_u32, "div.u32", unsigned, "r")
APART(across_div_rn_f64, "div.rn.f64", double, "d")

extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    float a = __uint_as_float(in[0]), c = __uint_as_float(in[1]);
    float x = __uint_as_float(in[2]);
    float r;
    asm("{\n\t.reg .f32 p;\n\tmul.f32 p, %1, %1;\n\tsub.f32 %0, p, %2;\n\t}"
        : "=f"(r) : "f"(a), "f"(c));
    out[0] = __float_as_uint(r);
    float f;
    out[1] = __float_as_uint(across_div_rn_f32(a, c, x, c, &f));
    out[2] = __float_as_uint(f);
    int s;
    out[3] = __float_as_uint(across_div_s32(a, c, (int)in[3], 7, &s));
    out[4] = s;
    unsigned u;
    out[5] = __float_as_uint(across_div_u32(a, c, in[3], 7u, &u));
    out[6] = u;
    double d;
    out[7] = __float_as_uint(across_div_rn_f64(a, c, (double)x, 7.0, &d));
    out[8] = (unsigned)(__double_as_longlong(d) >> 32);
    out[9] = (unsigned)__double_as_longlong(d);
}
"#;

fn contraction_expected() -> Vec<u32> {
    let (fused, apart) = (0x3380_0000, 0);
    let third = (3.0f64 / 7.0).to_bits();
    vec![
        fused,
        apart,
        (3.0f32 / f32::from_bits(0x3f80_1000)).to_bits(),
        apart,
        (-100i32 / 7) as u32,
        fused,
        (-100i32 as u32) / 7,
        apart,
        (third >> 32) as u32,
        third as u32,
    ]
}

/// The SIMD video instruction `vabsdiff` (CUDA's `__vabsdiffu4`, `__vsadu4` and kin) with its
/// default selectors and mask: each byte's (or half's) absolute difference, in its own lane
/// (merged: `c` kept nowhere) or added to `c`.
const ABS_DIFF: &str = r#"
#define ABS_DIFF(name, ptx) \
    __device__ unsigned name(unsigned a, unsigned b, unsigned c) \
    { \
        unsigned r; \
        asm(ptx " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); \
        return r; \
    }
ABS_DIFF(bytes, "vabsdiff4.u32.u32.u32")
ABS_DIFF(signed_bytes, "vabsdiff4.u32.s32.s32")
ABS_DIFF(bytes_added, "vabsdiff4.u32.u32.u32.add")
ABS_DIFF(halves, "vabsdiff2.u32.u32.u32")
ABS_DIFF(signed_halves_added, "vabsdiff2.s32.s32.s32.add")

extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    unsigned a = in[0], b = in[1], c = in[2];
    out[0] = bytes(a, b, c);
    out[1] = signed_bytes(a, b, c);
    out[2] = bytes_added(a, b, c);
    out[3] = halves(a, b, c);
    out[4] = signed_halves_added(a, b, c);
}
"#;

/// Integer arithmetic on pairs of 16-bit halves and `.relu` on a single `.s32` (what CUDA's
/// SIMD and DPX intrinsics, `__vadd2`, `__vmins2`, `__vimax_s16x2_relu` and kin, are for
/// sm_90): each of the ten forms on five pairs of words, one thread a pair. The PTX ISA adds
/// and compares each half apart and makes a negative result 0 under `.relu`; it does not say
/// in words that a half's sum wraps rather than saturates (`add` has no `.sat` for pairs),
/// nor that `.relu` clamps each half rather than the word: the GPU's words here say.
const HALVES: &str = r#"
#define HALVES(name, ptx) \
    __device__ unsigned name(unsigned a, unsigned b) \
    { \
        unsigned r; \
        asm(ptx " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); \
        return r; \
    }
HALVES(add_u16x2, "add.u16x2")
HALVES(add_s16x2, "add.s16x2")
HALVES(min_u16x2, "min.u16x2")
HALVES(min_s16x2, "min.s16x2")
HALVES(max_u16x2, "max.u16x2")
HALVES(max_s16x2, "max.s16x2")
HALVES(min_relu_s16x2, "min.s16x2.relu")
HALVES(max_relu_s16x2, "max.relu.s16x2")
HALVES(min_relu_s32, "min.s32.relu")
HALVES(max_relu_s32, "max.relu.s32")

extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    unsigned t = threadIdx.x, a = in[2 * t], b = in[2 * t + 1];
    unsigned *o = out + 10 * t;
    o[0] = add_u16x2(a, b);
    o[1] = add_s16x2(a, b);
    o[2] = min_u16x2(a, b);
    o[3] = min_s16x2(a, b);
    o[4] = max_u16x2(a, b);
    o[5] = max_s16x2(a, b);
    o[6] = min_relu_s16x2(a, b);
    o[7] = max_relu_s16x2(a, b);
    o[8] = min_relu_s32(a, b);
    o[9] = max_relu_s32(a, b);
}
"#;

/// The halves' words, a thread's ten in `HALVES`'s order: add.u16x2, add.s16x2, min.u16x2,
/// min.s16x2, max.u16x2, max.s16x2, min.s16x2.relu, max.s16x2.relu, min.s32.relu,
/// max.s32.relu.
fn halves_expected() -> Vec<u32> {
    vec![
        // 0x7fff_ffff, 0x0001_0001: 0xffff + 1 and 0x7fff + 1 wrap in their own half (no
        // carry up, no saturation at 0x7fff); -1 and 1 against 32767 and 1; the low half's
        // minimum -1 is 0 under .relu, the high half's 1 kept.
        0x8000_0000,
        0x8000_0000,
        0x0001_0001,
        0x0001_ffff,
        0x7fff_ffff,
        0x7fff_0001,
        0x0001_0000,
        0x7fff_0001,
        0x0001_0001,
        0x7fff_ffff,
        // 0x8000_7fff, 0x7fff_8000: 0x8000 is the larger unsigned, the smaller signed, in
        // each half; the s32 minimum is negative, so 0.
        0xffff_ffff,
        0xffff_ffff,
        0x7fff_7fff,
        0x8000_8000,
        0x8000_8000,
        0x7fff_7fff,
        0x0000_0000,
        0x7fff_7fff,
        0x0000_0000,
        0x7fff_8000,
        // 0xffff_0003, 0x0005_fff9: halves -1 and 3 against 5 and -7.
        0x0004_fffc,
        0x0004_fffc,
        0x0005_0003,
        0xffff_fff9,
        0xffff_fff9,
        0x0005_0003,
        0x0000_0000,
        0x0005_0003,
        0x0000_0000,
        0x0005_fff9,
        // 0x8000_ffff, 0xffff_8000: -32768 + -1 wraps to 32767 in each half; every
        // minimum and maximum negative, every .relu 0.
        0x7fff_7fff,
        0x7fff_7fff,
        0x8000_8000,
        0x8000_8000,
        0xffff_ffff,
        0xffff_ffff,
        0x0000_0000,
        0x0000_0000,
        0x0000_0000,
        0x0000_0000,
        // 0xfffe_0005, 0x8000_0002: halves -2 and 5 against -32768 and 2; .relu clears the
        // high half and keeps the low one (a clamp of the whole word would clear both, as
        // 0x8000_0002 and 0xfffe_0005 are negative; in the first pair it would keep
        // 0x0001_ffff whole).
        0x7ffe_0007,
        0x7ffe_0007,
        0x8000_0002,
        0x8000_0002,
        0xfffe_0005,
        0xfffe_0005,
        0x0000_0002,
        0x0000_0005,
        0x0000_0000,
        0x0000_0000,
    ]
}

/// `lop3.b32`, three words' bitwise function given by its table (CUDA's SIMD intrinsics
/// `__vcmpgts2` and kin write 0x4d, 0x8e, 0xb2 and 0x71), each table on thread 0's words
/// 0xf0, 0xcc and 0xaa in every byte, which the PTX ISA defines the table by, and on thread
/// 1's words, chosen so that each of the eight combinations of their bits occurs (each table
/// gives another word).
const LOP3: &str = r#"
#define LOP3(lut) \
    __device__ unsigned lop3_##lut(unsigned a, unsigned b, unsigned c) \
    { \
        unsigned r; \
        asm("lop3.b32 %0, %1, %2, %3, " #lut ";" : "=r"(r) : "r"(a), "r"(b), "r"(c)); \
        return r; \
    }
LOP3(0x80)
LOP3(0xfe)
LOP3(0x40)
LOP3(0x1a)
LOP3(0x4d)
LOP3(0x8e)
LOP3(0xb2)
LOP3(0x71)
LOP3(0x96)
LOP3(0xe8)
LOP3(0x00)
LOP3(0xff)

extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    unsigned t = threadIdx.x, a = in[3 * t], b = in[3 * t + 1], c = in[3 * t + 2];
    unsigned *o = out + 12 * t;
    o[0] = lop3_0x80(a, b, c);
    o[1] = lop3_0xfe(a, b, c);
    o[2] = lop3_0x40(a, b, c);
    o[3] = lop3_0x1a(a, b, c);
    o[4] = lop3_0x4d(a, b, c);
    o[5] = lop3_0x8e(a, b, c);
    o[6] = lop3_0xb2(a, b, c);
    o[7] = lop3_0x71(a, b, c);
    o[8] = lop3_0x96(a, b, c);
    o[9] = lop3_0xe8(a, b, c);
    o[10] = lop3_0x00(a, b, c);
    o[11] = lop3_0xff(a, b, c);
}
"#;

/// `LOP3`'s words: thread 0's are each table in every byte; thread 1's each table's
/// function, written out (the PTX ISA's examples, then the minterms of the others).
fn lop3_expected() -> Vec<u32> {
    let tables = [
        0x80, 0xfe, 0x40, 0x1a, 0x4d, 0x8e, 0xb2, 0x71, 0x96, 0xe8, 0x00, 0xff,
    ];
    let (a, b, c) = (0x0123_4567u32, 0x3c3c_5a5a, 0xdead_beef);
    let functions = [
        a & b & c,
        a | b | c,
        a & b & !c,
        (a & b | c) ^ a,
        // 0x4d: minterms 0, 2, 3, 6; 0x8e: 1, 2, 3, 7; 0xb2: 1, 4, 5, 7; 0x71: 0, 4, 5, 6.
        (!a & (b | !c)) | (b & !c),
        (!a & (b | c)) | (a & b & c),
        (a & (!b | c)) | (!b & c),
        (a & !(b & c)) | (!a & !b & !c),
        a ^ b ^ c,
        (a & b) | (b & c) | (a & c),
        0,
        0xffff_ffff,
    ];
    tables
        .iter()
        .map(|t| t * 0x0101_0101)
        .chain(functions)
        .collect()
}

/// `warpSize` (PTX's `WARP_SZ`) and what a kernel computes from it.
const WARP_SIZE: &str = r#"
extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    unsigned t = threadIdx.x;
    out[t] = warpSize * 1000 + t % warpSize * 10 + t / warpSize;
}
"#;

/// `if (i >= n) return;` and then full-mask warp instructions in a block of 48 (a partial
/// second warp): sums over groups of 8 lanes by `__shfl_xor_sync` (every source lane is
/// still there), a ballot, `__all_sync`, `__syncwarp`, a broadcast from lane 0.
const EXITED_LANES: &str = r#"
extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    int t = threadIdx.x;
    if (t >= n) return;
    unsigned v = t;
    for (int o = 4; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    unsigned ballot = __ballot_sync(0xffffffffu, t % 3 == 0);
    int all = __all_sync(0xffffffffu, t < n);
    __syncwarp();
    unsigned first = __shfl_sync(0xffffffffu, t * 7, 0);
    out[4 * t] = v;
    out[4 * t + 1] = ballot;
    out[4 * t + 2] = all;
    out[4 * t + 3] = first;
}
"#;

fn exited_lanes_expected() -> Vec<u32> {
    let mut out = vec![0u32; 4 * 48];
    for t in 0..40u32 {
        let group = t / 8 * 8;
        out[4 * t as usize] = (group..group + 8).sum();
        out[4 * t as usize + 1] = if t < 32 { 0x4924_9249 } else { 0x92 };
        out[4 * t as usize + 2] = 1;
        out[4 * t as usize + 3] = t / 32 * 32 * 7;
    }
    out
}

/// The operands [`SUBNORMALS`] takes: the smallest and largest subnormals of each sign, the
/// smallest normal, 1, -1.5, the largest float, a quiet NaN, a signalling NaN with a payload,
/// -infinity and -0.
const SUBNORMAL_INPUT: &[u32] = &[
    0x0000_0001,
    0x007f_ffff,
    0x8000_0001,
    0x8040_0000,
    0x0080_0000,
    0x3f80_0000,
    0xbfc0_0000,
    0x7f7f_ffff,
    0x7fc0_0000,
    0x7fa0_0000,
    0xff80_0000,
    0x8000_0000,
];

const SUBNORMALS: &str = include_str!("conformance/subnormals.cu");

/// `out`'s words as a Hopper GPU left them (for [`SUBNORMALS`]: an NVIDIA H100 80GB HBM3,
/// driver 580.159.04, the kernel built by nvcc 13.0 for sm_90, with and without `-ftz=true`,
/// over [`SUBNORMAL_INPUT`]).
/// `conformance_kernels_give_the_same_bits_on_the_gpu` holds any GPU to them again.
fn hopper_words(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .map(|word| u32::from_str_radix(word, 16).expect("a hex word"))
        .collect()
}

/// The triples [`TINY`] takes: products exactly 2^-126 (1 - 2^-24) (of each sign), and
/// (1 - 2^-25), a tie, with `c` a subnormal of each sign; just above; 2^-127 (1 + 2^-23);
/// exactly 2^-126; (1 - 2^-23); a fused product and sum whose exact result is 2^-149; and
/// (1 - 2^-24) as 1 - 2^-24 times 2^-126.
const TINY_INPUT: &[u32] = &[
    0x00ff_ffff,
    0x3f00_0000,
    0x8000_0000, //
    0x2391_8e00,
    0x1c61_2000,
    0x8000_0000, //
    0x2391_8e00,
    0x1c61_2000,
    0x0000_0001, //
    0x2391_8e01,
    0x1c61_2000,
    0x8000_0000, //
    0x80ff_ffff,
    0x3f00_0000,
    0x0000_0000, //
    0x0080_0001,
    0x3f00_0000,
    0x0000_0000, //
    0x3f80_0000,
    0x0080_0000,
    0x0000_0000, //
    0x00ff_fffe,
    0x3f00_0000,
    0x8000_0000, //
    0x3f80_0001,
    0x0080_0000,
    0x8080_0000, //
    0x3f7f_ffff,
    0x0080_0000,
    0x0000_0000,
];

/// The operands [`HALF`] takes (each word's low 16 bits for a half): binary16 0.75, 683/512
/// (their product 1 + 2^-11, a tie), 2^-24 (the smallest subnormal), 65504 (the largest
/// finite), 1, -0, a quiet NaN with a payload, +inf, 1023 * 2^-24 (the largest subnormal),
/// -inf, +0, 2^-14 (the smallest normal), 1 - 2^-11, 2.5, -2.5, 1 + 2^-10; f32 1 + 2^-11 (a
/// tie at binary16's precision), 1 + 2^-11 + 2^-23, 65520 (halfway from 65504 to 2^16),
/// 2^-25 (half the smallest subnormal), a signalling NaN, 1 + 2^-8 and -(1 + 3 * 2^-8) (ties
/// at bfloat16's), the largest float; bfloat16 7, 37/256 (their product 1 + 3 * 2^-8, a
/// tie), -2^-100, 1, 3 * 2^-8, the largest finite, 2, 2^-133 (the smallest subnormal),
/// 3 * 2^-133, 1/2, a signalling NaN with a payload, +0.
const HALF_INPUT: &[u32] = &[
    0x3a00,
    0x3d56,
    0x0001,
    0x7bff,
    0x3c00,
    0x8000,
    0x7e01,
    0x7c00,
    0x03ff,
    0xfc00,
    0x0000,
    0x0400,
    0x3bff,
    0x4100,
    0xc100,
    0x3c01, //
    0x3f80_1000,
    0x3f80_1001,
    0x477f_f000,
    0x3300_0000,
    0x7fa0_0000,
    0x3f80_8000,
    0xbf81_8000,
    0x7f7f_ffff, //
    0x40e0,
    0x3e14,
    0x8d80,
    0x3f80,
    0x3c40,
    0x7f7f,
    0x4000,
    0x0001,
    0x0003,
    0x3f00,
    0x7fa1,
    0x0000,
];

const HALF: &str = include_str!("conformance/half.cu");

/// [`HALF`]'s 91 words, from the PTX ISA's rules for half precision (each exact result rounded
/// once to nearest even, or in the conversion's mode; subnormals kept unless `.ftz`; a NaN
/// result the canonical 0x7fff but for an f64's NaN narrowed; `.sat` to [0, 1] with a NaN to +0; `.relu` a negative to
/// +0; `min`/`max` the other operand for one NaN, -0 below +0; a NaN to an integer 0 below
/// 64 bits), worked out with exact rationals, not with the CPU device's code. Where the ISA
/// leaves a choice, the word is what the rest of the H100 does: a product that rounds up to
/// the smallest normal only at the subnormals' spacing is flushed by `.ftz` (f32's rule,
/// `tiny.cu`); binary16's NaN widened to an f32 is the f32 canonical NaN, bfloat16's keeps its
/// bits; a loose multiply read once by a loose add is fused (f32's rule, `crate::load`).
fn half_expected() -> Vec<u32> {
    vec![
        // binary16 sums: 65504 + 65504 overflows; 2^-24 + 2^-24; the largest subnormal plus
        // the smallest is the smallest normal, 0 under .ftz; 1 - 1 = +0; -0 + -0 = -0; inf -
        // inf and NaN + 1 give the canonical NaN; .sat takes a NaN to +0 and 2 to 1.
        0x7c00,
        0x0002,
        0x0400,
        0x0000,
        0x0000,
        0x8000,
        0x7fff,
        0x7fff,
        0x0000,
        0x3c00,
        // products: 0.75 * 683/512 = 1 + 2^-11, a tie, to even; 0.75 * 2^-24 to 2^-24;
        // 2^-14 * (1 - 2^-11) = 2^-14 - 2^-25, a tie at the subnormals' spacing, to 2^-14,
        // and flushed under .ftz (tiny before rounding to the subnormals' spacing).
        0x3c00,
        0x0001,
        0x0400,
        0x0000,
        // fma: 1 + 2^-11 + 2^-24 rounded once is 1 + 2^-10 (twice, through the tie, 1);
        // .relu of -inf is +0, of a NaN the canonical NaN; .sat of inf is 1.
        0x3c01,
        0x0000,
        0x7fff,
        0x3c00,
        // min(-0, +0), max(-0, +0), min(NaN, 1), max.NaN(NaN, 1), max of two NaNs (made at
        // run time: ptxas folds max(x, x) to x).
        0x8000,
        0x0000,
        0x3c00,
        0x7fff,
        0x7fff,
        // neg 2^-24, neg.ftz of the largest subnormal, abs -2.5.
        0x8001,
        0x8000,
        0x4100,
        // -0 < +0; 2^-24 < 1023 * 2^-24, not under .ftz (both zeros); -0 == +0; NaN equ 1.
        0,
        1,
        0,
        1,
        1,
        // widened to f32: 2^-24, 1023 * 2^-24, -0.
        0x3380_0000,
        0x387f_c000,
        0x8000_0000,
        // to integers: rni 2.5 = 2, rzi -2.5 = -2, rmi -2.5 clamped to u32 0, NaN 0, inf the
        // largest s32; rni in binary16: 2.5 to 2, -2.5 to -2.
        2,
        0xffff_fffe,
        0,
        0,
        0x7fff_ffff,
        0x4000,
        0xc000,
        // f32 to binary16: the tie to even, just above it up, 65520 to inf (to even), rz to
        // 65504, rm of -65520 to -inf; 2^-25 to +0 (a tie), rp to 2^-24, rm of -2^-25 to
        // -2^-24; a signalling NaN to the canonical NaN; f64 1 + 2^-11 + 2^-40 up.
        0x3c00,
        0x3c01,
        0x7c00,
        0x7bff,
        0xfc00,
        0x0000,
        0x0001,
        0x8001,
        0x7fff,
        0x3c01,
        // integers: -7; 2^31 - 1 overflows (rz: 65504); 65519 down, 65520 to inf (to even).
        0xc700,
        0x7c00,
        0x7bff,
        0x7bff,
        0x7c00,
        // fma.rn.f16x2: 1 * 1 + 2^-24 = 1 low, 65504 * 1 + 65504 = inf high.
        0x7c00_3c00,
        // bfloat16 fma: 7 * 37/256 - 2^-100 is just below the tie 1 + 3 * 2^-8, so 1 + 2^-7
        // (a double rounding through f64 gives the tie's even 1 + 2^-6); with +0, the tie to
        // even; 1 + 3 * 2^-8 as a sum too; the largest times 2 overflows; 2^-133 / 2 is a tie
        // to +0, 3 * 2^-133 / 2 one to 2 * 2^-133.
        0x3f81,
        0x3f82,
        0x3f82,
        0x7f80,
        0x0000,
        0x0002,
        // a NaN: sum canonical, min the other operand, max.NaN canonical; neg -2^-100;
        // -2^-100 < +0.
        0x7fff,
        0x3f80,
        0x7fff,
        0x0d80,
        1,
        // widened to f32: 2^-133 an f32 subnormal, -2^-100.
        0x0001_0000,
        0x8d80_0000,
        // f32 to bfloat16: ties to even (1, -(1 + 2^-6)); the largest float to inf, rz to the
        // largest bfloat16, rm of its negation to -inf; rp of 2^-149 to 2^-133; a
        // signalling NaN to the canonical NaN; the integer -7.
        0x3f80,
        0xbf82,
        0x7f80,
        0x7f7f,
        0xff80,
        0x0001,
        0x7fff,
        0xc0e0,
        // fma.rn.bf16x2: the first fma above low, the largest * 2 + 0 = inf high.
        0x7f80_3f81,
        // mul.f16 then add.f16, loose: fused, 0.75 * 683/512 + 2^-24 rounded once.
        0x3c01,
        // set: -2^-100 < +0 as all ones.
        0xffff_ffff,
        // f32 pairs, the first operand high: 1 + 2^-11 (the tie) and just above it; 1 + 2^-8
        // rounded towards zero and -(1 + 2^-11) to +0 by .relu; a signalling NaN and the
        // largest float (inf) in bfloat16.
        0x3c00_3c01,
        0x3f80_0000,
        0x7fff_7f80,
        // set on pairs, each half its own: -0 < +0 no, 1 < inf 0xffff; NaN yes (bfloat16
        // 1.0), 1 no; NaN geu 1 yes (binary16 1.0), 2^-24 geu 1023 * 2^-24 no.
        0xffff_0000,
        0x0000_3f80,
        0x0000_3c00,
        // f64 NaNs narrowed keep their sign and their payload's top bits, quieted (the H100's
        // 0x7ff8000000000000 gives 0x7e00), as to an f32; -0 saturated is +0.
        0xff00,
        0x7e00,
        0xffe0,
        0x0000,
    ]
}

const CASES: &[Case] = &[
    Case {
        name: "ftz",
        source: FTZ,
        options: &["--ftz=true"],
        threads: 1,
        n: 0,
        input: FTZ_INPUT,
        expect: || vec![0x8000_0000, 0, 0, 0x8000_0000, 0, 0x8000_0000, 0x8000_0000],
    },
    Case {
        name: "no ftz",
        source: FTZ,
        options: &[],
        threads: 1,
        n: 0,
        input: FTZ_INPUT,
        expect: || {
            vec![
                0x8020_0000,
                2,
                1,
                0x7fff_ffff,
                0x0040_0000,
                0x8000_0001,
                0xb800_0000,
            ]
        },
    },
    Case {
        name: "narrow conversions",
        source: NARROW,
        options: &[],
        threads: 1,
        n: 0,
        input: &[0xffff_ffc2, 0xbf80_0000],
        expect: || {
            vec![
                0xffff_ffc2,
                0xffff_ffc2,
                0xc2,
                0xffff_ffff,
                0xffff_ffc2,
                0xffff_ffff,
                0xffc2,
                0,
            ]
        },
    },
    Case {
        name: "wide loads",
        source: WIDE_LOAD,
        options: &[],
        threads: 1,
        n: 0,
        input: &[0x3f00_0000, 0x0000_80f0],
        expect: || vec![0x3f00_0000, 0, 0xffff_fff0, 0xffff_ffff, 0x80f0, 0],
    },
    Case {
        name: "warpSize",
        source: WARP_SIZE,
        options: &[],
        threads: 40,
        n: 0,
        input: &[0],
        expect: || (0..40).map(|t| 32_000 + t % 32 * 10 + t / 32).collect(),
    },
    Case {
        name: "exited lanes",
        source: EXITED_LANES,
        options: &[],
        threads: 48,
        n: 40,
        input: &[0],
        expect: exited_lanes_expected,
    },
    Case {
        name: "subnormal operands",
        source: SUBNORMALS,
        options: &[],
        threads: 32,
        n: 12,
        input: SUBNORMAL_INPUT,
        expect: || hopper_words(include_str!("conformance/subnormals.h100.txt")),
    },
    Case {
        name: "subnormal operands ftz",
        source: SUBNORMALS,
        options: &["--ftz=true"],
        threads: 32,
        n: 12,
        input: SUBNORMAL_INPUT,
        expect: || hopper_words(include_str!("conformance/subnormals-ftz.h100.txt")),
    },
    Case {
        name: "tiny results ftz",
        source: include_str!("conformance/tiny.cu"),
        options: &[],
        threads: 32,
        n: 10,
        input: TINY_INPUT,
        // Recorded as the H100's above, on an NVIDIA H200 (the same Hopper SM), driver
        // 580.159.04, nvcc 13.0 for sm_90.
        expect: || hopper_words(include_str!("conformance/tiny.h200.txt")),
    },
    Case {
        name: "multiply-adds fused or kept apart",
        source: CONTRACTION,
        options: &[],
        threads: 1,
        n: 0,
        // a = 1 + 2^-12, c = 1 + 2^-11 (a * a = c + 2^-24 exactly), x = 3, -100.
        input: &[0x3f80_0800, 0x3f80_1000, 0x4040_0000, 0xffff_ff9c],
        expect: contraction_expected,
    },
    Case {
        name: "quotients fused into the add reading them",
        source: include_str!("conformance/quotients.cu"),
        options: &[],
        threads: 1,
        n: 0,
        // a = 1 + 2^-12, b = 3, c = a / b rounded (a unit below the unit's quotient), -c;
        // a and b times 2^126 (a = 2^126 + 2^114, b = 3 * 2^126); a and b times 2^-130
        // (subnormals: 0x00080080 is a = 2^-130 + 2^-142, 0x00180000 is b = 3 * 2^-130); -a.
        input: &[
            0x3f80_0800,
            0x4040_0000,
            0x3eaa_b555,
            0xbeaa_b555,
            0x7e80_0800,
            0x7f40_0000,
            0x0008_0080,
            0x0018_0000,
            0xbf80_0800,
        ],
        // Read from an NVIDIA H200 (driver 580.159.04, nvcc 13.0 for sm_90): fused, the
        // product's rounding error 0x32aab000 (of either sign), apart the unit 0x33000000.
        expect: || hopper_words(include_str!("conformance/quotients.h200.txt")),
    },
    Case {
        name: "absolute differences of bytes and halves",
        source: ABS_DIFF,
        options: &[],
        threads: 1,
        n: 0,
        // Bytes 0x80 0x7f 0xff 0x01 against 0x80 0x00 0x00 0x02; halves 0x7f80 0x01ff
        // against 0x0080 0x0200 (signed 32640 and 511 against 128 and 512); c = 10.
        input: &[0x01ff_7f80, 0x0200_0080, 10],
        expect: || {
            vec![
                0x01ff_7f00,
                0x0101_7f00,
                10 + 0x7f + 0xff + 1,
                0x0001_7f00,
                10 + 32512 + 1,
            ]
        },
    },
    Case {
        name: "integer pairs of halves and relu",
        source: HALVES,
        options: &[],
        threads: 5,
        n: 0,
        input: &[
            0x7fff_ffff,
            0x0001_0001,
            0x8000_7fff,
            0x7fff_8000,
            0xffff_0003,
            0x0005_fff9,
            0x8000_ffff,
            0xffff_8000,
            0xfffe_0005,
            0x8000_0002,
        ],
        expect: halves_expected,
    },
    Case {
        name: "three-input logic (lop3)",
        source: LOP3,
        options: &[],
        threads: 2,
        n: 0,
        input: &[
            0xf0f0_f0f0,
            0xcccc_cccc,
            0xaaaa_aaaa,
            0x0123_4567,
            0x3c3c_5a5a,
            0xdead_beef,
        ],
        expect: lop3_expected,
    },
    Case {
        name: "half precision",
        source: HALF,
        options: &[],
        threads: 1,
        n: 0,
        input: HALF_INPUT,
        expect: half_expected,
    },
];

impl Case {
    fn kernel_file(&self) -> KernelFile {
        KernelFile {
            name: "conformance.cu",
            source: self.source.into(),
            headers: Vec::new(),
            options: self.options.iter().map(|o| o.to_string()).collect(),
        }
    }

    /// `out` after a run of the case's PTX on the CPU device.
    fn on_cpu_device(&self) -> Vec<u32> {
        let ptx = self
            .kernel_file()
            .ptx("compute_90")
            .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        let memory = Memory::default();
        let module = load(&ptx, &memory).unwrap_or_else(|e| panic!("{}: {e}", self.name));
        let words = (self.expect)().len();
        let input: Vec<u8> = self.input.iter().flat_map(|w| w.to_le_bytes()).collect();
        let d_in = memory.alloc(input.len() as u64, "in").expect("allocated");
        let d_out = memory.alloc(4 * words as u64, "out").expect("allocated");
        memory.write(d_in.address, &input).expect("written");
        let mut params = d_out.address.to_le_bytes().to_vec();
        params.extend(d_in.address.to_le_bytes());
        params.extend(self.n.to_le_bytes());
        support::launch(&module, "k", [1, self.threads], &params, &memory, 1)
            .unwrap_or_else(|f| panic!("{}: {}", self.name, f.message));
        support::read(&memory, d_out.address, 4 * words)
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
            .collect()
    }
}

/// Every case's words that differ from those expected, one line each.
fn differences(run: impl Fn(&Case) -> Vec<u32>) -> Vec<String> {
    let mut lines = Vec::new();
    for case in CASES {
        let got = run(case);
        let want = (case.expect)();
        if got.len() != want.len() {
            lines.push(format!(
                "{}: {} words, want {}",
                case.name,
                got.len(),
                want.len()
            ));
        }
        lines.extend(
            got.iter()
                .zip(&want)
                .enumerate()
                .filter(|(_, (got, want))| got != want)
                .map(|(i, (got, want))| {
                    format!("{}: out[{i}] {got:08x}, want {want:08x}", case.name)
                }),
        );
    }
    lines
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn conformance_kernels_give_the_ptx_isas_bits_on_the_cpu_device() {
    let wrong = differences(Case::on_cpu_device);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn conformance_kernels_give_the_same_bits_on_the_gpu() {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    use shared::gpu::Gpu;

    // Under LABS_EMULATE=1 the "GPU" is the CPU device behind the driver's API.
    if shared::testing::on_cpu_device() {
        shared::gpu::use_cpu_device().expect("the CPU device loads");
    }
    let gpu = Gpu::open().unwrap_or_else(|e| panic!("{e}"));
    let wrong = differences(|case| {
        // One file name for every case, as a student's edits keep theirs: on the H100
        // machine, NVRTC's own cache once gave the second of two cases of one name and source
        // ("ftz", "no ftz") the first's code (`shared::nvrtc` now compiles with `--no-cache`).
        let compiled = gpu
            .compile("conformance.cu", case.source, case.options)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let function = compiled.function("k").expect("the kernel k");
        let stream = &gpu.stream;
        let d_in = stream.clone_htod(case.input).expect("copied in");
        let mut d_out = stream
            .clone_htod(&vec![0u32; (case.expect)().len()])
            .expect("copied in");
        let config = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (case.threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(&function);
        launch.arg(&mut d_out).arg(&d_in).arg(&case.n);
        // SAFETY: `k` takes `out` (as many words as the case expects), `in` (the case's
        // input words, all it reads) and an int.
        unsafe { launch.launch(config) }.expect("launched");
        stream.clone_dtoh(&d_out).expect("copied back")
    });
    assert!(wrong.is_empty(), "on {}:\n{}", gpu.name, wrong.join("\n"));
}
