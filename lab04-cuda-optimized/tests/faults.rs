//! lab04 under faults that need no GPU: a bad output path fails before the GPU is even opened,
//! every number notation, the help text. With a GPU (ignored otherwise): SIGKILL in the
//! middle of a large run leaves nothing. The checks are shared (`shared::fault_testing`).
//!
//! Unix only: these faults (signals, modes, FIFOs, resource limits) are Unix's.
#![cfg(unix)]

use shared::fault_testing::*;

shared::gpu_fault_tests! {
    lab: "lab04",
    help: "Optimised CUDA Mandelbrot, byte-identical to lab01",
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn signals_leave_nothing_behind() {
    if shared::testing::on_cpu_device() {
        // Mid-computation: the CPU device would interpret for minutes before the write.
        assert_signals_leave_nothing("lab04", &["4096", "4096"], "out.ppm", 0);
    } else {
        // Mid-write: once 256 MiB of the 3.2 GB image are in the file.
        assert_signals_leave_nothing("lab04", &["65536", "16384"], "out.ppm", 1 << 28);
    }
}
