//! lab06's kernel file and the options it is compiled with, as data: the program compiles it
//! for the GPU it runs on, and the tests compile it with NVRTC for fixed architectures, GPU
//! or not.

use shared::nvrtc::KernelFile;

/// The kernels use lambdas and `override`, both C++11, and nothing newer than C++17.
pub fn kernel_file() -> KernelFile {
    KernelFile::new(
        "reduce.cu",
        include_str!("../kernels/reduce.cu"),
        &["--std=c++17"],
    )
}

/// The kernel file as a run compiles it: with `--modulus M`, `-DMODULUS=M`, which makes the
/// operation every variant applies (`op` in kernels/reduce.cu) addition modulo M; without,
/// the lab's own options alone, so the default run's kernels are the plain sum's.
pub fn kernel_file_for(modulus: Option<u32>) -> KernelFile {
    match modulus {
        Some(m) => kernel_file().with_option(format!("-DMODULUS={m}")),
        None => kernel_file(),
    }
}
