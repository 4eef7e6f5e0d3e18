//! The elements the grader hands lab06's CPU variants: one file, compiled into the grader
//! (which computes the expected total from them) and into the harness it plants in the
//! student's build (which hands them to the variants), so both see the same elements.

/// `n` whole numbers from 0 to 3, drawn from `seed` (splitmix64): every partial result of
/// the grader's operation is then a whole number below 2^24, exact in an `f32` in any order.
pub fn elements(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (z % 4) as f32
        })
        .collect()
}
