//! The differential test: CUDA C++ kernels generated at random from the instruction mix the
//! labs use (chains of f32, f64 and integer operations over edge values, conversions,
//! shuffles, votes and atomics), compiled by NVRTC, run on the CPU device and on the GPU,
//! every output bit compared. The generator and its seeds live here, so a failure is
//! reproduced from its seed alone.
//!
//! Each thread of `blocks x 64` (every lane active: shuffles need full warps) reads its
//! inputs from `in`, runs the chain of statements, each declaring a new variable, and
//! writes every variable's bits to `out`; the atomics add into a few slots after them.

use std::fmt::Write as _;

use cpu_device::exec::{self, Launch};
use cpu_device::load::load_with;
use cpu_device::memory::Memory;
use shared::nvrtc::KernelFile;

/// The first seed of every test: each takes its kernels from the seeds that follow.
const FIRST_SEED: u64 = 0x5eed_0000;

/// Statements per kernel.
const STATEMENTS: usize = 40;

/// Threads per block: two full warps, so a shuffle's width and a block's warps both vary.
const BLOCK: u32 = 64;

/// The NVRTC option sets each kernel is compiled with: the labs' `--fmad=false` (each
/// operation rounded alone), NVRTC's default (multiply-adds fused), and subnormals flushed.
const OPTION_SETS: [&[&str]; 3] = [&["--fmad=false"], &[], &["--ftz=true"]];

/// The types of the generated variables, with their C++ names and prefixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    D,
    F,
    I,
    U,
    L,
}

const TYPES: [Ty; 5] = [Ty::D, Ty::F, Ty::I, Ty::U, Ty::L];

impl Ty {
    fn from_letter(letter: char) -> Option<Ty> {
        TYPES.into_iter().find(|t| t.letter() == letter)
    }

    fn letter(self) -> char {
        match self {
            Ty::D => 'D',
            Ty::F => 'F',
            Ty::I => 'I',
            Ty::U => 'U',
            Ty::L => 'L',
        }
    }

    fn c_name(self) -> &'static str {
        match self {
            Ty::D => "double",
            Ty::F => "float",
            Ty::I => "int",
            Ty::U => "unsigned",
            Ty::L => "long long",
        }
    }

    fn prefix(self) -> char {
        self.letter().to_ascii_lowercase()
    }

    /// The expression giving `var`'s bits as an `unsigned long long`, zero-extended.
    fn bits(self, var: &str) -> String {
        match self {
            Ty::D => format!("(unsigned long long)__double_as_longlong({var})"),
            Ty::F => format!("(unsigned long long)__float_as_uint({var})"),
            Ty::I | Ty::U => format!("(unsigned long long)(unsigned){var}"),
            Ty::L => format!("(unsigned long long){var}"),
        }
    }

    /// The expression reading an input word `w` (an `unsigned long long`) as this type.
    fn read_word(self, w: &str) -> String {
        match self {
            Ty::D => format!("__longlong_as_double((long long){w})"),
            Ty::F => format!("__uint_as_float((unsigned){w})"),
            Ty::I => format!("(int)(unsigned){w}"),
            Ty::U => format!("(unsigned){w}"),
            Ty::L => format!("(long long){w}"),
        }
    }
}

/// The inputs of a thread, in the order of its words in `in`.
const INPUTS: [Ty; 15] = [
    Ty::D,
    Ty::D,
    Ty::D,
    Ty::D,
    Ty::F,
    Ty::F,
    Ty::F,
    Ty::F,
    Ty::I,
    Ty::I,
    Ty::I,
    Ty::U,
    Ty::U,
    Ty::L,
    Ty::L,
];

/// What each statement may compute, by result type, in a small template language: `{D}`,
/// `{F}`, `{I}`, `{U}`, `{L}` are variables of that type, `{T}` and `{t}` one type chosen
/// for the statement (the result's), `{R}` a rounding mode, `{C}` a comparison of two
/// variables of any one type (ordered, or negated: unordered for floats), `{K}` a shuffle's
/// lane or offset (a constant or a variable), `{W}` a shuffle's width, `{P}` the address of
/// one of the thread's input words (for loads of other types). `{E}` is a double of
/// which at most one per statement may be a NaN (the others pass `not_nan_d`): with two NaN
/// operands, an H100's DADD, DMUL, DFMA and DMNMX return the NaN of one SASS operand
/// position, and which operand ptxas puts there is not the PTX's to say (measured: `add.f64`
/// returned its first operand's NaN in one kernel and its second's in another).
const TEMPLATES: &[(char, &str)] = &[
    // f64: the rounded intrinsics, the operators (fused under --fmad=true), libdevice, and
    // the H100's approximations that `hypot` uses (see `APPROXIMATIONS`).
    ('D', "__dadd_{R}({E}, {E})"),
    ('D', "__dsub_{R}({E}, {E})"),
    ('D', "__dmul_{R}({E}, {E})"),
    ('D', "__fma_{R}({E}, {E}, {E})"),
    ('D', "__ddiv_{R}({D}, {D})"),
    ('D', "__dsqrt_{R}({D})"),
    ('D', "__drcp_{R}({D})"),
    // The addend never a NaN: unfused (--fmad=false), a product of two numbers can be one
    // (inf * 0), and the sum would then have two (measured: seed 0x5eed0028 on an H100).
    ('D', "{E} * {E} + not_nan_d({D})"),
    ('D', "{E} * {E} - not_nan_d({D})"),
    ('D', "{E} + {E}"),
    ('D', "{D} / {D}"),
    ('D', "sqrt({D})"),
    ('D', "fmin({E}, {E})"),
    ('D', "fmax({E}, {E})"),
    ('D', "fabs({D})"),
    ('D', "-{D}"),
    ('D', "rsqrt_ftz({D})"),
    ('D', "rcp_ftz({D})"),
    ('D', "hypot({D}, {D})"),
    ('D', "floor({D})"),
    ('D', "ceil({D})"),
    ('D', "trunc({D})"),
    ('D', "rint({D})"),
    ('D', "copysign({D}, {D})"),
    ('D', "{C} ? {D} : {D}"),
    ('D', "__int2double_rn({I})"),
    ('D', "__uint2double_rn({U})"),
    ('D', "__ll2double_{R}({L})"),
    ('D', "__ull2double_{R}((unsigned long long){L})"),
    ('D', "(double){F}"),
    ('D', "__longlong_as_double({L})"),
    ('D', "cvt_ftz_f64({F})"),
    // f32.
    ('F', "__fadd_{R}({F}, {F})"),
    ('F', "__fsub_{R}({F}, {F})"),
    ('F', "__fmul_{R}({F}, {F})"),
    ('F', "__fmaf_{R}({F}, {F}, {F})"),
    ('F', "__fdiv_{R}({F}, {F})"),
    ('F', "__fsqrt_{R}({F})"),
    ('F', "__frcp_{R}({F})"),
    ('F', "{F} * {F} + {F}"),
    ('F', "{F} - {F} * {F}"),
    ('F', "{F} / {F}"),
    ('F', "sqrtf({F})"),
    ('F', "fminf({F}, {F})"),
    ('F', "fmaxf({F}, {F})"),
    ('F', "fabsf(not_nan({F}))"),
    ('F', "-not_nan({F})"),
    ('F', "floorf({F})"),
    ('F', "truncf({F})"),
    ('F', "rintf({F})"),
    ('F', "copysignf(not_nan({F}), {F})"),
    ('F', "{C} ? {F} : {F}"),
    ('F', "__double2float_{R}({D})"),
    ('F', "(float){D}"),
    ('F', "__int2float_{R}({I})"),
    ('F', "__uint2float_{R}({U})"),
    ('F', "__ll2float_{R}({L})"),
    ('F', "__int_as_float({I})"),
    // The math library over the approximate instructions (`ex2`, `lg2`, `rcp`, `rsqrt`,
    // `div` `.approx`), with its own results for large, tiny and special operands.
    ('F', "expf({F})"),
    ('F', "exp2f({F})"),
    ('F', "powf({F}, {F})"),
    ('F', "tanhf({F})"),
    ('F', "rsqrtf({F})"),
    ('F', "__expf({F})"),
    ('F', "__log2f({F})"),
    ('F', "__powf({F}, {F})"),
    ('F', "__fdividef({F}, {F})"),
    // Subnormal results from normal operands, and `.ftz` in every option set (inline PTX).
    ('F', "__fmul_{R}({F}, 0x1p-120f)"),
    ('F', "mul_ftz({F}, {F})"),
    ('F', "fma_ftz({F}, {F}, {F})"),
    ('F', "min_ftz({F}, {F})"),
    ('F', "neg_ftz(not_nan({F}))"),
    // int: no statement has undefined behaviour in C++, or the compiler may give a
    // variable one value where it is stored and another where it is used (measured: a
    // shift by 64 made `__umulhi(x, 0)` come out non-zero on the H100). Signed arithmetic
    // wraps through unsigned; division, remainder, `abs` and shifts by the width or more
    // are PTX's own instructions (`PTX_INTEGER`), where zero, -1 and INT_MIN are defined.
    ('I', "(int)((unsigned){I} + (unsigned){I})"),
    ('I', "(int)((unsigned){I} - (unsigned){I})"),
    ('I', "(int)((unsigned){I} * (unsigned){I})"),
    ('I', "div_s32({I}, {I})"),
    ('I', "rem_s32({I}, {I})"),
    ('I', "__mulhi({I}, {I})"),
    ('I', "__clz({I})"),
    ('I', "__popc({U})"),
    ('I', "min({I}, {I})"),
    ('I', "max({I}, {I})"),
    ('I', "abs_s32({I})"),
    ('I', "{I} >> ({U} % 32u)"),
    ('I', "shr_s32({I}, {U} % 41u)"),
    ('I', "{C} ? {I} : {I}"),
    // No bare 0 or 1 (`(int)(a != b)`, a vote): the ptxas of CUDA 13.0 (sm_90) compiles
    // `__int2float_ru` or `_rn` of one to the integer itself (0x1 for 1.0f in seeds
    // 0x5eed000a and 0x5eed001a of earlier generators: the SASS stores the SEL's 0 or 1
    // with no I2F), a compiler bug the CPU device does not copy. A vote is XORed with a
    // variable instead.
    ('I', "__float2int_{R}({F})"),
    ('I', "__double2int_{R}({D})"),
    ('I', "__float_as_int({F})"),
    ('I', "__double2hiint({D})"),
    ('I', "__double2loint({D})"),
    ('I', "(int){L}"),
    ('I', "__popcll((unsigned long long){L})"),
    ('I', "__clzll({L})"),
    ('I', "__any_sync(0xffffffffu, {C}) ^ {I}"),
    ('I', "__all_sync(0xffffffffu, {C}) ^ {I}"),
    ('I', "lt_ftz({F}, {F}) ^ {I}"),
    // Conversions to a narrower integer type than the register (`PTX_NARROW`), and loads of
    // a narrower or other type into a register (`{P}`, one of the thread's input words).
    ('I', "cvt_s16_s8({I})"),
    ('I', "cvt_s8_s32({I})"),
    ('I', "cvt_u8_s32({I})"),
    ('I', "cvt_sat_s8_s32({I})"),
    ('I', "cvt_rzi_s16_f32({F})"),
    ('I', "cvt_rni_s8_f64({D})"),
    ('I', "ld_s8_b32({P})"),
    ('I', "ld_s16_b32({P})"),
    // unsigned.
    ('U', "{U} + {U}"),
    ('U', "{U} - {U}"),
    ('U', "{U} * {U}"),
    ('U', "div_u32({U}, {U})"),
    ('U', "rem_u32({U}, {U})"),
    ('U', "__umulhi({U}, {U})"),
    ('U', "__brev({U})"),
    ('U', "min({U}, {U})"),
    ('U', "max({U}, {U})"),
    ('U', "{U} >> ({U} % 32u)"),
    ('U', "{U} << ({U} % 32u)"),
    ('U', "shr_u32({U}, {U} % 41u)"),
    ('U', "shl_b32({U}, {U} % 41u)"),
    ('U', "__byte_perm({U}, {U}, {U})"),
    ('U', "{U} ^ {U}"),
    ('U', "{U} & {U}"),
    ('U', "{U} | {U}"),
    ('U', "~{U}"),
    ('U', "(unsigned){I}"),
    ('U', "__sad({I}, {I}, {U})"),
    ('U', "__usad({U}, {U}, {U})"),
    ('U', "__float2uint_{R}({F})"),
    ('U', "__double2uint_{R}({D})"),
    ('U', "(unsigned)((unsigned long long){L} >> 32)"),
    ('U', "__ballot_sync(0xffffffffu, {C})"),
    // Bit manipulation, 24-bit and byte products, warp and block reductions.
    ('I', "__ffs({I})"),
    ('I', "__ffsll({L})"),
    ('I', "__mul24({I}, {I})"),
    ('I', "__dp4a({I}, {I}, {I})"),
    ('I', "__dp2a_lo({I}, {I}, {I})"),
    ('I', "__reduce_add_sync(0xffffffffu, {I})"),
    ('I', "__reduce_min_sync(0xffffffffu, {I})"),
    ('I', "__syncthreads_count({C})"),
    ('I', "__syncthreads_or({C}) ^ {I}"),
    ('U', "__funnelshift_l({U}, {U}, {U})"),
    ('U', "__funnelshift_rc({U}, {U}, {U})"),
    ('U', "__umul24({U}, {U})"),
    ('U', "__dp2a_hi({U}, {U}, {U})"),
    ('U', "__reduce_max_sync(0xffffffffu, {U})"),
    ('U', "__reduce_xor_sync(0xffffffffu, {U})"),
    ('U', "__match_any_sync(0xffffffffu, {U} % 4u)"),
    ('U', "__fns({U}, {U} % 32u, {I} % 5)"),
    // Pairs of 16-bit halves and `.relu` (`PTX_INTEGER`), each form of the PTX ISA's, and
    // `lop3` with a table of CUDA's SIMD intrinsics and one of the PTX ISA's examples.
    ('U', "add_u16x2({U}, {U})"),
    ('U', "add_s16x2({U}, {U})"),
    ('U', "min_u16x2({U}, {U})"),
    ('U', "min_s16x2({U}, {U})"),
    ('U', "max_u16x2({U}, {U})"),
    ('U', "max_s16x2({U}, {U})"),
    ('U', "min_relu_s16x2({U}, {U})"),
    ('U', "max_relu_s16x2({U}, {U})"),
    ('I', "min_relu_s32({I}, {I})"),
    ('I', "max_relu_s32({I}, {I})"),
    ('U', "lop3_0x4d({U}, {U}, {U})"),
    ('U', "lop3_0x1a({U}, {U}, {U})"),
    // Carry chains (`PTX_INTEGER`): NVRTC's own 128-bit integers need --device-int128.
    ('L', "mad_carry({L}, {L}, {L})"),
    ('U', "sub_borrow({U}, {U}, {U})"),
    // long long.
    (
        'L',
        "(long long)((unsigned long long){L} + (unsigned long long){L})",
    ),
    (
        'L',
        "(long long)((unsigned long long){L} * (unsigned long long){L})",
    ),
    ('L', "div_s64({L}, {L})"),
    ('L', "rem_s64({L}, {L})"),
    ('L', "__mul64hi({L}, {L})"),
    ('L', "min({L}, {L})"),
    ('L', "{L} ^ {L}"),
    ('L', "{L} >> ({U} % 64u)"),
    ('L', "(long long)((unsigned long long){L} << ({U} % 64u))"),
    ('L', "shr_s64({L}, {U} % 71u)"),
    ('L', "shl_b64({L}, {U} % 71u)"),
    ('L', "(long long)__brevll((unsigned long long){L})"),
    ('L', "(long long){I}"),
    ('L', "(long long){U}"),
    ('L', "__double2ll_{R}({D})"),
    ('L', "(long long)__double2ull_{R}({D})"),
    ('L', "__float2ll_{R}({F})"),
    ('L', "(long long)__float2ull_{R}({F})"),
    ('L', "__double_as_longlong({D})"),
    ('L', "cvt_s16_s32_b64({I})"),
    ('L', "cvt_u16_s32_b64({I})"),
    ('L', "ld_f32_b64({P})"),
    ('L', "ld_s8_b64({P})"),
    ('L', "ld_s32_b64({P})"),
    ('L', "ld_u16_b64({P})"),
    // Half precision (`PTX_HALF`): an unsigned's low 16 bits as a binary16 or a bfloat16
    // (its 32 bits as a pair), made from floats in every rounding or taken as they come
    // (NaN payloads, subnormals), chained through unsigned variables.
    ('U', "h_{R}({F})"),
    ('U', "b_{R}({F})"),
    ('U', "h_s32_rn({I})"),
    ('U', "b_s32_rz({I})"),
    ('U', "h_rn_f64({D})"),
    ('U', "hadd({U}, {U})"),
    ('U', "hsub({U}, {U})"),
    ('U', "hmul({U}, {U})"),
    ('U', "hadd(hmul({U}, {U}), {U})"),
    ('U', "hfma({U}, {U}, {U})"),
    ('U', "hfma_relu({U}, {U}, {U})"),
    ('U', "hadd_ftz({U}, {U})"),
    ('U', "hmul_sat({U}, {U})"),
    ('U', "hmin({U}, {U})"),
    ('U', "hmax_nan({U}, {U})"),
    ('U', "hneg(h_not_nan({U}))"),
    ('U', "hfma2({U}, {U}, {U})"),
    ('U', "hadd2({U}, {U})"),
    ('U', "badd({U}, {U})"),
    ('U', "bmul({U}, {U})"),
    ('U', "bfma({U}, {U}, {U})"),
    ('U', "bmax({U}, {U})"),
    ('U', "bmin_nan({U}, {U})"),
    ('U', "bfma2({U}, {U}, {U})"),
    ('U', "hrni_f16({U})"),
    ('U', "h2_rn({F}, {F})"),
    ('U', "b2_rz_relu({F}, {F})"),
    ('U', "hlt2_mask({U}, {U})"),
    ('U', "bgeu2({U}, {U})"),
    ('I', "hlt({U}, {U}) ^ {I}"),
    ('I', "hgeu_ftz({U}, {U}) ^ {I}"),
    ('I', "blt({U}, {U}) ^ {I}"),
    ('I', "h_rni_s32({U})"),
    // Of a bfloat16 made from a float, not of any 16 bits: ptxas drops the `FRND.F16` of
    // `hrni_f16` when an `F2I` of another format or rounding reads its result (H200's SASS:
    // `F2I.U32.BF16.NTZ R7, R2` of the rounding's own input), so `b_rzi_u32(hrni_f16(x))`
    // is not the instructions the PTX names, and the GPU differs from them (seed 0x5eed0059).
    ('U', "b_rzi_u32(b_{R}({F}))"),
    ('F', "f_h({U})"),
    ('F', "f_b({U})"),
    // Warp shuffles of every type: `{T}` is the result's.
    ('*', "__shfl_sync(0xffffffffu, {T}, {I}, {W})"),
    ('*', "__shfl_up_sync(0xffffffffu, {T}, {K}, {W})"),
    ('*', "__shfl_down_sync(0xffffffffu, {T}, {K}, {W})"),
    ('*', "__shfl_xor_sync(0xffffffffu, {T}, {K}, {W})"),
];

/// The approximations the CPU device runs from the H100's tables, reached through inline
/// PTX: CUDA's own `rsqrt()` is `rsqrt.approx.f64` (subnormals kept), which the CPU device
/// refuses to load, as it cannot reproduce its bits.
const APPROXIMATIONS: &str = "\
__device__ double rsqrt_ftz(double x)
{
    double r;
    asm(\"rsqrt.approx.ftz.f64 %0, %1;\" : \"=d\"(r) : \"d\"(x));
    return r;
}

__device__ double rcp_ftz(double x)
{
    double r;
    asm(\"rcp.approx.ftz.f64 %0, %1;\" : \"=d\"(r) : \"d\"(x));
    return r;
}

";

/// The integer instructions whose C++ spelling has undefined behaviour somewhere (division
/// by zero, INT_MIN / -1, `abs(INT_MIN)`, shifts by the width or more), written as PTX so
/// that those operands reach the instruction, defined, instead of licensing the compiler;
/// and those C++ has no operator for, written as PTX so that each form is generated, not
/// whichever the intrinsics happen to compile to: pairs of 16-bit halves (`add.u16x2`,
/// `min.s16x2.relu` and the rest, what CUDA's `__vadd2`, `__vmins2`, `__vimin_s16x2_relu`
/// are for sm_90), `.relu` of an s32, and `lop3` (which the SIMD intrinsics write too).
const PTX_INTEGER: &str = "\
#define PTX_BINARY(name, type, shift_type, ptx, c, cs) \\
__device__ type name(type a, shift_type b) \\
{ \\
    type r; \\
    asm(ptx \" %0, %1, %2;\" : \"=\" c(r) : c(a), cs(b)); \\
    return r; \\
}
PTX_BINARY(div_s32, int, int, \"div.s32\", \"r\", \"r\")
PTX_BINARY(rem_s32, int, int, \"rem.s32\", \"r\", \"r\")
PTX_BINARY(div_u32, unsigned, unsigned, \"div.u32\", \"r\", \"r\")
PTX_BINARY(rem_u32, unsigned, unsigned, \"rem.u32\", \"r\", \"r\")
PTX_BINARY(div_s64, long long, long long, \"div.s64\", \"l\", \"l\")
PTX_BINARY(rem_s64, long long, long long, \"rem.s64\", \"l\", \"l\")
PTX_BINARY(shr_s32, int, unsigned, \"shr.s32\", \"r\", \"r\")
PTX_BINARY(shr_u32, unsigned, unsigned, \"shr.u32\", \"r\", \"r\")
PTX_BINARY(shl_b32, unsigned, unsigned, \"shl.b32\", \"r\", \"r\")
PTX_BINARY(shr_s64, long long, unsigned, \"shr.s64\", \"l\", \"r\")
PTX_BINARY(shl_b64, long long, unsigned, \"shl.b64\", \"l\", \"r\")
PTX_BINARY(add_u16x2, unsigned, unsigned, \"add.u16x2\", \"r\", \"r\")
PTX_BINARY(add_s16x2, unsigned, unsigned, \"add.s16x2\", \"r\", \"r\")
PTX_BINARY(min_u16x2, unsigned, unsigned, \"min.u16x2\", \"r\", \"r\")
PTX_BINARY(min_s16x2, unsigned, unsigned, \"min.s16x2\", \"r\", \"r\")
PTX_BINARY(max_u16x2, unsigned, unsigned, \"max.u16x2\", \"r\", \"r\")
PTX_BINARY(max_s16x2, unsigned, unsigned, \"max.s16x2\", \"r\", \"r\")
PTX_BINARY(min_relu_s16x2, unsigned, unsigned, \"min.s16x2.relu\", \"r\", \"r\")
PTX_BINARY(max_relu_s16x2, unsigned, unsigned, \"max.relu.s16x2\", \"r\", \"r\")
PTX_BINARY(min_relu_s32, int, int, \"min.s32.relu\", \"r\", \"r\")
PTX_BINARY(max_relu_s32, int, int, \"max.relu.s32\", \"r\", \"r\")

#define PTX_LOP3(lut) \\
__device__ unsigned lop3_##lut(unsigned a, unsigned b, unsigned c) \\
{ \\
    unsigned r; \\
    asm(\"lop3.b32 %0, %1, %2, %3, \" #lut \";\" : \"=r\"(r) : \"r\"(a), \"r\"(b), \"r\"(c)); \\
    return r; \\
}
PTX_LOP3(0x4d)
PTX_LOP3(0x1a)

__device__ int abs_s32(int a)
{
    int r;
    asm(\"abs.s32 %0, %1;\" : \"=r\"(r) : \"r\"(a));
    return r;
}

__device__ long long mad_carry(long long a, long long b, long long c)
{
    long long lo, hi;
    asm(\"mad.lo.cc.u64 %0, %2, %3, %4;\\n\\tmadc.hi.u64 %1, %2, %3, 0;\"
        : \"=l\"(lo), \"=l\"(hi) : \"l\"(a), \"l\"(b), \"l\"(c));
    return hi ^ lo;
}

__device__ unsigned sub_borrow(unsigned a, unsigned b, unsigned c)
{
    unsigned lo, hi;
    asm(\"sub.cc.u32 %0, %2, %3;\\n\\tsubc.cc.u32 %1, %4, %2;\\n\\tsubc.u32 %0, %0, %4;\"
        : \"=r\"(lo), \"=r\"(hi) : \"r\"(a), \"r\"(b), \"r\"(c));
    return hi ^ lo;
}

";

/// `.ftz` instructions in every option set (NVRTC writes them only under `--ftz=true`),
/// rounded as written so that ptxas fuses nothing.
const PTX_FTZ: &str = "\
__device__ float mul_ftz(float a, float b)
{
    float r;
    asm(\"mul.rn.ftz.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b));
    return r;
}

__device__ float fma_ftz(float a, float b, float c)
{
    float r;
    asm(\"fma.rn.ftz.f32 %0, %1, %2, %3;\" : \"=f\"(r) : \"f\"(a), \"f\"(b), \"f\"(c));
    return r;
}

__device__ float min_ftz(float a, float b)
{
    float r;
    asm(\"min.ftz.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b));
    return r;
}

__device__ float neg_ftz(float a)
{
    float r;
    asm(\"neg.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(a));
    return r;
}

__device__ int lt_ftz(float a, float b)
{
    int r;
    asm(\"{\\n\\t.reg .pred p;\\n\\tsetp.lt.ftz.f32 p, %1, %2;\\n\\tselp.s32 %0, 1, 0, p;\\n\\t}\"
        : \"=r\"(r) : \"f\"(a), \"f\"(b));
    return r;
}

__device__ double cvt_ftz_f64(float a)
{
    double r;
    asm(\"cvt.ftz.f64.f32 %0, %1;\" : \"=d\"(r) : \"f\"(a));
    return r;
}

";

/// Conversions to an integer type narrower than the register they write (its bits sign- or
/// zero-extended by the type), and loads of one type into a register of another (a 32- or
/// 64-bit bit-size register declared in the `asm`, holding other bits before the load).
const PTX_NARROW: &str = "\
#define PTX_CVT(name, out_type, out_c, ptx, in_type, in_c) \\
__device__ out_type name(in_type a) \\
{ \\
    out_type r; \\
    asm(ptx \" %0, %1;\" : \"=\" out_c(r) : in_c(a)); \\
    return r; \\
}
PTX_CVT(cvt_s16_s8, int, \"r\", \"cvt.s16.s8\", int, \"r\")
PTX_CVT(cvt_s8_s32, int, \"r\", \"cvt.s8.s32\", int, \"r\")
PTX_CVT(cvt_u8_s32, int, \"r\", \"cvt.u8.s32\", int, \"r\")
PTX_CVT(cvt_sat_s8_s32, int, \"r\", \"cvt.sat.s8.s32\", int, \"r\")
PTX_CVT(cvt_rzi_s16_f32, int, \"r\", \"cvt.rzi.s16.f32\", float, \"f\")
PTX_CVT(cvt_rni_s8_f64, int, \"r\", \"cvt.rni.s8.f64\", double, \"d\")
PTX_CVT(cvt_s16_s32_b64, long long, \"l\", \"cvt.s16.s32\", int, \"r\")
PTX_CVT(cvt_u16_s32_b64, long long, \"l\", \"cvt.u16.s32\", int, \"r\")

#define PTX_LD(name, out_type, out_c, bits, ptx) \\
__device__ out_type name(const unsigned long long *p) \\
{ \\
    out_type r; \\
    asm(\"{\\n\\t.reg .b\" #bits \" w;\\n\\tmov.b\" #bits \" w, -1;\\n\\t\" ptx \" w, [%1];\\n\\t\" \\
        \"mov.b\" #bits \" %0, w;\\n\\t}\" : \"=\" out_c(r) : \"l\"(p)); \\
    return r; \\
}
PTX_LD(ld_s8_b32, int, \"r\", 32, \"ld.global.s8\")
PTX_LD(ld_s16_b32, int, \"r\", 32, \"ld.global.s16\")
PTX_LD(ld_f32_b64, long long, \"l\", 64, \"ld.global.f32\")
PTX_LD(ld_s8_b64, long long, \"l\", 64, \"ld.global.s8\")
PTX_LD(ld_s32_b64, long long, \"l\", 64, \"ld.global.s32\")
PTX_LD(ld_u16_b64, long long, \"l\", 64, \"ld.global.u16\")

";

/// Half-precision instructions (cuda_fp16.h and cuda_bf16.h write the same inline PTX; NVRTC
/// has no such header of its own) on the low 16 bits of an unsigned (a half) or all 32 (a
/// pair), zero-extended back. `hadd` and `hmul` are loose, as `__hadd` and `__hmul` are, so
/// ptxas may fuse a product read once by a sum. A half is negated only where it is no NaN
/// (`h_not_nan`): the sign of a NaN through `neg` is not the PTX's to say (`NOT_NAN`).
const PTX_HALF: &str = "\
#define PTX_H2(name, ptx) \\
__device__ unsigned name(unsigned a, unsigned b) \\
{ \\
    unsigned short r; \\
    asm(ptx \" %0, %1, %2;\" : \"=h\"(r) : \"h\"((unsigned short)a), \"h\"((unsigned short)b)); \\
    return r; \\
}
#define PTX_H3(name, ptx) \\
__device__ unsigned name(unsigned a, unsigned b, unsigned c) \\
{ \\
    unsigned short r; \\
    asm(ptx \" %0, %1, %2, %3;\" : \"=h\"(r) \\
        : \"h\"((unsigned short)a), \"h\"((unsigned short)b), \"h\"((unsigned short)c)); \\
    return r; \\
}
#define PTX_X2(name, ptx) \\
__device__ unsigned name(unsigned a, unsigned b) \\
{ \\
    unsigned r; \\
    asm(ptx \" %0, %1, %2;\" : \"=r\"(r) : \"r\"(a), \"r\"(b)); \\
    return r; \\
}
#define PTX_X3(name, ptx) \\
__device__ unsigned name(unsigned a, unsigned b, unsigned c) \\
{ \\
    unsigned r; \\
    asm(ptx \" %0, %1, %2, %3;\" : \"=r\"(r) : \"r\"(a), \"r\"(b), \"r\"(c)); \\
    return r; \\
}
#define PTX_CMP(name, ptx) \\
__device__ int name(unsigned a, unsigned b) \\
{ \\
    int r; \\
    asm(\"{\\n\\t.reg .pred p;\\n\\t\" ptx \" p, %1, %2;\\n\\tselp.s32 %0, 1, 0, p;\\n\\t}\" \\
        : \"=r\"(r) : \"h\"((unsigned short)a), \"h\"((unsigned short)b)); \\
    return r; \\
}
#define PTX_TO_H(name, ptx, ac, at) \\
__device__ unsigned name(at a) \\
{ \\
    unsigned short r; \\
    asm(ptx \" %0, %1;\" : \"=h\"(r) : ac(a)); \\
    return r; \\
}
#define PTX_FROM_H(name, ptx, rc, rt) \\
__device__ rt name(unsigned a) \\
{ \\
    rt r; \\
    asm(ptx \" %0, %1;\" : \"=\" rc(r) : \"h\"((unsigned short)a)); \\
    return r; \\
}
PTX_TO_H(h_rn, \"cvt.rn.f16.f32\", \"f\", float)
PTX_TO_H(h_rz, \"cvt.rz.f16.f32\", \"f\", float)
PTX_TO_H(h_rd, \"cvt.rm.f16.f32\", \"f\", float)
PTX_TO_H(h_ru, \"cvt.rp.f16.f32\", \"f\", float)
PTX_TO_H(b_rn, \"cvt.rn.bf16.f32\", \"f\", float)
PTX_TO_H(b_rz, \"cvt.rz.bf16.f32\", \"f\", float)
PTX_TO_H(b_rd, \"cvt.rm.bf16.f32\", \"f\", float)
PTX_TO_H(b_ru, \"cvt.rp.bf16.f32\", \"f\", float)
PTX_TO_H(h_s32_rn, \"cvt.rn.f16.s32\", \"r\", int)
PTX_TO_H(b_s32_rz, \"cvt.rz.bf16.s32\", \"r\", int)
PTX_TO_H(h_rn_f64, \"cvt.rn.f16.f64\", \"d\", double)
PTX_TO_H(hrni_f16, \"cvt.rni.f16.f16\", \"h\", unsigned short)
PTX_FROM_H(h_rni_s32, \"cvt.rni.s32.f16\", \"r\", int)
PTX_FROM_H(b_rzi_u32, \"cvt.rzi.u32.bf16\", \"r\", unsigned)
PTX_FROM_H(f_h, \"cvt.f32.f16\", \"f\", float)
PTX_FROM_H(f_b, \"cvt.f32.bf16\", \"f\", float)
PTX_FROM_H(hneg, \"neg.f16\", \"h\", unsigned short)
PTX_H2(hadd, \"add.f16\")
PTX_H2(hsub, \"sub.rn.f16\")
PTX_H2(hmul, \"mul.f16\")
PTX_H2(hadd_ftz, \"add.rn.ftz.f16\")
PTX_H2(hmul_sat, \"mul.rn.sat.f16\")
PTX_H2(hmin, \"min.f16\")
PTX_H2(hmax_nan, \"max.NaN.f16\")
PTX_H2(badd, \"add.rn.bf16\")
PTX_H2(bmul, \"mul.rn.bf16\")
PTX_H2(bmax, \"max.bf16\")
PTX_H2(bmin_nan, \"min.NaN.bf16\")
PTX_H3(hfma, \"fma.rn.f16\")
PTX_H3(hfma_relu, \"fma.rn.relu.f16\")
PTX_H3(bfma, \"fma.rn.bf16\")
PTX_X2(hadd2, \"add.rn.f16x2\")
PTX_X3(hfma2, \"fma.rn.f16x2\")
PTX_X3(bfma2, \"fma.rn.bf16x2\")
PTX_X2(hlt2_mask, \"set.lt.u32.f16x2\")
PTX_X2(bgeu2, \"set.geu.bf16x2.bf16x2\")
PTX_CMP(hlt, \"setp.lt.f16\")
PTX_CMP(hgeu_ftz, \"setp.geu.ftz.f16\")
PTX_CMP(blt, \"setp.lt.bf16\")

#define PTX_F2(name, ptx) \\
__device__ unsigned name(float a, float b) \\
{ \\
    unsigned r; \\
    asm(ptx \" %0, %1, %2;\" : \"=r\"(r) : \"f\"(a), \"f\"(b)); \\
    return r; \\
}
PTX_F2(h2_rn, \"cvt.rn.f16x2.f32\")
PTX_F2(b2_rz_relu, \"cvt.rz.relu.bf16x2.f32\")

__device__ unsigned h_not_nan(unsigned a)
{
    return (a & 0x7fffu) > 0x7c00u ? 0x3800u : a;
}

";

/// An f32 that is no NaN, for negation and absolute value: the sign of an f32 NaN through
/// them is not the PTX's to say on an H100. Its ptxas applies `neg.f32` as an arithmetic
/// operation where the result is stored (the canonical NaN, 0x7fffffff) and as a sign-bit
/// flip where it is selected (0xffffffff), so one register of one thread held both (seed
/// 0x5eed0052 of an earlier generator); no interpreter of the PTX can give both.
const NOT_NAN: &str = "\
__device__ float not_nan(float x)
{
    return x == x ? x : 0.5f;
}

__device__ double not_nan_d(double x)
{
    return x == x ? x : 0.5;
}

";

/// Atomics into the slots after the variables: each slot takes one operation only, so its
/// final value is the same whatever order the threads come in. `slots` are 32-bit, `wide`
/// 64-bit; their first values are [`SLOT_START`] and 0.
const ATOMICS: &[&str] = &[
    "atomicAdd(&slots[0], {U})",
    "atomicMax(&slots[1], {U})",
    "atomicMin(&slots[2], {U})",
    "atomicXor(&slots[3], {U})",
    "atomicOr(&slots[4], {U})",
    "atomicAnd(&slots[5], {U})",
    "atomicMax((int *)&slots[6], {I})",
    "atomicMin((int *)&slots[7], {I})",
    "atomicAdd(&wide[0], (unsigned long long){L})",
    "atomicXor(&wide[1], (unsigned long long){L})",
];

/// The 32-bit slots' first values: what leaves each operation something to do.
const SLOT_START: [u32; 8] = [0, 0, u32::MAX, 0, 0, u32::MAX, 0x8000_0000, 0x7fff_ffff];

/// Output words after the variables': 8 32-bit slots, then 2 64-bit ones.
const ATOMIC_WORDS: usize = 6;

use shared::random::SplitMix64 as Rng;

/// f64 edge values: NaNs (quiet with payloads, negative, signalling), zeros, infinities,
/// subnormals, the normal range's ends, ties for rounding, and where integers run out.
const F64_EDGES: &[u64] = &[
    0x7ff8_0000_0000_0000,
    0x7ff8_0000_0000_0001,
    0x7fff_ffff_ffff_ffff,
    0xfff8_0000_0000_0000,
    0xfff8_dead_beef_0000,
    0x7ff0_0000_0000_0001,
    0x0000_0000_0000_0000,
    0x8000_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x0000_0000_0000_0001,
    0x8000_0000_0000_0001,
    0x000f_ffff_ffff_ffff,
    0x0010_0000_0000_0000,
    0x8010_0000_0000_0000,
    0x7fef_ffff_ffff_ffff,
    0xffef_ffff_ffff_ffff,
];

const F64_VALUES: &[f64] = &[
    1.0,
    -1.0,
    1.0 / 3.0,
    std::f64::consts::PI,
    1e300,
    -1e300,
    1e-300,
    -1e-300,
    0.5,
    1.5,
    2.5,
    -2.5,
    9007199254740992.0,
    9007199254740994.0,
    9007199254740991.0,
    -9007199254740994.0,
    2147483647.5,
    2147483648.0,
    -2147483648.5,
    4294967295.5,
    4294967296.0,
    9.223_372_036_854_776e18,
    -9.223_372_036_854_776e18,
    9.223_372_036_854_775e18,
    1.8446744073709552e19,
    3.4028234663852886e38,
    3.4028235677973366e38,
    1.1754942106924411e-38,
    1.401298464324817e-45,
    7.006492321624085e-46,
];

const F32_EDGES: &[u32] = &[
    0x7fc0_0000,
    0x7fc0_0001,
    0x7fff_ffff,
    0xffc0_0000,
    0xffc0_beef,
    0x7f80_0001,
    0x0000_0000,
    0x8000_0000,
    0x7f80_0000,
    0xff80_0000,
    0x0000_0001,
    0x8000_0001,
    0x007f_ffff,
    0x0080_0000,
    0x8080_0000,
    0x7f7f_ffff,
    0xff7f_ffff,
    // Subnormals in the middle of the range, and a normal whose half is one.
    0x8040_0000,
    0x0040_0000,
    0x00ff_ffff,
];

const F32_VALUES: &[f32] = &[
    1.0,
    -1.0,
    1.0 / 3.0,
    std::f32::consts::PI,
    1e30,
    -1e30,
    1e-30,
    -1e-30,
    0.5,
    1.5,
    2.5,
    -2.5,
    16777216.0,
    16777215.0,
    -16777218.0,
    2147483648.0,
    -2147483648.0,
    4294967296.0,
    9.223372e18,
    -9.223372e18,
];

const INT_EDGES: &[u32] = &[
    0,
    1,
    u32::MAX,
    0x8000_0000,
    0x7fff_ffff,
    0x8000_0001,
    2,
    31,
    32,
    33,
    40,
    0x0123_4567,
    0xffff_0000,
    // Each 16-bit half at an edge of its own, for the pairs of halves: 0x7fff against
    // 0x8000, 0xffff + 1.
    0x7fff_8000,
    0x0001_ffff,
];

const LONG_EDGES: &[u64] = &[
    0,
    1,
    u64::MAX,
    0x8000_0000_0000_0000,
    0x7fff_ffff_ffff_ffff,
    0x0020_0000_0000_0001,
    0xffff_ffff,
    0x1_0000_0000,
    0xffff_ffff_8000_0000,
    63,
    64,
];

/// An input word of type `ty`: mostly an edge value, else random bits or a random value of
/// a moderate magnitude (where rounding, not overflow, decides).
fn input(rng: &mut Rng, ty: Ty) -> u64 {
    let edge = rng.chance(70);
    match ty {
        Ty::D if edge => {
            if rng.chance(40) {
                *rng.pick(F64_EDGES)
            } else {
                rng.pick(F64_VALUES).to_bits()
            }
        }
        Ty::D if rng.chance(50) => rng.next_u64(),
        Ty::D => {
            let exponent = 1023 - 40 + rng.below(80) as u64;
            (rng.next_u64() & 0x800f_ffff_ffff_ffff) | (exponent << 52)
        }
        Ty::F if edge => {
            if rng.chance(40) {
                u64::from(*rng.pick(F32_EDGES))
            } else {
                u64::from(rng.pick(F32_VALUES).to_bits())
            }
        }
        Ty::F if rng.chance(50) => rng.next_u64() & 0xffff_ffff,
        Ty::F => {
            let exponent = 127 - 20 + rng.below(40) as u64;
            (rng.next_u64() & 0x807f_ffff) | (exponent << 23)
        }
        Ty::I | Ty::U if edge => u64::from(*rng.pick(INT_EDGES)),
        Ty::I | Ty::U if rng.chance(50) => rng.next_u64() % 64,
        Ty::I | Ty::U => rng.next_u64() & 0xffff_ffff,
        Ty::L if edge => *rng.pick(LONG_EDGES),
        Ty::L => rng.next_u64(),
    }
}

/// A generated kernel: its source, the statement behind each output word, and the names
/// and types of its inputs.
struct Kernel {
    seed: u64,
    source: String,
    /// Each variable written to `out`: its type and the statement that computes it.
    outputs: Vec<(Ty, String)>,
    /// The atomic statements, for a mismatch in the slots.
    atomics: Vec<String>,
    blocks: u32,
}

impl Kernel {
    fn threads(&self) -> usize {
        (self.blocks * BLOCK) as usize
    }

    /// Words of `out`: every thread's variables, then the atomic slots.
    fn out_words(&self) -> usize {
        self.threads() * self.outputs.len() + ATOMIC_WORDS
    }

    /// `out` before the launch: zeros, and the slots' first values.
    fn out_start(&self) -> Vec<u64> {
        let mut out = vec![0u64; self.out_words()];
        let slots = &mut out[self.threads() * self.outputs.len()..];
        for (i, pair) in SLOT_START.chunks(2).enumerate() {
            slots[i] = u64::from(pair[0]) | (u64::from(pair[1]) << 32);
        }
        out
    }

    /// Every thread's input words, from the seed.
    fn inputs(&self) -> Vec<u64> {
        let mut rng = Rng(self.seed ^ 0x1a2b_3c4d);
        (0..self.threads())
            .flat_map(|_| INPUTS.map(|ty| (ty, 0)))
            .map(|(ty, _)| input(&mut rng, ty))
            .collect()
    }
}

struct Generator {
    rng: Rng,
    /// The variables declared so far, by type: their names.
    vars: Vec<(Ty, String)>,
}

impl Generator {
    /// A variable of type `ty`: often one of the last few declared, so statements chain.
    fn var(&mut self, ty: Ty) -> String {
        let of_type: Vec<&String> = self
            .vars
            .iter()
            .filter(|(t, _)| *t == ty)
            .map(|(_, n)| n)
            .collect();
        let recent = of_type.len().min(3);
        let i = if self.rng.chance(60) {
            of_type.len() - 1 - self.rng.below(recent)
        } else {
            self.rng.below(of_type.len())
        };
        of_type[i].clone()
    }

    fn condition(&mut self) -> String {
        let ty = *self.rng.pick(&TYPES);
        let (a, b) = (self.var(ty), self.var(ty));
        let op = *self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
        if self.rng.chance(35) {
            format!("!({a} {op} {b})")
        } else {
            format!("({a} {op} {b})")
        }
    }

    /// `template` with its placeholders filled in; `ty` is the statement's type.
    fn expand(&mut self, template: &str, ty: Ty) -> String {
        let mut text = String::new();
        let mut rest = template;
        // The one `{E}` that may be a NaN.
        let mut e_left = self.rng.below(template.matches("{E}").count().max(1));
        while let Some(open) = rest.find('{') {
            text.push_str(&rest[..open]);
            let key = rest[open + 1..].chars().next().expect("a placeholder");
            rest = &rest[open + 3..];
            let filled = match key {
                'T' => self.var(ty),
                'R' => self.rng.pick(&["rn", "rz", "ru", "rd"]).to_string(),
                'C' => self.condition(),
                'E' => {
                    let var = self.var(Ty::D);
                    let may_be_nan = e_left == 0;
                    e_left = e_left.wrapping_sub(1);
                    if may_be_nan {
                        var
                    } else {
                        format!("not_nan_d({var})")
                    }
                }
                'K' if self.rng.chance(25) => self.var(Ty::U),
                'K' => self.rng.below(33).to_string(),
                'P' => format!(
                    "&in[t * {} + {}]",
                    INPUTS.len(),
                    self.rng.below(INPUTS.len())
                ),
                'W' => self
                    .rng
                    .pick(&["32", "32", "16", "8", "4", "1"])
                    .to_string(),
                letter => self.var(Ty::from_letter(letter).expect("a type's letter")),
            };
            text.push_str(&filled);
        }
        text.push_str(rest);
        text
    }
}

/// The kernel of `seed`: its inputs declared, [`STATEMENTS`] statements, the stores.
fn generate(seed: u64, blocks: u32) -> Kernel {
    let mut g = Generator {
        rng: Rng(seed),
        vars: Vec::new(),
    };
    let mut body = String::new();
    let n_in = INPUTS.len();
    for (i, ty) in INPUTS.into_iter().enumerate() {
        let name = format!("{}{}", ty.prefix(), g.vars.len());
        let read = ty.read_word(&format!("in[t * {n_in} + {i}]"));
        writeln!(body, "    {} {name} = {read};", ty.c_name()).expect("a String");
        g.vars.push((ty, name));
    }
    // The thread's index, for shuffles' lanes and conditions that differ across a warp.
    writeln!(body, "    int i{} = (int)t;", g.vars.len()).expect("a String");
    g.vars.push((Ty::I, format!("i{}", g.vars.len())));

    let mut outputs = Vec::new();
    let mut atomics = Vec::new();
    while outputs.len() < STATEMENTS {
        if g.rng.chance(8) {
            let template = *g.rng.pick(ATOMICS);
            let statement = format!("{};", g.expand(template, Ty::U));
            writeln!(body, "    {statement}").expect("a String");
            atomics.push(statement);
            continue;
        }
        let (letter, template) = *g.rng.pick(TEMPLATES);
        let ty = Ty::from_letter(letter).unwrap_or_else(|| *g.rng.pick(&TYPES));
        let name = format!("{}{}", ty.prefix(), g.vars.len());
        let statement = format!("{} {name} = {};", ty.c_name(), g.expand(template, ty));
        writeln!(body, "    {statement}").expect("a String");
        g.vars.push((ty, name));
        outputs.push((ty, statement));
    }
    let n_out = outputs.len();
    for (k, (ty, statement)) in outputs.iter().enumerate() {
        let name = statement
            .split_whitespace()
            .find(|w| w.starts_with(ty.prefix()) && w[1..].parse::<usize>().is_ok())
            .expect("the statement declares a variable");
        writeln!(body, "    out[t * {n_out} + {k}] = {};", ty.bits(name)).expect("a String");
    }
    let source = format!(
        "// Generated by cpu-device's differential test from seed {seed:#x}.\n\
         {APPROXIMATIONS}\
         {PTX_INTEGER}\
         {PTX_FTZ}\
         {PTX_NARROW}\
         {PTX_HALF}\
         {NOT_NAN}\
         extern \"C\" __global__ void k(const unsigned long long *in, unsigned long long *out)\n\
         {{\n\
         \x20   unsigned long long t = blockIdx.x * blockDim.x + threadIdx.x;\n\
         \x20   unsigned long long n = gridDim.x * blockDim.x;\n\
         \x20   unsigned int *slots = (unsigned int *)(out + n * {n_out});\n\
         \x20   unsigned long long *wide = out + n * {n_out} + 4;\n\
         {body}}}\n"
    );
    Kernel {
        seed,
        source,
        outputs,
        atomics,
        blocks,
    }
}

/// `kernel` compiled with `options`, as a lab's kernel file.
fn kernel_file(kernel: &Kernel, options: &[&str]) -> KernelFile {
    KernelFile {
        name: "differential.cu",
        source: kernel.source.clone().into(),
        headers: Vec::new(),
        options: options.iter().map(|o| o.to_string()).collect(),
    }
}

/// NVRTC's PTX of `kernel` for the H100's virtual architecture; a kernel NVRTC refuses is
/// the generator's bug.
fn ptx(kernel: &Kernel, options: &[&str]) -> String {
    kernel_file(kernel, options)
        .ptx("compute_90")
        .unwrap_or_else(|e| {
            panic!(
                "NVRTC refused the kernel of seed {:#x} ({options:?}): {e}\n{}",
                kernel.seed, kernel.source
            )
        })
}

/// `kernel`'s `out` after a run of its PTX on the CPU device, on `threads` host threads,
/// loaded as ptxas compiles with NVRTC's `options` (`--fmad`), as a lab's is.
fn run_on_cpu_device(kernel: &Kernel, options: &[&str], threads: usize) -> Vec<u64> {
    let context = |what: &str| format!("seed {:#x}: {what}\n{}", kernel.seed, kernel.source);
    let memory = Memory::default();
    let ptx = ptx(kernel, options);
    let options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
    let contract = shared::nvrtc::contracts(&options)
        .unwrap_or_else(|e| panic!("{}", context(&format!("NVRTC: {e}"))));
    let module = load_with(&ptx, &memory, contract).unwrap_or_else(|e| {
        panic!(
            "{}",
            context(&format!("the CPU device does not load the PTX: {e}"))
        )
    });
    let words = |v: &[u64]| -> Vec<u8> { v.iter().flat_map(|w| w.to_le_bytes()).collect() };
    let inputs = words(&kernel.inputs());
    let start = words(&kernel.out_start());
    let d_in = memory.alloc(inputs.len() as u64, "in").expect("allocated");
    let d_out = memory.alloc(start.len() as u64, "out").expect("allocated");
    memory.write(d_in.address, &inputs).expect("written");
    memory.write(d_out.address, &start).expect("written");
    let mut params = d_in.address.to_le_bytes().to_vec();
    params.extend(d_out.address.to_le_bytes());
    let snapshot = memory.snapshot().expect("a snapshot");
    let launch = Launch {
        module: &module,
        function: module.function("k").expect("the kernel k"),
        grid: [kernel.blocks, 1, 1],
        block: [BLOCK, 1, 1],
        dynamic_shared: 0,
        params: &params,
        memory: &snapshot,
    };
    exec::run(&launch, threads).unwrap_or_else(|fault| {
        panic!(
            "{}",
            context(&format!(
                "the CPU device faults in block {:?} thread {:?}: {}",
                fault.block, fault.thread, fault.message
            ))
        )
    });
    let mut bytes = vec![0u8; start.len()];
    memory.read(d_out.address, &mut bytes).expect("read back");
    bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .collect()
}

/// The first difference between two runs' `out`, described: the seed, the options, the
/// statement, the thread's inputs, both values; `None` where every bit is equal.
fn first_difference(
    kernel: &Kernel,
    options: &[&str],
    (a_name, a): (&str, &[u64]),
    (b_name, b): (&str, &[u64]),
) -> Option<String> {
    assert_eq!(a.len(), b.len(), "the runs' outputs differ in length");
    let i = (0..a.len()).find(|&i| a[i] != b[i])?;
    let differing = (0..a.len()).filter(|&i| a[i] != b[i]).count();
    let n_out = kernel.outputs.len();
    let head = format!(
        "seed {:#x}, options {options:?}: {a_name} {:#018x}, {b_name} {:#018x} \
         (the first of {differing} differing words)",
        kernel.seed, a[i], b[i]
    );
    let what = if i < kernel.threads() * n_out {
        let (thread, k) = (i / n_out, i % n_out);
        let words = kernel.inputs();
        let inputs: Vec<String> = INPUTS
            .iter()
            .enumerate()
            .map(|(j, ty)| {
                format!(
                    "{}{j} = {:#x}",
                    ty.prefix(),
                    words[thread * INPUTS.len() + j]
                )
            })
            .collect();
        format!(
            "thread {thread} (block {}, lane {}), `{}`\n  inputs: {}",
            thread / BLOCK as usize,
            thread % 32,
            kernel.outputs[k].1,
            inputs.join(", ")
        )
    } else {
        format!(
            "atomic slot word {} (after {:?})",
            i - kernel.threads() * n_out,
            kernel.atomics
        )
    };
    Some(format!("{head}\n  {what}\n{}", kernel.source))
}

/// Write each word where `cpu` and `gpu` differ: the statement, and the GPU's values of the
/// variables it reads (inputs, the thread's index, or earlier outputs).
fn list_differences(
    file: &mut impl std::io::Write,
    kernel: &Kernel,
    options: &[&str],
    cpu: &[u64],
    gpu: &[u64],
) {
    let n_out = kernel.outputs.len();
    let n_in = INPUTS.len();
    let words = kernel.inputs();
    for i in (0..kernel.threads() * n_out).filter(|&i| cpu[i] != gpu[i]) {
        let (thread, k) = (i / n_out, i % n_out);
        let statement = &kernel.outputs[k].1;
        let rhs = statement.split_once('=').map_or("", |(_, r)| r);
        let mut operands = Vec::new();
        for token in rhs.split(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
            let Some(number) = token.get(1..).and_then(|n| n.parse::<usize>().ok()) else {
                continue;
            };
            if !token.starts_with(['d', 'f', 'i', 'u', 'l']) {
                continue;
            }
            let value = match number {
                v if v < n_in => words[thread * n_in + v],
                v if v == n_in => thread as u64,
                v => gpu[thread * n_out + v - n_in - 1],
            };
            operands.push(format!("{token}={value:#x}"));
        }
        let _ = writeln!(
            file,
            "{:#x} {options:?} t{thread} | {statement} | {} | cpu {:#x} gpu {:#x}",
            kernel.seed,
            operands.join(" "),
            cpu[i],
            gpu[i]
        );
    }
}

/// The kernels of `seeds` seeds from [`FIRST_SEED`], each with `blocks` blocks.
fn kernels(seeds: u64, blocks: u32) -> Vec<Kernel> {
    (FIRST_SEED..FIRST_SEED + seeds)
        .map(|seed| generate(seed, blocks))
        .collect()
}

/// `work` over `items`, spread over the machine's cores (NVRTC and the CPU device are both
/// safe to call from several threads); the results in `items`' order.
fn in_parallel<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = items.len().div_ceil(cores).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(|| part.iter().map(&work).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

#[test]
fn the_generator_is_deterministic_and_covers_every_template() {
    let a = kernels(64, 1);
    let b = kernels(64, 1);
    for (a, b) in a.iter().zip(&b) {
        assert_eq!(a.source, b.source, "seed {:#x}", a.seed);
        assert_eq!(a.inputs(), b.inputs(), "seed {:#x}", a.seed);
        assert_eq!(a.outputs.len(), STATEMENTS);
    }
    let all: String = a.iter().map(|k| k.source.as_str()).collect();
    for name in [
        "__dadd_",
        "__fma_",
        "__ddiv_",
        "__drcp_",
        "rsqrt_ftz(",
        "hypot(",
        "__fmaf_",
        "__frcp_",
        "__double2float_",
        "__float2int_",
        "__ll2double_",
        "__byte_perm",
        "__mulhi",
        "__shfl_sync",
        "__shfl_up_sync",
        "__shfl_down_sync",
        "__shfl_xor_sync",
        "__ballot_sync",
        "__any_sync",
        "__all_sync",
        "atomicAdd",
        "atomicMax",
        "atomicXor",
        " / ",
        "div_s32(",
        "rem_s64(",
        "shl_b32(",
        "shr_s64(",
        "__funnelshift_",
        "__dp4a",
        "__reduce_add_sync",
        "__match_any_sync",
        "__syncthreads_count",
        "mad_carry(",
        "sub_borrow(",
        "add_u16x2(",
        "min_s16x2(",
        "max_relu_s16x2(",
        "min_relu_s32(",
        "lop3_0x4d(",
        "0x1p-120f",
        "mul_ftz(",
        "fma_ftz(",
        "min_ftz(",
        "neg_ftz(",
        "lt_ftz(",
        "cvt_ftz_f64(",
        "cvt_s16_s8(",
        "cvt_s8_s32(",
        "cvt_rzi_s16_f32(",
        "cvt_rni_s8_f64(",
        "cvt_s16_s32_b64(",
        "ld_f32_b64(",
        "ld_s8_b64(",
        "ld_s8_b32(",
        "ld_u16_b64(",
        "h_rd(",
        "b_ru(",
        "hadd(hmul(",
        "hfma_relu(",
        "hfma2(",
        "bfma2(",
        "bmin_nan(",
        "h2_rn(",
        "hlt2_mask(",
        "hgeu_ftz(",
        "f_b(",
    ] {
        assert!(all.contains(name), "no kernel of 64 uses {name}");
    }
}

/// Kernels, blocks and option sets of the CPU-only check (CI runs it on 2 cores).
const NVRTC_SEEDS: u64 = 24;
const NVRTC_BLOCKS: u32 = 2;

/// NVRTC says whether its options let a multiply and an add fuse: the CPU device loads each
/// kernel of this test (and a lab's) as ptxas compiles it with them.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn nvrtc_says_which_options_contract() {
    let contracts = |options: &[&str]| {
        let options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        shared::nvrtc::contracts(&options).expect("NVRTC compiles the probe")
    };
    assert!(contracts(&[]));
    assert!(contracts(&["--ftz=true"]));
    assert!(!contracts(&["--fmad=false"]));
    assert!(!contracts(&["--use_fast_math", "--fmad=false"]));
    assert!(contracts(&["--fmad=false", "--fmad=true"]));
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn nvrtc_random_kernels_load_and_run_on_the_cpu_device() {
    let kernels = kernels(NVRTC_SEEDS, NVRTC_BLOCKS);
    let jobs: Vec<(&Kernel, &[&str])> = kernels
        .iter()
        .flat_map(|k| OPTION_SETS.iter().map(move |o| (k, *o)))
        .collect();
    in_parallel(&jobs, |&(kernel, options)| {
        let first = run_on_cpu_device(kernel, options, 1);
        let second = run_on_cpu_device(kernel, options, 2);
        let difference = first_difference(kernel, options, ("run 1", &first), ("run 2", &second));
        assert!(difference.is_none(), "two runs differ: {difference:?}");
        // Every thread stored something: a kernel that wrote nothing would pass the
        // comparison.
        let stored = first.iter().filter(|&&w| w != 0).count();
        assert!(
            stored > first.len() / 4,
            "seed {:#x}: only {stored} of {} words written",
            kernel.seed,
            first.len()
        );
    });
}

/// Kernels and blocks of the GPU comparison.
const GPU_SEEDS: u64 = 96;
const GPU_BLOCKS: u32 = 4;

#[test]
#[ignore = "needs a CUDA GPU"]
fn differential_random_kernels_equal_the_gpu_bit_for_bit() {
    use cudarc::driver::{LaunchConfig, PushKernelArg};
    use shared::gpu::Gpu;

    // Under LABS_EMULATE=1 (`cargo xtask test` without a GPU) the "GPU" is the CPU device
    // behind the driver's API: the same interpreter, reached through the labs' own path,
    // so fewer kernels (the CPU-only check's) tell as much.
    let seeds = if shared::testing::on_cpu_device() {
        shared::gpu::use_cpu_device().expect("the CPU device loads");
        NVRTC_SEEDS
    } else {
        GPU_SEEDS
    };
    let gpu = Gpu::open().unwrap_or_else(|e| panic!("{e}"));
    let kernels = kernels(seeds, GPU_BLOCKS);
    let jobs: Vec<(&Kernel, &[&str])> = kernels
        .iter()
        .flat_map(|k| OPTION_SETS.iter().map(move |o| (k, *o)))
        .collect();
    // The compilations and the CPU device's runs on every core: NVRTC's PTX for the
    // interpreter, and `Gpu::compile`'s cubin for the GPU, as a lab compiles its kernels.
    let prepared = in_parallel(&jobs, |&(kernel, options)| {
        let on_cpu = run_on_cpu_device(kernel, options, 1);
        let compiled = gpu
            .compile("differential.cu", &kernel.source, options)
            .unwrap_or_else(|e| panic!("seed {:#x}: {e}\n{}", kernel.seed, kernel.source));
        (on_cpu, compiled.function("k").expect("the kernel k"))
    });
    let stream = &gpu.stream;
    // With CPU_DEVICE_DIFFERENCES=FILE, every differing word goes to FILE with its operands'
    // values as the GPU computed them: one run on a GPU machine to study them all here.
    let mut listing = std::env::var_os("CPU_DEVICE_DIFFERENCES")
        .map(|path| std::io::BufWriter::new(std::fs::File::create(path).expect("the listing")));
    // Every kernel runs, and every difference is kept: one run on the GPU shows them all.
    let mut differences = Vec::new();
    for ((kernel, options), (cpu, function)) in jobs.iter().zip(&prepared) {
        let d_in = stream.clone_htod(&kernel.inputs()).expect("copied in");
        let mut d_out = stream.clone_htod(&kernel.out_start()).expect("copied in");
        let config = LaunchConfig {
            grid_dim: (kernel.blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(function);
        launch.arg(&d_in).arg(&mut d_out);
        // SAFETY: `k` takes two pointers, `in` with every thread's input words and `out`
        // with every thread's output words and the atomic slots, as allocated here.
        unsafe { launch.launch(config) }.expect("launched");
        let on_gpu = stream.clone_dtoh(&d_out).expect("copied back");
        if let Some(file) = &mut listing {
            list_differences(file, kernel, options, cpu, &on_gpu);
        }
        differences.extend(first_difference(
            kernel,
            options,
            ("CPU device", cpu),
            (&gpu.name, &on_gpu),
        ));
    }
    assert!(
        differences.is_empty(),
        "{} of {} kernels differ; the first {}:\n\n{}",
        differences.len(),
        jobs.len(),
        differences.len().min(3),
        differences[..differences.len().min(3)].join("\n\n")
    );
}

#[test]
fn a_difference_names_the_seed_statement_thread_inputs_and_both_values() {
    let kernel = generate(FIRST_SEED + 7, 2);
    let a = kernel.out_start();
    let mut b = a.clone();
    // Thread 70 (block 1, lane 6), its variable 5.
    let n_out = kernel.outputs.len();
    b[70 * n_out + 5] ^= 0x8000_0000_0000_0000;
    let said = first_difference(&kernel, &["--fmad=false"], ("one", &a), ("other", &b))
        .expect("a difference");
    let input = kernel.inputs()[70 * INPUTS.len() + 2];
    for part in [
        format!("seed {:#x}", kernel.seed),
        "\"--fmad=false\"".to_string(),
        "one 0x0000000000000000, other 0x8000000000000000 (the first of 1 differing words)"
            .to_string(),
        "thread 70 (block 1, lane 6)".to_string(),
        format!("`{}`", kernel.outputs[5].1),
        format!("d2 = {input:#x}"),
    ] {
        assert!(said.contains(&part), "{part}: {said}");
    }
    let mut atomic = a.clone();
    *atomic.last_mut().expect("the atomic slots") ^= 1;
    let said =
        first_difference(&kernel, &[], ("one", &a), ("other", &atomic)).expect("a difference");
    assert!(said.contains("atomic slot word 5"), "{said}");
    assert_eq!(
        first_difference(&kernel, &[], ("one", &a), ("other", &a)),
        None
    );
}
