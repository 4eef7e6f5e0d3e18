//! One sample, start to finish: where it lands, whether it can be skipped, whether its
//! orbit escapes, and which canvas pixels its orbit adds to.
//!
//! `kernels/buddhabrot.cu` repeats these functions in CUDA C++ with the same operations in
//! the same order. Both sides use f32 and never fuse a multiply with an add (Rust does not
//! contract, and NVRTC is told not to, as in lab04), so every orbit point, and therefore every pixel
//! index, is bit-for-bit the same on both backends. The canvas is a sum of integer
//! increments, and integer addition does not care about order, so the two canvases are
//! identical even though the GPU adds its counts in whatever order its atomics land.

use std::ops::Range;

use rayon::prelude::*;

use crate::rng::{philox2x32_10, uniform};

/// Stratified sampling splits the sampling rectangle into GRID x GRID cells...
pub const GRID_LOG2: u32 = 10;
/// ...and sends VISIT consecutive sample indices to the same cell. 32 is one warp: the 32
/// threads of a warp take 32 consecutive indices, so they all start in one small cell,
/// follow similar orbits (similar lengths: less waiting on the slowest thread) and add to
/// nearby pixels (fewer memory transactions for the warp's atomics; on the CPU, canvas
/// lines still in cache). Measured: 35% more counts per second on the H100 and 50-60% more
/// on 16 CPU cores than without cells. On the H100, 2^10 x 2^10 cells with visits of 32
/// were within 0.5% of the best of 2^9 to 2^11 cells and visits of 8 to 256 samples.
pub const VISIT_LOG2: u32 = 5;
/// Samples in one pass over every cell: 2^20 cells x 32 = 33,554,432.
pub const SAMPLES_PER_PASS: u64 = 1 << (2 * GRID_LOG2 + VISIT_LOG2);

/// Everything a sample needs, worked out once on the host (see `config.rs`) and handed as it
/// is to the kernel, so the CPU and the GPU start from the very same f32 values.
/// The layout is `struct Params` in `kernels/buddhabrot.cu`, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub width: u32,
    pub height: u32,
    pub max_iter: u32,
    pub seed: u32,
    /// 1 to skip samples in the main cardioid and the known bulbs, 0 to iterate them all.
    pub bulb_check: u32,
    /// 1 to sample cell by cell, 0 to sample the whole rectangle at once.
    pub stratify: u32,
    /// 1 to sample only Im(c) >= 0 and add each orbit's mirror image too.
    pub symmetry: u32,
    /// Canvas: row = (Re z - re_min) * row_scale, column = (Im z - im_min) * col_scale.
    pub re_min: f32,
    pub im_min: f32,
    pub row_scale: f32,
    pub col_scale: f32,
    /// Sampling: c = (sample_re_min + u * sample_re_span) + i (sample_im_min + v * sample_im_span).
    pub sample_re_min: f32,
    pub sample_re_span: f32,
    pub sample_im_min: f32,
    pub sample_im_span: f32,
}

impl Params {
    /// Pixels on the canvas.
    pub fn pixels(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// The point c of sample `index`: two uniforms from the counter-based generator, moved
    /// into the sample's cell when stratifying, then scaled onto the sampling rectangle.
    pub fn sample_point(&self, index: u64) -> (f32, f32) {
        let bits = philox2x32_10([index as u32, (index >> 32) as u32], self.seed);
        let (mut u, mut v) = (uniform(bits[0]), uniform(bits[1]));
        if self.stratify != 0 {
            let (col, row) = cell(index);
            let inv_grid = 1.0 / (1u32 << GRID_LOG2) as f32;
            u = (col as f32 + u) * inv_grid;
            v = (row as f32 + v) * inv_grid;
        }
        (
            self.sample_re_min + u * self.sample_re_span,
            self.sample_im_min + v * self.sample_im_span,
        )
    }

    /// The canvas pixel (row, column) of the point x + iy, if it lies on the canvas.
    #[inline]
    pub fn pixel(&self, x: f32, y: f32) -> Option<(usize, usize)> {
        // The real axis runs down the canvas, the imaginary axis across.
        let row = (x - self.re_min) * self.row_scale;
        let col = (y - self.im_min) * self.col_scale;
        // Compared as floats, then truncated: a point off the canvas (or a NaN from an
        // overflowing orbit) fails the comparison and is never turned into an index.
        let on = row >= 0.0 && row < self.height as f32 && col >= 0.0 && col < self.width as f32;
        on.then_some((row as usize, col as usize))
    }

    /// The pixel (`row * width + column`) each sample of `samples` starts from, its point c,
    /// in sample order; `u32::MAX` where c is off the canvas. `--profile-png` draws each
    /// sample's warp there (`src/gpu.rs`).
    pub fn start_pixels(&self, samples: Range<u64>) -> Vec<u32> {
        samples
            .into_par_iter()
            .map(|index| {
                let (cr, ci) = self.sample_point(index);
                self.pixel(cr, ci).map_or(u32::MAX, |(row, col)| {
                    // The canvas has at most MAX_SIDE^2 = 2^28 pixels: an index fits.
                    (row * self.width as usize + col) as u32
                })
            })
            .collect()
    }

    /// Iterate sample `index` and add its orbit to `canvas` if it escapes.
    pub fn add_sample(&self, canvas: &mut [u32], index: u64) {
        let (cr, ci) = self.sample_point(index);
        if self.bulb_check != 0 && in_known_bulb(cr, ci) {
            return;
        }
        let steps = escape_steps(cr, ci, self.max_iter);
        self.add_orbit(canvas, cr, ci, steps);
    }

    /// Replay the first `steps` points of c's orbit and add one count at each point's pixel
    /// (and, with symmetry, one at the mirrored pixel). The replay repeats
    /// [`escape_steps`]'s arithmetic exactly, so it visits exactly the same points.
    pub fn add_orbit(&self, canvas: &mut [u32], cr: f32, ci: f32, steps: u32) {
        let (mut x, mut y) = (cr, ci);
        let (mut xx, mut yy) = (x * x, y * y);
        for _ in 0..steps {
            y = (x + x) * y + ci;
            x = xx - yy + cr;
            xx = x * x;
            yy = y * y;
            if let Some((row, col)) = self.pixel(x, y) {
                let at = row * self.width as usize;
                canvas[at + col] = canvas[at + col].wrapping_add(1);
                if self.symmetry != 0 {
                    // conj(c) has orbit conj(z): the same row, the mirrored column. The
                    // imaginary range is symmetric (checked in config.rs), so the mirror of
                    // column col is width - 1 - col. Computing it from -Im z instead could
                    // round to a neighbouring column at a pixel edge, and the canvas would
                    // no longer be an exact mirror image.
                    let mirror = self.width as usize - 1 - col;
                    canvas[at + mirror] = canvas[at + mirror].wrapping_add(1);
                }
            }
        }
    }
}

/// The stratification cell of sample `index`, as (column, row) of the GRID x GRID grid.
/// The mapping depends on the index alone, never on how the work is split between threads.
///
/// Within a pass the cells are not visited row by row: a run that stops part-way through a
/// pass (most runs do; `verify` takes an eighth of one) would then have sampled the first
/// rows of the rectangle only. Instead the visit number, bits reversed, is read as a Z-order
/// code: its even bits give the column, its odd bits the row. The first 4 visits are then
/// the corners of a 2 x 2 lattice of cells, the first 16 a 4 x 4 lattice, and so on: any
/// prefix of a pass is spread evenly over the whole rectangle.
pub fn cell(index: u64) -> (u32, u32) {
    let visit = (index >> VISIT_LOG2) as u32 & ((1 << (2 * GRID_LOG2)) - 1);
    let z = visit.reverse_bits() >> (32 - 2 * GRID_LOG2);
    (even_bits(z), even_bits(z >> 1))
}

/// Bits 0, 2, 4, ... of `z`, packed together (the inverse of interleaving).
fn even_bits(z: u32) -> u32 {
    let mut x = z & 0x5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333;
    x = (x | (x >> 2)) & 0x0f0f_0f0f;
    x = (x | (x >> 4)) & 0x00ff_00ff;
    (x | (x >> 8)) & 0x0000_ffff
}

/// The number of steps after which c's orbit escapes (|z|^2 > 4), or 0 if it stays within
/// `max_iter` steps. The orbit starts at z = c (z = 0 would only add c itself, a uniform
/// fog over the sampling rectangle), and each step is z <- z^2 + c.
pub fn escape_steps(cr: f32, ci: f32, max_iter: u32) -> u32 {
    let (mut x, mut y) = (cr, ci);
    let (mut xx, mut yy) = (x * x, y * y);
    for step in 1..=max_iter {
        // Im(z^2) = 2xy, computed as (x + x) * y: doubling is exact, so this is exactly
        // the number 2 * x * y gives, on either backend.
        y = (x + x) * y + ci;
        x = xx - yy + cr;
        // The squares serve twice: for |z|^2 now, and for Re(z^2) at the next step.
        xx = x * x;
        yy = y * y;
        if xx + yy > 4.0 {
            return step;
        }
    }
    0
}

/// True if c lies in a region known to be inside the Mandelbrot set: such an orbit never
/// escapes, so it would add nothing, and skipping it saves `max_iter` steps of work.
///
/// The main cardioid and the period-2 disc are exact. The last three discs (the period-4
/// bulb on the real axis and the two period-3 bulbs) are the approximations of a Code Review
/// answer on a PyCUDA Buddhabrot ("Packaging floats"); a scan of their bulbs' boundaries in
/// f64 (attracting-cycle test along 720 rays) found each disc inside its bulb, by 2.4e-4 and
/// 5.0e-4 in radius. So the check changes speed only: `--no-bulb-check` gives the same
/// canvas, and the tests check that.
pub fn in_known_bulb(cr: f32, ci: f32) -> bool {
    let yy = ci * ci;
    let xq = cr - 0.25;
    let q = xq * xq + yy;
    let main_cardioid = q * (q + xq) < 0.25 * yy;
    let x2 = cr + 1.0;
    let period_2 = x2 * x2 + yy < 0.0625;
    let x4 = cr + 1.309;
    let period_4 = x4 * x4 + yy < 0.00345;
    let x3 = cr + 0.125;
    let (y_up, y_down) = (ci - 0.744, ci + 0.744);
    let period_3_up = x3 * x3 + y_up * y_up < 0.0088;
    let period_3_down = x3 * x3 + y_down * y_down < 0.0088;
    main_cardioid || period_2 || period_4 || period_3_up || period_3_down
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4 x 8 canvas over Re in [-4, 4] (one unit per row) and Im in [-2, 2] (one unit per
    /// column), so that pixel indices can be read off the orbit by hand.
    fn tiny(symmetry: u32) -> Params {
        Params {
            width: 4,
            height: 8,
            max_iter: 20,
            seed: 0,
            bulb_check: 1,
            stratify: 0,
            symmetry,
            re_min: -4.0,
            im_min: -2.0,
            row_scale: 1.0,
            col_scale: 1.0,
            sample_re_min: -2.0,
            sample_re_span: 4.0,
            sample_im_min: 0.0,
            sample_im_span: 2.0,
        }
    }

    #[test]
    fn c_one_half_escapes_after_four_steps() {
        // z: 0.5 -> 0.75 -> 1.0625 -> 1.62890625 -> 3.1533... (|z|^2 > 4 at step 4)
        assert_eq!(escape_steps(0.5, 0.0, 20), 4);
        assert_eq!(escape_steps(0.5, 0.0, 3), 0);
    }

    #[test]
    fn points_of_the_set_never_escape() {
        assert_eq!(escape_steps(0.0, 0.0, 1000), 0);
        assert_eq!(escape_steps(-1.0, 0.0, 1000), 0);
        // -2 -> 2 -> 2 -> ...: |z|^2 = 4 is not > 4.
        assert_eq!(escape_steps(-2.0, 0.0, 1000), 0);
    }

    #[test]
    fn orbit_of_one_half_lands_on_the_hand_computed_pixels() {
        // Rows are floor(Re z + 4): 0.75 -> 4, 1.0625 -> 5, 1.6289 -> 5, 3.1533 -> 7.
        // Im z = 0 is column floor(0 + 2) = 2; its mirror is column 4 - 1 - 2 = 1.
        for symmetry in [0, 1] {
            let params = tiny(symmetry);
            let mut canvas = vec![0u32; params.pixels()];
            params.add_orbit(&mut canvas, 0.5, 0.0, escape_steps(0.5, 0.0, 20));
            let mut expected = vec![0u32; params.pixels()];
            for (row, count) in [(4, 1), (5, 2), (7, 1)] {
                expected[row * 4 + 2] = count;
                if symmetry == 1 {
                    expected[row * 4 + 1] = count;
                }
            }
            assert_eq!(canvas, expected, "symmetry {symmetry}");
        }
    }

    #[test]
    fn orbit_points_off_the_canvas_are_dropped() {
        // c = 1: z = 1 -> 2 -> 5. Re 2 is row 6, Re 5 lies below the canvas.
        let params = tiny(0);
        let mut canvas = vec![0u32; params.pixels()];
        params.add_orbit(&mut canvas, 1.0, 0.0, escape_steps(1.0, 0.0, 20));
        assert_eq!(canvas.iter().sum::<u32>(), 1);
        assert_eq!(canvas[6 * 4 + 2], 1);
    }

    /// `--profile-png` places each sample at the pixel of its c, as read off by hand from
    /// the tiny canvas (row floor(Re c + 4), column floor(Im c + 2)), in sample order from
    /// the first sample asked for; a c off the canvas is placed nowhere.
    #[test]
    fn each_sample_is_placed_at_the_pixel_of_its_point() {
        let params = Params {
            // Sampling beyond the canvas on every side, so that some c fall off it.
            sample_re_min: -6.0,
            sample_re_span: 12.0,
            sample_im_min: -3.0,
            sample_im_span: 6.0,
            ..tiny(0)
        };
        let places = params.start_pixels(1000..3000);
        assert_eq!(places.len(), 2000);
        let mut on = 0;
        for (index, &place) in (1000..).zip(&places) {
            let (cr, ci) = params.sample_point(index);
            if (-4.0..4.0).contains(&cr) && (-2.0..2.0).contains(&ci) {
                let (row, col) = ((cr + 4.0).floor() as u32, (ci + 2.0).floor() as u32);
                assert_eq!(place, row * 4 + col, "sample {index} at {cr} + {ci}i");
                on += 1;
            } else {
                assert_eq!(place, u32::MAX, "sample {index} at {cr} + {ci}i");
            }
        }
        // About 2/3 x 2/3 of the samples are on the canvas.
        assert!((700..1100).contains(&on), "{on} on the canvas");
    }

    #[test]
    fn known_bulbs_are_recognised() {
        for (cr, ci) in [
            (0.0, 0.0),
            (-1.0, 0.0),
            (-1.309, 0.0),
            (-0.125, 0.744),
            (-0.125, -0.744),
        ] {
            assert!(in_known_bulb(cr, ci), "({cr}, {ci})");
        }
        for (cr, ci) in [(0.3, 0.0), (-2.0, 0.0), (0.0, 1.0), (-0.75, 0.2)] {
            assert!(!in_known_bulb(cr, ci), "({cr}, {ci})");
        }
    }

    /// The rejection must change speed only: no point it rejects may escape. Check a grid
    /// over the sampling rectangle and rings just inside each disc's edge.
    #[test]
    fn rejected_points_never_escape() {
        let mut rejected = 0;
        for i in 0..=320 {
            for j in 0..=180 {
                let (cr, ci) = (-2.1 + i as f32 * 0.01, j as f32 * 0.01);
                if in_known_bulb(cr, ci) {
                    rejected += 1;
                    assert_eq!(escape_steps(cr, ci, 2000), 0, "({cr}, {ci})");
                }
            }
        }
        assert!(rejected > 5000, "only {rejected} grid points rejected");
        let discs: [(f32, f32, f32); 4] = [
            (-1.0, 0.0, 0.0625),
            (-1.309, 0.0, 0.00345),
            (-0.125, 0.744, 0.0088),
            (-0.125, -0.744, 0.0088),
        ];
        for k in 0..360 {
            // The cardioid is where the fixed point's multiplier mu has |mu| < 1:
            // c = mu/2 - mu^2/4. Take |mu| = 0.9999.
            let angle = k as f32 * std::f32::consts::PI / 180.0;
            let (mr, mi) = (0.9999 * angle.cos(), 0.9999 * angle.sin());
            let (cr, ci) = (
                mr / 2.0 - (mr * mr - mi * mi) / 4.0,
                mi / 2.0 - mr * mi / 2.0,
            );
            if in_known_bulb(cr, ci) {
                assert_eq!(escape_steps(cr, ci, 20_000), 0, "({cr}, {ci})");
            }
        }
        for (x, y, r2) in discs {
            for k in 0..360 {
                let angle = k as f32 * std::f32::consts::PI / 180.0;
                let r = r2.sqrt() * 0.9999;
                let (cr, ci) = (x + r * angle.cos(), y + r * angle.sin());
                if in_known_bulb(cr, ci) {
                    assert_eq!(escape_steps(cr, ci, 20_000), 0, "({cr}, {ci})");
                }
            }
        }
    }

    #[test]
    fn a_pass_visits_every_cell_once_and_a_warp_stays_in_one_cell() {
        let cells = 1usize << (2 * GRID_LOG2);
        let mut seen = vec![false; cells];
        for visit in 0..cells as u64 {
            let first = cell(visit << VISIT_LOG2);
            assert_eq!(cell((visit << VISIT_LOG2) + 31), first);
            let k = (first.1 as usize) << GRID_LOG2 | first.0 as usize;
            assert!(!seen[k], "cell {first:?} visited twice");
            seen[k] = true;
        }
        // The next pass starts over.
        assert_eq!(cell(SAMPLES_PER_PASS), cell(0));
    }

    #[test]
    fn the_first_sixteen_visits_form_a_four_by_four_lattice() {
        let mut cells: Vec<(u32, u32)> = (0..16u64).map(|v| cell(v << VISIT_LOG2)).collect();
        cells.sort_unstable();
        let step = 1 << (GRID_LOG2 - 2);
        let lattice: Vec<(u32, u32)> = (0..4)
            .flat_map(|c| (0..4).map(move |r| (c * step, r * step)))
            .collect();
        assert_eq!(cells, lattice);
    }

    #[test]
    fn samples_stay_in_the_rectangle_and_in_their_cell() {
        let mut params = tiny(1);
        params.stratify = 1;
        for index in (0..1u64 << 26).step_by(40_009) {
            let (cr, ci) = params.sample_point(index);
            assert!((-2.0..=2.0).contains(&cr) && (0.0..=2.0).contains(&ci));
            let (col, row) = cell(index);
            let grid = (1u32 << GRID_LOG2) as f32;
            let (u, v) = ((cr + 2.0) / 4.0 * grid, ci / 2.0 * grid);
            assert!((u - col as f32).abs() <= 1.01 && (v - row as f32).abs() <= 1.01);
        }
    }
}
