//! How lab02 colours one row: one pixel at a time, or in the CPU's widest f64 lanes.
//!
//! The lane code is written once, for `N` pixels side by side in plain arrays, and compiled
//! three times: for AVX-512, for AVX2, and for whatever the target always has (SSE2 on
//! x86-64, NEON on aarch64). The compiler turns each `for l in 0..N` into vector
//! instructions for the features it is allowed; [`Lanes::detect`] picks the widest one this
//! CPU has, at run time, so one binary runs everywhere at its best.
//!
//! Every lane does `escape_count`'s IEEE operations in the same order, and Rust never fuses
//! a multiply and an add on its own (no `mul_add` here; the assembly has no `vfmadd`), so
//! the counters are bit for bit the reference's.

use std::ops::Range;

use shared::mandelbrot::{escape_count, in_main_cardioid, in_period2_bulb};
use shared::palette::{colour, MAX_ITER};

/// One row of the image, and which shortcuts may skip work in it.
pub struct Row<'a> {
    /// The real part of every column.
    pub xs: &'a [f64],
    /// The row's imaginary part.
    pub y: f64,
    /// The columns where the cardioid or period-2 tests can hold (`shared::plan::NearSet`):
    /// elsewhere they are false, so they are not even computed.
    pub near: Range<usize>,
    /// Colour the points in the main cardioid and the period-2 bulb black at once, without
    /// iterating (lab04's early exits). Without it, the loop runs as `escape_count`'s does.
    pub early_exits: bool,
}

impl Row<'_> {
    /// Where the escape loop of column `j` starts: its first counter, or `None` when an early
    /// exit already knows the pixel is black.
    fn start(&self, j: usize) -> Option<u8> {
        if !self.near.contains(&j) {
            return Some(0);
        }
        let (x, y) = (self.xs[j], self.y);
        if in_main_cardioid(x, y) {
            // `escape_count` starts these at MAX_ITER: one turn of the loop, and the counter
            // wraps to 0 (black).
            return (!self.early_exits).then_some(MAX_ITER);
        }
        if self.early_exits && in_period2_bulb(x, y) {
            return None;
        }
        Some(0)
    }

    /// One pixel at a time with `escape_count` itself, skipping the early exits if allowed.
    pub fn colour_one_by_one(&self, out: &mut [u8]) {
        for (j, px) in out.chunks_exact_mut(3).enumerate() {
            if self.early_exits && self.start(j).is_none() {
                px.fill(0);
            } else {
                px.copy_from_slice(&colour(escape_count(self.xs[j], self.y)));
            }
        }
    }

    /// The counters of the row, `N` pixels at a time, handed to `each(first column,
    /// counters)`. The starts are found pixel by pixel (`hypot` has no exact vector form),
    /// then the loop runs on all `N` together.
    #[inline(always)]
    fn counters_in_lanes<const N: usize>(&self, each: &mut impl FnMut(usize, &[u8])) {
        for (block, xs) in self.xs.chunks(N).enumerate() {
            let mut x = [0.0; N];
            let mut start = [0; N];
            let mut running = [false; N];
            // A short last block leaves its spare lanes stopped from the start.
            for (l, &xl) in xs.iter().enumerate() {
                x[l] = xl;
                if let Some(counter) = self.start(block * N + l) {
                    (start[l], running[l]) = (counter, true);
                }
            }
            let counters = escape_counts(x, self.y, start, running);
            each(block * N, &counters[..xs.len()]);
        }
    }
}

/// `escape_count`'s loop on `N` points at once (row `y`, columns `x`), each lane from its
/// own `start` counter; lanes not `running` keep their start.
///
/// All lanes compute every turn (one vector instruction works on all of them); a lane that
/// has stopped no longer changes its counter. The loop ends when every lane has stopped.
/// The counters and the running flags are 64-bit here, as wide as the f64 lanes, so that a
/// comparison's mask applies to them directly (with 8-bit counters and `bool` flags, the
/// compiler moved bytes to and from memory every turn). The counter never
/// passes 256, and `as u8` wraps 256 to 0 as the original's 8-bit `iter++` does.
#[inline(always)]
fn escape_counts<const N: usize>(
    x: [f64; N],
    y: f64,
    start: [u8; N],
    running: [bool; N],
) -> [u8; N] {
    let (mut zx, mut zy, mut zx2, mut zy2) = ([0.0; N], [0.0; N], [0.0; N], [0.0; N]);
    let mut counter = start.map(u64::from);
    // 1 while the lane runs, 0 once it has stopped: what its counter adds each turn.
    let mut step = running.map(u64::from);
    while step.iter().any(|&s| s != 0) {
        for l in 0..N {
            zy[l] = 2.0 * zx[l] * zy[l] + y;
            zx[l] = zx2[l] - zy2[l] + x[l];
            zx2[l] = zx[l] * zx[l];
            zy2[l] = zy[l] * zy[l];
            // C: `while (iter++ < max_iter && zx2 + zy2 < 4)`: the test sees the old counter.
            let go_on = counter[l] < u64::from(MAX_ITER) && zx2[l] + zy2[l] < 4.0;
            counter[l] += step[l];
            step[l] &= u64::from(go_on);
        }
    }
    counter.map(|c| c as u8)
}

/// The vector instructions a run uses, chosen once at start-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lanes(Isa);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Portable,
}

impl Lanes {
    /// The widest lanes this CPU has.
    pub fn detect() -> Lanes {
        Lanes::available()[0]
    }

    /// Every kind of lanes this CPU can run, widest first.
    pub fn available() -> Vec<Lanes> {
        let mut found = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") {
                found.push(Lanes(Isa::Avx512));
            }
            if is_x86_feature_detected!("avx2") {
                found.push(Lanes(Isa::Avx2));
            }
        }
        found.push(Lanes(Isa::Portable));
        found
    }

    /// What the report shows: the instruction set and how many pixels go through the loop
    /// together (two vectors' worth, see [`Lanes::colour`]).
    pub fn name(self) -> &'static str {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => "AVX-512, 8 f64 lanes x 2",
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => "AVX2, 4 f64 lanes x 2",
            Isa::Portable => "portable (SSE2 or NEON), 2 f64 lanes x 2",
        }
    }

    /// Colour `row` into `out` (3 bytes a pixel).
    pub fn colour(self, row: &Row, out: &mut [u8]) {
        self.counters(row, &mut |first, counters| {
            let pixels = out[3 * first..].chunks_exact_mut(3);
            for (px, &counter) in pixels.zip(counters) {
                px.copy_from_slice(&colour(counter));
            }
        });
    }

    /// The counters of `row`, a block of lanes at a time: `each(first column, counters)`.
    ///
    /// Each turn of the loop is a chain of dependent operations (about 12 cycles of latency
    /// for 5 of arithmetic), so one vector alone leaves the FP units waiting: two vectors of
    /// pixels go through the loop together, their chains interleaved. Measured on one core
    /// of an AMD EPYC at 2048x2048: AVX-512 31 ms with two vectors against 38 ms with one,
    /// AVX2 52 ms against 61 ms.
    pub fn counters(self, row: &Row, each: &mut impl FnMut(usize, &[u8])) {
        match self.0 {
            // SAFETY: `Lanes(Isa::Avx512)` is only made where the CPU has AVX-512F.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { counters_avx512(row, each) },
            // SAFETY: `Lanes(Isa::Avx2)` is only made where the CPU has AVX2.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { counters_avx2(row, each) },
            Isa::Portable => row.counters_in_lanes::<4>(each),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn counters_avx512(row: &Row, each: &mut impl FnMut(usize, &[u8])) {
    row.counters_in_lanes::<16>(each);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn counters_avx2(row: &Row, each: &mut impl FnMut(usize, &[u8])) {
    row.counters_in_lanes::<8>(each);
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::plan::NearSet;
    use shared::view::View;

    /// The first turn at which the orbit of `x + iy` leaves the disc of radius 2, with
    /// `escape_count`'s arithmetic but no counter limit (`None` within 1000 turns).
    fn escape_turn(x: f64, y: f64) -> Option<u32> {
        let (mut zx, mut zy, mut zx2, mut zy2) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for turn in 1..=1000 {
            zy = 2.0 * zx * zy + y;
            zx = zx2 - zy2 + x;
            zx2 = zx * zx;
            zy2 = zy * zy;
            if zx2 + zy2 >= 4.0 {
                return Some(turn);
            }
        }
        None
    }

    /// Every kind of lanes this CPU has, and for each row the counters they give against
    /// `escape_count`'s, and the colours against the one-by-one path.
    fn assert_rows_exact(xs: &[f64], ys: &[f64], near: Option<&NearSet>) {
        for lanes in Lanes::available() {
            for (i, &y) in ys.iter().enumerate() {
                for early_exits in [false, true] {
                    let row = Row {
                        xs,
                        y,
                        near: near.map_or(0..xs.len(), |n| n.columns(i)),
                        early_exits,
                    };
                    let mut counters = vec![None; xs.len()];
                    lanes.counters(&row, &mut |first, block| {
                        for (l, &c) in block.iter().enumerate() {
                            assert!(counters[first + l].replace(c).is_none(), "column twice");
                        }
                    });
                    if !early_exits {
                        for (j, (&x, &c)) in xs.iter().zip(&counters).enumerate() {
                            let expected = escape_count(x, y);
                            assert_eq!(
                                c,
                                Some(expected),
                                "{lanes:?} at ({x:e}, {y:e}), column {j}"
                            );
                        }
                    }
                    let mut by_lanes = vec![1; 3 * xs.len()];
                    let mut one_by_one = vec![2; 3 * xs.len()];
                    lanes.colour(&row, &mut by_lanes);
                    row.colour_one_by_one(&mut one_by_one);
                    assert_eq!(
                        by_lanes, one_by_one,
                        "{lanes:?} row {i}, exits {early_exits}"
                    );
                    let plain = Row {
                        early_exits: false,
                        ..row
                    };
                    let mut reference = vec![3; 3 * xs.len()];
                    plain.colour_one_by_one(&mut reference);
                    assert_eq!(
                        by_lanes, reference,
                        "{lanes:?} row {i}, exits {early_exits}"
                    );
                }
            }
        }
    }

    fn image(view: View) {
        let xs: Vec<f64> = (0..view.width).map(|j| view.x(j)).collect();
        let ys: Vec<f64> = (0..view.height).map(|i| view.y(i)).collect();
        let near = NearSet::find(&xs, &ys);
        assert_rows_exact(&xs, &ys, Some(&near));
    }

    #[test]
    fn lanes_match_escape_count_on_whole_images_edges_included() {
        for (width, height) in [(1, 1), (2, 3), (17, 9), (101, 67)] {
            image(View {
                width,
                height,
                cx: -0.6,
                cy: 0.0,
                scale: 4.0 / f64::from(width),
            });
        }
        // Zooms on the period-2 bulb's edge and on the cardioid's neck.
        image(View {
            width: 61,
            height: 37,
            cx: -1.25,
            cy: 0.01,
            scale: 0.001,
        });
        image(View {
            width: 53,
            height: 41,
            cx: -0.75,
            cy: 0.05,
            scale: 0.0005,
        });
    }

    #[test]
    fn lanes_round_every_operation_as_escape_count_does() {
        // Two rows of lab03's zoom on the seahorse valley where a single operation rounded
        // differently changes a counter (found by search): a fused multiply-add in `zy` makes
        // column 138 of row 168 escape at turn 228 instead of 226; `zx2 + (x - zy2)` for
        // `zx2 - zy2 + x` changes it too, and column 79 of row 163.
        let view = View {
            width: 1024,
            height: 1024,
            cx: -0.74364,
            cy: 0.13182,
            scale: 1e-6,
        };
        let xs: Vec<f64> = (0..view.width).map(|j| view.x(j)).collect();
        assert_rows_exact(&xs, &[view.y(163), view.y(168)], None);
    }

    #[test]
    fn lanes_count_turns_255_and_256_as_the_8_bit_counter_does() {
        // Along the real axis just right of the cardioid's cusp (x = 0.25) the escape turn
        // grows like pi / sqrt(x - 0.25): it passes 255 and 256 near x = 0.25 + 1.5e-4.
        let xs: Vec<f64> = (0..6000).map(|k| 0.2499 + f64::from(k) * 1e-7).collect();
        let turns: Vec<Option<u32>> = xs.iter().map(|&x| escape_turn(x, 0.0)).collect();
        for wanted in [254, 255, 256, 257] {
            assert!(
                turns.contains(&Some(wanted)),
                "no point escaping at turn {wanted}"
            );
        }
        // What the reference says of them: turn 255 leaves the counter at 255, turn 256
        // wraps it to 0; both black.
        for (&x, &turn) in xs.iter().zip(&turns) {
            match turn {
                Some(255) => assert_eq!(escape_count(x, 0.0), 255),
                Some(256) => assert_eq!(escape_count(x, 0.0), 0),
                Some(n) if n < 255 => assert_eq!(u32::from(escape_count(x, 0.0)), n),
                _ => assert_eq!(escape_count(x, 0.0), 0),
            }
        }
        // The lanes hold points of all these kinds side by side (cardioid points included,
        // left of the cusp), so lanes stop at different turns within one vector.
        assert_rows_exact(&xs, &[0.0], None);
    }

    #[test]
    fn lanes_match_escape_count_across_the_cardioid_border() {
        // On a few rows, the 40 floats around the x where the cardioid test switches: lanes
        // that start at 255 (inside) beside lanes that iterate to the end (just outside).
        for (y, inside) in [(0.3f64, -0.4f64), (0.6, -0.2), (0.1, 0.3)] {
            let (mut x, mut outside) = (inside, 0.5);
            for _ in 0..200 {
                let mid = 0.5 * (x + outside);
                if in_main_cardioid(mid, y) {
                    x = mid;
                } else {
                    outside = mid;
                }
            }
            let around: Vec<f64> = (0..40)
                .map(|k| f64::from_bits(x.to_bits() + k - 20))
                .collect();
            assert!(around.iter().any(|&a| in_main_cardioid(a, y)), "row {y}");
            assert!(around.iter().any(|&a| !in_main_cardioid(a, y)), "row {y}");
            assert_rows_exact(&around, &[y], None);
        }
    }

    #[test]
    fn lanes_stop_on_the_circle_as_escape_count_does() {
        // These orbits land exactly on |z|^2 = 4: c = -2 (z1 = -2, then 2 forever),
        // c = 1 (z2 = 2), c = 2i (z1 = 2i). `< 4` stops there; `<= 4` would go on.
        let xs = [-2.0, 1.0, 0.0, -1.0, 0.5, -2.0, 1.0, 0.0, 0.25];
        assert_eq!(escape_count(-2.0, 0.0), 1);
        assert_eq!(escape_count(1.0, 0.0), 2);
        assert_eq!(escape_count(0.0, 2.0), 1);
        assert_rows_exact(&xs, &[0.0, 2.0], None);
    }

    #[test]
    fn every_cpu_has_a_portable_path_and_the_widest_comes_first() {
        let available = Lanes::available();
        assert_eq!(available.last(), Some(&Lanes(Isa::Portable)));
        assert_eq!(Lanes::detect(), available[0]);
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx512f") {
            assert_eq!(available[0], Lanes(Isa::Avx512));
        }
    }
}
