//! lab04's kernel file and the options it is compiled with, as data: `main.rs` compiles it
//! for the GPU it runs on, and the tests compile it with NVRTC for fixed architectures, GPU
//! or not.

use shared::nvrtc::KernelFile;

// BEGIN SOLUTION
// stub: /// NVRTC's options: which make every pixel equal lab01's, and which make it fast?
// stub: ///
/// `--use_fast_math` speeds up single-precision functions but also turns on fused
/// multiply-adds; `--fmad=false`, after it, turns them off again. One FMA rounds once where
/// lab01 rounds twice, and that last bit is enough to change some pixels (lab03 shows how
/// many). The kernel computes in double precision, which fast math leaves alone.
///
// END SOLUTION
/// The two shortcuts the command line can switch are `-D` options: the period-2 bulb early
/// exit (on by default) and the exact periodicity check (off by default).
pub fn kernel_file(period2_exit: bool, periodicity_check: bool) -> KernelFile {
    let mut kernel = KernelFile::new(
        "mandelbrot.cu",
        include_str!("../kernels/mandelbrot.cu"),
        // BEGIN SOLUTION
        // stub: &[],
        &["--use_fast_math", "--fmad=false"],
        // END SOLUTION
    );
    if !period2_exit {
        kernel = kernel.with_option("-DPERIOD2_EXIT=0");
    }
    if periodicity_check {
        kernel = kernel.with_option("-DPERIODICITY_CHECK=1");
    }
    kernel
}
