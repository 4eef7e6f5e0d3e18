//! lab03 from the outside. The GPU tests are ignored where there is no GPU; `cargo xtask
//! test` runs them where there is one.

#![allow(clippy::unwrap_used)] // a test that cannot set itself up should panic

use assert_cmd::Command;
use lab03_cuda_naive::kernel_file;
use shared::testing::{
    assert_explains_missing_gpu, assert_fails_cleanly, assert_kernels_compile,
    assert_rejects_bad_sizes, assert_says_where_it_wrote, ptx_loops,
};

#[test]
#[ignore = "needs a CUDA GPU"]
fn says_where_it_wrote_the_image() {
    assert_says_where_it_wrote("lab03", &["64", "48"], "lab03-mandelbrot.ppm", "64x48");
}

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
fn nvrtc_compiles_the_kernel_for_sm60_sm75_sm80_and_sm90() {
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

/// The width is checked against the block limit before the GPU is opened: with every GPU
/// hidden, 2048 columns still get the width's own message (a lab that opened the GPU first
/// would say "no usable GPU"), exit 1, and no default-named file.
#[test]
fn width_above_the_block_limit_is_refused_before_the_gpu_opens() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::cargo_bin("lab03").unwrap();
    command
        .current_dir(dir.path())
        .env("CUDA_VISIBLE_DEVICES", "")
        .args(["2048", "16"]);
    let message = assert_fails_cleanly(&mut command, "lab03", dir.path());
    assert_eq!(
        message.trim_end(),
        "lab03: error: lab03 runs one thread per column in a single block per row, and a \
         block holds at most 1024 threads on every CUDA GPU, so the width can be at most 1024 \
         (got 2048); lab04's 2D grid has no such limit"
    );
    assert_eq!(command.output().unwrap().status.code(), Some(1));
}

/// 1024 columns pass the check (the limit is inclusive): without a GPU the run goes on to
/// the GPU and stops there.
#[test]
fn a_width_of_1024_reaches_the_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::cargo_bin("lab03").unwrap();
    command
        .env("CUDA_VISIBLE_DEVICES", "")
        .args(["1024", "16", "-o"])
        .arg(dir.path().join("x.ppm"));
    let message = assert_fails_cleanly(&mut command, "lab03", dir.path());
    assert!(message.contains("no usable GPU"), "{message}");
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
