//! What the instructor's integration tests share: the instructor's binary, the student's
//! xtask (for `dist`), the workspace and its target folder, a copy of a folder, the fields of
//! a CSV line. Each test file is a crate of its own that uses part of this, so the rest is
//! not dead code: it is another file's.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
// The workspace and its target folder, as xtask's library finds them (a test file that
// uses neither would warn of the import: the others use it).
#[allow(unused_imports)]
pub use xtask::bins::{target_dir, workspace_root as workspace};

/// The instructor's binary under test.
pub fn instructor() -> Command {
    Command::cargo_bin("instructor").expect("the instructor binary")
}

/// The student's xtask, as `cargo xtask` runs it (cargo builds only this package's binary
/// for its tests).
pub fn xtask() -> Command {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .args(["run", "--quiet", "--package", "xtask", "--"])
        .current_dir(workspace());
    cargo
}

/// `cp -a FROM TO`: a folder copied with its links and modes.
pub fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(status.success(), "cp {} {}", from.display(), to.display());
}

/// The fields of one CSV line that the grader wrote (grades.csv).
pub fn fields(line: &str) -> Vec<String> {
    xtask::csv::fields(line).expect("every quote closed")
}
