//! The numbers every variant sums, chosen so that the sum is exact in any order.
//!
//! Float addition rounds, so a sum usually depends on the order of the additions, and a GPU
//! adds in a different order every run (warps, blocks and atomics finish when they finish).
//! To check every variant to the last bit, the values are small whole numbers (0, 1, 2 or 3)
//! whose total is at most 2^24. Every partial sum, in any order, is then a whole number no
//! larger than 2^24, and every such number is exactly representable in an `f32` (its 24-bit
//! significand), so no addition ever rounds.
//!
//! Above 2^22 elements not every element can be non-zero (the total would pass 2^24), so
//! only every `stride`-th one is: the memory traffic is the same, and the data is never all
//! zeros (which could hide a kernel that reads nothing).

use rayon::prelude::*;
use shared::{Error, Result};

/// At most this many elements are non-zero; each is at most 3, so the total is at most
/// 3 * 2^22 < 2^24.
const NON_ZERO_AT_MOST: u64 = 1 << 22;

/// `n` values and their exact total, computed in integers.
pub fn make(n: usize) -> Result<(Vec<f32>, u64)> {
    let bytes = n * std::mem::size_of::<f32>();
    if let Some(available) = available_memory() {
        if bytes > available {
            return Err(out_of_memory(
                bytes,
                &format!("{} MiB available", available >> 20),
            ));
        }
    }
    let mut data = Vec::new();
    data.try_reserve_exact(n)
        .map_err(|_| out_of_memory(bytes, "the allocation failed"))?;

    let stride = stride(n as u64);
    (0..n)
        .into_par_iter()
        .map(|i| value(i as u64, stride) as f32)
        .collect_into_vec(&mut data);
    let total = (0..n)
        .into_par_iter()
        .map(|i| u64::from(value(i as u64, stride)))
        .sum();
    Ok((data, total))
}

/// Every `stride`-th element is non-zero: 1 up to 2^22 elements, then just enough to keep at
/// most 2^22 non-zero elements.
fn stride(n: u64) -> u64 {
    n.div_ceil(NON_ZERO_AT_MOST).max(1)
}

/// Element `i`: 1, 2 or 3 (scrambled) where `i` is a multiple of `stride`, else 0.
fn value(i: u64, stride: u64) -> u32 {
    if !i.is_multiple_of(stride) {
        return 0;
    }
    // splitmix64's finaliser: neighbouring indices get unrelated values.
    let mut x = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    1 + (x % 3) as u32
}

/// Free memory as Linux counts it (MemAvailable), if it can be read.
fn available_memory() -> Option<usize> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

fn out_of_memory(bytes: usize, why: &str) -> Error {
    Error::OutOfMemory(format!(
        "the data needs {} MiB of host memory ({why}); try a smaller --n",
        bytes.div_ceil(1 << 20)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_stay_exact_in_f32() {
        for n in [1u64, 7, 1 << 22, (1 << 22) + 1, 1 << 25, 3_000_000_000] {
            let stride = stride(n);
            let non_zero = n.div_ceil(stride);
            assert!(non_zero <= NON_ZERO_AT_MOST, "n = {n}");
            assert!(3 * non_zero <= 1 << 24, "n = {n}");
        }
    }

    #[test]
    fn small_arrays_have_no_zeros_and_the_right_total() {
        let (data, total) = make(1000).unwrap();
        assert!(data.iter().all(|&x| (1.0..=3.0).contains(&x)));
        assert_eq!(total, data.iter().map(|&x| x as u64).sum::<u64>());
    }

    #[test]
    fn large_arrays_are_sparse_but_not_empty() {
        let n = (1 << 22) + 5;
        let (data, total) = make(n).unwrap();
        assert_eq!(stride(n as u64), 2);
        assert!(data.iter().skip(1).step_by(2).all(|&x| x == 0.0));
        assert!(total > 0);
        assert_eq!(total, data.iter().map(|&x| x as u64).sum::<u64>());
    }
}
