// Half precision (cuda_fp16.h's __half, cuda_bf16.h's __nv_bfloat16) on the operands whose
// rules are easiest to get wrong: ties, overflow, subnormals, -0, NaNs, a fused multiply-add
// that a double rounding gets wrong. Inline PTX, one instruction each, as the headers' own
// inline PTX has them (NVRTC has no cuda_fp16.h of its own). The host check's words come
// from the PTX ISA's rules (tests/conformance.rs says why each is what it is).
typedef unsigned short h16;

#define UN(name, ptx) \
    __device__ h16 name(h16 a) { h16 r; asm(ptx " %0, %1;" : "=h"(r) : "h"(a)); return r; }
#define BIN(name, ptx) \
    __device__ h16 name(h16 a, h16 b) \
    { h16 r; asm(ptx " %0, %1, %2;" : "=h"(r) : "h"(a), "h"(b)); return r; }
#define TER(name, ptx) \
    __device__ h16 name(h16 a, h16 b, h16 c) \
    { h16 r; asm(ptx " %0, %1, %2, %3;" : "=h"(r) : "h"(a), "h"(b), "h"(c)); return r; }
#define PAIR(name, ptx) \
    __device__ unsigned name(unsigned a, unsigned b, unsigned c) \
    { unsigned r; asm(ptx " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
#define CMP(name, ptx) \
    __device__ unsigned name(h16 a, h16 b) \
    { unsigned r; asm("{\n\t.reg .pred p;\n\t" ptx " p, %1, %2;\n\tselp.u32 %0, 1, 0, p;\n\t}" \
                      : "=r"(r) : "h"(a), "h"(b)); return r; }
#define TO_HALF(name, ptx, c, t) \
    __device__ h16 name(t a) { h16 r; asm(ptx " %0, %1;" : "=h"(r) : c(a)); return r; }
#define FROM_HALF(name, ptx) \
    __device__ unsigned name(h16 a) { unsigned r; asm(ptx " %0, %1;" : "=r"(r) : "h"(a)); return r; }

BIN(add_f16, "add.f16")
BIN(add_ftz_f16, "add.ftz.f16")
BIN(add_sat_f16, "add.sat.f16")
BIN(sub_f16, "sub.f16")
BIN(mul_f16, "mul.rn.f16")
BIN(mul_ftz_f16, "mul.rn.ftz.f16")
TER(fma_f16, "fma.rn.f16")
TER(fma_relu_f16, "fma.rn.relu.f16")
TER(fma_sat_f16, "fma.rn.sat.f16")
BIN(min_f16, "min.f16")
BIN(max_f16, "max.f16")
BIN(max_nan_f16, "max.NaN.f16")
UN(neg_f16, "neg.f16")
UN(neg_ftz_f16, "neg.ftz.f16")
UN(abs_f16, "abs.f16")
CMP(lt_f16, "setp.lt.f16")
CMP(lt_ftz_f16, "setp.lt.ftz.f16")
CMP(eq_f16, "setp.eq.f16")
CMP(equ_f16, "setp.equ.f16")
FROM_HALF(f32_f16, "cvt.f32.f16")
FROM_HALF(rni_s32_f16, "cvt.rni.s32.f16")
FROM_HALF(rzi_s32_f16, "cvt.rzi.s32.f16")
FROM_HALF(rmi_u32_f16, "cvt.rmi.u32.f16")
UN(rni_f16_f16, "cvt.rni.f16.f16")
TO_HALF(rn_f16_f32, "cvt.rn.f16.f32", "f", float)
TO_HALF(rz_f16_f32, "cvt.rz.f16.f32", "f", float)
TO_HALF(rm_f16_f32, "cvt.rm.f16.f32", "f", float)
TO_HALF(rp_f16_f32, "cvt.rp.f16.f32", "f", float)
TO_HALF(rn_f16_f64, "cvt.rn.f16.f64", "d", double)
TO_HALF(rn_f16_s32, "cvt.rn.f16.s32", "r", int)
TO_HALF(rz_f16_s32, "cvt.rz.f16.s32", "r", int)
TO_HALF(rn_f16_u32, "cvt.rn.f16.u32", "r", unsigned)
PAIR(fma_f16x2, "fma.rn.f16x2")

BIN(add_bf16, "add.rn.bf16")
BIN(mul_bf16, "mul.rn.bf16")
TER(fma_bf16, "fma.rn.bf16")
BIN(min_bf16, "min.bf16")
BIN(max_nan_bf16, "max.NaN.bf16")
UN(neg_bf16, "neg.bf16")
CMP(lt_bf16, "setp.lt.bf16")
TO_HALF(rn_bf16_f64, "cvt.rn.bf16.f64", "d", double)

#define CVT_PAIR(name, ptx) \
    __device__ unsigned name(float a, float b) \
    { unsigned r; asm(ptx " %0, %1, %2;" : "=r"(r) : "f"(a), "f"(b)); return r; }
CVT_PAIR(rn_f16x2_f32, "cvt.rn.f16x2.f32")
CVT_PAIR(rz_relu_bf16x2_f32, "cvt.rz.relu.bf16x2.f32")
CVT_PAIR(rn_bf16x2_f32, "cvt.rn.bf16x2.f32")
#define SET_PAIR(name, ptx) \
    __device__ unsigned name(unsigned a, unsigned b) \
    { unsigned r; asm(ptx " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
SET_PAIR(set_lt_u32_f16x2, "set.lt.u32.f16x2")
SET_PAIR(set_nan_bf16x2, "set.nan.bf16x2.bf16x2")
SET_PAIR(set_geu_f16x2, "set.geu.f16x2.f16x2")

__device__ unsigned set_lt_u32_bf16(h16 a, h16 b)
{
    unsigned r;
    asm("set.lt.u32.bf16 %0, %1, %2;" : "=r"(r) : "h"(a), "h"(b));
    return r;
}
FROM_HALF(f32_bf16, "cvt.f32.bf16")
TO_HALF(rn_bf16_f32, "cvt.rn.bf16.f32", "f", float)
TO_HALF(rz_bf16_f32, "cvt.rz.bf16.f32", "f", float)
TO_HALF(rm_bf16_f32, "cvt.rm.bf16.f32", "f", float)
TO_HALF(rp_bf16_f32, "cvt.rp.bf16.f32", "f", float)
TO_HALF(rn_bf16_s32, "cvt.rn.bf16.s32", "r", int)
PAIR(fma_bf16x2, "fma.rn.bf16x2")

// A loose multiply read once by a loose add: ptxas may fuse the two (PTX lets it).
__device__ h16 mul_add_f16(h16 a, h16 b, h16 c)
{
    h16 r;
    asm("{\n\t.reg .b16 t;\n\tmul.f16 t, %1, %2;\n\tadd.f16 %0, t, %3;\n\t}"
        : "=h"(r) : "h"(a), "h"(b), "h"(c));
    return r;
}

extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    h16 h[16];
    for (int i = 0; i < 16; i++)
        h[i] = (h16)in[i];
    float f[8];
    for (int i = 0; i < 8; i++)
        f[i] = __uint_as_float(in[16 + i]);
    int o = 0;
    // binary16: 0.75, 683/512, 2^-24, 65504, 1, -0, a NaN, +inf, 1023 * 2^-24, -inf, +0,
    // 2^-14, 1 - 2^-11, 2.5, -2.5, 1 + 2^-10
    out[o++] = add_f16(h[3], h[3]);
    out[o++] = add_f16(h[2], h[2]);
    out[o++] = add_f16(h[8], h[2]);
    out[o++] = add_ftz_f16(h[8], h[2]);
    out[o++] = sub_f16(h[4], h[4]);
    out[o++] = add_f16(h[5], h[5]);
    out[o++] = add_f16(h[7], h[9]);
    out[o++] = add_f16(h[6], h[4]);
    out[o++] = add_sat_f16(h[6], h[4]);
    out[o++] = add_sat_f16(h[4], h[4]);
    out[o++] = mul_f16(h[0], h[1]);
    out[o++] = mul_f16(h[2], h[0]);
    out[o++] = mul_f16(h[11], h[12]);
    out[o++] = mul_ftz_f16(h[11], h[12]);
    out[o++] = fma_f16(h[0], h[1], h[2]);
    out[o++] = fma_relu_f16(h[0], h[1], h[9]);
    out[o++] = fma_relu_f16(h[6], h[4], h[4]);
    out[o++] = fma_sat_f16(h[3], h[3], h[4]);
    out[o++] = min_f16(h[5], h[10]);
    out[o++] = max_f16(h[5], h[10]);
    out[o++] = min_f16(h[6], h[4]);
    out[o++] = max_nan_f16(h[6], h[4]);
    out[o++] = max_f16(h[6], h[6] ^ 0x0301);
    out[o++] = neg_f16(h[2]);
    out[o++] = neg_ftz_f16(h[8]);
    out[o++] = abs_f16(h[14]);
    out[o++] = lt_f16(h[5], h[10]);
    out[o++] = lt_f16(h[2], h[8]);
    out[o++] = lt_ftz_f16(h[2], h[8]);
    out[o++] = eq_f16(h[5], h[10]);
    out[o++] = equ_f16(h[6], h[4]);
    out[o++] = f32_f16(h[2]);
    out[o++] = f32_f16(h[8]);
    out[o++] = f32_f16(h[5]);
    out[o++] = rni_s32_f16(h[13]);
    out[o++] = rzi_s32_f16(h[14]);
    out[o++] = rmi_u32_f16(h[14]);
    out[o++] = rni_s32_f16(h[6]);
    out[o++] = rni_s32_f16(h[7]);
    out[o++] = rni_f16_f16(h[13]);
    out[o++] = rni_f16_f16(h[14]);
    // f32: 1 + 2^-11, 1 + 2^-11 + 2^-23, 65520, 2^-25, a signalling NaN, 1 + 2^-8,
    // -(1 + 3 * 2^-8), the largest float
    out[o++] = rn_f16_f32(f[0]);
    out[o++] = rn_f16_f32(f[1]);
    out[o++] = rn_f16_f32(f[2]);
    out[o++] = rz_f16_f32(f[2]);
    out[o++] = rm_f16_f32(-f[2]);
    out[o++] = rn_f16_f32(f[3]);
    out[o++] = rp_f16_f32(f[3]);
    out[o++] = rm_f16_f32(-f[3]);
    out[o++] = rn_f16_f32(f[4]);
    out[o++] = rn_f16_f64(1.0 + 0x1p-11 + 0x1p-40);
    out[o++] = rn_f16_s32(-7);
    out[o++] = rn_f16_s32(0x7fffffff);
    out[o++] = rz_f16_s32(0x7fffffff);
    out[o++] = rn_f16_u32(65519u);
    out[o++] = rn_f16_u32(65520u);
    out[o++] = fma_f16x2(h[4] | (unsigned)h[3] << 16, h[4] | (unsigned)h[4] << 16,
                         h[2] | (unsigned)h[3] << 16);
    // bfloat16: 7, 37/256, -2^-100, 1, 3 * 2^-8, the largest bfloat16, 2, 2^-133 (the
    // smallest subnormal), 3 * 2^-133, 1/2, a signalling NaN with a payload, +0
    h16 b[12];
    for (int i = 0; i < 12; i++)
        b[i] = (h16)in[24 + i];
    out[o++] = fma_bf16(b[0], b[1], b[2]);
    out[o++] = fma_bf16(b[0], b[1], b[11]);
    out[o++] = add_bf16(b[3], b[4]);
    out[o++] = mul_bf16(b[5], b[6]);
    out[o++] = mul_bf16(b[7], b[9]);
    out[o++] = mul_bf16(b[8], b[9]);
    out[o++] = add_bf16(b[10], b[3]);
    out[o++] = min_bf16(b[10], b[3]);
    out[o++] = max_nan_bf16(b[10], b[3]);
    out[o++] = neg_bf16(b[2]);
    out[o++] = lt_bf16(b[2], b[11]);
    out[o++] = f32_bf16(b[7]);
    out[o++] = f32_bf16(b[2]);
    out[o++] = rn_bf16_f32(f[5]);
    out[o++] = rn_bf16_f32(f[6]);
    out[o++] = rn_bf16_f32(f[7]);
    out[o++] = rz_bf16_f32(f[7]);
    out[o++] = rm_bf16_f32(-f[7]);
    out[o++] = rp_bf16_f32(__uint_as_float(1u));
    out[o++] = rn_bf16_f32(f[4]);
    out[o++] = rn_bf16_s32(-7);
    out[o++] = fma_bf16x2(b[0] | (unsigned)b[5] << 16, b[1] | (unsigned)b[6] << 16,
                          b[2] | (unsigned)b[11] << 16);
    out[o++] = mul_add_f16(h[0], h[1], h[2]);
    out[o++] = set_lt_u32_bf16(b[2], b[11]);
    out[o++] = rn_f16x2_f32(f[0], f[1]);
    out[o++] = rz_relu_bf16x2_f32(f[5], -f[0]);
    out[o++] = rn_bf16x2_f32(f[4], f[7]);
    out[o++] = set_lt_u32_f16x2(h[5] | (unsigned)h[4] << 16, h[10] | (unsigned)h[7] << 16);
    out[o++] = set_nan_bf16x2(b[10] | (unsigned)b[3] << 16, b[3] | (unsigned)b[3] << 16);
    out[o++] = set_geu_f16x2(h[6] | (unsigned)h[2] << 16, h[4] | (unsigned)h[8] << 16);
    // f64 NaNs narrowed, one negative with a payload, their bits made at run time (in[10] is
    // 0): NVRTC folds a constant NaN's conversion to the canonical NaN, which the H100's
    // instruction does not give. -0 + -0 saturated.
    out[o++] = rn_f16_f64(__hiloint2double(0xfff40000 ^ (int)in[10], 1));
    out[o++] = rn_f16_f64(__hiloint2double(0x7ff80000 ^ (int)in[10], 0));
    out[o++] = rn_bf16_f64(__hiloint2double(0xfff40000 ^ (int)in[10], 1));
    out[o++] = add_sat_f16(h[5], h[5]);
}
