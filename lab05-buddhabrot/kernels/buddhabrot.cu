// lab05: the Buddhabrot kernel.
//
// Every function here has a twin in src/rng.rs or src/orbit.rs, written with the same f32
// operations in the same order. Compiled so that no multiply is fused with an add, as on the
// CPU (the options are in src/gpu.rs), and without fast math (which would flush tiny values
// to zero), each orbit point is bit-for-bit the CPU's, and so is the canvas.
//
// GRID_LOG2 and VISIT_LOG2 (the stratification cells) are passed by the host with -D, from
// the same Rust constants the CPU backend uses.

// The same layout as `Params` in src/orbit.rs: 4-byte fields only, in the same order.
struct Params {
    unsigned int width, height, max_iter, seed;
    unsigned int bulb_check, stratify, symmetry;
    float re_min, im_min, row_scale, col_scale;
    float sample_re_min, sample_re_span, sample_im_min, sample_im_span;
};

// Philox2x32-10: a counter-based generator. Sample i's random bits are a function of
// (seed, i) alone, so the thread that draws sample i, and when, make no difference.
// Only 32-bit multiplies: __umulhi gives the high half of the 64-bit product.
__device__ uint2 philox2x32_10(uint2 counter, unsigned int key)
{
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            key += 0x9E3779B9u;
        }
        unsigned int hi = __umulhi(0xD256D193u, counter.x);
        unsigned int lo = 0xD256D193u * counter.x;
        counter = make_uint2(hi ^ key ^ counter.y, lo);
    }
    return counter;
}

// The top 24 bits scaled by 2^-24: exact in f32, so the same on any hardware.
__device__ float uniform(unsigned int bits)
{
    return (float)(bits >> 8) * (1.0f / 16777216.0f);
}

// Bits 0, 2, 4, ... of z, packed together (the inverse of interleaving).
__device__ unsigned int even_bits(unsigned int z)
{
    unsigned int x = z & 0x55555555u;
    x = (x | (x >> 1)) & 0x33333333u;
    x = (x | (x >> 2)) & 0x0f0f0f0fu;
    x = (x | (x >> 4)) & 0x00ff00ffu;
    return (x | (x >> 8)) & 0x0000ffffu;
}

// The stratification cell (column, row) of sample `index`. Runs of 2^VISIT_LOG2 consecutive
// indices (one warp) share a cell, so a warp's threads follow similar orbits. Within a pass,
// the visit number, bits reversed, is read as a Z-order code (even bits: column, odd bits:
// row), so any prefix of a pass is spread evenly over the whole rectangle.
__device__ uint2 cell(unsigned long long index)
{
    unsigned int visit = (unsigned int)(index >> VISIT_LOG2) & ((1u << (2 * GRID_LOG2)) - 1);
    unsigned int z = __brev(visit) >> (32 - 2 * GRID_LOG2);
    return make_uint2(even_bits(z), even_bits(z >> 1));
}

// The point c of sample `index`: two uniforms, moved into the sample's cell when
// stratifying, then scaled onto the sampling rectangle.
__device__ float2 sample_point(unsigned long long index, const Params& p)
{
    uint2 bits = philox2x32_10(make_uint2((unsigned int)index, (unsigned int)(index >> 32)), p.seed);
    float u = uniform(bits.x);
    float v = uniform(bits.y);
    if (p.stratify) {
        uint2 c = cell(index);
        float inv_grid = 1.0f / (float)(1u << GRID_LOG2);
        u = ((float)c.x + u) * inv_grid;
        v = ((float)c.y + v) * inv_grid;
    }
    return make_float2(p.sample_re_min + u * p.sample_re_span,
                       p.sample_im_min + v * p.sample_im_span);
}

// BEGIN SOLUTION
// stub: // Samples first..end-1: skip those in a known bulb, add the orbit of the others to the
// stub: // canvas (any thread may hit any pixel). The twins are in src/orbit.rs.
// stub: extern "C" __global__ void buddhabrot(unsigned int* canvas, Params p,
// stub:                                       unsigned long long first, unsigned long long end)
// stub: {
// stub:     // UNFINISHED: the Buddhabrot kernel, after its CPU twin in src/orbit.rs
// stub: }
// Inside the main cardioid, the period-2 disc, or the discs in the period-4 and period-3
// bulbs from a Code Review answer on a PyCUDA Buddhabrot ("Packaging floats"): the orbit
// never escapes, so the sample can be skipped.
__device__ bool in_known_bulb(float cr, float ci)
{
    float yy = ci * ci;
    float xq = cr - 0.25f;
    float q = xq * xq + yy;
    bool main_cardioid = q * (q + xq) < 0.25f * yy;
    float x2 = cr + 1.0f;
    bool period_2 = x2 * x2 + yy < 0.0625f;
    float x4 = cr + 1.309f;
    bool period_4 = x4 * x4 + yy < 0.00345f;
    float x3 = cr + 0.125f;
    float y_up = ci - 0.744f;
    float y_down = ci + 0.744f;
    bool period_3_up = x3 * x3 + y_up * y_up < 0.0088f;
    bool period_3_down = x3 * x3 + y_down * y_down < 0.0088f;
    return main_cardioid || period_2 || period_4 || period_3_up || period_3_down;
}

// Steps until |z|^2 > 4, starting from z = c; 0 if the orbit stays for max_iter steps.
__device__ unsigned int escape_steps(float cr, float ci, unsigned int max_iter)
{
    float x = cr, y = ci;
    float xx = x * x, yy = y * y;
    for (unsigned int step = 1; step <= max_iter; ++step) {
        y = (x + x) * y + ci;
        x = xx - yy + cr;
        xx = x * x;
        yy = y * y;
        if (xx + yy > 4.0f) {
            return step;
        }
    }
    return 0;
}

// Replay the orbit's first `steps` points and add one count at each one's pixel, plus one at
// the mirrored pixel when sampling only the upper half. atomicAdd because any thread may hit
// any pixel; its result is unused, so it compiles to a fire-and-forget reduction (the SASS
// shows RED, no ATOM) that the L2 cache performs while the thread goes on. The 14.7 MB
// canvas stays in the H100's 50 MB L2, and these reductions are what limits the kernel:
// ncu shows the L2 90% busy and the SMs 38%.
__device__ void add_orbit(unsigned int* canvas, float cr, float ci, unsigned int steps,
                          const Params& p)
{
    float height = (float)p.height;
    float width = (float)p.width;
    float x = cr, y = ci;
    float xx = x * x, yy = y * y;
    for (unsigned int n = 0; n < steps; ++n) {
        y = (x + x) * y + ci;
        x = xx - yy + cr;
        xx = x * x;
        yy = y * y;
        float row = (x - p.re_min) * p.row_scale;
        float col = (y - p.im_min) * p.col_scale;
        if (row >= 0.0f && row < height && col >= 0.0f && col < width) {
            unsigned int at = (unsigned int)row * p.width;
            unsigned int c = (unsigned int)col;
            atomicAdd(&canvas[at + c], 1u);
            if (p.symmetry) {
                atomicAdd(&canvas[at + (p.width - 1 - c)], 1u);
            }
        }
    }
}

// Samples first..end-1, spread over the whole grid: thread t takes first + t, then every
// (grid size)-th index after it. A warp's 32 threads thus take 32 consecutive indices, one
// cell visit, at every turn of the loop.
extern "C" __global__ void buddhabrot(unsigned int* canvas, Params p,
                                      unsigned long long first, unsigned long long end)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = first + blockIdx.x * blockDim.x + threadIdx.x; i < end;
         i += stride) {
        float2 c = sample_point(i, p);
        if (p.bulb_check && in_known_bulb(c.x, c.y)) {
            continue;
        }
        add_orbit(canvas, c.x, c.y, escape_steps(c.x, c.y, p.max_iter), p);
    }
}
// END SOLUTION
