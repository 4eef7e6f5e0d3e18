//! `cargo xtask sanitize` on a GPU machine: every GPU lab clean under each of its tools, and
//! this lab's sanitizer exercise caught. Here rather than in xtask's tests, which stay off a
//! GPU machine without Rust: the binaries (xtask's and the labs') are those built beside this
//! test, or the `cargo xtask dist` folder it runs from.

use std::path::PathBuf;

use assert_cmd::Command;

/// The folder holding the lab binaries this test was built with.
fn bin_dir() -> PathBuf {
    assert_cmd::cargo::cargo_bin("lab06")
        .parent()
        .expect("a folder")
        .to_path_buf()
}

fn sanitize(args: &[&str]) -> Command {
    let mut command = Command::cargo_bin("xtask")
        .expect("the xtask binary, built with the workspace (cargo test --workspace, or dist)");
    command.arg("sanitize").arg("--bin-dir").arg(bin_dir());
    command.args(args);
    command
}

#[test]
#[ignore = "needs compute-sanitizer and a CUDA GPU"]
fn every_gpu_lab_is_clean_under_the_sanitizer() {
    let output = sanitize(&[]).output().expect("xtask runs");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{table}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for row in [
        "| lab03 | memcheck | 0 | clean |",
        "| lab04 | memcheck | 0 | clean |",
        "| lab05 | memcheck | 0 | clean |",
        "| lab06 | memcheck | 0 | clean |",
        "| lab06 | racecheck | 0 | clean |",
        "| lab06 | synccheck | 0 | clean |",
    ] {
        assert!(table.contains(row), "no '{row}' in\n{table}");
    }
}

#[test]
#[ignore = "needs compute-sanitizer and a CUDA GPU"]
fn the_sanitizer_finds_the_bug_in_lab06s_exercise() {
    let dir = tempfile::tempdir().expect("a folder");
    let kernel = dir.path().join("exercise-broken.cu");
    std::fs::write(&kernel, include_str!("../kernels/exercise-broken.cu")).expect("written");
    let kernel = kernel.to_string_lossy().into_owned();
    let output = sanitize(&[
        "lab06",
        "--tool",
        "memcheck",
        "--",
        "--variants",
        "gpu-plain",
        "--n",
        "1000003",
        "--reps",
        "1",
        "--kernel",
        &kernel,
    ])
    .output()
    .expect("xtask runs");
    let table = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{table}");
    assert!(
        stderr.contains("under the sanitizer reported errors or failed"),
        "{table}{stderr}"
    );
    // memcheck alone ran, and it found errors.
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| lab06 |"))
        .collect();
    assert_eq!(rows.len(), 1, "{table}");
    assert!(rows[0].starts_with("| lab06 | memcheck | "), "{table}");
    assert!(!rows[0].starts_with("| lab06 | memcheck | 0 |"), "{table}");
    // BEGIN INSTRUCTOR
    // The bug is an out-of-bounds store to shared memory (what the exercise asks).
    assert!(rows[0].contains("Invalid __shared__"), "{table}");
    // END INSTRUCTOR
}
