//! lab05-buddhabrot: the Buddhabrot on the CPU and on the GPU, with identical canvases.
//!
//! Read in this order:
//! - [`rng`]: the counter-based generator that makes every sample reproducible anywhere;
//! - [`orbit`]: one sample, from its point c to the counts its orbit adds (the same
//!   arithmetic as `kernels/buddhabrot.cu`);
//! - [`config`]: the command line and the numbers both backends share;
//! - [`cpu`] and [`gpu`]: the two backends;
//! - [`devices`] and [`reduce`]: several GPUs, each with a share of the samples, and the
//!   sum of their canvases;
//! - [`output`]: the PNG, the raw canvas, the statistics.

pub mod config;
pub mod cpu;
pub mod devices;
pub mod gpu;
pub mod orbit;
pub mod output;
pub mod reduce;
pub mod rng;
