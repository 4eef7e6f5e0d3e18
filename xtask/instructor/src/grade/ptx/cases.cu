#include "add.cuh"

template <class Combine>
__device__ float fold(const float* data, size_t n, Combine combine) {
    float acc = 0.0f;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        acc = combine(acc, data[i]);
    }
    return acc;
}

struct Add {
    __device__ float operator()(float acc, float x) const { return add(acc, x); }
};

extern "C" __global__ void reduce_generic(const float* data, size_t n, float* total) {
    atomicAdd(total, fold(data, n, Add{}));
}

struct Combiner {
    __device__ virtual float combine(float acc, float x) const = 0;
};

struct Adder : Combiner {
    __device__ float combine(float acc, float x) const override { return add(acc, x); }
};

extern "C" __global__ void build_adder(void* storage) { new (storage) Adder(); }

extern "C" __global__ void reduce_virtual(const float* data, size_t n, const Combiner* combiner,
                                          float* total) {
    //VIRTUAL
    const auto combine = [combiner](float acc, float x) { return combiner->combine(acc, x); };
    atomicAdd(total, fold(data, n, combine));
}

typedef float (*CombineFn)(float, float);

extern "C" __global__ void store_add_pointer(CombineFn* slot) { *slot = add; }

extern "C" __global__ void reduce_fn_ptr_hoisted(const float* data, size_t n, const CombineFn* slot,
                                                 float* total) {
    //HOISTED
    const CombineFn pointer = *slot;
    const auto combine = [pointer](float acc, float x) { return pointer(acc, x); };
    atomicAdd(total, fold(data, n, combine));
}
