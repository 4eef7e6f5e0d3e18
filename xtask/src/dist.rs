//! `cargo xtask dist`: the release binaries in one folder, for a machine with a GPU but no
//! Rust toolchain: every binary of the workspace's members, as cargo reports them built (the
//! labs, xtask, and any other member's tools, named nowhere here). With `--tests`, the test executables too, in `DIR/deps/`, where
//! `assert_cmd` finds the lab binaries one level up, just as in cargo's own target folder.

use std::fs;
use std::path::{Path, PathBuf};

use crate::bins::{c_program, cargo, target_dir, Result, C_PROGRAM};
use crate::members;

/// The file that marks a folder as made by `dist`, listing (one per line, relative to the
/// folder) every file it copied there: only those are ever removed. A program that finds it
/// beside itself runs from a dist ([`crate::bins::dist_folder`]).
pub const STAMP: &str = ".xtask-dist";

#[derive(clap::Args)]
pub struct Args {
    /// The folder to fill: a new or empty folder, or one an earlier `dist` made (whose files
    /// from that run are replaced; anything else in it is left alone)
    #[arg(long, default_value = "dist")]
    out: PathBuf,
    /// Also build and copy the labs' and shared's test executables (for `cargo xtask test --bin-dir`)
    #[arg(long)]
    tests: bool,
}

pub fn run(args: Args) -> Result<()> {
    // Checked first: a folder that is not ours fails before minutes of building.
    let previous = previous_files(&args.out)?;
    let binaries = built(
        &[
            "build",
            "--release",
            "--quiet",
            "--workspace",
            "--bins",
            "--lib",
        ],
        |message| {
            let kinds = message["target"]["kind"].as_array();
            kinds.is_some_and(|kinds| kinds.iter().any(|kind| kind == "bin"))
        },
    )?;
    // The CPU device beside the labs, where `--emulate` looks for it.
    let mut files: Vec<(PathBuf, PathBuf)> = binaries
        .into_iter()
        .chain([target_dir()
            .join("release")
            .join(shared::gpu::cpu_device_file())])
        .map(|path| {
            let name = path.file_name().map(PathBuf::from).unwrap_or_default();
            (path, name)
        })
        .collect();
    if args.tests {
        for exe in test_executables()? {
            let name = exe.file_name().map(PathBuf::from).unwrap_or_default();
            files.push((exe, Path::new("deps").join(name)));
        }
        // lab01's tests compare it with the given C program: its source goes along.
        files.push((c_program(), PathBuf::from(C_PROGRAM)));
    }

    // Everything is built: only now is anything removed, and only what the last run made.
    for relative in &previous {
        remove_if_present(&args.out.join(relative))?;
    }
    let _ = fs::remove_dir(args.out.join("deps"));
    let _ = fs::remove_dir(args.out.join("reference"));
    fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    // The stamp first, listing what is about to be copied, so that a run that fails midway
    // still leaves a folder the next run recognises and cleans.
    let listing: String = files
        .iter()
        .map(|(_, relative)| format!("{}\n", relative.display()))
        .collect();
    shared::output::write_file(&args.out.join(STAMP), listing.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut bytes = 0;
    for (from, relative) in &files {
        bytes += copy(from, &args.out.join(relative))?;
    }
    // The files members add of their own (the grader's record of the hand-out), each made by
    // its binary as built, not the copy: a program in a dist reads nothing of the workspace.
    let mut added = Vec::new();
    for member in members::dist_files()? {
        let program = files
            .iter()
            .find(|(_, relative)| relative == Path::new(&member.binary))
            .map(|(from, _)| from)
            .ok_or_else(|| format!("{} was not built", member.binary))?;
        added.extend(dist_files(program, &member.command, &args.out)?);
    }
    if !added.is_empty() {
        let listing: String = files
            .iter()
            .map(|(_, relative)| relative)
            .chain(&added)
            .map(|relative| format!("{}\n", relative.display()))
            .collect();
        shared::output::write_file(&args.out.join(STAMP), listing.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    shared::cli::eprint_line(&format!(
        "xtask: {} ready, {} MiB",
        args.out.display(),
        bytes >> 20
    ));
    Ok(())
}

/// The files an earlier `dist` made in `out`: none for a new or empty folder; an error for a
/// folder with other contents and no stamp (`--out .` in a project must never empty it).
fn previous_files(out: &Path) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(out) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", out.display())),
    };
    match fs::read_to_string(out.join(STAMP)) {
        Ok(listing) => Ok(listing
            .lines()
            .map(PathBuf::from)
            // Only plain names below `out`, whatever the stamp says.
            .filter(|p| {
                p.components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
            })
            .chain([PathBuf::from(STAMP)])
            .collect()),
        Err(_) if entries.count() == 0 => Ok(Vec::new()),
        Err(_) => Err(format!(
            "{} is not empty and was not made by `cargo xtask dist` (it has no {STAMP}); \
             choose a new folder for --out",
            out.display()
        )),
    }
}

/// Run `program command out`: the names of the files it wrote into `out`, one a line on
/// its stdout, each a plain name below `out`.
fn dist_files(program: &Path, command: &str, out: &Path) -> Result<Vec<PathBuf>> {
    let output = std::process::Command::new(program)
        .arg(command)
        .arg(out)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} {command} failed ({})",
            program.display(),
            output.status
        ));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(PathBuf::from)
        .map(|path| {
            let plain = path
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if plain && out.join(&path).is_file() {
                Ok(path)
            } else {
                Err(format!(
                    "{} {command} named {} as its file",
                    program.display(),
                    path.display()
                ))
            }
        })
        .collect()
}

fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Build the test executables in release and list them: the labs' and `shared`'s. xtask's
/// own tests are left out, and those of the members tested by a command of their own: they
/// run cargo and read the workspace's sources, which a machine without Rust does not have
/// (CI runs them).
fn test_executables() -> Result<Vec<PathBuf>> {
    let mut args = vec![
        "test",
        "--release",
        "--workspace",
        "--exclude",
        "xtask",
        "--no-run",
    ];
    let elsewhere = members::tested_elsewhere()?;
    for member in &elsewhere {
        args.extend(["--exclude", member.package.as_str()]);
    }
    built(&args, |message| {
        message["profile"]["test"].as_bool() == Some(true)
    })
}

/// Run cargo with `args` (a build) and list the executables it reports built whose message
/// `wanted` picks, from cargo's JSON messages.
fn built(args: &[&str], wanted: impl Fn(&serde_json::Value) -> bool) -> Result<Vec<PathBuf>> {
    let output = cargo()
        .args(args)
        .arg("--message-format=json")
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo {} failed", args.join(" ")));
    }
    let mut executables = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let (true, Some(exe)) = (wanted(&message), message["executable"].as_str()) {
            executables.push(PathBuf::from(exe));
        }
    }
    Ok(executables)
}

/// Copy one file (mode included), creating its folder; the bytes copied.
fn copy(from: &Path, to: &Path) -> Result<u64> {
    if let Some(dir) = to.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    fs::copy(from, to)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_c_reference_that_dist_carries_exists() {
        assert!(c_program().is_file());
    }

    #[test]
    fn a_stamped_folder_lists_only_its_own_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(STAMP), "lab01\ndeps/t\n../escape\n").unwrap();
        let files = previous_files(dir.path()).unwrap();
        let expected: Vec<PathBuf> = ["lab01", "deps/t", STAMP]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(files, expected);
    }

    #[test]
    fn a_foreign_folder_is_refused_and_an_empty_or_new_one_accepted() {
        let dir = tempfile::tempdir().unwrap();
        assert!(previous_files(dir.path()).unwrap().is_empty());
        assert!(previous_files(&dir.path().join("new")).unwrap().is_empty());
        fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        let err = previous_files(dir.path()).unwrap_err();
        assert!(err.contains("was not made by `cargo xtask dist`"), "{err}");
    }
}
