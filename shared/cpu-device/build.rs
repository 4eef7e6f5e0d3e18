//! The library answers to the name cudarc asks the dynamic loader for first: once a lab has
//! loaded it by path (`shared::gpu`, under `--emulate`), the loader hands this library out
//! for `libcuda.so` instead of looking for the NVIDIA driver.

use std::io::Write;

fn main() {
    // A build script talks to cargo on stdout; a failure to write is cargo's to report.
    let _ = writeln!(
        std::io::stdout(),
        "cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so"
    );
}
