// lab06: one sum of n floats, written five ways, plus a read-only kernel that sets the peak.
//
// Every kernel below walks the array the same way, the way a memory-bound kernel should on
// a GPU of this generation:
//   - 16-byte loads (float4): a quarter of the load instructions of scalar loads;
//   - UNROLL of them issued before the first one is used, so each thread keeps several loads
//     in flight while it waits for memory;
//   - a grid-stride loop, so any grid size covers any n (the host sweeps grid sizes);
//   - one atomic per block at the end (add_block_total).
// The variants differ in one thing only: how a float is folded into the running sum. That
// one thing is the cost this lab measures.
//
// The host fills the array with small whole numbers whose total is at most 2^24, so every
// partial sum is exactly representable in a float and the result is exact in any order:
// warps, blocks and atomics may add in any order and the sum still matches to the last bit.

#define UNROLL 4

// The operation the abstract variants fold with: `add(acc, x)`, in its own header so that
// every variant calls the same function, whatever abstraction it reaches it through.
#include "add.cuh"

// ---------------------------------------------------------------------------------------
// Shared by every variant: the end of the reduction, and the walk over the array.
// ---------------------------------------------------------------------------------------

// Sum `acc` over the block and add the block's total to `*total` with one atomic.
// Five shuffles reduce each warp; warp leaders meet in shared memory; warp 0 adds them up.
// Block sizes are multiples of 32 (the host only launches such blocks).
__device__ void add_block_total(float acc, float* total) {
    __shared__ float warp_totals[32];
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

// ---------------------------------------------------------------------------------------
// 2. Generic: a template functor. The type `Add` is known when `fold<Add>` is instantiated,
//    so `combine(acc, x)` is a direct call the compiler inlines: the same machine code as
//    the plain loop.
//
// Each of variants 2 to 5 folds every element in with `add` (add.cuh), through its own
// abstraction, and ends with add_block_total.
// ---------------------------------------------------------------------------------------

// BEGIN SOLUTION
// stub: extern "C" __global__ void reduce_generic(const float* __restrict__ data, size_t n, float* total) {
// stub:     // UNFINISHED: the template variant: fold() with a functor whose call is add(), then add_block_total()
// stub: }
struct Add {
    __device__ float operator()(float acc, float x) const { return add(acc, x); }
};

extern "C" __global__ void reduce_generic(const float* __restrict__ data, size_t n, float* total) {
    add_block_total(fold(data, n, Add{}), total);
}
// END SOLUTION

// ---------------------------------------------------------------------------------------
// 3. Virtual: an object built on the device, called through a pointer to its base class.
//    The dynamic type is decided at run time (by build_adder), so every call loads the
//    object's vtable pointer, loads the function's address from the vtable, and makes an
//    indirect call that cannot be inlined. The loads are repeated for every element: the
//    callee is unknown, so the compiler must assume it could change the object.
// ---------------------------------------------------------------------------------------

// BEGIN SOLUTION
// stub: extern "C" __global__ void build_adder(void* storage) {
// stub:     // UNFINISHED: the virtual variant: a Combiner base class, an Adder whose combine is add(), built here on the device
// stub: }
// stub:
// stub: extern "C" __global__ void reduce_virtual(const float* __restrict__ data, size_t n,
// stub:                                           const void* combiner, float* total) {
// stub:     // UNFINISHED: the virtual variant: fold() calling combine through the Combiner build_adder made, then add_block_total()
// stub: }
struct Combiner {
    __device__ virtual float combine(float acc, float x) const = 0;
};

struct Adder : Combiner {
    __device__ float combine(float acc, float x) const override { return add(acc, x); }
};

// Construct an Adder in `storage` (device memory the host allocated). It must be built on
// the device: its vtable pointer has to point at the vtable in this module's device memory,
// which the host never sees.
extern "C" __global__ void build_adder(void* storage) {
    new (storage) Adder();
}

extern "C" __global__ void reduce_virtual(const float* __restrict__ data, size_t n,
                                          const Combiner* combiner, float* total) {
    const auto combine = [combiner](float acc, float x) { return combiner->combine(acc, x); };
    add_block_total(fold(data, n, combine), total);
}
// END SOLUTION

// ---------------------------------------------------------------------------------------
// 4 and 5. A device function pointer, stored in device memory by store_add_pointer.
// ---------------------------------------------------------------------------------------

// BEGIN SOLUTION
// stub: extern "C" __global__ void store_add_pointer(void* slot) {
// stub:     // UNFINISHED: the pointer variants: store the address of the device function add()
// stub: }
// stub:
// stub: extern "C" __global__ void reduce_fn_ptr_loop(const float* __restrict__ data, size_t n,
// stub:                                               const void* slot, float* total) {
// stub:     // UNFINISHED: the pointer variants: fold() calling the pointer in `slot`, read at every call, then add_block_total()
// stub: }
// stub:
// stub: extern "C" __global__ void reduce_fn_ptr_hoisted(const float* __restrict__ data, size_t n,
// stub:                                                  const void* slot, float* total) {
// stub:     // UNFINISHED: the pointer variants: fold() calling the pointer in `slot`, read once, then add_block_total()
// stub: }
typedef float (*CombineFn)(float, float);

// Only device code can take the address of a device function, so a kernel stores it.
extern "C" __global__ void store_add_pointer(CombineFn* slot) {
    *slot = add;
}

// 4. The pointer is read from global memory at every call, as `slot->fn(...)` code does
//    when `slot` is an object the loop does not own: the indirect call might write to it.
extern "C" __global__ void reduce_fn_ptr_loop(const float* __restrict__ data, size_t n,
                                              const CombineFn* slot, float* total) {
    const auto combine = [slot](float acc, float x) { return (*slot)(acc, x); };
    add_block_total(fold(data, n, combine), total);
}

// 5. The same pointer, copied into a local (a register) once before the loop: the call is
//    still indirect, but the load per element is gone.
extern "C" __global__ void reduce_fn_ptr_hoisted(const float* __restrict__ data, size_t n,
                                                 const CombineFn* slot, float* total) {
    const CombineFn pointer = *slot;
    const auto combine = [pointer](float acc, float x) { return pointer(acc, x); };
    add_block_total(fold(data, n, combine), total);
}
// END SOLUTION
