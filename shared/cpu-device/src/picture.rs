//! A launch's warps as a picture (`--profile-png`): one pixel a thread, where the launch's
//! grid puts it, coloured by what its warp spent: bright where the warp issued many
//! instructions (relative to the launch's busiest), dark where few; green where its lanes
//! were all busy, through yellow, to red where most of them waited on the others (SIMT
//! efficiency). For a Mandelbrot lab with one thread a pixel, the picture is the image: a
//! student sees where the warps lose their lanes, on the set's edge.

use crate::counts::WarpCount;

/// The most rows a picture has: a grid of more blocks shows its first ones.
pub const MAX_ROWS: u32 = 8192;

/// The picture of a launch of `grid` blocks of `block` threads whose warps counted
/// `warps` (in block order): width, height and RGB bytes, rows top to bottom. A grid of
/// one dimension (and one-dimensional blocks) is drawn a block a row; any other as a plane,
/// x across and y down (z stacked below).
pub fn render(grid: [u32; 3], block: [u32; 3], warps: &[WarpCount]) -> (u32, u32, Vec<u8>) {
    let threads = block.iter().product::<u32>().max(1);
    let warps_per_block = threads.div_ceil(32) as usize;
    let flat = grid[1] * grid[2] == 1 && block[1] * block[2] == 1;
    let (width, height) = if flat {
        (block[0], grid[0].min(MAX_ROWS))
    } else {
        (
            grid[0] * block[0],
            (grid[1] * block[1] * grid[2] * block[2]).min(MAX_ROWS),
        )
    };
    let busiest = warps.iter().map(|w| w.issued).max().unwrap_or(0).max(1) as f64;
    let colour = |w: &WarpCount| -> [u8; 3] {
        let efficiency = w.active as f64 / (32.0 * w.issued.max(1) as f64);
        // Square root: a warp that issued a hundredth of the busiest still shows.
        let light = 0.15 + 0.85 * (w.issued as f64 / busiest).sqrt();
        let red = (2.0 * (1.0 - efficiency)).min(1.0);
        let green = (2.0 * efficiency).min(1.0);
        [
            (255.0 * red * light) as u8,
            (255.0 * green * light) as u8,
            0,
        ]
    };
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    for (y, row) in pixels.chunks_exact_mut(width as usize * 3).enumerate() {
        let y = y as u32;
        for (x, pixel) in row.chunks_exact_mut(3).enumerate() {
            let x = x as u32;
            // The block and the thread in it that this pixel is.
            let (linear_block, thread) = if flat {
                (u64::from(y), x)
            } else {
                let (plane_rows, block_rows) = (grid[1] * block[1], block[1]);
                let (z, y) = (y / plane_rows, y % plane_rows);
                let (bz, tz) = (z / block[2], z % block[2]);
                let b = [x / block[0], y / block_rows, bz];
                let t = [x % block[0], y % block_rows, tz];
                (
                    (u64::from(b[2]) * u64::from(grid[1]) + u64::from(b[1])) * u64::from(grid[0])
                        + u64::from(b[0]),
                    (t[2] * block[1] + t[1]) * block[0] + t[0],
                )
            };
            let index = linear_block as usize * warps_per_block + (thread / 32) as usize;
            if let Some(w) = warps.get(index) {
                pixel.copy_from_slice(&colour(w));
            }
        }
    }
    (width, height, pixels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warp(block: u64, warp: u32, issued: u64, active: u64) -> WarpCount {
        WarpCount {
            block,
            warp,
            issued,
            active,
        }
    }

    /// Two blocks of 64x1 threads side by side: each warp's 32 pixels in its colour, the
    /// busiest full warp brightest green, a warp at half its lanes yellow, a warp of few
    /// instructions dark.
    #[test]
    fn each_thread_takes_its_warps_colour_where_the_grid_puts_it() {
        let warps = [
            warp(0, 0, 100, 3200),
            warp(0, 1, 100, 1600),
            warp(1, 0, 1, 32),
            warp(1, 1, 100, 800),
        ];
        let (width, height, pixels) = render([2, 1, 1], [32, 2, 1], &warps);
        assert_eq!((width, height), (64, 2));
        let at = |x: usize, y: usize| &pixels[(y * 64 + x) * 3..][..3];
        assert_eq!(at(0, 0), [0, 255, 0]);
        assert_eq!(at(31, 1), [255, 255, 0], "block 0, warp 1: the second row");
        let dark = at(32, 0);
        assert!(dark[1] < 80 && dark[0] == 0, "{dark:?}");
        assert_eq!(at(63, 1), [255, 127, 0]);
    }

    /// A one-dimensional grid: a block a row.
    #[test]
    fn a_flat_grid_is_a_block_a_row() {
        let warps = [warp(0, 0, 10, 320), warp(1, 0, 10, 160)];
        let (width, height, pixels) = render([2, 1, 1], [32, 1, 1], &warps);
        assert_eq!((width, height), (32, 2));
        assert_eq!(&pixels[..3], [0, 255, 0]);
        assert_eq!(&pixels[32 * 3..][..3], [255, 255, 0]);
    }
}
