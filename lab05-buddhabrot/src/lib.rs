//! lab05-buddhabrot: the Buddhabrot on the CPU and on the GPU, with identical canvases.
//!
//! Read in this order:
//! - [`rng`]: the counter-based generator that makes every sample reproducible anywhere;
//! - [`orbit`]: one sample, from its point c to the counts its orbit adds (the same
//!   arithmetic as `kernels/buddhabrot.cu`);
//! - [`config`]: the command line and the numbers both backends share;
//! - [`cpu`] and [`gpu`]: the two backends;
//! - [`output`]: the PNG, the raw canvas, the statistics.

pub mod config;
pub mod cpu;
pub mod gpu;
pub mod orbit;
pub mod output;
pub mod rng;
