//! lab01 under faults: special and linked targets, modes, signals, limits, broken stdout,
//! every number notation. The checks themselves are shared (`shared::fault_testing`).
//!
//! Unix only: these faults (signals, modes, FIFOs, resource limits) are Unix's.
#![cfg(unix)]

use shared::fault_testing::*;

const QUICK: &[&str] = &["64", "48"];
/// Long enough to be interrupted mid-run (seconds in a debug build, about one in release).
const LONG: &[&str] = &["8192", "8192"];

shared::cpu_fault_tests! {
    lab: "lab01",
    quick: QUICK,
    long: LONG,
    file: "out.ppm",
    help: "Sequential CPU Mandelbrot: the reference",
}

#[test]
fn a_file_size_limit_is_one_line() {
    assert_file_size_limit_is_one_line("lab01", &["256", "256"], "out.ppm");
}

#[test]
fn bad_paths_fail_before_the_work() {
    assert_path_errors_come_first("lab01", LONG, "out.ppm");
}

#[test]
fn the_row_pointer_table_never_aborts_under_a_memory_limit() {
    assert_memory_limits_never_abort("lab01", &["1", "65536"]);
}

#[test]
fn numbers_in_every_notation() {
    for args in [
        &["8", "8", "--cx", "-1e-3", "--cy", "-5E-1"][..],
        &["8", "8", "--cx", "-.5", "--cy=-.25"],
        &["8", "8", "--scale", "1e-3", "--cx", "+0.5"],
        &["8", "8", "--cx=-1E+0"],
    ] {
        assert_accepted("lab01", args);
    }
    assert_rejected("lab01", &["--cx", "-inf"], "must be a finite number");
    assert_rejected("lab01", &["--cy", "NaN"], "must be a finite number");
    assert_rejected("lab01", &["--cx", "1e999"], "too large");
    assert_rejected("lab01", &["--scale", "1e-400"], "rounds to 0");
    assert_rejected("lab01", &["--scale", "-1"], "must be a positive number");
    assert_rejected(
        "lab01",
        &["9".repeat(50).as_str(), "8"],
        "the width is too large",
    );
    assert_rejected("lab01", &["8", "-1e3"], "height");
}
