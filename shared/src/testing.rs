//! What the labs' integration tests check alike: bad input ends in one clear line, a
//! non-zero exit, no panic and no file.

use std::path::Path;

use assert_cmd::Command;
use clap::Parser;

use crate::mandelbrot::escape_count;
use crate::nvrtc::{loops, KernelFile, CHECKED_ARCHES};
use crate::palette::colour;
use crate::ppm::header;
use crate::timing::LabReport;
use crate::view::MandelbrotArgs;

/// Sizes every Mandelbrot lab must refuse: zero, negative, not a number, absurdly large.
pub const BAD_SIZES: &[[&str; 2]] = &[
    ["0", "16"],
    ["16", "0"],
    ["-5", "16"],
    ["16", "-1"],
    ["abc", "16"],
    ["16", "1.5"],
    ["100000", "16"],
    ["16", "99999999999999999999"],
];

/// Run `command` and check that it failed cleanly: non-zero status, exactly one line on
/// stderr starting with `lab:`, no panic, and nothing left in `dir`.
pub fn assert_fails_cleanly(command: &mut Command, lab: &str, dir: &Path) -> String {
    let output = command.output().expect("the lab should start");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{lab} should fail: {stderr}");
    assert_ne!(output.status.code(), Some(101), "{lab} panicked: {stderr}");
    assert_eq!(
        stderr.lines().count(),
        1,
        "{lab} should print one line: {stderr:?}"
    );
    assert!(
        stderr.starts_with(&format!("{lab}:")),
        "unexpected message: {stderr:?}"
    );
    assert!(!stderr.contains("panicked"), "{lab} panicked: {stderr}");
    let left: Vec<_> = std::fs::read_dir(dir)
        .expect("the test directory should exist")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{lab} left files behind: {left:?}");
    stderr
}

/// Every bad size, with the output aimed into `dir`: each must fail cleanly.
pub fn assert_rejects_bad_sizes(lab: &str) {
    for [width, height] in BAD_SIZES {
        let dir = tempfile_dir();
        let mut command = Command::cargo_bin(lab).expect("the lab binary should be built");
        command
            .args([width, height, "-o"])
            .arg(dir.path().join("out.ppm"));
        let message = assert_fails_cleanly(&mut command, lab, dir.path());
        assert!(
            message.contains("width") || message.contains("height") || message.contains("WIDTH"),
            "the message should name the bad argument: {message}"
        );
    }
}

fn tempfile_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// An output path in a directory that does not exist: one clear line naming the path, and
/// nothing written.
pub fn assert_missing_directory_fails(lab: &str) {
    let dir = tempfile_dir();
    let mut command = Command::cargo_bin(lab).expect("the lab binary should be built");
    command
        .args(["8", "8", "-o"])
        .arg(dir.path().join("no/such/dir/out.ppm"));
    let message = assert_fails_cleanly(&mut command, lab, dir.path());
    assert!(message.contains("cannot write"), "{message}");
}

/// With every GPU hidden (an empty `CUDA_VISIBLE_DEVICES`, so this holds on GPU machines
/// too), a GPU lab says what is missing and which labs still run, in one line.
pub fn assert_explains_missing_gpu(lab: &str) {
    let dir = tempfile_dir();
    let mut command = Command::cargo_bin(lab).expect("the lab binary should be built");
    command
        .env("CUDA_VISIBLE_DEVICES", "")
        .args(["16", "16", "-o"])
        .arg(dir.path().join("out.ppm"));
    let message = assert_fails_cleanly(&mut command, lab, dir.path());
    assert!(message.contains("no usable GPU"), "{message}");
    assert!(message.contains("lab01 and lab02"), "{message}");
}

/// Run `lab` with `args` and `-o` into a temporary directory; return the bytes it wrote.
/// Only a crate's own binary is built for its tests: compare with [`reference_ppm`], not with
/// another lab.
pub fn render(lab: &str, args: &[&str]) -> Vec<u8> {
    let dir = tempfile_dir();
    let path = dir.path().join("out.ppm");
    Command::cargo_bin(lab)
        .expect("the lab binary should be built")
        .args(args)
        .arg("-o")
        .arg(&path)
        .assert()
        .success();
    std::fs::read(path).expect("the lab should have written its file")
}

/// Run `lab` with `args` and `-o out.png`; return the PNG's pixels, decoded, in the order a
/// PPM holds them (compare with [`reference_ppm`]'s bytes after its header).
pub fn render_png_pixels(lab: &str, args: &[&str]) -> Vec<u8> {
    let dir = tempfile_dir();
    let path = dir.path().join("out.png");
    Command::cargo_bin(lab)
        .expect("the lab binary should be built")
        .args(args)
        .arg("-o")
        .arg(&path)
        .assert()
        .success();
    image::open(&path)
        .expect("the lab should have written a PNG")
        .into_rgb8()
        .into_raw()
}

/// The PPM file a Mandelbrot lab must write for `args` (`WIDTH HEIGHT [--cx X] [--cy Y]
/// [--scale S]`, parsed as the labs parse them), computed here in-process from the reference
/// semantics: one pixel at a time, rows from the last to the first.
///
/// lab01's tests pin this function to the given C program's committed digests, so a lab
/// compared with it is compared with the C program, without needing lab01's binary.
pub fn reference_ppm(args: &[&str]) -> Vec<u8> {
    #[derive(Parser)]
    #[command(allow_negative_numbers = true)]
    struct Reference {
        #[command(flatten)]
        mandelbrot: MandelbrotArgs,
    }
    let view = Reference::try_parse_from(std::iter::once("reference").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("bad reference arguments {args:?}: {e}"))
        .mandelbrot
        .view();
    let mut file = header(view.width, view.height).into_bytes();
    for i in (0..view.height).rev() {
        let y = view.y(i);
        for j in 0..view.width {
            file.extend_from_slice(&colour(escape_count(view.x(j), y)));
        }
    }
    file
}

/// Run `lab` with `args` and `--json` (output into a temporary directory); return its report,
/// parsed with the type the labs print it with.
pub fn json_report(lab: &str, args: &[&str]) -> LabReport {
    let dir = tempfile_dir();
    let output = Command::cargo_bin(lab)
        .expect("the lab binary should be built")
        .args(args)
        .arg("--json")
        .arg("-o")
        .arg(dir.path().join("out.ppm"))
        .output()
        .expect("the lab should start");
    assert!(
        output.status.success(),
        "{lab} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{lab} --json printed no report ({e})"))
}

/// Compile each kernel file with its lab's own options for every architecture in
/// [`CHECKED_ARCHES`]; a failure panics with NVRTC's log. Needs NVRTC, not a GPU.
pub fn assert_kernels_compile(kernels: &[KernelFile]) {
    for kernel in kernels {
        for arch in CHECKED_ARCHES {
            if let Err(e) = kernel.cubin(arch) {
                panic!("{} for {arch}: {e}", kernel.name);
            }
        }
    }
}

/// The loops of `kernel`'s PTX for the first checked architecture (see
/// [`crate::nvrtc::loops`]). Needs NVRTC, not a GPU.
pub fn ptx_loops(kernel: &KernelFile) -> Vec<String> {
    let arch = CHECKED_ARCHES[0].replace("sm_", "compute_");
    let ptx = kernel
        .ptx(&arch)
        .unwrap_or_else(|e| panic!("{} for {arch}: {e}", kernel.name));
    loops(&ptx)
}
