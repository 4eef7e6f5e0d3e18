//! SplitMix64 (Steele, Lea and Flood, 2014): a small seeded generator that gives the same
//! numbers on every machine, for what must be drawn alike everywhere (the differential
//! test's kernels, the fuzzer's PTX, crosscheck's buffers). Written here: a dependency for
//! eight lines would be more than the lines.

/// The generator's state: the seed, moved on by every draw.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 where `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sequence is SplitMix64's: its first outputs for seed 0 (the reference values).
    #[test]
    fn the_first_draws_are_splitmix64s() {
        let mut random = SplitMix64(0);
        assert_eq!(random.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(random.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }
}
