//! lab03's kernel file and the options it is compiled with, as data: `main.rs` compiles it
//! for the GPU it runs on, and the tests compile it with NVRTC for fixed architectures, GPU
//! or not. And the one limit its launch shape sets, checked before the GPU is opened.

use shared::nvrtc::KernelFile;
use shared::{Error, Result};

/// No options: NVRTC's defaults, fused multiply-adds included.
pub fn kernel_file() -> KernelFile {
    KernelFile::new(
        "mandelbrot_naive.cu",
        include_str!("../kernels/mandelbrot_naive.cu"),
        &[],
    )
}

/// The most threads one block may hold: 1024 on every CUDA GPU since compute capability 2.0
/// (the CUDA C++ Programming Guide's table of compute capabilities). A constant, so the
/// width is checked before the GPU is opened, and on a machine without one.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

/// One block per row and one thread per column: the width cannot exceed the block limit.
pub fn check_width(width: u32) -> Result<()> {
    if width > MAX_THREADS_PER_BLOCK {
        return Err(Error::Usage(format!(
            "lab03 runs one thread per column in a single block per row, and a block holds at \
             most {MAX_THREADS_PER_BLOCK} threads on every CUDA GPU, so the width can be at \
             most {MAX_THREADS_PER_BLOCK} (got {width}); lab04's 2D grid has no such limit"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_width_may_reach_the_block_limit_and_not_pass_it() {
        assert!(check_width(1).is_ok());
        assert!(check_width(MAX_THREADS_PER_BLOCK).is_ok());
        let Err(e) = check_width(MAX_THREADS_PER_BLOCK + 1) else {
            panic!("a width of 1025 was accepted");
        };
        let message = e.to_string();
        assert!(message.contains("at most 1024 (got 1025)"), "{message}");
        assert!(message.contains("lab04"), "{message}");
    }
}
