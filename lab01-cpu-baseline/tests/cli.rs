//! lab01 from the outside: the file it writes, a few pixels derived by hand, bad input.

#![allow(clippy::unwrap_used)] // a test that cannot set itself up should panic

use assert_cmd::Command;
use shared::testing::{assert_missing_directory_fails, assert_rejects_bad_sizes, render};

/// The pixel at image row `i`, column `j` (the file stores the bottom row first).
fn pixel(file: &[u8], width: usize, height: usize, i: usize, j: usize) -> [u8; 3] {
    let header = format!("P6\n{width} {height}\n255\n").len();
    let at = header + ((height - 1 - i) * width + j) * 3;
    [file[at], file[at + 1], file[at + 2]]
}

#[test]
fn writes_a_p6_header_and_every_pixel() {
    let file = render("lab01", &["7", "5"]);
    assert!(file.starts_with(b"P6\n7 5\n255\n"));
    assert_eq!(file.len(), "P6\n7 5\n255\n".len() + 7 * 5 * 3);
}

#[test]
fn pixels_match_values_worked_out_by_hand() {
    // 64 x 64: scale = 4/64 = 1/16, x = (j - 32)/16 - 0.6, y = (i - 32)/16.
    let file = render("lab01", &["64", "64"]);
    // i = 32, j = 40: c = -0.1, well inside the main cardioid: black.
    assert_eq!(pixel(&file, 64, 64, 32, 40), [0, 0, 0]);
    // j = 0: c = -2.6. z1 = c, |z1|^2 = 6.76 >= 4: the loop runs once, counter 1,
    // palette entry 1.
    assert_eq!(pixel(&file, 64, 64, 32, 0), [25, 7, 26]);
    // j = 63: c = 1.3375. z1 = 1.3375 (|z|^2 = 1.79), z2 = 1.3375^2 + 1.3375 = 3.126
    // (|z|^2 = 9.77): counter 2, palette entry 2.
    assert_eq!(pixel(&file, 64, 64, 32, 63), [9, 1, 47]);
    // i = 32, j = 26: c = -0.975, inside the period-2 bulb. It never escapes: the counter
    // wraps to 0, black (the 1/16 quirk means it is iterated in full first).
    assert_eq!(pixel(&file, 64, 64, 32, 26), [0, 0, 0]);
}

#[test]
fn default_output_name_and_json_report() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::cargo_bin("lab01")
        .unwrap()
        .current_dir(dir.path())
        .args(["16", "8", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(dir.path().join("cpu-mandelbrot.ppm").is_file());
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["lab"], "lab01");
    assert_eq!(report["width"], 16);
    for phase in ["compute", "colour", "write", "total"] {
        assert!(
            report["phases_ms"][phase].as_f64().unwrap() >= 0.0,
            "{phase}"
        );
    }
}

#[test]
fn rejects_bad_sizes() {
    assert_rejects_bad_sizes("lab01");
}

#[test]
fn missing_output_directory_is_one_clear_line() {
    assert_missing_directory_fails("lab01");
}

#[test]
fn failed_run_leaves_an_existing_image_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("good.ppm");
    std::fs::write(&target, b"a good image").unwrap();
    // A directory where the file should go: the write must fail, and nothing may change.
    let blocked = dir.path().join("blocked.ppm");
    std::fs::create_dir(&blocked).unwrap();
    let output = Command::cargo_bin("lab01")
        .unwrap()
        .args(["8", "8", "-o"])
        .arg(&blocked)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert_eq!(std::fs::read(&target).unwrap(), b"a good image");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "no temporary file left"
    );
}
