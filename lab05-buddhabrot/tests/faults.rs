//! lab05 under faults: its PNG and raw file committed together, special and linked targets,
//! modes, signals, limits, broken stdout, every number notation. The generic checks are
//! shared (`shared::fault_testing`).
//!
//! Unix only: these faults (signals, modes, FIFOs, resource limits) are Unix's.
#![cfg(unix)]

use std::fs;

use shared::fault_testing::*;

const QUICK: &[&str] = &["--width", "16", "--height", "24", "--samples", "20000"];
/// Minutes of work: always interrupted.
const LONG: &[&str] = &["--width", "64", "--height", "64", "--samples", "1e11"];

shared::cpu_fault_tests! {
    lab: "lab05",
    quick: QUICK,
    long: LONG,
    file: "out.png",
    help: "Buddhabrot on the CPU or the GPU, with identical canvases for the same seed",
}

#[test]
fn a_file_size_limit_is_one_line() {
    let large = ["--width", "256", "--height", "256", "--samples", "1000"];
    let dir = tempfile::tempdir().expect("a temporary folder");
    let raw = dir.path().join("canvas.raw");
    let mut args: Vec<&str> = large.to_vec();
    args.extend(["--raw", raw.to_str().expect("a UTF-8 path")]);
    assert_file_size_limit_is_one_line("lab05", &args, "out.png");
    assert!(names_in(dir.path()).is_empty(), "the raw file was left");
}

#[test]
fn a_process_limit_is_one_line() {
    assert_thread_limit_is_one_line("lab05", QUICK);
}

#[test]
fn bad_paths_fail_before_the_work() {
    assert_path_errors_come_first("lab05", LONG, "out.png");
}

#[test]
fn png_and_raw_are_committed_together() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let png = dir.path().join("out.png");
    fs::write(&png, b"old").expect("an old image");
    let raw_folder = dir.path().join("raw-is-a-folder");
    fs::create_dir(&raw_folder).expect("a folder");
    for raw in [raw_folder.clone(), dir.path().join("missing/canvas.raw")] {
        let output = lab_command("lab05")
            .args(QUICK)
            .arg("-o")
            .arg(&png)
            .arg("--raw")
            .arg(&raw)
            .output()
            .expect("lab05 starts");
        let line = assert_one_line_failure(&output, "lab05");
        assert!(line.contains(&raw.display().to_string()), "{line}");
        assert_eq!(fs::read(&png).expect("the old image"), b"old");
        assert_eq!(names_in(dir.path()), ["out.png", "raw-is-a-folder"]);
    }
}

#[test]
fn one_file_named_twice_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let output = lab_command("lab05")
        .current_dir(dir.path())
        .args(QUICK)
        .args(["-o", "same.png", "--raw", "./same.png"])
        .output()
        .expect("lab05 starts");
    let line = assert_one_line_failure(&output, "lab05");
    assert!(line.contains("-o and --raw both name"), "{line}");
    assert!(names_in(dir.path()).is_empty());
}

#[test]
fn backends_are_listed_for_an_unknown_one() {
    assert_rejected("lab05", &["--backend", "tpu"], "the choices are cpu, gpu");
}

#[test]
fn numbers_in_every_notation() {
    let quick = |extra: &[&'static str]| -> Vec<&'static str> {
        QUICK.iter().copied().chain(extra.iter().copied()).collect()
    };
    assert_accepted("lab05", &quick(&["--re-min", "-3.2e0", "--re-max", "2E0"]));
    assert_accepted(
        "lab05",
        &quick(&["--sample-re-min", "-.5", "--max-iter", "2e1"]),
    );
    assert_accepted("lab05", &quick(&["--re-min=-3", "--seed", "4e3"]));
    assert_rejected("lab05", &["--re-min", "-inf"], "must be a finite number");
    assert_rejected(
        "lab05",
        &["--re-max", "1e39"],
        "too large for single precision",
    );
    assert_rejected("lab05", &["--samples", "-1"], "between 1 and");
    assert_rejected("lab05", &["--samples", "-1e3"], "between 1 and");
    assert_rejected("lab05", &["--samples", &"9".repeat(50)], "too large");
    assert_rejected(
        "lab05",
        &["--no-symmetry", "--re-min", "1", "--re-max", "1.00000001"],
        "the same number in single precision",
    );
    assert_rejected(
        "lab05",
        &["--re-min=-3.4e38", "--re-max", "3.4e38"],
        "wider than single precision",
    );
    assert_rejected(
        "lab05",
        &["--re-min", "2", "--re-max", "1"],
        "(2) must be less than",
    );
}

#[test]
fn a_fake_driver_library_is_one_line() {
    shared::fault_testing::assert_fake_driver_is_one_line(
        "lab05",
        &["--backend", "gpu", "-o", "/dev/null"],
    );
}
