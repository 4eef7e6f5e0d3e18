//! A failed `assert` in a kernel, through the driver's API, on a GPU and on the CPU device
//! alike. A test binary of its own: on a GPU the assert leaves the process's context
//! unusable (every later call returns the same error; on the H100 a test run beside it in
//! one process then failed "CUDA_ERROR_ASSERT" at its module load).

/// The kernel `tests/instructions.rs` runs on the CPU device alone, where it checks the
/// report's words.
const SOURCE: &str = include_str!("kernels/assert.cu");

/// A failed assert is `CUDA_ERROR_ASSERT` (710, "device-side assert triggered" on the H100),
/// not an illegal address or instruction.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_failed_assert_is_the_drivers_assert_error() {
    use cudarc::driver::{sys::CUresult, LaunchConfig, PushKernelArg};
    use shared::gpu::Gpu;

    if shared::testing::on_cpu_device() {
        shared::gpu::use_cpu_device().expect("the CPU device loads");
    }
    let gpu = Gpu::open().unwrap_or_else(|e| panic!("{e}"));
    let compiled = gpu
        .compile("assert.cu", SOURCE, &[] as &[&str])
        .unwrap_or_else(|e| panic!("{e}"));
    let function = compiled.function("k").expect("the kernel k");
    let mut d_out = gpu.stream.clone_htod(&[0u64; 128]).expect("copied in");
    let config = LaunchConfig {
        grid_dim: (2, 1, 1),
        block_dim: (64, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = gpu.stream.launch_builder(&function);
    launch.arg(&mut d_out);
    // SAFETY: `k` takes one pointer to 128 64-bit words, as allocated here. A GPU reports
    // the assert when the stream is synchronised, the CPU device at the launch.
    let error = unsafe { launch.launch(config) }
        .and_then(|_| gpu.stream.synchronize())
        .expect_err("the assert fails the launch");
    assert_eq!(error.0, CUresult::CUDA_ERROR_ASSERT, "{error}");
}
