//! The coursework loop, end to end: the hand-out compiles without warnings and lab01's tests
//! pass in it; grading the solution earns every mark graded here; grading the hand-out
//! earns none (so every check can fail); and the hand-out with the solutions put back
//! (`handout --solved`) earns every mark again, so skeleton and solution cannot drift apart.
//!
//! One test, in this order, so that the builds are shared: the student's workspaces compile
//! in one grader target folder, where the registry dependencies compile once.

use std::path::Path;
use std::process::Command;

use assert_cmd::assert::OutputAssertExt;
use serde_json::Value;
use xtask_test_support::{binary, target_dir};

fn cargo_in(dir: &Path) -> Command {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.current_dir(dir);
    cargo
}

/// Grade, check the run succeeded, and return results.json's tests.
fn grade(args: &[&str], results: &Path) -> Vec<Value> {
    let output = binary("instructor")
        .arg("grade")
        .args(args)
        .arg("--gradescope")
        .arg(results)
        .output()
        .expect("it runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "grade {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("| check | points | result |"), "{stdout}");
    let json: Value = serde_json::from_slice(&std::fs::read(results).expect("results.json"))
        .expect("results.json is JSON");
    let tests = json["tests"].as_array().expect("a tests array").clone();
    let sum: f64 = tests
        .iter()
        .map(|t| t["score"].as_f64().unwrap_or(-1.0))
        .sum();
    assert!(
        (json["score"].as_f64().unwrap_or(-1.0) - sum).abs() < 1e-6,
        "{json}"
    );
    for test in &tests {
        let name = test["name"].as_str().unwrap_or_default();
        assert!(
            name.len() > 7 && name.starts_with("lab") && &name[5..7] == ": ",
            "a test name starts with its lab: {name}"
        );
        assert!(
            matches!(
                test["visibility"].as_str(),
                Some("visible" | "after_published")
            ),
            "{test}"
        );
    }
    tests
}

/// The checks graded on this machine (a GPU check without a GPU is listed, not graded).
fn graded(tests: &[Value]) -> Vec<&Value> {
    tests
        .iter()
        .filter(|t| {
            !t["output"]
                .as_str()
                .unwrap_or_default()
                .starts_with("not graded here")
        })
        .collect()
}

fn assert_full_marks(tests: &[Value], what: &str) {
    let graded = graded(tests);
    assert!(
        graded.len() >= 6,
        "{what}: too few checks graded here: {graded:?}"
    );
    for test in graded {
        assert_eq!(test["score"], test["max_score"], "{what}: {test}");
    }
}

/// A check of speed, which only a GPU grades for the GPU labs.
fn is_speed(test: &Value) -> bool {
    test["name"]
        .as_str()
        .unwrap_or_default()
        .contains("time against the solution")
}

/// A line on the terminal while this long test runs (libtest keeps `eprintln!` back until a
/// test ends; `shared::cli::eprint_line` writes to stderr itself).
fn step(what: &str) {
    shared::cli::eprint_line(&format!("coursework: {what}"));
}

#[test]
#[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
fn hand_out_grade_and_put_the_solutions_back() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let handout = scratch.path().join("handout");
    let solved = scratch.path().join("solved");
    let grader_target = target_dir().join("grade");

    step("writing the hand-out and the solved hand-out");
    binary("instructor")
        .args(["handout", "--out"])
        .arg(&handout)
        .assert()
        .success();
    binary("instructor")
        .args(["handout", "--solved", "--out"])
        .arg(&solved)
        .assert()
        .success();
    let refused = binary("instructor")
        .args(["handout", "--out"])
        .arg(&handout)
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(stderr.contains("is not empty"), "{stderr}");

    // Instructor-only files stay behind, and no marker or solution comment leaks.
    for gone in ["xtask/instructor", ".ci/check.d/grader"] {
        assert!(!handout.join(gone).exists(), "{gone} is in the hand-out");
    }
    // Nor does its workspace name the instructor's crate, its alias or what only it uses.
    for (file, names) in [
        ("Cargo.toml", &["instructor", "INSTRUCTOR"][..]),
        (".cargo/config.toml", &["instructor", "INSTRUCTOR"]),
        ("Cargo.lock", &["\"instructor\"", "\"zip\"", "\"landlock\""]),
    ] {
        let text = std::fs::read_to_string(handout.join(file)).expect("a hand-out file");
        for name in names {
            assert!(!text.contains(name), "{file} names {name}");
        }
    }
    for file in [
        "lab02-rayon/src/main.rs",
        "lab04-cuda-optimized/kernels/mandelbrot.cu",
    ] {
        let text = std::fs::read_to_string(handout.join(file)).expect("a hand-out file");
        assert!(
            !text.contains("SOLUTION") && !text.contains("stub:"),
            "{file}"
        );
    }
    let lab02 = std::fs::read_to_string(handout.join("lab02-rayon/src/main.rs")).unwrap();
    assert!(lab02.contains("shared::unfinished!(") && !lab02.contains("into_par_iter"));

    // The hand-out as given: no exercise check passes.
    step("grading the hand-out (the first grade builds the grader's cache: minutes)");
    let tests = grade(
        &[handout.to_str().unwrap()],
        &scratch.path().join("handout.json"),
    );
    let graded_here = graded(&tests);
    assert!(graded_here.len() >= 6, "{tests:?}");
    for test in graded_here {
        assert_eq!(
            test["score"].as_f64(),
            Some(0.0),
            "the hand-out earned: {test}"
        );
    }

    // The hand-out compiles with its lock file as it is, without a warning, is formatted,
    // and lab01's tests pass in it. Checked, not built: rustc's warnings are the same, and a
    // release build of every target took CI 6 minutes.
    step("checking the hand-out as a student would build it, and running lab01's tests in it");
    let build = cargo_in(&handout)
        .args([
            "check",
            "--locked",
            "--workspace",
            "--all-targets",
            "--target-dir",
        ])
        .arg(&grader_target)
        .output()
        .expect("cargo runs");
    let messages = String::from_utf8_lossy(&build.stderr);
    assert!(
        build.status.success(),
        "the hand-out does not compile:\n{messages}"
    );
    assert!(
        !messages.contains("warning"),
        "the hand-out compiles with warnings:\n{messages}"
    );
    let fmt = cargo_in(&handout)
        .args(["fmt", "--all", "--check"])
        .output()
        .expect("cargo runs");
    assert!(
        fmt.status.success(),
        "{}",
        String::from_utf8_lossy(&fmt.stdout)
    );
    let lab01 = cargo_in(&handout)
        .args([
            "test",
            "--release",
            "-p",
            "lab01-cpu-baseline",
            "--target-dir",
        ])
        .arg(&grader_target)
        .output()
        .expect("cargo runs");
    assert!(
        lab01.status.success(),
        "{}",
        String::from_utf8_lossy(&lab01.stdout)
    );

    // The hand-out with the solutions put back (the solution, as a student would hand it
    // in): every mark.
    step("grading the solved hand-out");
    let tests = grade(
        &[solved.to_str().unwrap()],
        &scratch.path().join("solved.json"),
    );
    assert_full_marks(&tests, "the solved hand-out");
    // With NVRTC here (`cargo xtask test` finds it), the GPU labs' image, canvas and sum
    // checks ran on the CPU device (and earned every mark, above); only the kernels' speed
    // waits for a GPU.
    let cpu_device = shared::nvrtc::is_present();
    for test in &tests {
        let name = test["name"].as_str().unwrap_or_default();
        let listed = test["output"]
            .as_str()
            .unwrap_or_default()
            .starts_with("not graded here");
        let gpu_lab = ["lab03", "lab04", "lab05"]
            .iter()
            .any(|lab| name.starts_with(lab))
            || name.contains("gpu-");
        if cpu_device && gpu_lab {
            assert_eq!(listed, is_speed(test), "{test}");
        }
    }

    // lab04 with NVRTC's fused multiply-adds left on: a few pixels of a deep zoom round
    // differently, on the CPU device as on the H100, and its zoom checks fail (lab04 graded
    // alone: the other labs' CPU device runs would add a minute).
    if cpu_device {
        step("grading the solved hand-out with lab04's multiply-adds fused");
        let options = solved.join("lab04-cuda-optimized/src/lib.rs");
        let text = std::fs::read_to_string(&options).expect("lab04's options");
        assert!(text.contains("\"--fmad=false\""), "lab04's options moved");
        std::fs::write(
            &options,
            text.replace("\"--fmad=false\"", "\"--fmad=true\""),
        )
        .expect("written");
        let fused = grade(
            &[solved.to_str().unwrap(), "--only", "lab04"],
            &scratch.path().join("fused.json"),
        );
        let lost: Vec<&str> = fused
            .iter()
            .filter(|t| t["score"] != t["max_score"] && !is_speed(t))
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(
            fused
                .iter()
                .all(|t| t["name"].as_str().is_some_and(|n| n.starts_with("lab04"))),
            "--only lab04 graded another lab: {fused:?}"
        );
        assert!(
            !lost.is_empty()
                && lost
                    .iter()
                    .all(|name| name.starts_with("lab04") && name.contains("--scale")),
            "the checks lost: {lost:?}"
        );
        std::fs::write(&options, text).expect("restored");
    }
    // The answer key compiles whole (its labs were built by the grades above) and, like the
    // hand-out, keeps the instructor's parts out.
    let build = cargo_in(&solved)
        .args(["check", "--workspace", "--all-targets", "--target-dir"])
        .arg(&grader_target)
        .output()
        .expect("cargo runs");
    assert!(
        build.status.success(),
        "the solved hand-out does not compile:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let readme = std::fs::read_to_string(solved.join("README.md")).unwrap();
    assert!(!readme.contains("For instructors") && !readme.contains("INSTRUCTOR"));

    // Grading that cannot run is an error, not a score.
    let not_a_workspace = binary("instructor")
        .args(["grade"])
        .arg(scratch.path().join("nothing"))
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&not_a_workspace.get_output().stderr).into_owned();
    assert!(stderr.contains("cannot read the submission"), "{stderr}");
}

/// `grade --class`, a class's grade before `grade-class` was a command of its own, says what
/// to type now, in one line (clap's own error would only call `--class` unexpected).
#[test]
fn the_old_class_grade_names_the_new_command() {
    let output = binary("instructor")
        .args(["grade", "--class", "submissions", "--out", "grades"])
        .output()
        .expect("it runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cargo instructor grade-class DIR --out OUT"),
        "{stderr}"
    );
}

/// A missing argument is named in the one line that says so.
#[test]
fn a_missing_argument_is_named() {
    for (args, named) in [
        (&["handout"][..], "--out <DIR>"),
        (&["classroom"], "--out <DIR>"),
        (&["grade"], "<SUBMISSION>"),
        (&["grade-class"], "--out <OUT>, <DIR>"),
    ] {
        let output = binary("instructor").args(args).output().expect("it runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("were not provided: {named} (see --help)")),
            "{args:?}: {stderr}"
        );
    }
}

/// What keeps a grade from running is said before any work, in one line: a temporary folder
/// that cannot be made, a results path that is not a file.
#[test]
fn a_grade_that_cannot_run_says_why_first() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let started = std::time::Instant::now();
    let output = binary("instructor")
        .env("TMPDIR", "/nonexistent")
        .arg("grade")
        .arg(scratch.path())
        .output()
        .expect("it runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("cannot create the grader's folder /nonexistent/")
            && stderr.contains("set TMPDIR"),
        "{stderr}"
    );
    let output = binary("instructor")
        .arg("grade")
        .arg(scratch.path())
        .args(["--gradescope", "/dev/full"])
        .output()
        .expect("it runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("--gradescope /dev/full: not a regular file"),
        "{stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
