//! lab03's kernel file and the options it is compiled with, as data: `main.rs` compiles it
//! for the GPU it runs on, and the tests compile it with NVRTC for fixed architectures, GPU
//! or not.

use shared::nvrtc::KernelFile;

/// No options: NVRTC's defaults, fused multiply-adds included.
pub fn kernel_file() -> KernelFile {
    KernelFile::new(
        "mandelbrot_naive.cu",
        include_str!("../kernels/mandelbrot_naive.cu"),
        &[],
    )
}
