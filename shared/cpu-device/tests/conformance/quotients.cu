// A division's quotient read by the add or subtract after it (inline PTX, as fast math's
// __fdividef and `/` leave such pairs to ptxas): ptxas computes div.approx.f32 and div.full.f32
// as a multiply by the special-function unit's reciprocal and fuses that multiply into a loose
// add, as it fuses a mul.f32. in: a, b, c, -c, where c is a / b rounded, a unit (2^-25) below
// the unit's quotient: fused, the sum is the product's rounding error; apart, that unit. Then
// a and b scaled by 2^126 (div.full's scaling by 1/4 of a divisor above 2^126), by 2^-130
// (the 2^24 scaling of a subnormal divisor without .ftz), and -a.
#define DIV(name, div, add, operands) \
    __device__ float name(float a, float b, float c) \
    { \
        float r; \
        asm("{\n\t.reg .f32 q;\n\t" div " q, %1, %2;\n\t" add " %0, " operands ";\n\t}" \
            : "=f"(r) : "f"(a), "f"(b), "f"(c)); \
        return r; \
    }
#define FORMS(kind, div, ftz) \
    DIV(kind##_add, div, "add" ftz ".f32", "q, %3") \
    DIV(kind##_add_rev, div, "add" ftz ".f32", "%3, q") \
    DIV(kind##_sub, div, "sub" ftz ".f32", "q, %3") \
    DIV(kind##_sub_rev, div, "sub" ftz ".f32", "%3, q")
FORMS(approx_ftz, "div.approx.ftz.f32", ".ftz")
FORMS(full_ftz, "div.full.ftz.f32", ".ftz")
FORMS(approx, "div.approx.f32", "")
FORMS(full, "div.full.f32", "")
DIV(approx_ftz_add_rn, "div.approx.ftz.f32", "add.rn.ftz.f32", "q, %3")
DIV(approx_ftz_add_no_ftz, "div.approx.ftz.f32", "add.f32", "q, %3")

// The quotient read twice: by the add and by the caller.
__device__ float read_twice(float a, float b, float c, float *q)
{
    float r;
    asm("div.approx.ftz.f32 %1, %2, %3;\n\tadd.ftz.f32 %0, %1, %4;"
        : "=f"(r), "=f"(*q) : "f"(a), "f"(b), "f"(c));
    return r;
}

// An IEEE division between the quotient and its add.
__device__ float across_div_rn(float a, float b, float c, float *q)
{
    float r;
    asm("{\n\t.reg .f32 q;\n\tdiv.approx.ftz.f32 q, %2, %3;\n\tdiv.rn.f32 %1, %3, %4;\n\t"
        "add.ftz.f32 %0, q, %4;\n\t}"
        : "=f"(r), "=f"(*q) : "f"(a), "f"(b), "f"(c));
    return r;
}

// Two quotients added, as HeCBench's langevin adds coshf(x) / sinhf(x) to -1.f / x under
// fast math: div.full then div.approx, the later one first in the add and second. -a / b
// and a / b: apart the sum is 0, fused either product's rounding error, of either sign.
#define TWO(name, operands) \
    __device__ float name(float a, float b, float c) \
    { \
        float r; \
        asm("{\n\t.reg .f32 p, q;\n\tdiv.full.ftz.f32 p, %3, %2;\n\t" \
            "div.approx.ftz.f32 q, %1, %2;\n\tadd.ftz.f32 %0, " operands ";\n\t}" \
            : "=f"(r) : "f"(a), "f"(b), "f"(c)); \
        return r; \
    }
TWO(two_quotients, "q, p")
TWO(two_quotients_rev, "p, q")

extern "C" __global__ void k(unsigned *out, const unsigned *in, int n)
{
    float a = __uint_as_float(in[0]), b = __uint_as_float(in[1]);
    float c = __uint_as_float(in[2]), m = __uint_as_float(in[3]);
    float a2 = __uint_as_float(in[4]), b2 = __uint_as_float(in[5]);
    float a3 = __uint_as_float(in[6]), b3 = __uint_as_float(in[7]);
    float na = __uint_as_float(in[8]);
    float w[28], q;
    w[0] = approx_ftz_add(a, b, m);
    w[1] = approx_ftz_add_rev(a, b, m);
    w[2] = approx_ftz_sub(a, b, c);
    w[3] = approx_ftz_sub_rev(a, b, c);
    w[4] = full_ftz_add(a, b, m);
    w[5] = full_ftz_add_rev(a, b, m);
    w[6] = full_ftz_sub(a, b, c);
    w[7] = full_ftz_sub_rev(a, b, c);
    w[8] = approx_add(a, b, m);
    w[9] = approx_add_rev(a, b, m);
    w[10] = approx_sub(a, b, c);
    w[11] = approx_sub_rev(a, b, c);
    w[12] = full_add(a, b, m);
    w[13] = full_add_rev(a, b, m);
    w[14] = full_sub(a, b, c);
    w[15] = full_sub_rev(a, b, c);
    w[16] = full_ftz_add(a2, b2, m);
    w[17] = full_add(a2, b2, m);
    w[18] = approx_add(a3, b3, m);
    w[19] = full_add(a3, b3, m);
    w[20] = approx_ftz_add_rn(a, b, m);
    w[21] = approx_ftz_add_no_ftz(a, b, m);
    w[22] = read_twice(a, b, m, &q);
    w[23] = q;
    w[24] = across_div_rn(a, b, m, &q);
    w[25] = q;
    w[26] = two_quotients(a, b, na);
    w[27] = two_quotients_rev(a, b, na);
    for (int i = 0; i < 28; i++)
        out[i] = __float_as_uint(w[i]);
}
