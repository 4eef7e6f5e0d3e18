//! lab02 must write exactly lab01's bytes, and refuse bad input the same way.
//!
//! lab01's bytes are `reference_ppm`'s, computed in-process (lab01's tests pin it to the given
//! C program), so `cargo test -p lab02-rayon` needs no other lab's binary.

use shared::testing::{
    assert_missing_directory_fails, assert_rejects_bad_sizes, assert_says_where_it_wrote,
    reference_ppm, render,
};

#[test]
fn byte_identical_to_lab01_at_odd_and_non_square_sizes_and_views() {
    let cases: &[&[&str]] = &[
        &["1", "1"],
        &["2", "3"],
        &["7", "5"],
        &["64", "48"],
        &["333", "517"],
        &["160", "90", "--cy", "0.3"],
        &[
            "128",
            "96",
            "--cx",
            "-0.743643",
            "--cy",
            "0.131825",
            "--scale",
            "1e-5",
        ],
    ];
    for args in cases {
        assert!(
            render("lab02", args) == reference_ppm(args),
            "lab02 differs from lab01 for {args:?}"
        );
    }
}

/// At a scale where rows collapse onto a few values and infinities, the mirror-row plan
/// still produces every row once (it once panicked: "the plan produces each row once").
#[test]
fn shortcuts_at_an_extreme_scale_are_still_lab01s_pixels() {
    for scale in ["1e308", "1e-320"] {
        let args = ["4", "6", "--scale", scale];
        let mut with = args.to_vec();
        with.push("--shortcuts");
        assert!(
            render("lab02", &with) == reference_ppm(&args),
            "--scale {scale}"
        );
    }
}

#[test]
fn says_where_it_wrote_the_image() {
    assert_says_where_it_wrote("lab02", &["16", "8"], "lab02-mandelbrot.ppm", "16x8");
}

#[test]
fn rejects_bad_sizes() {
    assert_rejects_bad_sizes("lab02");
}

#[test]
fn missing_output_directory_is_one_clear_line() {
    assert_missing_directory_fails("lab02");
}
