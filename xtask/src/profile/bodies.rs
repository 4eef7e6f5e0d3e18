//! lab01's work for an image: how many times its escape loop runs, counted on the CPU with
//! the reference's own function. A GPU lab that skips work (lab04's early exits and mirrored
//! rows) still renders the same image, so lab01's loop bodies over its kernel time say how
//! fast it does lab01's job.

use clap::Parser;
use rayon::prelude::*;
use shared::mandelbrot::{escape_count, in_main_cardioid};
use shared::palette::MAX_ITER;
use shared::view::{MandelbrotArgs, View};

/// The image a Mandelbrot lab's arguments ask for, when they are only the view's (width,
/// height, centre, scale, output); `None` for any other flag.
#[derive(Parser)]
#[command(no_binary_name = true)]
struct ViewOnly {
    #[command(flatten)]
    view: MandelbrotArgs,
}

/// lab01's loop bodies for the image `args` ask for.
pub fn lab01_loop_bodies(args: &[String]) -> Option<u64> {
    let view = ViewOnly::try_parse_from(args).ok()?.view.view();
    Some(count(&view))
}

fn count(view: &View) -> u64 {
    let xs: Vec<f64> = (0..view.width).map(|j| view.x(j)).collect();
    (0..view.height)
        .into_par_iter()
        .map(|i| {
            let y = view.y(i);
            xs.iter().map(|&x| bodies(x, y)).sum::<u64>()
        })
        .sum()
}

/// The bodies of lab01's `do ... while` loop for one point. Its 8-bit counter starts at 0
/// (at `MAX_ITER` in the main cardioid: one body, then the test fails) and counts every
/// body; 0 at the end means it wrapped after the 256th.
fn bodies(x: f64, y: f64) -> u64 {
    if in_main_cardioid(x, y) {
        return 1;
    }
    match escape_count(x, y) {
        0 => u64::from(MAX_ITER) + 1,
        counted => u64::from(counted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_costs_its_escape_count() {
        assert_eq!(bodies(3.0, 0.0), 1);
        assert_eq!(bodies(1.0, 0.0), 2);
        assert_eq!(bodies(0.0, 0.0), 1, "the cardioid: one body");
        assert_eq!(bodies(-1.0, 0.0), 256, "the bulb: the whole loop");
    }

    #[test]
    fn only_view_arguments_are_counted() {
        let args = |list: &[&str]| list.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        let small = lab01_loop_bodies(&args(&["4", "2"])).expect("a view");
        let view = View {
            width: 4,
            height: 2,
            cx: -0.6,
            cy: 0.0,
            scale: 1.0,
        };
        assert_eq!(small, count(&view));
        assert!((8..=8 * 256).contains(&small), "{small}");
        assert!(lab01_loop_bodies(&args(&["4", "2", "--cx", "-1", "-o", "x.ppm"])).is_some());
        assert_eq!(
            lab01_loop_bodies(&args(&["4", "2", "--block", "32x8"])),
            None
        );
    }
}
