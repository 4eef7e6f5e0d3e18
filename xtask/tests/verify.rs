//! `xtask verify` end to end with fake labs: shell scripts in a `--bin-dir` folder that
//! write a correct image, hang, crash or write garbage, by the width they are asked for.
//! Where a GPU opens, the GPU labs' fakes are correct ones, so the rows checked here are
//! the same on every machine.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use xtask_test_support::xtask;

/// A Mandelbrot lab's arguments, read as the labs read them: flags, WIDTH HEIGHT, `-o FILE`.
const ARGS: &str = r#"
w=; h=; out=
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out=$2; shift ;;
    --*) ;;
    *) if [ -z "$w" ]; then w=$1; else h=$1; fi ;;
  esac
  shift
done
good() { { printf 'P6\n%s %s\n255\n' "$w" "$h"; head -c $((w * h * 3)) /dev/zero; } > "$out"; }
"#;

/// lab02 misbehaves by width: 1 hangs, 2 writes garbage, 3 crashes, anything else is right.
const LAB02: &str = r#"
case "$w" in
  1) exec sleep 60 ;;
  2) echo garbage > "$out" ;;
  3) kill -SEGV $$ ;;
  *) good ;;
esac
"#;

/// lab05: the same canvas from every backend.
const LAB05: &str = r#"
raw=; png=
while [ $# -gt 0 ]; do
  case "$1" in
    --raw) raw=$2; shift ;;
    -o) png=$2; shift ;;
  esac
  shift
done
printf 'counts' > "$raw"; printf 'picture' > "$png"
"#;

fn fake_labs(dir: &Path) {
    let scripts = [
        ("lab01", format!("{ARGS}good")),
        ("lab02", format!("{ARGS}{LAB02}")),
        ("lab03", format!("{ARGS}good")),
        ("lab04", format!("{ARGS}good")),
        ("lab05", LAB05.to_string()),
        // lab06 checks its own sums: a run that exits 0 is every sum exact.
        ("lab06", "exit 0".to_string()),
    ];
    for (name, body) in scripts {
        let path = dir.join(name);
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("a fake lab");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("executable");
    }
}

fn verify(bins: &Path, out: &Path, args: &[&str]) -> Command {
    let mut command = xtask();
    command
        .arg("verify")
        .arg("--bin-dir")
        .arg(bins)
        .arg("--out")
        .arg(out)
        .args(args);
    command
}

#[test]
fn a_hang_a_crash_and_garbage_are_failed_rows_and_verify_carries_on() {
    let bins = tempfile::tempdir().expect("a folder");
    fake_labs(bins.path());
    let work = tempfile::tempdir().expect("a folder");
    let out = work.path().join("verify-out");
    let output = verify(
        bins.path(),
        &out,
        &["--sizes", "1x1,2x1,3x1,4x1", "--time-limit", "2"],
    )
    .output()
    .expect("xtask runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}");
    for row in [
        "| lab02 | 1x1 | lab01 | FAIL: did not run: timed out after 2 s",
        "| lab02 | 2x1 | lab01 | FAIL: ",
        "| lab02 | 3x1 | lab01 | FAIL: did not run: crashed: killed by signal 11 (SIGSEGV) |",
        "| lab02 | 4x1 | lab01 | identical |",
    ] {
        assert!(stdout.contains(row), "no '{row}' in\n{stdout}");
    }
    assert!(
        stdout.contains("is not a binary PPM with maxval 255"),
        "{stdout}"
    );
    // Each GPU lab has a row on the CPU device, run wherever NVRTC is found.
    for row in [
        "| lab04 CPU device | 4x1 | lab01 | ",
        "| lab06 CPU device | ",
    ] {
        let line = stdout.lines().find(|l| l.starts_with(row));
        assert!(
            line.is_some_and(|l| l.contains("identical")
                || l.contains("every sum exact")
                || l.contains("not checked: no NVRTC (why: above and below the table)")),
            "{row}: {line:?} in\n{stdout}"
        );
    }
    assert!(
        stderr.contains(" check(s) failed; the rows marked FAIL say why"),
        "{stderr}"
    );
    assert!(
        !out.exists(),
        "verify removes its images and the folder it made"
    );
}

#[test]
fn a_file_as_out_is_one_clear_line() {
    let bins = tempfile::tempdir().expect("a folder");
    fake_labs(bins.path());
    let work = tempfile::tempdir().expect("a folder");
    let file = work.path().join("taken");
    fs::write(&file, "mine").expect("a file");
    let output = verify(bins.path(), &file, &["--sizes", "4x1"])
        .output()
        .expect("xtask runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("xtask: --out ") && stderr.contains("is a file; verify needs a folder"),
        "{stderr}"
    );
    assert_eq!(fs::read_to_string(&file).ok().as_deref(), Some("mine"));
}

#[test]
fn verify_survives_a_reader_that_goes_away() {
    let bins = tempfile::tempdir().expect("a folder");
    fake_labs(bins.path());
    let work = tempfile::tempdir().expect("a folder");
    let mut child = verify(bins.path(), &work.path().join("out"), &["--sizes", "4x1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xtask starts");
    // `verify | true`: the reader is gone before the table is printed.
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("xtask ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Where neither a GPU nor NVRTC is found, the GPU labs are not checked and verify says
    // so in its last line, and passes: the table was printed all the same.
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
