// lab06's sanitizer exercise: the given part of kernels/reduce.cu (the plain sum and the
// peak) with one number changed. The sum may still come out right, and the lab may fail in
// ways that do not say why. Find the change with the sanitizer, not by comparing the files:
//
//   cargo xtask sanitize lab06 --tool memcheck -- --variants gpu-plain --n 1000003 \
//       --reps 1 --kernel lab06-generics-vs-virtual/kernels/exercise-broken.cu
//
// Read what kind of access it reports, in which memory, in which function, and which
// threads make it; then say why the launch shapes the lab sweeps make them.
// Only gpu-plain runs with this file: the other variants' kernels are not in it.

#define UNROLL 4

// ---------------------------------------------------------------------------------------
// Shared by every variant: the end of the reduction, and the walk over the array.
// ---------------------------------------------------------------------------------------

// Sum `acc` over the block and add the block's total to `*total` with one atomic.
// Five shuffles reduce each warp; warp leaders meet in shared memory; warp 0 adds them up.
// Block sizes are multiples of 32 (the host only launches such blocks).
__device__ void add_block_total(float acc, float* total) {
    __shared__ float warp_totals[4];
    const unsigned lane = threadIdx.x % 32;
    const unsigned warp = threadIdx.x / 32;

    for (int offset = 16; offset > 0; offset /= 2) {
        acc += __shfl_down_sync(0xffffffffu, acc, offset);
    }
    if (lane == 0) {
        warp_totals[warp] = acc;
    }
    __syncthreads();

    if (warp == 0) {
        acc = lane < blockDim.x / 32 ? warp_totals[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2) {
            acc += __shfl_down_sync(0xffffffffu, acc, offset);
        }
        if (lane == 0) {
            atomicAdd(total, acc);
        }
    }
}

// Fold one float4 into `acc`, in order.
template <class Combine>
__device__ float fold4(Combine combine, float acc, float4 q) {
    acc = combine(acc, q.x);
    acc = combine(acc, q.y);
    acc = combine(acc, q.z);
    acc = combine(acc, q.w);
    return acc;
}

// This thread's share of data[0..n), folded with `combine`: the generic walk that every
// variant but the plain one uses. `Combine` is a template parameter, so for a functor or a
// lambda the compiler knows the exact code of `combine` and inlines it; what that code does
// (add, call through a vtable, call through a pointer) is the variant.
template <class Combine>
__device__ float fold(const float* __restrict__ data, size_t n, Combine combine) {
    const float4* __restrict__ quads = reinterpret_cast<const float4*>(data);
    const size_t n_quads = n / 4;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t thread = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

    float acc = 0.0f;
    size_t i = thread;
    for (; i + (UNROLL - 1) * stride < n_quads; i += UNROLL * stride) {
        float4 q[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            q[u] = quads[i + u * stride];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            acc = fold4(combine, acc, q[u]);
        }
    }
    for (; i < n_quads; i += stride) {
        acc = fold4(combine, acc, quads[i]);
    }
    // The last n % 4 floats (at most 3) go to the first threads of the grid.
    if (n_quads * 4 + thread < n) {
        acc = combine(acc, data[n_quads * 4 + thread]);
    }
    return acc;
}

// ---------------------------------------------------------------------------------------
// The peak: the same walk with the cheapest fold that still depends on every byte read
// (a bitwise OR), and no reduction at all. No sum can go faster than this read.
// ---------------------------------------------------------------------------------------

extern "C" __global__ void read_peak(const float* __restrict__ data, size_t n, unsigned* sink) {
    const float bits = fold(data, n, [](float acc, float x) {
        return __uint_as_float(__float_as_uint(acc) | __float_as_uint(x));
    });
    // Never true for the lab's data (no value is a negative NaN), but the compiler cannot
    // know that, so it must keep every load.
    if (__float_as_uint(bits) == 0xffffffffu) {
        *sink = __float_as_uint(bits);
    }
}

// ---------------------------------------------------------------------------------------
// 1. Plain: the loop written out by hand, `+` on floats. The baseline.
// ---------------------------------------------------------------------------------------

extern "C" __global__ void reduce_plain(const float* __restrict__ data, size_t n, float* total) {
    const float4* __restrict__ quads = reinterpret_cast<const float4*>(data);
    const size_t n_quads = n / 4;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t thread = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

    float acc = 0.0f;
    size_t i = thread;
    for (; i + (UNROLL - 1) * stride < n_quads; i += UNROLL * stride) {
        float4 q[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            q[u] = quads[i + u * stride];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            acc += q[u].x;
            acc += q[u].y;
            acc += q[u].z;
            acc += q[u].w;
        }
    }
    for (; i < n_quads; i += stride) {
        const float4 q = quads[i];
        acc += q.x;
        acc += q.y;
        acc += q.z;
        acc += q.w;
    }
    if (n_quads * 4 + thread < n) {
        acc += data[n_quads * 4 + thread];
    }
    add_block_total(acc, total);
}

// lab06 builds its virtual and function-pointer objects at start-up, whichever variants
// run: these two do nothing here.
extern "C" __global__ void build_adder(void* storage) {}
extern "C" __global__ void store_add_pointer(void* slot) {}
