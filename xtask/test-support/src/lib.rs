//! What xtask's integration tests share, once, as cargo's `cargo-test-support` is cargo's:
//! the xtask binary, the workspace and its target folder, a copy of a folder, the fields of
//! a CSV line. A dev-dependency of each crate whose tests use it.
// BEGIN INSTRUCTOR
//! The instructor's tests take their binary and the student's xtask from here too.
// END INSTRUCTOR

use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

/// The workspace and its target folder, as xtask's library finds them (one answer for the
/// tests and the commands they run).
pub use xtask::bins::{target_dir, workspace_root as workspace};

/// The xtask binary under test: cargo's, or the one beside the test executables in a
/// `cargo xtask dist --tests` folder (`xtask test --bin-dir`), where no cargo runs.
pub fn xtask() -> Command {
    Command::cargo_bin("xtask").expect("the xtask binary")
}

/// `cp -a FROM TO`: a folder copied with its links and modes (a workspace to change).
pub fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(status.success(), "cp {} {}", from.display(), to.display());
}

/// The fields of one CSV line that xtask wrote (bench.csv, grades.csv), read by xtask's own
/// reader so that the tests check what it writes, not a second reader.
pub fn fields(line: &str) -> Vec<String> {
    xtask::csv::fields(line).expect("every quote closed")
}
// BEGIN INSTRUCTOR

/// The instructor's binary under test (its own tests' package, so cargo built it for them).
pub fn instructor() -> Command {
    Command::cargo_bin("instructor").expect("the instructor binary")
}

/// The student's xtask, as `cargo xtask` runs it, for the instructor's tests: cargo builds
/// only the tested package's binary for its tests, so [`xtask`] may find none, or a stale one.
pub fn cargo_xtask() -> Command {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .args(["run", "--quiet", "--package", "xtask", "--"])
        .current_dir(workspace());
    cargo
}
// END INSTRUCTOR
