//! lab02 under faults: special and linked targets, modes, signals, limits (the thread pool's
//! included), broken stdout, PNG output. The checks are shared (`shared::fault_testing`).
//!
//! Unix only: these faults (signals, modes, FIFOs, resource limits) are Unix's.
#![cfg(unix)]

use shared::fault_testing::*;

const QUICK: &[&str] = &["64", "48"];
/// Long enough to be interrupted mid-run on many cores in release.
const LONG: &[&str] = &["8192", "8192"];

shared::cpu_fault_tests! {
    lab: "lab02",
    quick: QUICK,
    long: LONG,
    file: "out.ppm",
    help: "Parallel CPU Mandelbrot with rayon",
}

#[test]
fn a_file_size_limit_is_one_line() {
    assert_file_size_limit_is_one_line("lab02", &["256", "256"], "out.ppm");
}

#[test]
fn a_process_limit_is_one_line() {
    assert_thread_limit_is_one_line("lab02", QUICK);
}

#[test]
fn bad_paths_fail_before_the_work() {
    assert_path_errors_come_first("lab02", &["16384", "16384"], "out.ppm");
}

#[test]
fn a_png_path_gets_a_png_of_the_same_pixels() {
    let ppm = reference_bytes("lab02", &["17", "9"], "out.ppm");
    let png = reference_bytes("lab02", &["17", "9"], "out.png");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    let decoded = image::load_from_memory(&png).expect("a PNG").into_rgb8();
    assert_eq!(decoded.dimensions(), (17, 9));
    assert_eq!(decoded.as_raw()[..], ppm["P6\n17 9\n255\n".len()..]);
}

/// 20000 threads took minutes to start: refused at once, in one line, with nothing written.
#[test]
fn an_absurd_thread_count_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let started = std::time::Instant::now();
    let mut command = assert_cmd::Command::cargo_bin("lab02").expect("lab02");
    command
        .env("RAYON_NUM_THREADS", "20000")
        .args(["16", "16", "-o"])
        .arg(dir.path().join("x.ppm"));
    let stderr = shared::testing::assert_fails_cleanly(&mut command, "lab02", dir.path());
    assert!(
        stderr.contains("RAYON_NUM_THREADS=20000 is far more threads"),
        "{stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
