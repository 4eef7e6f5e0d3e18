//! lab04 under faults that need no GPU: a bad output path fails before the GPU is even opened,
//! every number notation, the help text. With a GPU (ignored otherwise): SIGKILL in the
//! middle of a large run leaves nothing. The checks are shared (`shared::fault_testing`).

use shared::fault_testing::*;

#[test]
fn bad_paths_fail_before_the_work() {
    assert_path_errors_come_first("lab04", &["1024", "1024"], "out.ppm");
}

#[test]
fn help_opens_with_the_labs_own_words() {
    assert_help_opens_with(
        "lab04",
        "Optimised CUDA Mandelbrot, byte-identical to lab01",
    );
}

#[test]
fn numbers_in_every_notation_reach_the_lab() {
    // Without a GPU the run then stops at the GPU, in one line: the numbers were accepted.
    for args in [
        &["8", "8", "--cx", "-1e-3", "--cy", "-5E-1"][..],
        &["8", "8", "--cx", "-.5", "--scale=1e-3"],
    ] {
        let output = lab_command("lab04")
            .env("CUDA_VISIBLE_DEVICES", "")
            .args(args)
            .args(["-o", "/dev/null"])
            .output()
            .expect("the lab starts");
        let line = assert_one_line_failure(&output, "lab04");
        assert!(line.contains("no usable GPU"), "{args:?}: {line}");
    }
    assert_rejected("lab04", &["--cx", "-inf"], "must be a finite number");
    assert_rejected("lab04", &["--scale", "1e-400"], "rounds to 0");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn signals_leave_nothing_behind() {
    if shared::testing::on_cpu_device() {
        // Mid-computation: the CPU device would interpret for minutes before the write.
        assert_signals_leave_nothing("lab04", &["4096", "4096"], "out.ppm", 0);
    } else {
        // Mid-write: once 256 MiB of the 3.2 GB image are in the file.
        assert_signals_leave_nothing("lab04", &["65536", "16384"], "out.ppm", 1 << 28);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn special_files_and_modes() {
    let quick = &["64", "48"];
    assert_dev_null_stays("lab04", quick);
    assert_fifo_gets_every_byte("lab04", quick, "out.ppm");
    assert_mode_follows_umask("lab04", quick, "out.ppm");
    assert_symlink_target_replaced("lab04", quick, "out.ppm");
    assert_stdout_faults_handled("lab04", quick);
    assert_file_size_limit_is_one_line("lab04", &["256", "256"], "out.ppm");
}

#[test]
fn a_fake_driver_library_is_one_line() {
    shared::fault_testing::assert_fake_driver_is_one_line("lab04", &["8", "8", "-o", "/dev/null"]);
}
