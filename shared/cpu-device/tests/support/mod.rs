//! What the CPU device's tests share: one launch of a loaded kernel over a line of blocks,
//! and reading its memory back.

use cpu_device::exec::{self, Fault, Launch};
use cpu_device::load::Module;
use cpu_device::memory::Memory;

/// Run `kernel` of `module` on `grid` blocks of `block` threads, with the launch's
/// parameter bytes `params`, on `threads` host threads: the fault, if one stopped it.
pub fn launch(
    module: &Module,
    kernel: &str,
    [grid, block]: [u32; 2],
    params: &[u8],
    memory: &Memory,
    threads: usize,
) -> Result<(), Fault> {
    let snapshot = memory.snapshot().expect("a snapshot");
    let launch = Launch {
        module,
        function: module.function(kernel).expect("the kernel exists"),
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        dynamic_shared: 0,
        params,
        memory: &snapshot,
    };
    exec::run(&launch, threads)
}

/// `bytes` bytes of `memory` from `address`.
pub fn read(memory: &Memory, address: u64, bytes: usize) -> Vec<u8> {
    let mut out = vec![0u8; bytes];
    memory.read(address, &mut out).expect("read back");
    out
}
