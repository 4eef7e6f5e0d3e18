//! lab04 from the outside: byte-identical to lab01, clear errors. The GPU tests are ignored
//! where there is no GPU; `cargo xtask test` runs them where there is one.
//!
//! lab01's bytes are `reference_ppm`'s, computed in-process (lab01's tests pin it to the given
//! C program), so `cargo test -p lab04-cuda-optimized` needs no other lab's binary.

use lab04_cuda_optimized::kernel_file;
use shared::testing::{
    assert_explains_missing_gpu, assert_fails_cleanly, assert_kernels_compile,
    assert_missing_directory_fails, assert_rejects_bad_sizes, assert_says_where_it_wrote,
    json_report, ptx_loops, reference_ppm, render, render_png_pixels,
};

/// Every build the command line can ask for: the default, and each shortcut switched.
fn kernel_builds() -> [shared::nvrtc::KernelFile; 3] {
    [
        kernel_file(true, false),
        kernel_file(false, false),
        kernel_file(true, true),
    ]
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn nvrtc_compiles_every_build_for_sm60_sm75_sm80_and_sm90() {
    assert_kernels_compile(&kernel_builds());
}

/// The lesson of lab04: with the right NVRTC options no multiply is fused with an add in the
/// escape loop, so every rounding is lab01's. (`hypot`, before the loop, may use fma: libdevice
/// writes it with explicit fused operations, exact by design, and it matches lab01's here.)
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn nvrtc_escape_loop_has_no_fused_multiply_add() {
    for kernel in kernel_builds() {
        let loops = ptx_loops(&kernel);
        // The escape loop is found: its squares are separate, correctly rounded multiplies.
        assert!(
            loops.iter().any(|body| body.contains("mul.rn.f64")),
            "no escape loop found in the PTX ({:?})",
            kernel.options
        );
        for body in &loops {
            assert!(
                !body.contains("fma.rn.f64"),
                "a fused multiply-add in a loop ({:?}):\n{body}",
                kernel.options
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn says_where_it_wrote_the_image() {
    assert_says_where_it_wrote("lab04", &["64", "48"], "lab04-mandelbrot.ppm", "64x48");
}

#[test]
fn rejects_bad_sizes() {
    assert_rejects_bad_sizes("lab04");
}

#[test]
fn without_a_gpu_says_what_is_missing_and_what_still_runs() {
    assert_explains_missing_gpu("lab04");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn byte_identical_to_lab01() {
    let cases: &[&[&str]] = &[
        &["1", "1"],
        &["7", "5"],
        &["333", "517"],
        &["2049", "1023"],
        // 12 MiB: one whole 8 MiB chunk of the copy back and a partial one.
        &["2048", "2048"],
        &["640", "480", "--cy", "0.3"],
        &[
            "1024", "1024", "--cx", "-0.74364", "--cy", "0.13182", "--scale", "1e-6",
        ],
    ];
    for args in cases {
        assert!(
            render("lab04", args) == reference_ppm(args),
            "lab04 differs from lab01 for {args:?}"
        );
    }
}

/// The host must wait for each chunk's copy before it reads it. Reading early gave zeros
/// for the first pixels in 20 of 30 runs of this very command, so it is run ten times.
#[test]
#[ignore = "needs a CUDA GPU"]
fn png_pixels_equal_lab01s_run_after_run() {
    let args = ["640", "480"];
    let ppm = reference_ppm(&args);
    let expected = &ppm[ppm.len() - 640 * 480 * 3..];
    for run in 1..=10 {
        assert!(
            render_png_pixels("lab04", &args) == expected,
            "run {run}: the PNG's pixels differ from lab01's"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shortcuts_switched_off_or_on_change_no_pixel() {
    let reference = render("lab04", &["640", "480"]);
    for switch in [
        "--no-period2-exit",
        "--periodicity-check",
        "--no-mirror-rows",
    ] {
        assert!(
            render("lab04", &["640", "480", switch]) == reference,
            "{switch} changed pixels"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn json_report_names_the_gpu_and_its_kernel_time() {
    let report = json_report("lab04", &["256", "128"]);
    assert_eq!(report.lab, "lab04");
    shared::testing::assert_names_the_device(&report.device);
    assert!(report.phases_ms.get("kernel").is_some_and(|&ms| ms > 0.0));
    // The options the kernel was compiled with, as src/lib.rs gives them.
    let options = lab04_cuda_optimized::kernel_file(true, false)
        .options
        .join(" ");
    assert_eq!(
        report.metrics["nvrtc_options"]
            .as_str()
            .map(|o| o.starts_with(&options)),
        Some(true),
        "{options}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn missing_output_directory_is_one_clear_line() {
    assert_missing_directory_fails("lab04");
}

#[test]
fn rejects_block_shapes_over_the_thread_limit() {
    // 65536 x 65536 overflows a 32-bit product to 0: the check must not wrap.
    for block in ["65536x65536", "64x32", "0x8", "8"] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut command = assert_cmd::Command::cargo_bin("lab04").expect("lab04 is built");
        command
            .args(["16", "16", "--block", block, "-o"])
            .arg(dir.path().join("x.ppm"));
        let message = assert_fails_cleanly(&mut command, "lab04", dir.path());
        assert!(message.contains("at most 1024 threads"), "{message}");
    }
}

/// What the README's Exercise section promises: a grid past 65535 blocks tall is a usage error from `main`, one
/// line and exit status 1 (2 is for what the argument parser itself refuses).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_grid_taller_than_65535_blocks_is_one_line_and_exit_1() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut command = assert_cmd::Command::cargo_bin("lab04").expect("lab04 is built");
    // 65536 rows (the tallest image; every row computed, none mirrored) in blocks one row
    // tall: 65536 blocks.
    command
        .args(["16", "65536", "--block", "32x1", "--no-mirror-rows", "-o"])
        .arg(dir.path().join("x.ppm"));
    let message = assert_fails_cleanly(&mut command, "lab04", dir.path());
    assert!(message.contains("at most 65535 blocks tall"), "{message}");
    let status = command.output().expect("lab04 starts").status;
    assert_eq!(status.code(), Some(1));
}

/// `--emulate --profile`: the launch counted, at the registers ptxas gives the kernel for
/// the H100 (the cubin's own count: the PTX's virtual registers would say another
/// occupancy), with a prediction; and the counts follow the work: computing every row
/// issues more than computing the mirrored half once. Set against the reference solution
/// where it is recorded, and only there.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn profile_counts_the_launch_at_the_h100s_registers() {
    let cubin = kernel_file(true, false).cubin("sm_90").expect("compiles");
    let registers = shared::profile::registers(&cubin);
    assert_eq!(registers.len(), 1, "{registers:?}");
    let issued = |extra: &[&str]| {
        let args = [&["333", "217", "--emulate", "--profile"][..], extra].concat();
        let report = json_report("lab04", &args);
        let profile = report.profile.expect("a profile");
        let launches = profile.as_array().expect("a launch each");
        assert_eq!(launches.len(), 1, "{profile}");
        let launch = &launches[0];
        assert_eq!(launch["kernel"], "escape_colour");
        let prediction = &launch["prediction"];
        assert_eq!(prediction["registers"], registers[0].1, "{prediction}");
        assert_eq!(prediction["registers_known"], true);
        assert!(
            prediction["ms"].as_f64().is_some_and(|ms| ms > 0.0),
            "{prediction}"
        );
        // No reference is recorded at 333x217: nothing to set the launch against.
        assert!(launch.get("against_reference").is_none(), "{launch}");
        launch["issued"].as_u64().expect("a count")
    };
    let mirrored = issued(&[]);
    let every_row = issued(&["--no-mirror-rows"]);
    assert!(every_row > mirrored * 3 / 2, "{every_row} vs {mirrored}");

    // At arguments the reference solution is recorded at (1024x1024, here left to the
    // default size), the launch is set against its.
    let report = json_report("lab04", &["--emulate", "--profile"]);
    let profile = report.profile.expect("a profile");
    let against = &profile[0]["against_reference"];
    assert!(
        against["reference_ms"].as_f64().is_some_and(|ms| ms > 0.0)
            && against["time_ratio"].as_f64().is_some_and(|r| r > 0.0),
        "{profile}"
    );
}

/// `--profile` counts on the CPU device only: on a GPU it says what to add, and does nothing.
#[test]
fn profile_without_emulate_says_to_add_it() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let message = assert_fails_cleanly(
        assert_cmd::Command::cargo_bin("lab04")
            .expect("built")
            .args(["64", "64", "--profile", "-o"])
            .arg(dir.path().join("out.ppm"))
            .env_remove("LABS_EMULATE"),
        "lab04",
        dir.path(),
    );
    assert!(message.contains("add --emulate"), "{message}");
}

/// `--profile-png` draws what `--profile` counts: alone, it is a usage error; and a picture
/// that cannot be written is refused before any work, one line naming it, nothing left.
#[test]
fn a_profile_picture_needs_profile_and_a_writable_path() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let picture = dir.path().join("no-such-folder/warps.png");
    let run = |extra: &[&str]| {
        let mut command = assert_cmd::Command::cargo_bin("lab04").expect("built");
        command
            .args(["64", "64", "--emulate"])
            .args(extra)
            .arg("--profile-png")
            .arg(&picture)
            .arg("-o")
            .arg(dir.path().join("out.ppm"));
        assert_fails_cleanly(&mut command, "lab04", dir.path())
    };
    let alone = run(&[]);
    assert!(alone.contains("add --profile"), "{alone}");
    let unwritable = run(&["--profile"]);
    assert!(unwritable.contains("warps.png"), "{unwritable}");
}
