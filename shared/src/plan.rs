//! The plan of the work: which rows need computing and where the early exits can fire.
//!
//! lab04's kernel and lab02's `--shortcuts` use the same plan, so the GPU and the best CPU
//! skip exactly the same work, and the plan is tested here, on any machine.

use std::ops::Range;

/// The columns `j0..j1` and rows `i0..i1` whose points may lie in the main cardioid
/// (within x in [-0.75, 0.375], |y| <= 0.65) or the period-2 bulb (within x in
/// [-1.25, -0.75], |y| <= 0.25), with a margin of 0.005 at least: outside this box
/// [`in_main_cardioid`](crate::mandelbrot::in_main_cardioid) and
/// [`in_period2_bulb`](crate::mandelbrot::in_period2_bulb) are false, whatever the rounding,
/// so a lab tests only the pixels inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NearSet {
    pub j0: i32,
    pub j1: i32,
    pub i0: i32,
    pub i1: i32,
}

impl NearSet {
    /// `xs` and `ys` increase with the index (the scale is positive), so each range is a
    /// contiguous run found by binary search.
    pub fn find(xs: &[f64], ys: &[f64]) -> NearSet {
        let (x_low, x_high, y_limit) = (-1.26, 0.38, 0.66);
        NearSet {
            j0: xs.partition_point(|&x| x <= x_low) as i32,
            j1: xs.partition_point(|&x| x < x_high) as i32,
            i0: ys.partition_point(|&y| y <= -y_limit) as i32,
            i1: ys.partition_point(|&y| y < y_limit) as i32,
        }
    }

    /// The columns of row `i` inside the box; empty for a row outside it.
    pub fn columns(&self, i: usize) -> Range<usize> {
        if (self.i0 as usize..self.i1 as usize).contains(&i) {
            self.j0 as usize..self.j1 as usize
        } else {
            0..0
        }
    }
}

/// Which rows to compute, and for each the row that mirrors it (-1 if none).
///
/// A row whose y is exactly the negative of another row's y (bit for bit) holds the mirror
/// images of that row's points. Their orbits are mirror images too, exactly: each step
/// negates `zy` and keeps `zx`, and IEEE rounding treats a value and its negative alike.
/// So one of the two rows is computed and its colours stored twice. The default view
/// (cy = 0) pairs up all rows but one or two: half the work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowPlan {
    /// The rows to compute, in increasing order.
    pub rows: Vec<i32>,
    /// For each of `rows`, the row that gets the same colours, or -1.
    pub mirrors: Vec<i32>,
}

impl RowPlan {
    /// The plan for rows at heights `ys` (increasing); without `use_mirrors`, every row is
    /// computed.
    pub fn new(ys: &[f64], use_mirrors: bool) -> RowPlan {
        let mut mirror_of = vec![-1i32; ys.len()];
        let mut is_mirror = vec![false; ys.len()];
        if use_mirrors {
            // Finite rows only, and each row mirrors at most one other: at extreme scales
            // several rows share one y (or all become infinite), and a row claimed twice
            // would be written twice and another never.
            for (i, &y) in ys
                .iter()
                .enumerate()
                .filter(|(_, &y)| y < 0.0 && y.is_finite())
            {
                // `ys` increases with the row, so the candidate is found by binary search.
                let mut k = ys.partition_point(|&v| v < -y);
                while is_mirror.get(k).copied().unwrap_or(false) {
                    k += 1;
                }
                if ys.get(k).is_some_and(|v| v.to_bits() == (-y).to_bits()) {
                    mirror_of[i] = k as i32;
                    is_mirror[k] = true;
                }
            }
        }
        let computed = (0..ys.len()).filter(|&i| !is_mirror[i]);
        let rows: Vec<i32> = computed.map(|i| i as i32).collect();
        let mirrors = rows.iter().map(|&i| mirror_of[i as usize]).collect();
        RowPlan { rows, mirrors }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mandelbrot::{escape_count, in_main_cardioid, in_period2_bulb};
    use crate::view::View;

    fn view(width: u32, height: u32, cx: f64, cy: f64, scale: f64) -> View {
        View {
            width,
            height,
            cx,
            cy,
            scale,
        }
    }

    fn default_view(width: u32, height: u32) -> View {
        view(width, height, -0.6, 0.0, 4.0 / f64::from(width))
    }

    fn coordinates(view: &View) -> (Vec<f64>, Vec<f64>) {
        let xs = (0..view.width).map(|j| view.x(j)).collect();
        let ys = (0..view.height).map(|i| view.y(i)).collect();
        (xs, ys)
    }

    /// Everything a correct plan promises, checked against the coordinates themselves.
    fn assert_plan_is_exact(ys: &[f64]) -> RowPlan {
        let plan = RowPlan::new(ys, true);
        assert_eq!(plan.rows.len(), plan.mirrors.len());
        assert!(plan.rows.windows(2).all(|w| w[0] < w[1]), "rows in order");
        // Every row is produced exactly once: computed, or stored as a computed row's mirror.
        let mut produced = vec![0; ys.len()];
        for (&i, &m) in plan.rows.iter().zip(&plan.mirrors) {
            produced[i as usize] += 1;
            if m >= 0 {
                produced[m as usize] += 1;
                // A mirror is exact, bit for bit (a row off by one is not).
                let (yi, ym) = (ys[i as usize], ys[m as usize]);
                assert_eq!(
                    ym.to_bits(),
                    (-yi).to_bits(),
                    "row {m} does not mirror row {i}"
                );
            }
        }
        assert!(produced.iter().all(|&n| n == 1), "each row produced once");
        // And no exact pair is missed: as many as the rarer of each finite value and its
        // negative.
        let count = |y: f64| ys.iter().filter(|v| v.to_bits() == y.to_bits()).count();
        let mut negatives: Vec<f64> = ys
            .iter()
            .copied()
            .filter(|&y| y < 0.0 && y.is_finite())
            .collect();
        negatives.dedup_by(|a, b| a.to_bits() == b.to_bits());
        let pairs: usize = negatives.iter().map(|&y| count(y).min(count(-y))).sum();
        let mirrored = plan.mirrors.iter().filter(|&&m| m >= 0).count();
        assert_eq!(mirrored, pairs, "every exact pair is used");
        plan
    }

    #[test]
    fn default_view_pairs_all_rows_but_one_or_two_at_odd_and_even_heights() {
        for height in [1, 2, 3, 4, 7, 64, 517, 1024, 1081] {
            let (_, ys) = coordinates(&default_view(333, height));
            let plan = assert_plan_is_exact(&ys);
            // Rows -h/2 .. h - h/2 - 1 around y = 0: every row below 0 has its partner,
            // except the bottom one at even heights.
            assert_eq!(plan.rows.len(), height as usize / 2 + 1, "height {height}");
        }
    }

    #[test]
    fn other_centres_pair_only_exact_mirrors() {
        let mut some_but_not_all = false;
        for cy in [0.3, -0.3, 1e-17, 0.25, 4.0 / 1000.0 / 2.0] {
            for height in [999, 1000] {
                let (_, ys) = coordinates(&view(1000, height, -0.6, cy, 4.0 / 1000.0));
                let plan = assert_plan_is_exact(&ys);
                let mirrored = plan.mirrors.iter().filter(|&&m| m >= 0).count();
                some_but_not_all |= mirrored > 0 && mirrored + 2 < height as usize / 2;
            }
        }
        assert!(
            some_but_not_all,
            "a view that pairs some rows and not others"
        );
    }

    #[test]
    fn a_tiny_offset_keeps_the_far_rows_paired_and_the_middle_one_alone() {
        // y = n * s + 1e-17: far from 0 the offset is lost in rounding, so rows n and -n
        // are exact mirrors; at n = 0, y = 1e-17 has no partner.
        let (_, ys) = coordinates(&view(64, 64, -0.6, 1e-17, 4.0 / 64.0));
        let plan = assert_plan_is_exact(&ys);
        let middle = plan
            .rows
            .iter()
            .position(|&i| i == 32)
            .expect("row 32 computed");
        assert_eq!(plan.mirrors[middle], -1);
        assert!(plan.mirrors.iter().filter(|&&m| m >= 0).count() > 20);
    }

    #[test]
    fn mirrored_rows_have_the_same_counters() {
        for v in [
            default_view(101, 77),
            view(120, 90, -0.6, 1e-17, 4.0 / 120.0),
        ] {
            let (xs, ys) = coordinates(&v);
            let plan = assert_plan_is_exact(&ys);
            for (&i, &m) in plan.rows.iter().zip(&plan.mirrors).filter(|(_, &m)| m >= 0) {
                for &x in &xs {
                    assert_eq!(
                        escape_count(x, ys[i as usize]),
                        escape_count(x, ys[m as usize])
                    );
                }
            }
        }
    }

    #[test]
    fn without_mirrors_every_row_is_computed_alone() {
        let (_, ys) = coordinates(&default_view(16, 9));
        let plan = RowPlan::new(&ys, false);
        assert_eq!(plan.rows, (0..9).collect::<Vec<_>>());
        assert!(plan.mirrors.iter().all(|&m| m == -1));
    }

    /// Outside the box, neither early-exit test holds: checked on every pixel.
    fn assert_box_covers_the_tests(v: &View) -> NearSet {
        let (xs, ys) = coordinates(v);
        let near = NearSet::find(&xs, &ys);
        for (i, &y) in ys.iter().enumerate() {
            let inside = near.columns(i);
            for (j, &x) in xs.iter().enumerate().filter(|(j, _)| !inside.contains(j)) {
                assert!(
                    !in_main_cardioid(x, y) && !in_period2_bulb(x, y),
                    "pixel ({i}, {j}) of {v:?} is outside the box but passes a test"
                );
            }
        }
        near
    }

    #[test]
    fn the_box_covers_every_early_exit_of_the_default_view() {
        for (width, height) in [(1, 1), (7, 5), (333, 517), (1023, 1023), (1024, 768)] {
            let near = assert_box_covers_the_tests(&default_view(width, height));
            if width > 100 {
                // A box as large as the image would cover anything; this one spans about
                // 1.64 x 1.32 of the plane.
                let scale = 4.0 / f64::from(width);
                let columns = f64::from(near.j1 - near.j0) * scale;
                let rows = f64::from(near.i1 - near.i0) * scale;
                assert!(columns < 1.66 && rows < 1.34, "{near:?}");
            }
        }
    }

    #[test]
    fn the_box_covers_every_early_exit_of_zooms_and_shifted_views() {
        let views = [
            // Around the period-2 bulb, its left end and its top.
            view(801, 601, -1.0, 0.0, 0.6 / 801.0),
            view(500, 500, -1.25, 0.0, 0.02 / 500.0),
            view(500, 500, -1.0, 0.25, 0.02 / 500.0),
            // The cardioid's cusp, its top and its left edge where the bulb touches it.
            view(500, 500, 0.375, 0.0, 0.02 / 500.0),
            view(500, 500, -0.125, 0.65, 0.02 / 500.0),
            view(499, 333, -0.75, 0.0, 0.01 / 499.0),
            // Off-centre and far away.
            view(640, 480, -0.6, 0.3, 4.0 / 640.0),
            view(300, 200, 1.0, 1.0, 0.001),
        ];
        for v in &views {
            assert_box_covers_the_tests(v);
        }
    }

    #[test]
    fn the_box_is_where_the_tests_can_fire() {
        let (xs, ys) = coordinates(&view(300, 200, 1.0, 1.0, 0.001));
        let near = NearSet::find(&xs, &ys);
        assert!(
            near.columns(100).is_empty(),
            "a view far from the set: {near:?}"
        );
        let (xs, ys) = coordinates(&default_view(1024, 1024));
        let near = NearSet::find(&xs, &ys);
        assert_eq!(near.columns(512), near.j0 as usize..near.j1 as usize);
        assert!(near.columns(0).is_empty());
    }

    /// At a scale so large that rows collapse onto a few values (and infinities), every row
    /// is still produced exactly once.
    #[test]
    fn rows_that_share_a_value_or_are_infinite_are_each_produced_once() {
        for ys in [
            vec![
                f64::NEG_INFINITY,
                f64::NEG_INFINITY,
                -1e308,
                0.0,
                1e308,
                f64::INFINITY,
            ],
            vec![-1.0, -1.0, -1.0, 0.0, 1.0, 1.0],
            vec![-2.0, -1.0, -1.0, 1.0, 1.0, 2.0],
        ] {
            assert_plan_is_exact(&ys);
        }
        let (_, ys) = coordinates(&view(4, 6, -0.6, 0.0, 1e308));
        assert_plan_is_exact(&ys);
    }
}
