//! lab02 must write exactly lab01's bytes, and refuse bad input the same way.

#![allow(clippy::unwrap_used)] // a test that cannot set itself up should panic

use assert_cmd::Command;
use shared::testing::{assert_missing_directory_fails, assert_rejects_bad_sizes};

/// The bytes `lab` writes at `width x height`.
fn render(lab: &str, width: u32, height: u32) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.ppm");
    // lab01 is found in the workspace's target folder, built by `cargo test --workspace`.
    Command::cargo_bin(lab)
        .unwrap()
        .args([&width.to_string(), &height.to_string(), "-o"])
        .arg(&path)
        .assert()
        .success();
    std::fs::read(path).unwrap()
}

#[test]
fn byte_identical_to_lab01_at_odd_and_non_square_sizes() {
    for (width, height) in [(1, 1), (2, 3), (7, 5), (64, 48), (333, 517)] {
        assert!(
            render("lab01", width, height) == render("lab02", width, height),
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
