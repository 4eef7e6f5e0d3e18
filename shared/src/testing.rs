//! What the labs' integration tests check alike: bad input ends in one clear line, a
//! non-zero exit, no panic and no file.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use clap::Parser;

use crate::mandelbrot::escape_count;
use crate::nvrtc::{checked_arches, loops, KernelFile};
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
        .env_remove(crate::gpu::EMULATE_VARIABLE)
        .args(["16", "16", "-o"])
        .arg(dir.path().join("out.ppm"));
    let message = assert_fails_cleanly(&mut command, lab, dir.path());
    assert!(message.contains("no usable GPU"), "{message}");
    assert!(message.contains("--emulate"), "{message}");
}

/// Whether the GPU tests run on the CPU device (`LABS_EMULATE=1`, as `cargo xtask test`
/// sets it where no GPU opens): their labs then report the CPU device, not a GPU.
pub fn on_cpu_device() -> bool {
    std::env::var(crate::gpu::EMULATE_VARIABLE)
        .is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"))
}

/// A report's device as the run should name it: a GPU's name, or the CPU device's under
/// [`on_cpu_device`]; never a CPU lab's "CPU with N hardware threads".
pub fn assert_names_the_device(device: &str) {
    if on_cpu_device() {
        assert!(
            device.starts_with("CPU device"),
            "not the CPU device: {device:?}"
        );
    } else {
        assert!(
            !device.is_empty() && !device.contains("CPU"),
            "not a GPU: {device:?}"
        );
    }
}

/// Run `lab` with `args` and `-o` into a temporary directory; return the bytes it wrote.
/// Only a crate's own binary is built for its tests: compare with [`reference_ppm`], not with
/// another lab.
pub fn render(lab: &str, args: &[&str]) -> Vec<u8> {
    let (_dir, path) = run_writing(lab, args, "out.ppm");
    std::fs::read(path).expect("the lab should have written its file")
}

/// Run `lab` with `args` and `-o out.png`; return the PNG's pixels, decoded, in the order a
/// PPM holds them (compare with [`reference_ppm`]'s bytes after its header).
pub fn render_png_pixels(lab: &str, args: &[&str]) -> Vec<u8> {
    let (_dir, path) = run_writing(lab, args, "out.png");
    image::open(&path)
        .expect("the lab should have written a PNG")
        .into_rgb8()
        .into_raw()
}

/// Run `lab` with `args` and `-o DIR/name` in a new temporary folder, which lives as long as
/// the returned guard; the lab must succeed.
fn run_writing(lab: &str, args: &[&str], name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile_dir();
    let path = dir.path().join(name);
    Command::cargo_bin(lab)
        .expect("the lab binary should be built")
        .args(args)
        .arg("-o")
        .arg(&path)
        .assert()
        .success();
    (dir, path)
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

/// How the PPM file `found` differs from `expected`, in the words `cargo xtask verify` uses
/// ("3 pixels differ, first at file row 20, column 14: [0, 0, 0] expected, [66, 30, 15]
/// found"); `None` when the two are byte-identical. Both should have the labs' header,
/// `P6\nWIDTH HEIGHT\n255\n`.
pub fn describe_difference(expected: &[u8], found: &[u8]) -> Option<String> {
    if expected == found {
        return None;
    }
    /// The header's three lines, and the pixels after them.
    fn split(file: &[u8]) -> Option<([&[u8]; 3], &[u8])> {
        match file.splitn(4, |&b| b == b'\n').collect::<Vec<_>>()[..] {
            [magic, size, max, pixels] => Some(([magic, size, max], pixels)),
            _ => None,
        }
    }
    let (Some((header, want)), Some((found_header, have))) = (split(expected), split(found)) else {
        return Some("one of the files has no PPM header".to_string());
    };
    let size = String::from_utf8_lossy(header[1]);
    let width = size.split(' ').next().and_then(|w| w.parse::<usize>().ok());
    let (Some(width), true, true) = (
        width,
        header == found_header,
        want.len() == have.len() && want.len() % 3 == 0,
    ) else {
        return Some(format!(
            "the headers or sizes differ: {} bytes starting {:?} expected, {} bytes starting \
             {:?} found",
            expected.len(),
            String::from_utf8_lossy(&expected[..expected.len().min(20)]),
            found.len(),
            String::from_utf8_lossy(&found[..found.len().min(20)]),
        ));
    };
    let mut differing =
        (0..want.len() / 3).filter(|p| want[3 * p..3 * p + 3] != have[3 * p..3 * p + 3]);
    let first = differing.next()?;
    Some(format!(
        "{} pixels differ, first at file row {}, column {}: {:?} expected, {:?} found",
        1 + differing.count(),
        first / width,
        first % width,
        &want[3 * first..3 * first + 3],
        &have[3 * first..3 * first + 3],
    ))
}

/// Run `lab` with `args` and `--json` in an empty folder, without `-o`: the lab writes its
/// default `file` there, stdout holds the JSON report alone, and the last line of stderr (the
/// only one that says "wrote") is `LAB: wrote FILE (SIZE)`.
pub fn assert_says_where_it_wrote(lab: &str, args: &[&str], file: &str, size: &str) {
    let dir = tempfile_dir();
    let output = Command::cargo_bin(lab)
        .expect("the lab binary should be built")
        .current_dir(dir.path())
        .args(args)
        .arg("--json")
        .output()
        .expect("the lab should start");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{lab} {args:?} failed: {stderr}");
    assert!(dir.path().join(file).is_file(), "{lab} wrote no {file}");
    serde_json::from_slice::<LabReport>(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{lab}'s stdout is not the JSON report alone ({e}): {:?}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    let wrote: Vec<&str> = stderr.lines().filter(|l| l.contains("wrote")).collect();
    assert_eq!(wrote, [format!("{lab}: wrote {file} ({size})")], "{stderr}");
    assert!(stderr.ends_with(&format!("{}\n", wrote[0])), "{stderr}");
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

/// Compile each kernel file with its lab's own options for every architecture of
/// [`checked_arches`]; a failure panics with NVRTC's log. Needs NVRTC, not a GPU.
pub fn assert_kernels_compile(kernels: &[KernelFile]) {
    for kernel in kernels {
        for arch in checked_arches() {
            if let Err(e) = kernel.cubin(arch) {
                panic!("{} for {arch}: {e}", kernel.name);
            }
        }
    }
}

/// The loops of `kernel`'s PTX for every checked architecture, one after the other (see
/// [`crate::nvrtc::loops`]): a property of its loops holds on each GPU the labs support.
/// Needs NVRTC, not a GPU.
pub fn ptx_loops(kernel: &KernelFile) -> Vec<String> {
    checked_arches()
        .into_iter()
        .flat_map(|arch| {
            let arch = arch.replace("sm_", "compute_");
            let ptx = kernel
                .ptx(&arch)
                .unwrap_or_else(|e| panic!("{} for {arch}: {e}", kernel.name));
            loops(&ptx)
        })
        .collect()
}

/// The fault tests of a lab that runs on the CPU and writes an image, one `#[test]` each,
/// from one declaration: its name, a quick run, a run long enough to be interrupted, the
/// file name it writes (whose extension it keeps), and the first line of its `--help`.
/// The checks are `fault_testing`'s; a lab's own faults stay beside the macro.
#[macro_export]
macro_rules! cpu_fault_tests {
    (
        lab: $lab:literal,
        quick: $quick:expr,
        long: $long:expr,
        file: $file:literal,
        help: $help:literal $(,)?
    ) => {
        #[test]
        fn new_files_follow_the_umask() {
            $crate::fault_testing::assert_mode_follows_umask($lab, $quick, $file);
        }

        #[test]
        fn a_replaced_file_keeps_its_mode() {
            $crate::fault_testing::assert_replaced_file_keeps_its_mode($lab, $quick, $file);
        }

        #[test]
        fn special_files_are_written_in_place() {
            $crate::fault_testing::assert_dev_null_stays($lab, $quick);
            $crate::fault_testing::assert_device_written_in_place($lab, $quick);
            $crate::fault_testing::assert_fifo_gets_every_byte($lab, $quick, $file);
        }

        #[test]
        fn a_symlink_keeps_pointing_at_the_new_image() {
            $crate::fault_testing::assert_symlink_target_replaced($lab, $quick, $file);
        }

        #[test]
        fn a_name_of_255_bytes_works() {
            let extension = &$file[$file.rfind('.').expect("a file name with an extension")..];
            $crate::fault_testing::assert_longest_name_works($lab, $quick, extension);
        }

        #[test]
        fn signals_leave_nothing_behind() {
            $crate::fault_testing::assert_signals_leave_nothing($lab, $long, $file, 0);
        }

        #[test]
        fn closed_and_full_stdout() {
            $crate::fault_testing::assert_stdout_faults_handled($lab, $quick);
        }

        #[test]
        fn an_unwritable_folder_fails_before_the_work() {
            $crate::fault_testing::assert_unwritable_folder_fails_first($lab, $long, $file);
        }

        #[test]
        fn help_opens_with_the_labs_own_words() {
            $crate::fault_testing::assert_help_opens_with($lab, $help);
        }
    };
}

/// The fault tests of a Mandelbrot lab that needs a GPU, from one declaration: those that
/// need none (a bad path fails before the GPU is opened, every number notation reaches the
/// lab, a fake driver is one line, the help) and, where a GPU opens, the output file's.
#[macro_export]
macro_rules! gpu_fault_tests {
    (lab: $lab:literal, help: $help:literal $(,)?) => {
        #[test]
        fn bad_paths_fail_before_the_work() {
            $crate::fault_testing::assert_path_errors_come_first(
                $lab,
                &["1024", "1024"],
                "out.ppm",
            );
        }

        #[test]
        fn help_opens_with_the_labs_own_words() {
            $crate::fault_testing::assert_help_opens_with($lab, $help);
        }

        #[test]
        fn numbers_in_every_notation_reach_the_lab() {
            // Without a GPU the run then stops at the GPU, in one line: the numbers were
            // accepted.
            for args in [
                &["8", "8", "--cx", "-1e-3", "--cy", "-5E-1"][..],
                &["8", "8", "--cx", "-.5", "--scale=1e-3"],
            ] {
                let output = $crate::fault_testing::lab_command($lab)
                    .env("CUDA_VISIBLE_DEVICES", "")
                    .args(args)
                    .args(["-o", "/dev/null"])
                    .output()
                    .expect("the lab starts");
                let line = $crate::fault_testing::assert_one_line_failure(&output, $lab);
                assert!(line.contains("no usable GPU"), "{args:?}: {line}");
            }
            $crate::fault_testing::assert_rejected(
                $lab,
                &["--cx", "-inf"],
                "must be a finite number",
            );
            $crate::fault_testing::assert_rejected($lab, &["--scale", "1e-400"], "rounds to 0");
        }

        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn special_files_and_modes() {
            let quick = &["64", "48"];
            $crate::fault_testing::assert_dev_null_stays($lab, quick);
            $crate::fault_testing::assert_fifo_gets_every_byte($lab, quick, "out.ppm");
            $crate::fault_testing::assert_mode_follows_umask($lab, quick, "out.ppm");
            $crate::fault_testing::assert_symlink_target_replaced($lab, quick, "out.ppm");
            $crate::fault_testing::assert_stdout_faults_handled($lab, quick);
            $crate::fault_testing::assert_file_size_limit_is_one_line(
                $lab,
                &["256", "256"],
                "out.ppm",
            );
        }

        #[test]
        fn a_fake_driver_library_is_one_line() {
            $crate::fault_testing::assert_fake_driver_is_one_line(
                $lab,
                &["8", "8", "-o", "/dev/null"],
            );
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_is_counted_and_the_first_one_placed() {
        let mut expected = header(3, 2).into_bytes();
        expected.extend((0..18).map(|v| v as u8));
        assert_eq!(describe_difference(&expected, &expected.clone()), None);
        let mut found = expected.clone();
        let pixels = header(3, 2).len();
        // File row 1, column 1 (pixel 4), then pixel 5's blue channel.
        found[pixels + 12] = 99;
        found[pixels + 17] = 0;
        assert_eq!(
            describe_difference(&expected, &found).as_deref(),
            Some("2 pixels differ, first at file row 1, column 1: [12, 13, 14] expected, [99, 13, 14] found")
        );
        let other_size = header(2, 3).into_bytes();
        let message = describe_difference(&expected, &other_size).unwrap_or_default();
        assert!(
            message.starts_with("the headers or sizes differ"),
            "{message}"
        );
    }
}
