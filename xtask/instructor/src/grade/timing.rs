//! Speed, as the grader measures it: never a number the student's program prints.
//!
//! A CPU lab is timed by the grader's own clock around the whole sandboxed process; a GPU
//! kernel by this workspace's host code with its own CUDA events, the student's kernel
//! compiled from its source file. The student's runs alternate with the solution's, so a
//! drifting clock or a busy machine hits both alike, and medians are compared. A kernel time
//! below what the GPU can do at all is refused as implausible.

use rayon::prelude::*;
use shared::mandelbrot::{escape_count, in_main_cardioid, in_period2_bulb};
use shared::palette::MAX_ITER;
use shared::plan::RowPlan;
use shared::view::View;

/// Stanford CS149's rule: full credit up to 1.2 times the reference's time, none from 10
/// times on, linear between.
pub fn speed_credit(ratio: f64) -> f64 {
    ((10.0 - ratio) / (10.0 - 1.2)).clamp(0.0, 1.0)
}

/// The median of `times` (the mean of the middle two for an even count).
pub fn median(times: &[f64]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The escape loop's bodies that lab04's solution runs for `view`: every pixel of the rows
/// it computes (a mirrored row once), none for the points its early exits skip.
pub fn loop_bodies(view: &View) -> u64 {
    let xs: Vec<f64> = (0..view.width).map(|j| view.x(j)).collect();
    let ys: Vec<f64> = (0..view.height).map(|i| view.y(i)).collect();
    let plan = RowPlan::new(&ys, true);
    plan.rows
        .par_iter()
        .map(|&row| {
            let y = ys[row as usize];
            xs.iter().map(|&x| bodies(x, y)).sum::<u64>()
        })
        .sum()
}

/// The loop bodies the escape loop runs for one point: the reference's 8-bit counter counts
/// them, and wraps to 0 after the 256th.
fn bodies(x: f64, y: f64) -> u64 {
    if in_main_cardioid(x, y) || in_period2_bulb(x, y) {
        return 0;
    }
    match escape_count(x, y) {
        0 => u64::from(MAX_ITER) + 1,
        counted => u64::from(counted),
    }
}

/// Double-precision operations of one loop body that no compiler can remove: three
/// multiplies (zx*zy, zx*zx, zy*zy) and four adds (+y, zx2-zy2, +x, zx2+zy2). The doubling
/// may become an add of its own, so it is not counted.
pub const FP64_OPS_PER_BODY: f64 = 7.0;

/// The fewest milliseconds `bodies` loop bodies can take on a GPU with `sms`
/// multiprocessors at `clock_khz`, at one FP64 operation per lane per cycle and 64 FP64
/// lanes per multiprocessor (the most any NVIDIA GPU has; without fused multiply-adds,
/// which the bit-exact kernel must not use, that is its peak).
pub fn fp64_floor_ms(bodies: u64, sms: u32, clock_khz: u32) -> f64 {
    let ops_per_ms = f64::from(sms) * 64.0 * f64::from(clock_khz);
    bodies as f64 * FP64_OPS_PER_BODY / ops_per_ms
}

/// The counts of a lab05 canvas (little-endian `u32`s), summed.
pub fn canvas_total(canvas: &[u8]) -> u64 {
    canvas
        .chunks_exact(4)
        .map(|c| u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .sum()
}

/// The fewest milliseconds a Buddhabrot kernel needs to record `counts` orbit points on a GPU
/// with `sms` multiprocessors at `clock_khz`: each point is one orbit step of at least six
/// single-precision operations (three multiplies, three adds), at most two points a step
/// (conjugate symmetry records the mirror too), at 128 FP32 lanes per multiprocessor, one
/// operation a cycle (the most any NVIDIA GPU has).
pub fn fp32_floor_ms(counts: u64, sms: u32, clock_khz: u32) -> f64 {
    let ops_per_ms = f64::from(sms) * 128.0 * f64::from(clock_khz);
    counts as f64 / 2.0 * 6.0 / ops_per_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_credit_follows_cs149() {
        assert_eq!(speed_credit(0.5), 1.0);
        assert_eq!(speed_credit(1.2), 1.0);
        assert!((speed_credit(5.6) - 0.5).abs() < 1e-12);
        assert_eq!(speed_credit(10.0), 0.0);
        assert_eq!(speed_credit(40.0), 0.0);
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    /// The loop count of a point agrees with the reference's escape counter where it does
    /// not wrap, and the cardioid, the bulb and mirrored rows cost nothing.
    #[test]
    fn loop_bodies_follow_the_reference_loop() {
        assert_eq!(bodies(3.0, 0.0), 1);
        assert_eq!(bodies(1.0, 0.0), 2);
        assert_eq!(bodies(0.0, 0.0), 0, "in the cardioid");
        assert_eq!(bodies(-1.0, 0.0), 0, "in the period-2 bulb");
        // A point outside both that never escapes runs the whole loop.
        assert_eq!(bodies(-1.3, 0.0), u64::from(MAX_ITER) + 1);
        let view = |height| View {
            width: 64,
            height,
            cx: -0.6,
            cy: 0.0,
            scale: 4.0 / 64.0,
        };
        // 65 rows, 32 mirrored: 33 rows computed against 65.
        let (mirrored, all): (u64, u64) = (loop_bodies(&view(65)), {
            let v = view(65);
            (0..65)
                .flat_map(|i| (0..64).map(move |j| (i, j)))
                .map(|(i, j)| bodies(v.x(j), v.y(i)))
                .sum()
        });
        assert!(mirrored < all && mirrored * 2 > all, "{mirrored} of {all}");
    }

    #[test]
    fn a_canvas_total_and_its_floor() {
        let canvas: Vec<u8> = [1u32, 2, 70_000]
            .iter()
            .flat_map(|c| c.to_le_bytes())
            .collect();
        assert_eq!(canvas_total(&canvas), 70_003);
        // 1e9 points on an H100 take at least 0.09 ms of FP32 work.
        let floor = fp32_floor_ms(1_000_000_000, 132, 1_980_000);
        assert!((floor - 0.0897).abs() < 0.001, "{floor}");
    }

    /// An H100 (132 SMs at 1.98 GHz) cannot run lab01's 2.302e9 loop bodies at 16384x16384
    /// in less than about 0.96 ms of double-precision work.
    #[test]
    fn the_floor_is_the_fp64_peak() {
        let floor = fp64_floor_ms(2_302_000_000, 132, 1_980_000);
        assert!((floor - 0.963).abs() < 0.01, "{floor}");
    }
}
