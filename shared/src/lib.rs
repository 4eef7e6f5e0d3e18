//! What every lab needs alike, written once.
//!
//! - [`palette`]: the 16 colours and the counter-to-colour rule of the original program.
//! - [`mandelbrot`]: the reference per-pixel computation (lab01's semantics, exactly).
//! - [`view`]: the command-line view arguments every Mandelbrot lab shares.
//! - [`output`]: every file written, atomically, checked before the work (never a partial
//!   file, nothing left behind); [`ppm`]: the binary PPM header.
//! - [`number`]: the one parser behind every numeric flag.
//! - [`plan`]: which rows and pixels need the escape loop (mirror rows, the near-set box).
//! - [`progress`]: a progress bar on a terminal for long runs, at the cost of one atomic add.
//! - [`timing`]: phases, a human table on stderr, one JSON object on stdout.
//! - [`error`] and [`cli`]: one error type that prints one clear line, and argument parsing
//!   that reports bad input the same way.
//! - [`gpu`]: driver and NVRTC detection, context, kernel compilation, event timing.
//! - [`nvrtc`]: NVRTC alone, for the kernel checks that need no GPU.
//! - [`exercise`]: what the hand-out's stubs say when a student runs them unwritten.

pub mod cli;
pub mod error;
pub mod exercise;
/// The faults are Unix's (signals, modes, FIFOs, resource limits).
#[cfg(all(feature = "testing", unix))]
pub mod fault_testing;
pub mod gpu;
pub mod mandelbrot;
pub mod number;
pub mod nvrtc;
pub mod output;
pub mod palette;
pub mod plan;
pub mod ppm;
pub mod profile;
pub mod progress;
pub mod random;
#[cfg(feature = "testing")]
pub mod testing;
pub mod timing;
pub mod view;

pub use error::{Error, Result};
