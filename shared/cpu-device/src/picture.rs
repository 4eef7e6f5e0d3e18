//! A launch's warps as a picture (`--profile-png`): one pixel a thread, where the launch's
//! grid puts it, coloured by what its warp spent: bright where the warp issued many
//! instructions (relative to the launch's busiest), dark where few; green where its lanes
//! were all busy, through yellow, to red where most of them waited on the others (SIMT
//! efficiency). For a Mandelbrot lab with one thread a pixel, the picture is the image: a
//! student sees where the warps lose their lanes, on the set's edge. A lab whose threads
//! are not its pixels lays the picture out itself ([`render_at`]).

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
    let busiest = busiest(warps);
    let colour = |w: &WarpCount| colour(w, busiest);
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

/// The most instructions a warp of `warps` issued (at least 1): the brightest colour's.
fn busiest(warps: &[WarpCount]) -> f64 {
    warps.iter().map(|w| w.issued).max().unwrap_or(0).max(1) as f64
}

/// Warp `w`'s colour, in a launch whose busiest warp issued `busiest` instructions.
fn colour(w: &WarpCount, busiest: f64) -> [u8; 3] {
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
}

/// The picture of a launch laid out by the lab instead of by its grid: `width` x `height`
/// pixels (RGB, rows top to bottom), where `places[k]` is the pixel (`y * width + x`) that
/// thread `k` of the launch (threads numbered block after block, `block` threads each)
/// stands for. A list longer than the launch's threads goes round again: entry `k` is then
/// a place of thread `k` modulo the launch's threads, as a grid-stride loop's later turns
/// are the same threads' (lab05: a sample a place, drawn where its point c lies). Each
/// pixel is the average colour of the warps placed on it; black where none is; a place
/// off the picture (`u32::MAX` for "nowhere") is left out.
pub fn render_at(
    width: u32,
    height: u32,
    grid: [u32; 3],
    block: [u32; 3],
    warps: &[WarpCount],
    places: &[u32],
) -> Vec<u8> {
    let per_block = u64::from(block.iter().product::<u32>().max(1));
    // In u64: a grid's three dimensions multiply past u32.
    let blocks = grid.iter().map(|&g| u64::from(g)).product::<u64>().max(1);
    let threads = blocks * per_block;
    let warps_per_block = per_block.div_ceil(32);
    let busiest = busiest(warps);
    let pixels = width as usize * height as usize;
    // Each place's colour, sorted by pixel: memory for the places, not for sums over every
    // pixel of a large canvas (a 16384 x 16384 one would need 4 GiB of them).
    let mut placed: Vec<(usize, [u8; 3])> = places
        .iter()
        .enumerate()
        .filter(|&(_, &place)| (place as usize) < pixels)
        .filter_map(|(k, &place)| {
            let thread = k as u64 % threads;
            let warp = (thread / per_block) * warps_per_block + (thread % per_block) / 32;
            let w = warps.get(usize::try_from(warp).ok()?)?;
            Some((place as usize, colour(w, busiest)))
        })
        .collect();
    placed.sort_unstable_by_key(|&(pixel, _)| pixel);
    let mut out = vec![0u8; pixels * 3];
    for group in placed.chunk_by(|a, b| a.0 == b.0) {
        let n = group.len() as u64;
        let pixel = &mut out[group[0].0 * 3..][..3];
        for (channel, value) in pixel.iter_mut().enumerate() {
            let sum: u64 = group.iter().map(|p| u64::from(p.1[channel])).sum();
            *value = (sum / n) as u8;
        }
    }
    out
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

    /// A lab's layout: threads placed where it says, several on a pixel averaged, pixels
    /// nobody was placed on black, places off the picture left out, and a list longer than
    /// the launch going round its threads again.
    #[test]
    fn placed_threads_take_their_warps_colour_where_the_lab_says() {
        // Two blocks of 64 threads: warp 0 the busiest with every lane busy (a sample of
        // the main cardioid without the bulb check: every lane to the iteration limit),
        // warp 1 the same work at half its lanes, warps 2 and 3 little work.
        let warps = [
            warp(0, 0, 100, 3200),
            warp(0, 1, 100, 1600),
            warp(1, 0, 1, 32),
            warp(1, 1, 1, 32),
        ];
        let (width, height) = (4, 2);
        let nowhere = u32::MAX;
        let mut places = vec![nowhere; 128];
        places[5] = 0; // a thread of warp 0 at (0, 0)
        places[40] = 1; // warp 1 at (1, 0)
        places[0] = 2; // warp 0 and warp 1 share (2, 0)
        places[33] = 2;
        places[127] = 8; // off the picture: left out
                         // Entry 128 + 31 is thread 31 again (warp 0), on the second turn, at (3, 1).
        places.extend(std::iter::repeat_n(nowhere, 31));
        places.push(7);
        let pixels = render_at(width, height, [2, 1, 1], [64, 1, 1], &warps, &places);
        assert_eq!(pixels.len(), 4 * 2 * 3);
        let at = |x: usize, y: usize| &pixels[(y * 4 + x) * 3..][..3];
        assert_eq!(at(0, 0), [0, 255, 0], "the busiest warp, all lanes busy");
        assert_eq!(at(1, 0), [255, 255, 0], "half its lanes");
        assert_eq!(at(2, 0), [127, 255, 0], "the average of the two");
        assert_eq!(at(3, 0), [0, 0, 0], "nobody placed here");
        assert_eq!(
            at(3, 1),
            [0, 255, 0],
            "a later turn of thread 31: warp 0's colour"
        );
        assert!(pixels[12..21].iter().all(|&c| c == 0), "{pixels:?}");
    }
}
