//! The random numbers: Philox2x32-10, a counter-based generator, and its conversion to f32.
//!
//! Why counter-based: a sample's two random numbers are a pure function of (seed, sample
//! index). There is no generator state to carry from one sample to the next, so it does not
//! matter which CPU thread or which GPU thread draws sample 12345, nor in which order: both
//! backends see exactly the same sample points, whatever the thread count or launch size.
//! A stateful generator (curand's XORWOW, as in the PyCUDA Buddhabrot this lab retells) gives
//! each thread its own stream, and the points then depend on how the work was split.
//!
//! `kernels/buddhabrot.cu` has the same two functions, line for line. Philox needs only
//! 32-bit multiplies (a 32 x 32 -> 64-bit product as high and low halves), which the GPU
//! does in one instruction each; a 64-bit multiply would take several.

/// Philox's round multiplier and key increment (Salmon et al., "Parallel random numbers: as
/// easy as 1, 2, 3", SC 2011).
const MULTIPLIER: u32 = 0xD256_D193;
const KEY_STEP: u32 = 0x9E37_79B9;

/// Philox2x32 with 10 rounds: two 32-bit counter words and a 32-bit key in, two
/// well-mixed 32-bit words out.
pub fn philox2x32_10(counter: [u32; 2], key: u32) -> [u32; 2] {
    let [mut c0, mut c1] = counter;
    let mut key = key;
    for round in 0..10 {
        if round > 0 {
            key = key.wrapping_add(KEY_STEP);
        }
        let product = u64::from(MULTIPLIER) * u64::from(c0);
        let (hi, lo) = ((product >> 32) as u32, product as u32);
        (c0, c1) = (hi ^ key ^ c1, lo);
    }
    [c0, c1]
}

/// A uniform f32 in [0, 1): the top 24 bits, scaled by 2^-24. Both steps are exact in f32
/// (24 bits fit the significand, the scale is a power of two), so no rounding mode can make
/// the two backends disagree.
pub fn uniform(bits: u32) -> f32 {
    (bits >> 8) as f32 * (1.0 / 16_777_216.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The known-answer vectors published with Random123 (kat_vectors, philox2x32 10).
    #[test]
    fn philox_matches_the_reference_vectors() {
        assert_eq!(philox2x32_10([0, 0], 0), [0xff1d_ae59, 0x6cd1_0df2]);
        assert_eq!(
            philox2x32_10([0xffff_ffff, 0xffff_ffff], 0xffff_ffff),
            [0x2c3f_628b, 0xab4f_d7ad]
        );
        assert_eq!(
            philox2x32_10([0x243f_6a88, 0x85a3_08d3], 0x1319_8a2e),
            [0xdd7c_e038, 0xf62a_4c12]
        );
    }

    #[test]
    fn uniform_covers_zero_to_just_below_one() {
        assert_eq!(uniform(0), 0.0);
        assert_eq!(uniform(0xff), 0.0);
        assert_eq!(uniform(0x100), 1.0 / 16_777_216.0);
        assert_eq!(uniform(u32::MAX), 1.0 - 1.0 / 16_777_216.0);
    }
}
