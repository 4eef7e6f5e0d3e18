//! The library answers to the name cudarc asks the dynamic loader for first: once a lab has
//! loaded it by path (`shared::gpu`, under `--emulate`), the loader hands this library out
//! for `libcuda.so` instead of looking for the NVIDIA driver.

use std::io::Write;

fn main() {
    // ELF systems only: Windows finds the library by its file's name instead (see
    // `shared::gpu::use_cpu_device`), and macOS has no NVRTC to run it with.
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os != "windows" && os != "macos" {
        // A build script talks to cargo on stdout; a failure to write is cargo's to report.
        let _ = writeln!(
            std::io::stdout(),
            "cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so"
        );
    }
}
