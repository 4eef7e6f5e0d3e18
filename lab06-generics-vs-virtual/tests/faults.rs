//! lab06 under faults: broken stdout, a process limit, a --save-ptx path that cannot be
//! written (refused before the work), every number notation.
//!
//! Unix only: these faults (signals, modes, FIFOs, resource limits) are Unix's.
#![cfg(unix)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use shared::fault_testing::{
    assert_closed_stderr_is_quiet, assert_one_line_failure, assert_one_line_under_a_thread_limit,
    lab_command,
};

const QUICK: &[&str] = &["--n", "4Ki", "--reps", "1", "--cpu-only"];

#[test]
fn closed_and_full_stdout() {
    let mut child = lab_command("lab06")
        .args(QUICK)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lab06 starts");
    drop(child.stdout.take());
    let closed = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&closed.stderr);
    assert!(closed.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // Its table goes to stderr; with nobody reading it (`lab06 2>&1 | head -3`), no panic.
    assert_closed_stderr_is_quiet("lab06", lab_command("lab06").args(QUICK));

    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let output = lab_command("lab06")
        .args(QUICK)
        .arg("--json")
        .stdout(full)
        .output()
        .expect("lab06 starts");
    // The table on stderr comes first (lab06 prints it as it measures); then one error line.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("lab06: error: cannot write standard output"),
        "{stderr}"
    );
}

#[test]
fn a_process_limit_is_one_line() {
    let mut command = lab_command("lab06");
    command.args(QUICK);
    assert_one_line_under_a_thread_limit("lab06", command);
}

#[test]
fn an_unwritable_ptx_path_fails_before_the_work() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let started = Instant::now();
    let output = lab_command("lab06")
        .args(["--n", "2Gi", "--save-ptx"])
        .arg(dir.path().join("missing/reduce.ptx"))
        .output()
        .expect("lab06 starts");
    let line = assert_one_line_failure(&output, "lab06");
    assert!(line.contains("folder does not exist"), "{line}");
    assert!(started.elapsed() < Duration::from_millis(900));
}

#[test]
fn numbers_in_every_notation() {
    for (args, expected) in [
        (&["--reps", "-1"][..], "between 1 and"),
        (&["--reps", "1e9"], "too large"),
        (&["--n", "-1e3"], "N must be between 1"),
        (&["--n", &"9".repeat(40)], "N must be between 1"),
    ] {
        let output = lab_command("lab06")
            .args(args)
            .output()
            .expect("lab06 starts");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn a_fake_driver_library_is_one_line() {
    shared::fault_testing::assert_fake_driver_is_one_line("lab06", &["--gpu-only", "--n", "1Ki"]);
}
