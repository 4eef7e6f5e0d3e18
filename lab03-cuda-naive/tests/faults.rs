//! lab03 under faults that need no GPU: a bad output path fails before the GPU is even opened,
//! every number notation, the help text. With a GPU (ignored otherwise): SIGKILL in the
//! middle of a large run leaves nothing. The checks are shared (`shared::fault_testing`).
//!
//! Unix only: these faults (signals, modes, FIFOs, resource limits) are Unix's.
#![cfg(unix)]

use shared::fault_testing::*;

shared::gpu_fault_tests! {
    lab: "lab03",
    help: "Naive CUDA Mandelbrot: one block per row, default compiler flags",
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn signals_leave_nothing_behind() {
    // lab03 writes its image in one call, so the file shows no bytes until the very end: the
    // signal comes while the lab works with its output open (a 192 MiB image, the tallest
    // this test waits for). Waiting for 64 MiB of a 48 MiB image, as this test once did,
    // could only fail.
    assert_signals_leave_nothing("lab03", &["1024", "65536"], "out.ppm", 0);
}
