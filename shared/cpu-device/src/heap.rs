//! Device `malloc` and `free`: a kernel's heap, one region of device memory of the size the
//! GPU's driver gives by default (`cudaLimitMallocHeapSize`, 8 MiB), allocated when a module
//! that calls them loads and freed with it. Blocks are handed out first fit, 16-byte
//! aligned as the GPU's are, and filled with 0xff bytes (the GPU's are not zeroed: a kernel
//! that reads what it never wrote goes wrong here too). A heap with no room left gives a
//! null pointer, as the GPU's does. Written here: the heap is a few lines over the region
//! the interpreter already checks every access against, and no allocator crate hands out
//! blocks of memory it does not own.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::memory::Region;

/// The GPU driver's default heap size (CUDA C++ Programming Guide, "Dynamic Global Memory
/// Allocation and Operations").
pub const HEAP_BYTES: u64 = 8 << 20;

/// Blocks are aligned (and sized) in these many bytes, as the GPU's `malloc` aligns them.
const ALIGN: u64 = 16;

/// A module's heap: its region, the blocks handed out and the ranges free, by offset.
#[derive(Debug)]
pub struct Heap {
    pub region: Region,
    blocks: Mutex<Blocks>,
}

#[derive(Debug)]
struct Blocks {
    /// Offset to size of every block handed out and not freed.
    live: BTreeMap<u64, u64>,
    /// Offset to size of every free range, neighbours merged.
    free: BTreeMap<u64, u64>,
}

impl Heap {
    pub fn new(region: Region) -> Heap {
        Heap {
            region,
            blocks: Mutex::new(Blocks {
                live: BTreeMap::new(),
                free: BTreeMap::from([(0, region.size)]),
            }),
        }
    }

    /// A block of `size` bytes: its device address, or 0 where the heap has no room (and for
    /// a size of 0, as the GPU gives).
    pub fn malloc(&self, size: u64) -> u64 {
        let Some(size) = size.checked_next_multiple_of(ALIGN).filter(|&s| s > 0) else {
            return 0;
        };
        let Ok(mut blocks) = self.blocks.lock() else {
            return 0;
        };
        let Some((&at, &len)) = blocks.free.iter().find(|(_, &len)| len >= size) else {
            return 0;
        };
        blocks.free.remove(&at);
        if len > size {
            blocks.free.insert(at + size, len - size);
        }
        blocks.live.insert(at, size);
        let address = self.region.address + at;
        for word in (0..size).step_by(8) {
            // SAFETY: inside the heap's region (its blocks lie within it), which lives as long
            // as the module; a relaxed store, as every global access is.
            unsafe { crate::memory::store(address + word, 8, u64::MAX) };
        }
        address
    }

    /// Give back the block at `address` (a null pointer: nothing). Err: the address is not a
    /// block's that `malloc` gave and `free` has not taken back.
    pub fn free(&self, address: u64) -> Result<(), String> {
        if address == 0 {
            return Ok(());
        }
        let not_a_block = || {
            format!("free(0x{address:x}): not a pointer that malloc returned and free has not taken back")
        };
        let at = address
            .checked_sub(self.region.address)
            .ok_or_else(not_a_block)?;
        let mut blocks = self
            .blocks
            .lock()
            .map_err(|_| "the heap's lock is poisoned")?;
        let mut size = blocks.live.remove(&at).ok_or_else(not_a_block)?;
        let mut start = at;
        // Merged with the free ranges on either side.
        if let Some((&before, &len)) = blocks.free.range(..at).next_back() {
            if before + len == at {
                blocks.free.remove(&before);
                start = before;
                size += len;
            }
        }
        if let Some(len) = blocks.free.remove(&(start + size)) {
            size += len;
        }
        blocks.free.insert(start, size);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Memory;

    /// First fit, 16-byte blocks, a null pointer when full, and a block freed between two
    /// others merged with its free neighbours so that one large block fits again. Catches
    /// an allocator that overlaps blocks, never reuses what was freed, or takes any address
    /// for a block.
    #[test]
    fn blocks_are_aligned_reused_merged_and_refused_when_full() {
        let memory = Memory::default();
        let region = memory.alloc(256, "heap").expect("allocated");
        let heap = Heap::new(region);
        let a = heap.malloc(1);
        let b = heap.malloc(100);
        let c = heap.malloc(16);
        assert_eq!(
            [a, b, c].map(|p| p - region.address),
            [0, 16, 128],
            "16-byte aligned, in order"
        );
        assert_eq!(heap.malloc(0), 0, "nothing for no bytes");
        assert_eq!(heap.malloc(200), 0, "no room");
        let mut byte = [0u8; 1];
        memory.read(b, &mut byte).expect("read");
        assert_eq!(byte, [0xff], "not zeroed");
        heap.free(b).expect("freed");
        heap.free(a).expect("freed");
        assert_eq!(heap.malloc(128) - region.address, 0, "a and b merged");
        heap.free(c).expect("freed");
        assert!(heap.free(c).is_err(), "twice");
        assert!(heap.free(region.address + 4).is_err(), "inside a block");
        assert!(heap.free(1).is_err(), "below the heap");
        assert_eq!(heap.free(0), Ok(()), "a null pointer");
    }
}
