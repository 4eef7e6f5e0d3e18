//! The colours of the original program.

/// One pixel as it is stored in a PPM file: red, green, blue.
pub type Rgb = [u8; 3];

/// The iteration limit. The counter is an unsigned 8-bit value, as in the C original.
pub const MAX_ITER: u8 = 255;

/// The 16 colours, in the order the original program lists them.
pub const PALETTE: [Rgb; 16] = [
    [66, 30, 15],
    [25, 7, 26],
    [9, 1, 47],
    [4, 4, 73],
    [0, 7, 100],
    [12, 44, 138],
    [24, 82, 177],
    [57, 125, 209],
    [134, 181, 229],
    [211, 236, 248],
    [241, 233, 191],
    [248, 201, 95],
    [255, 170, 0],
    [204, 128, 0],
    [153, 87, 0],
    [106, 52, 3],
];

/// Black: points that never escaped, and points that escaped at once.
pub const BLACK: Rgb = [0, 0, 0];

/// The colour of a pixel from its escape counter: 0 and `MAX_ITER` are black, every other
/// count cycles through the palette.
#[inline]
pub fn colour(counter: u8) -> Rgb {
    if counter == 0 || counter == MAX_ITER {
        BLACK
    } else {
        PALETTE[usize::from(counter % 16)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn black_at_both_ends_and_palette_in_between() {
        assert_eq!(colour(0), BLACK);
        assert_eq!(colour(MAX_ITER), BLACK);
        assert_eq!(colour(1), [25, 7, 26]);
        assert_eq!(colour(16), [66, 30, 15]);
        assert_eq!(colour(254), PALETTE[14]);
    }
}
