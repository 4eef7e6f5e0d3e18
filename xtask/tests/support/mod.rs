//! What xtask's integration tests share: the xtask binary, the workspace and its target
//! folder, a copy of a folder, the fields of a CSV line. Each test file is a crate of its
//! own that uses part of this, so the rest is not dead code: it is another file's.
#![allow(dead_code)]

#[path = "../../src/csv.rs"]
mod csv;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

/// The xtask binary under test: cargo's, or the one beside the test executables in a
/// `cargo xtask dist --tests` folder (`xtask test --bin-dir`), where no cargo runs.
pub fn xtask() -> Command {
    Command::cargo_bin("xtask").expect("the xtask binary")
}

/// The workspace this xtask belongs to.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// Cargo's target folder (`CARGO_TARGET_DIR` if set).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
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

/// The fields of one CSV line that xtask wrote (bench.csv, grades.csv).
pub fn fields(line: &str) -> Vec<String> {
    csv::fields(line).expect("every quote closed")
}
