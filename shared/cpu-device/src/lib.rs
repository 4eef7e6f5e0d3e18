//! The CPU device: the GPU labs' kernels run on the CPU, from the very PTX NVRTC makes for
//! the GPU, to the same bytes.
//!
//! A lab started with `--emulate` loads this library in place of the NVIDIA driver
//! (`shared::gpu`), so its host code is unchanged: cudarc's calls land in [`driver`], which
//! keeps device memory in host memory ([`memory`]), loads PTX ([`load`]) and runs kernels
//! ([`exec`]) with the H100's arithmetic ([`float`], [`half`], [`approx`]).
//!
//! Why an interpreter of our own: no maintained one does the job. `ptoxide` (0.1.0, 2023)
//! has no atomics, shuffles or indirect calls; GPGPU-Sim needs the CUDA toolkit to build
//! and runs SASS-level timing models, far slower. The labs' kernels compile to a few dozen
//! kinds of PTX instruction, and PTX's semantics are written down (the PTX ISA); what it
//! leaves to the hardware (the approximate instructions: `rsqrt` inside `hypot`, `ex2` inside
//! `expf`) was measured on an H100 for every input and ships as tables ([`approx`]).

pub mod approx;
pub mod counts;
pub mod driver;
pub mod exec;
pub mod float;
pub mod half;
pub mod heap;
pub mod ir;
pub mod lex;
pub mod load;
pub mod memory;
pub mod model;
pub mod ops;
pub mod picture;
pub mod printf;
pub mod profile;
