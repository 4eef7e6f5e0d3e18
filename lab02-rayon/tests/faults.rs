//! lab02 under faults: special and linked targets, modes, signals, limits (the thread pool's
//! included), broken stdout, PNG output. The checks are shared (`shared::fault_testing`).

use shared::fault_testing::*;

const QUICK: &[&str] = &["64", "48"];
/// Long enough to be interrupted mid-run on many cores in release.
const LONG: &[&str] = &["8192", "8192"];

#[test]
fn new_files_follow_the_umask() {
    assert_mode_follows_umask("lab02", QUICK, "out.ppm");
}

#[test]
fn a_replaced_file_keeps_its_mode() {
    assert_replaced_file_keeps_its_mode("lab02", QUICK, "out.ppm");
}

#[test]
fn special_files_are_written_in_place() {
    assert_dev_null_stays("lab02", QUICK);
    assert_device_written_in_place("lab02", QUICK);
    assert_fifo_gets_every_byte("lab02", QUICK, "out.ppm");
}

#[test]
fn a_symlink_keeps_pointing_at_the_new_image() {
    assert_symlink_target_replaced("lab02", QUICK, "out.ppm");
}

#[test]
fn a_name_of_255_bytes_works() {
    assert_longest_name_works("lab02", QUICK, ".ppm");
}

#[test]
fn signals_leave_nothing_behind() {
    assert_signals_leave_nothing("lab02", LONG, "out.ppm", 0);
}

#[test]
fn a_file_size_limit_is_one_line() {
    assert_file_size_limit_is_one_line("lab02", &["256", "256"], "out.ppm");
}

#[test]
fn closed_and_full_stdout() {
    assert_stdout_faults_handled("lab02", QUICK);
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
fn help_opens_with_the_labs_own_words() {
    assert_help_opens_with("lab02", "Parallel CPU Mandelbrot with rayon");
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

#[test]
fn an_unwritable_folder_fails_before_the_work() {
    assert_unwritable_folder_fails_first("lab02", LONG, "out.ppm");
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
