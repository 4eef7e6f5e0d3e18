//! lab03 from the outside. The GPU tests are ignored where there is no GPU; `cargo xtask
//! test` runs them where there is one.

#![allow(clippy::unwrap_used)] // a test that cannot set itself up should panic

use assert_cmd::Command;
use lab03_cuda_naive::kernel_file;
use shared::testing::{
    assert_explains_missing_gpu, assert_fails_cleanly, assert_kernels_compile,
    assert_rejects_bad_sizes, ptx_loops,
};

#[test]
fn rejects_bad_sizes() {
    assert_rejects_bad_sizes("lab03");
}

#[test]
fn without_a_gpu_says_what_is_missing_and_what_still_runs() {
    assert_explains_missing_gpu("lab03");
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn nvrtc_compiles_the_kernel_for_sm80_and_sm90() {
    assert_kernels_compile(&[kernel_file()]);
}

/// The lesson lab04 builds on: with NVRTC's default options, the escape loop fuses a
/// multiply and an add (one rounding where lab01 has two), so some pixels differ.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn nvrtc_default_options_fuse_a_multiply_add_in_the_escape_loop() {
    let loops = ptx_loops(&kernel_file());
    assert!(
        loops.iter().any(|body| body.contains("fma.rn.f64")),
        "no fma.rn.f64 in the loops of lab03's PTX:\n{}",
        loops.join("\n---\n")
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn width_above_the_block_limit_names_the_limit_and_lab04() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::cargo_bin("lab03").unwrap();
    command
        .args(["4096", "16", "-o"])
        .arg(dir.path().join("x.ppm"));
    let message = assert_fails_cleanly(&mut command, "lab03", dir.path());
    assert!(message.contains("at most 1024"), "{message}");
    assert!(message.contains("lab04"), "{message}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn renders_a_full_image_on_the_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.ppm");
    Command::cargo_bin("lab03")
        .unwrap()
        .args(["1024", "77", "-o"])
        .arg(&path)
        .assert()
        .success();
    let file = std::fs::read(&path).unwrap();
    assert!(file.starts_with(b"P6\n1024 77\n255\n"));
    assert_eq!(file.len(), "P6\n1024 77\n255\n".len() + 1024 * 77 * 3);
}
