//! lab02 must write exactly lab01's bytes, and refuse bad input the same way.

use shared::testing::{assert_missing_directory_fails, assert_rejects_bad_sizes, render};

#[test]
fn byte_identical_to_lab01_at_odd_and_non_square_sizes() {
    for [width, height] in [
        ["1", "1"],
        ["2", "3"],
        ["7", "5"],
        ["64", "48"],
        ["333", "517"],
    ] {
        assert!(
            render("lab01", &[width, height]) == render("lab02", &[width, height]),
            "lab02 differs from lab01 at {width}x{height}"
        );
    }
}

#[test]
fn rejects_bad_sizes() {
    assert_rejects_bad_sizes("lab02");
}

#[test]
fn missing_output_directory_is_one_clear_line() {
    assert_missing_directory_fails("lab02");
}
