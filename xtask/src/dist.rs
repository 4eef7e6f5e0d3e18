//! `cargo xtask dist`: the release binaries in one folder, for a machine with a GPU but no
//! Rust toolchain. With `--tests`, the test executables too, in `DIR/deps/`, where
//! `assert_cmd` finds the lab binaries one level up, just as in cargo's own target folder.

use std::fs;
use std::path::{Path, PathBuf};

use crate::bins::{cargo, run_status, target_dir};
use crate::labs::LABS;

#[derive(clap::Args)]
pub struct Args {
    /// The folder to fill (emptied first)
    #[arg(long, default_value = "dist")]
    out: PathBuf,
    /// Also build and copy the test executables (for `cargo xtask test --bin-dir`)
    #[arg(long)]
    tests: bool,
}

pub fn run(args: Args) -> crate::Result<()> {
    run_status(cargo().args(["build", "--release", "--quiet", "--workspace", "--bins"]))?;
    if args.out.exists() {
        fs::remove_dir_all(&args.out)
            .map_err(|e| format!("cannot empty {}: {e}", args.out.display()))?;
    }
    let release = target_dir().join("release");
    for name in LABS.iter().map(|lab| lab.name).chain(["xtask"]) {
        copy(&release.join(name), &args.out.join(name))?;
    }
    if args.tests {
        for exe in test_executables()? {
            let name = exe.file_name().map(PathBuf::from).unwrap_or_default();
            copy(&exe, &args.out.join("deps").join(name))?;
        }
    }
    let bytes: u64 = walk(&args.out)
        .iter()
        .filter_map(|p| p.metadata().ok())
        .map(|m| m.len())
        .sum();
    eprintln!("xtask: {} ready, {} MiB", args.out.display(), bytes >> 20);
    Ok(())
}

/// Build the test executables in release and list them, from cargo's JSON messages.
fn test_executables() -> crate::Result<Vec<PathBuf>> {
    let output = cargo()
        .args([
            "test",
            "--release",
            "--workspace",
            "--no-run",
            "--message-format=json",
        ])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err("building the tests failed".to_string());
    }
    let mut executables = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let is_test = message["profile"]["test"].as_bool() == Some(true);
        if let (true, Some(exe)) = (is_test, message["executable"].as_str()) {
            executables.push(PathBuf::from(exe));
        }
    }
    Ok(executables)
}

fn copy(from: &Path, to: &Path) -> crate::Result<()> {
    if let Some(dir) = to.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|entry| {
            let path = entry.path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}
