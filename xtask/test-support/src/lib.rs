//! What the integration tests of the crates under `xtask/` share, once, as cargo's
//! `cargo-test-support` is cargo's: the binaries under test, the workspace and its target
//! folder, a copy of a folder, the fields of a CSV line. A dev-dependency of each crate whose
//! tests use it.

use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

/// The workspace and its target folder, as xtask's library finds them (one answer for the
/// tests and the commands they run).
pub use xtask::bins::{target_dir, workspace_root as workspace};

/// The xtask binary under test.
pub fn xtask() -> Command {
    binary("xtask")
}

/// A binary of the package under test: cargo's, or the one beside the test executables in a
/// `cargo xtask dist --tests` folder (`xtask test --bin-dir`), where no cargo runs.
pub fn binary(name: &str) -> Command {
    Command::cargo_bin(name).unwrap_or_else(|e| panic!("the {name} binary: {e}"))
}

/// Another package's binary, as `cargo run` runs it in the workspace: cargo builds only the
/// tested package's binaries for its tests, so [`binary`] may find none, or a stale one.
pub fn cargo_run(package: &str) -> Command {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .args(["run", "--quiet", "--package", package, "--"])
        .current_dir(workspace());
    cargo
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

/// The fields of one CSV line that xtask wrote (bench.csv), read by xtask's own
/// reader so that the tests check what it writes, not a second reader.
pub fn fields(line: &str) -> Vec<String> {
    xtask::csv::fields(line).expect("every quote closed")
}
