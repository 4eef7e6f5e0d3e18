// Floating-point instructions on the operands whose rules are easiest to get wrong:
// subnormals, signed zeros, infinities and NaNs (quiet, signalling, with payloads). Thread t
// takes in[t] as x and writes WORDS words: x widened to double, its reciprocal and root in
// each rounding, and x against every input y in a fused multiply-add, a product, a sum and a
// quotient. The host check holds the words to an H100's.
#define WORDS 70

extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    int t = threadIdx.x;
    if (t >= n)
        return;
    float x = __uint_as_float(in[t]);
    unsigned *o = out + t * WORDS;
    unsigned long long wide = __double_as_longlong((double)x);
    o[0] = (unsigned)(wide >> 32);
    o[1] = (unsigned)wide;
    o[2] = __float_as_uint(__frcp_rn(x));
    o[3] = __float_as_uint(__frcp_ru(x));
    o[4] = __float_as_uint(__frcp_rz(x));
    o[5] = __float_as_uint(__frcp_rd(x));
    o[6] = __float_as_uint(__fsqrt_rn(x));
    o[7] = __float_as_uint(__fsqrt_ru(x));
    o[8] = __float_as_uint(__fsqrt_rz(x));
    o[9] = __float_as_uint(__fsqrt_rd(x));
    for (int j = 0; j < n; j++) {
        float y = __uint_as_float(in[j]);
        float z = __uint_as_float(in[(j + 1) % n]);
        o[10 + j] = __float_as_uint(fmaf(x, y, __uint_as_float(0x80000001u)));
        o[22 + j] = __float_as_uint(__fmaf_ru(x, y, z));
        o[34 + j] = __float_as_uint(__fmul_rd(x, y));
        o[46 + j] = __float_as_uint(__fadd_ru(x, y));
        o[58 + j] = __float_as_uint(__fdiv_rn(x, y));
    }
}
