//! Device memory: every allocation is host memory, and its device address is its host
//! address, so a kernel's pointer is used as is once it is checked. Every access a kernel
//! makes is checked against the allocation it falls in (see `exec`), with the allocations
//! of the launch in a sorted snapshot.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::sync::Mutex;

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
        match live.range(..=address).next_back() {
            Some((&start, a)) if address + len <= start + a.size => Ok(()),
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
                (address + len) - e
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

#[cfg(test)]
mod tests {
    use super::*;

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
        memory.free(a.address).unwrap();
        assert!(memory.free(a.address).is_err());
    }
}
