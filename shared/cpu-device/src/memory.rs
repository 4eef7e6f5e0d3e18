//! Device memory: every allocation is host memory, and its device address is its host
//! address, so a kernel's pointer is used as is once it is checked. Every access a kernel
//! makes is checked against the allocation it falls in (see `exec`), with the allocations
//! of the launch in a sorted snapshot; every bound is computed in checked arithmetic, so no
//! address, however large, wraps around into a range that passes.
//!
//! A kernel's global accesses are relaxed atomics of their own size ([`load`], [`store`],
//! [`atomic`]): blocks run on several host threads at once, and a kernel may race on a word
//! (as it may on the GPU, with an open result); an aligned relaxed access is one plain move
//! on x86-64 and AArch64, so this costs nothing and keeps every race defined. Shared, local
//! and parameter memory belong to one host thread and are plain slices ([`get`], [`put`]).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Mutex;

use crate::ir::{AtomOp, Ty};
use crate::ops::atom_value;

/// Allocations are aligned as `cudaMalloc`'s are (256 bytes), so a kernel's aligned vector
/// loads are aligned here too.
const ALIGN: usize = 256;

/// An allocation handed out: its device (and host) address and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub address: u64,
    pub size: u64,
}

#[derive(Debug)]
struct Allocation {
    size: u64,
    name: String,
}

/// Every live allocation, by address.
#[derive(Default, Debug)]
pub struct Memory {
    live: Mutex<BTreeMap<u64, Allocation>>,
    count: Mutex<u64>,
}

/// The allocations of a launch, sorted by address, for lock-free checks.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    ranges: Vec<(u64, u64, String)>,
}

impl Memory {
    /// `size` zeroed bytes, named for error messages (`allocation 3`, `` `palette` ``).
    pub fn alloc(&self, size: u64, name: &str) -> Result<Region, String> {
        let layout = Layout::from_size_align(size.max(1) as usize, ALIGN)
            .map_err(|_| format!("cannot allocate {size} bytes"))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(format!("out of host memory allocating {size} bytes"));
        }
        let address = ptr as u64;
        let mut count = self.count.lock().map_err(|_| "memory lock poisoned")?;
        *count += 1;
        let name = if name.is_empty() {
            format!("allocation {count}")
        } else {
            name.to_string()
        };
        self.live
            .lock()
            .map_err(|_| "memory lock poisoned")?
            .insert(address, Allocation { size, name });
        Ok(Region { address, size })
    }

    /// Free the allocation that starts at `address`.
    pub fn free(&self, address: u64) -> Result<(), String> {
        let allocation = self
            .live
            .lock()
            .map_err(|_| "memory lock poisoned")?
            .remove(&address)
            .ok_or_else(|| format!("0x{address:x} is not the start of an allocation"))?;
        let layout = Layout::from_size_align(allocation.size.max(1) as usize, ALIGN)
            .map_err(|_| "bad layout")?;
        // SAFETY: `address` came from `alloc_zeroed` with this very layout, and is removed
        // from the map, so it is freed once.
        unsafe { dealloc(address as *mut u8, layout) };
        Ok(())
    }

    /// Check that `[address, address + len)` lies inside one allocation.
    pub fn check(&self, address: u64, len: u64) -> Result<(), String> {
        let live = self.live.lock().map_err(|_| "memory lock poisoned")?;
        let end = address.checked_add(len);
        match live.range(..=address).next_back() {
            Some((&start, a)) if end.is_some_and(|end| end <= start + a.size) => Ok(()),
            _ => Err(format!(
                "{len} bytes at 0x{address:x} are not inside one device allocation"
            )),
        }
    }

    /// Copy `bytes` to device memory at `address`.
    pub fn write(&self, address: u64, bytes: &[u8]) -> Result<(), String> {
        self.check(address, bytes.len() as u64)?;
        // SAFETY: checked to lie inside a live allocation, which `bytes` cannot overlap
        // (it is host memory the caller owns, or another allocation by a distinct range).
        unsafe { std::ptr::copy(bytes.as_ptr(), address as *mut u8, bytes.len()) };
        Ok(())
    }

    /// Copy device memory at `address` into `out`.
    pub fn read(&self, address: u64, out: &mut [u8]) -> Result<(), String> {
        self.check(address, out.len() as u64)?;
        // SAFETY: as in `write`.
        unsafe { std::ptr::copy(address as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Set `len` bytes at `address` to `value`.
    pub fn fill(&self, address: u64, value: u8, len: u64) -> Result<(), String> {
        self.check(address, len)?;
        // SAFETY: as in `write`.
        unsafe { std::ptr::write_bytes(address as *mut u8, value, len as usize) };
        Ok(())
    }

    pub fn snapshot(&self) -> Result<Snapshot, String> {
        let live = self.live.lock().map_err(|_| "memory lock poisoned")?;
        Ok(Snapshot {
            ranges: live
                .iter()
                .map(|(&start, a)| (start, start + a.size, a.name.clone()))
                .collect(),
        })
    }
}

impl Snapshot {
    /// The index of the allocation holding `[address, address + len)`, if one does.
    pub fn find(&self, address: u64, len: u64) -> Option<usize> {
        let i = self.ranges.partition_point(|r| r.0 <= address);
        let i = i.checked_sub(1)?;
        let (start, end, _) = &self.ranges[i];
        (address >= *start && address.checked_add(len)? <= *end).then_some(i)
    }

    pub fn range(&self, i: usize) -> (u64, u64) {
        (self.ranges[i].0, self.ranges[i].1)
    }

    /// The allocations, in address order.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Where `address` is, in words: inside, before or after which allocation.
    pub fn describe(&self, address: u64, len: u64) -> String {
        let i = self.ranges.partition_point(|r| r.0 <= address);
        let before = i.checked_sub(1).map(|i| &self.ranges[i]);
        let after = self.ranges.get(i);
        match (before, after) {
            (Some((s, e, name)), _) if address < *e => format!(
                "{len} bytes at offset {} of {name} ({} bytes at 0x{s:x}) run {} bytes past its end",
                address - s,
                e - s,
                u128::from(address) + u128::from(len) - u128::from(*e)
            ),
            (Some((s, e, name)), Some((s2, e2, name2))) => {
                if address - e < s2 - address {
                    format!("{} bytes past the end of {name} ({} bytes at 0x{s:x})", address - e, e - s)
                } else {
                    format!("{} bytes before {name2} ({} bytes at 0x{s2:x})", s2 - address, e2 - s2)
                }
            }
            (Some((s, e, name)), None) => {
                format!("{} bytes past the end of {name} ({} bytes at 0x{s:x})", address - e, e - s)
            }
            (None, Some((s, e, name))) => {
                format!("{} bytes before {name} ({} bytes at 0x{s:x})", s - address, e - s)
            }
            (None, None) => "no device memory is allocated".to_string(),
        }
    }
}

/// A global access's value: `size` bytes (1, 2, 4 or 8) at `address`, little-endian.
///
/// # Safety
/// `[address, address + size)` lies inside an allocation that stays live for the call
/// (`Snapshot::find` said so, and the driver frees nothing while a launch runs), and
/// `address` is a multiple of `size`.
#[inline(always)]
pub unsafe fn load(address: u64, size: u32) -> u64 {
    let p = address as *mut u8;
    // SAFETY: the caller's promise: in bounds, live, aligned to the atomic's size; every
    // concurrent access of the launch to these bytes is atomic too.
    unsafe {
        match size {
            1 => u64::from(AtomicU8::from_ptr(p).load(Relaxed)),
            2 => u64::from(AtomicU16::from_ptr(p.cast()).load(Relaxed)),
            4 => u64::from(AtomicU32::from_ptr(p.cast()).load(Relaxed)),
            _ => AtomicU64::from_ptr(p.cast()).load(Relaxed),
        }
    }
}

/// Store the low `size` bytes (1, 2, 4 or 8) of `v` at `address`.
///
/// # Safety
/// As for [`load`].
#[inline(always)]
pub unsafe fn store(address: u64, size: u32, v: u64) {
    let p = address as *mut u8;
    // SAFETY: as in `load`.
    unsafe {
        match size {
            1 => AtomicU8::from_ptr(p).store(v as u8, Relaxed),
            2 => AtomicU16::from_ptr(p.cast()).store(v as u16, Relaxed),
            4 => AtomicU32::from_ptr(p.cast()).store(v as u32, Relaxed),
            _ => AtomicU64::from_ptr(p.cast()).store(v, Relaxed),
        }
    }
}

/// `atom` on global memory: the old value, with `op` applied in one compare-and-swap loop.
///
/// # Safety
/// As for [`load`], with `ty`'s size (4 or 8 bytes).
pub unsafe fn atomic(address: u64, op: AtomOp, ty: Ty, b: u64, c: u64) -> u64 {
    if ty.bytes() == 4 {
        // SAFETY: the caller's promise.
        let cell = unsafe { AtomicU32::from_ptr(address as *mut u32) };
        let mut old = cell.load(Relaxed);
        loop {
            let new = atom_value(op, ty, u64::from(old), b, c) as u32;
            match cell.compare_exchange_weak(old, new, Relaxed, Relaxed) {
                Ok(_) => return u64::from(old),
                Err(now) => old = now,
            }
        }
    } else {
        // SAFETY: the caller's promise.
        let cell = unsafe { AtomicU64::from_ptr(address as *mut u64) };
        let mut old = cell.load(Relaxed);
        loop {
            let new = atom_value(op, ty, old, b, c);
            match cell.compare_exchange_weak(old, new, Relaxed, Relaxed) {
                Ok(_) => return old,
                Err(now) => old = now,
            }
        }
    }
}

/// `size` bytes (1, 2, 4 or 8) at `at` of one thread's own memory (shared, local or
/// parameter), little-endian; the caller has checked the range, and a slice checks again.
///
/// Each size is a copy of its own fixed width, one load: a copy of `size` bytes was a
/// `memcpy` call a lane (8% of lab05's profile).
#[inline(always)]
pub fn get(bytes: &[u8], at: usize, size: u32) -> u64 {
    match size {
        1 => u64::from(bytes[at]),
        2 => u64::from(u16::from_le_bytes(bytes_at(bytes, at))),
        4 => u64::from(u32::from_le_bytes(bytes_at(bytes, at))),
        8 => u64::from_le_bytes(bytes_at(bytes, at)),
        _ => {
            let mut word = [0u8; 8];
            let n = size.min(8) as usize;
            word[..n].copy_from_slice(&bytes[at..at + n]);
            u64::from_le_bytes(word)
        }
    }
}

/// Store the low `size` bytes (1, 2, 4 or 8) of `v` at `at` of one thread's own memory
/// (each size a store of its own width, as in `get`).
#[inline(always)]
pub fn put(bytes: &mut [u8], at: usize, size: u32, v: u64) {
    match size {
        1 => bytes[at] = v as u8,
        2 => bytes[at..at + 2].copy_from_slice(&(v as u16).to_le_bytes()),
        4 => bytes[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes()),
        8 => bytes[at..at + 8].copy_from_slice(&v.to_le_bytes()),
        _ => {
            let n = size.min(8) as usize;
            bytes[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
        }
    }
}

/// The `N` bytes at `at`.
#[inline(always)]
fn bytes_at<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut word = [0u8; N];
    word.copy_from_slice(&bytes[at..at + N]);
    word
}

/// Whether `size` bytes at `offset` fit in `len` bytes: in checked arithmetic, so that an
/// offset of -1 (2^64 - 1) is outside, not wrapped back in.
#[inline(always)]
pub fn fits(offset: u64, size: u32, len: usize) -> bool {
    offset
        .checked_add(u64::from(size))
        .is_some_and(|end| end <= len as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_is_checked_arithmetic() {
        assert!(fits(0, 4, 4));
        assert!(fits(12, 4, 16));
        assert!(!fits(13, 4, 16));
        assert!(!fits(u64::MAX, 4, 16));
        assert!(!fits(u64::MAX - 1, 4, 16));
        assert!(!fits(u64::MAX - 3, 4, 16));
    }

    #[test]
    fn thread_memory_is_little_endian() {
        let mut bytes = [0u8; 8];
        put(&mut bytes, 2, 4, 0x1122_3344_5566);
        assert_eq!(bytes, [0, 0, 0x66, 0x55, 0x44, 0x33, 0, 0]);
        assert_eq!(get(&bytes, 2, 2), 0x5566);
        assert_eq!(get(&bytes, 0, 8), 0x3344_5566_0000);
    }

    #[test]
    fn an_access_inside_is_found_and_one_past_the_end_is_described() {
        let memory = Memory::default();
        let a = memory.alloc(100, "").unwrap();
        let snap = memory.snapshot().unwrap();
        assert!(snap.find(a.address, 100).is_some());
        assert!(snap.find(a.address + 96, 4).is_some());
        assert!(snap.find(a.address + 97, 4).is_none());
        let said = snap.describe(a.address + 97, 4);
        assert!(
            said.contains("offset 97 of allocation 1 (100 bytes"),
            "{said}"
        );
        assert!(said.contains("run 1 bytes past its end"), "{said}");
        memory.write(a.address, &[1, 2, 3]).unwrap();
        let mut back = [0u8; 4];
        memory.read(a.address, &mut back).unwrap();
        assert_eq!(back, [1, 2, 3, 0]);
        assert!(memory.write(a.address + 98, &[1, 2, 3]).is_err());
        // An end past 2^64 wraps to a small number: still outside.
        assert!(memory.check(a.address, u64::MAX - a.address + 2).is_err());
        assert!(memory.fill(a.address + 1, 0, u64::MAX).is_err());
        assert!(snap.describe(u64::MAX, 8).contains("past the end"));
        memory.free(a.address).unwrap();
        assert!(memory.free(a.address).is_err());
    }
}
