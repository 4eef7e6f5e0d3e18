// Results at the edge of the subnormals under `.ftz`: thread t takes the triple a, b, c at
// in[3t] and writes WORDS words: a * b in each rounding that flushes, a * b + c fused, a
// division, a * b without `.ftz`, and the exact product a * b (a double) narrowed to a float
// in each rounding that flushes. The host check holds them to a Hopper GPU's words.
#define WORDS 9

#define FTZ2(name, ptx) \
    __device__ float name(float a, float b) \
    { \
        float r; \
        asm(ptx " %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); \
        return r; \
    }
FTZ2(mul_rn, "mul.rn.ftz.f32")
FTZ2(mul_rz, "mul.rz.ftz.f32")
FTZ2(mul_rp, "mul.rp.ftz.f32")
FTZ2(div_rn, "div.rn.ftz.f32")

__device__ float fma_rn(float a, float b, float c)
{
    float r;
    asm("fma.rn.ftz.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
    return r;
}

#define NARROW(name, ptx) \
    __device__ float name(double d) \
    { \
        float r; \
        asm(ptx " %0, %1;" : "=f"(r) : "d"(d)); \
        return r; \
    }
NARROW(narrow_rn, "cvt.rn.ftz.f32.f64")
NARROW(narrow_rz, "cvt.rz.ftz.f32.f64")
NARROW(narrow_rp, "cvt.rp.ftz.f32.f64")

extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    int t = threadIdx.x;
    if (t >= n)
        return;
    float a = __uint_as_float(in[3 * t]), b = __uint_as_float(in[3 * t + 1]);
    float c = __uint_as_float(in[3 * t + 2]);
    unsigned *o = out + t * WORDS;
    double exact = (double)a * (double)b;
    o[0] = __float_as_uint(mul_rn(a, b));
    o[1] = __float_as_uint(mul_rz(a, b));
    o[2] = __float_as_uint(mul_rp(a, b));
    o[3] = __float_as_uint(fma_rn(a, b, c));
    o[4] = __float_as_uint(div_rn(a, 1.0f / b));
    o[5] = __float_as_uint(__fmul_rn(a, b));
    o[6] = __float_as_uint(narrow_rn(exact));
    o[7] = __float_as_uint(narrow_rz(exact));
    o[8] = __float_as_uint(narrow_rp(exact));
}
