//! The hand-out's files, in memory: what the `handout` command writes, and what a grade lays
//! a submission into.
//!
//! Every file of this workspace that git tracks (commit a new file first), with each
//! solution region replaced by its stub (`regions`), or kept with `Keep::Solution`, and the
//! instructor-only files left out: this crate whole, and the root manifest's and cargo
//! configuration's instructor regions (its member, its alias). Its `Cargo.lock` is this
//! workspace's without the packages only this crate used, versions unchanged, so that the
//! hand-out builds `--locked`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use xtask::bins::{target_dir, workspace_root};

use crate::regions::{self, Keep};

/// What the student never sees: the instructor's tools (this crate: the grader, its rubric
/// and hidden checks, this command, their tests and corpus, the guide), CI's scripts for
/// them, and the CPU device's test against a GPU and its fuzzer (both compile with lab04's
/// answer among their option sets). A path ending in `/` is a folder.
pub const INSTRUCTOR_ONLY: &[&str] = &[
    ".ci/check.d/grader",
    ".ci/setup.d/grader",
    "shared/cpu-device/tests/differential.rs",
    "shared/cpu-device/tests/fuzz.rs",
    "xtask/instructor/",
];

/// The lock file, which the hand-out gets pruned (`pruned_lock`).
const LOCK_FILE: &str = "Cargo.lock";

/// One file of the hand-out.
pub struct File {
    /// The path inside the workspace.
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub mode: u32,
    /// Whether the student writes in it: it holds solution regions. The grader takes these
    /// files, and only these, from a submission.
    pub writable: bool,
}

#[cfg(test)]
impl File {
    /// A text file the student does not write in, for the checks' tests.
    pub fn text(path: &str, text: &str) -> File {
        File {
            path: PathBuf::from(path),
            bytes: text.as_bytes().to_vec(),
            mode: 0o644,
            writable: false,
        }
    }
}

/// The file of a dist folder that holds the hand-out's digest ([`write_dist_files`]).
const DIST_HANDOUT: &str = "instructor-handout.json";

/// What a dist folder carries of the hand-out: its digest.
#[derive(serde::Serialize, serde::Deserialize)]
struct DistHandout {
    digest: String,
}

/// The hand-out's files, in memory, and how many regions were replaced or kept. From a dist
/// folder, which carries no workspace, refused with what to do instead.
pub fn handout(keep: Keep) -> Result<(Vec<File>, usize)> {
    if let Some(dist) = xtask::bins::dist_folder() {
        bail!(
            "this instructor runs from the dist folder {}, which holds no hand-out: write \
             hand-outs and build submissions (`grade SUBMISSION --build-only`) with the \
             workspace's instructor; from a dist, grade what was built (`grade --built DIR`, \
             or `grade-class DIR --prebuilt`)",
            dist.display()
        );
    }
    let (mut files, regions) = replaced_files(keep)?;
    let lock = pruned_lock(&files)?;
    if let Some(file) = files
        .iter_mut()
        .find(|file| file.path == Path::new(LOCK_FILE))
    {
        file.bytes = lock;
    }
    Ok((files, regions))
}

/// The hand-out's files with every region replaced, the lock file as it is here.
fn replaced_files(keep: Keep) -> Result<(Vec<File>, usize)> {
    let root = workspace_root();
    let mut files = Vec::new();
    let mut regions = 0;
    for relative in tracked_files(&root)? {
        if is_instructor_only(&relative) {
            continue;
        }
        let from = root.join(&relative);
        let bytes = fs::read(&from).with_context(|| format!("cannot read {}", from.display()))?;
        let mut writable = false;
        let bytes = match String::from_utf8(bytes) {
            Ok(text) => {
                writable = regions::has_solution(&relative, &text);
                let (text, n) = regions::replace(&relative, &text, keep)?;
                regions += n;
                text.into_bytes()
            }
            Err(binary) => binary.into_bytes(),
        };
        let mode = fs::metadata(&from)
            .with_context(|| format!("cannot read {}", from.display()))?
            .permissions()
            .mode();
        files.push(File {
            path: relative,
            bytes,
            mode,
            writable,
        });
    }
    Ok((files, regions))
}

/// The digest of the hand-out a submission is laid into (every file's path, mode and
/// bytes), a part of a class's identity: from the dist folder this program runs from, as
/// `cargo xtask dist` wrote it; else from the workspace.
pub fn handout_digest() -> Result<String> {
    let Some(dist) = xtask::bins::dist_folder() else {
        return digest_of(&handout(Keep::Stub)?.0);
    };
    let path = dist.join(DIST_HANDOUT);
    let text = fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {} (`cargo xtask dist` writes it beside the grader)",
            path.display()
        )
    })?;
    let carried: DistHandout = serde_json::from_str(&text)
        .with_context(|| format!("{} is not the hand-out's digest", path.display()))?;
    Ok(carried.digest)
}

fn digest_of(files: &[File]) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for file in files {
        hash.update(file.path.as_os_str().as_encoded_bytes());
        hash.update([0]);
        hash.update(file.mode.to_le_bytes());
        hash.update((file.bytes.len() as u64).to_le_bytes());
        hash.update(&file.bytes);
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// `instructor dist-files DIR`, run by `cargo xtask dist` with the grader as built: write
/// the hand-out's digest into DIR and print its name.
pub fn write_dist_files(dir: &Path) -> Result<()> {
    let carried = DistHandout {
        digest: handout_digest()?,
    };
    let json = serde_json::to_string_pretty(&carried).context("cannot encode the digest")?;
    shared::output::write_file(&dir.join(DIST_HANDOUT), format!("{json}\n").as_bytes())?;
    shared::cli::print_line(DIST_HANDOUT)?;
    Ok(())
}

/// The lock file of the hand-out's workspace: this one's, less the packages that only the
/// members it leaves out used (cargo refuses `--locked` with a lock file it would prune).
/// Kept in the target folder under a digest of what it depends on (the manifests, the lock
/// file, cargo's configuration), since every grade asks for it: pruning costs a cargo run
/// of about a second, and a class or the corpus grades a hundred times.
fn pruned_lock(files: &[File]) -> Result<Vec<u8>> {
    let kept = target_dir()
        .join("handout-lock")
        .join(format!("{}.lock", lock_inputs_digest(files)));
    if let Ok(bytes) = fs::read(&kept) {
        return Ok(bytes);
    }
    let Some(bytes) = prune_lock(files)? else {
        // No cargo: a GPU machine without Rust, which builds nothing (`grade-class DIR
        // --prebuilt` there digests the hand-out's files): the lock file as it is serves,
        // and is not kept, so a machine with cargo prunes it.
        let lock = files.iter().find(|file| file.path == Path::new(LOCK_FILE));
        return Ok(lock.map(|file| file.bytes.clone()).unwrap_or_default());
    };
    // Written whole or not at all (two grades at once may both write it, alike).
    if let Some(dir) = kept.parent() {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    shared::output::write_file(&kept, &bytes)?;
    Ok(bytes)
}

/// What the pruned lock file depends on: every manifest, the lock file and cargo's
/// configuration, path and bytes.
fn lock_inputs_digest(files: &[File]) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for file in files {
        let name = file.path.file_name().and_then(|n| n.to_str());
        let is_input =
            matches!(name, Some("Cargo.toml" | LOCK_FILE)) || file.path.starts_with(".cargo");
        if is_input {
            hash.update(file.path.to_string_lossy().as_bytes());
            hash.update([0]);
            hash.update(&file.bytes);
            hash.update([0]);
        }
    }
    hash.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The hand-out is written to a scratch folder, where `cargo update --workspace` prunes the
/// lock file: it updates only the workspace's own packages, so every version it keeps is
/// this one's (`--offline`: it fetches nothing either). `None` where there is no cargo.
fn prune_lock(files: &[File]) -> Result<Option<Vec<u8>>> {
    let scratch = tempfile::tempdir().context("cannot make a scratch folder for the lock file")?;
    for file in files {
        let to = scratch.path().join(&file.path);
        if let Some(dir) = to.parent() {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        fs::write(&to, &file.bytes).with_context(|| format!("cannot write {}", to.display()))?;
    }
    let output = match xtask::bins::cargo()
        .current_dir(scratch.path())
        .args(["update", "--workspace", "--offline", "--quiet"])
        .stdout(Stdio::null())
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).context("cannot run cargo update"),
    };
    if !output.status.success() {
        bail!(
            "cargo update failed in the hand-out, pruning its {LOCK_FILE}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let lock = scratch.path().join(LOCK_FILE);
    fs::read(&lock)
        .map(Some)
        .with_context(|| format!("cannot read {}", lock.display()))
}

/// The files git tracks in `root`, and only those: an untracked file (an answer key left by
/// an earlier `--solved`, a rubric's backup with the hidden checks) never reaches a student.
/// Tracked files deleted from the working tree are skipped. The autograder's zip takes the
/// same files.
pub fn tracked_files(root: &Path) -> Result<Vec<PathBuf>> {
    let output = Command::new("git")
        .args(["ls-files", "-z", "--cached"])
        .current_dir(root)
        .output()
        .context("cannot run git (the hand-out and the autograder take the files git tracks)")?;
    if !output.status.success() {
        bail!(
            "git ls-files failed in {}: {}",
            root.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let mut files: Vec<PathBuf> = output
        .stdout
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| PathBuf::from(String::from_utf8_lossy(name).into_owned()))
        .filter(|path| root.join(path).is_file())
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

fn is_instructor_only(path: &Path) -> bool {
    let path = path.to_string_lossy();
    INSTRUCTOR_ONLY
        .iter()
        .any(|&listed| match listed.strip_suffix('/') {
            Some(folder) => path.starts_with(listed) || path == folder,
            None => path == listed,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructor_only_files_and_folders_are_recognised() {
        assert!(is_instructor_only(Path::new(
            "xtask/instructor/rubric.toml"
        )));
        assert!(is_instructor_only(Path::new(
            "xtask/instructor/src/grade/mod.rs"
        )));
        assert!(!is_instructor_only(Path::new("xtask/instructor.rs.orig")));
        assert!(!is_instructor_only(Path::new("xtask/src/main.rs")));
        assert!(!is_instructor_only(Path::new("lab02-rayon/src/main.rs")));
    }

    /// An untracked file (an answer key left by `--solved`, a rubric's backup) stays out.
    #[test]
    fn only_tracked_files_are_handed_out() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        fs::write(dir.path().join("tracked.rs"), "").unwrap();
        git(&["add", "tracked.rs"]);
        fs::create_dir(dir.path().join("answer-key")).unwrap();
        fs::write(dir.path().join("answer-key/lab02.rs"), "fn row_jobs() {}").unwrap();
        fs::write(dir.path().join("rubric.toml.orig"), "hidden").unwrap();
        assert_eq!(
            tracked_files(dir.path()).unwrap(),
            [PathBuf::from("tracked.rs")]
        );
    }

    /// cargo refuses `--locked` with a lock file that lists packages no member uses: the
    /// hand-out's lists none of this crate's alone, and keeps the versions of the others.
    #[test]
    fn the_hand_outs_lock_file_holds_only_what_its_members_use() {
        let (files, _) = handout(Keep::Stub).unwrap();
        let lock = files
            .iter()
            .find(|file| file.path == Path::new(LOCK_FILE))
            .unwrap();
        let lock = String::from_utf8_lossy(&lock.bytes);
        let ours = fs::read_to_string(workspace_root().join(LOCK_FILE)).unwrap();
        for name in ["instructor", "landlock", "seccompiler", "zip", "yaml-rust2"] {
            let entry = format!("name = \"{name}\"\n");
            assert!(ours.contains(&entry) && !lock.contains(&entry), "{name}");
        }
        let version_of = |text: &str| {
            let at = text.find("name = \"rayon\"\nversion = ").unwrap();
            text[at..].lines().nth(1).unwrap().to_string()
        };
        assert_eq!(version_of(&lock), version_of(&ours));
    }
}
