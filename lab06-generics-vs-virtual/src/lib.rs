//! lab06's modules (src/main.rs runs them in order), and its kernel file, the header it
//! includes and the options it is compiled with, as data: the program compiles it for the
//! GPU it runs on, and the tests compile it with NVRTC for fixed architectures, GPU or not.

pub mod cli;
pub mod cpu;
pub mod data;
pub mod gpu;
pub mod report;

use shared::nvrtc::KernelFile;

/// The kernels use lambdas and `override`, both C++11, and nothing newer than C++17; every
/// abstract variant folds with `add` from `add.cuh`.
pub fn kernel_file() -> KernelFile {
    KernelFile::new(
        "reduce.cu",
        include_str!("../kernels/reduce.cu"),
        &["--std=c++17"],
    )
    .with_header("add.cuh", include_str!("../kernels/add.cuh"))
}
