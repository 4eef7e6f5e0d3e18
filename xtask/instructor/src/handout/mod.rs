//! `cargo instructor handout --out DIR`: the student's workspace, ready to commit.
//!
//! Every file of this workspace that git tracks (commit a new file first), with each
//! solution region replaced by its stub (`regions`), and the instructor-only files left out:
//! this crate whole, and the root manifest's and cargo configuration's instructor regions
//! (its member, its alias). Its `Cargo.lock` is this workspace's without the packages only
//! this crate used, versions unchanged, so that the hand-out builds `--locked`.
//! With `--solved`, the regions keep their solutions instead: the same workspace as a
//! student who finished every exercise would have it (an answer key to publish after the
//! deadline, and what CI grades to prove that skeleton and solution fit together).
//!
//! Either way it is written only if every reference in it resolves (`references`), and,
//! without `--solved`, only if no file gives an exercise's answer away (`answers`).

mod answers;
mod references;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use xtask::bins::{target_dir, workspace_root};

use crate::regions::{self, Keep};

/// What the student never sees: the instructor's tools (this crate: the grader, its rubric
/// and hidden checks, this command, their tests and corpus, the guide), CI's scripts for
/// them, and the CPU device's test against a GPU (it compiles with lab04's answer among its
/// option sets). A path ending in `/` is a folder.
pub const INSTRUCTOR_ONLY: &[&str] = &[
    ".ci/check.d/grader",
    ".ci/setup.d/grader",
    "shared/cpu-device/tests/differential.rs",
    "xtask/instructor/",
];

/// The lock file, which the hand-out gets pruned (`pruned_lock`).
const LOCK_FILE: &str = "Cargo.lock";

#[derive(clap::Args)]
pub struct Args {
    /// The folder to create (it must not exist, or be empty)
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Keep the solutions in place of the stubs
    #[arg(long)]
    solved: bool,
}

pub fn run(args: Args) -> Result<()> {
    refuse_non_empty(&args.out)?;
    let keep = if args.solved {
        Keep::Solution
    } else {
        Keep::Stub
    };
    let (files, regions) = files(keep)?;
    references::check(&files)?;
    if !args.solved {
        answers::check(&files, &answers::load(&workspace_root())?)?;
    }
    for file in &files {
        let to = args.out.join(&file.path);
        if let Some(dir) = to.parent() {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        shared::output::write_file(&to, &file.bytes)?;
        // The same mode as the source: a script stays executable (.ci/run).
        fs::set_permissions(&to, fs::Permissions::from_mode(file.mode))
            .with_context(|| format!("cannot set the mode of {}", to.display()))?;
    }
    let what = if args.solved {
        "solved"
    } else {
        "replaced by stubs"
    };
    shared::cli::eprint_line(&format!(
        "xtask: hand-out written to {}: {} files tracked by git, {regions} solution regions {what}",
        args.out.display(),
        files.len()
    ));
    Ok(())
}

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

/// The hand-out's files, in memory, and how many regions were replaced or kept.
pub fn files(keep: Keep) -> Result<(Vec<File>, usize)> {
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
        // No cargo: a GPU machine without Rust, which builds nothing (`grade --class DIR
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

/// The hand-out goes into a new folder, never over someone's work.
fn refuse_non_empty(out: &Path) -> Result<()> {
    match fs::read_dir(out).map(|mut entries| entries.next().is_some()) {
        Ok(true) => bail!("{} is not empty; give a new or empty folder", out.display()),
        Ok(false) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot use {} for the hand-out", out.display())),
    }
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

    /// `shared::exercise::check_kernel` stops at the first `UNFINISHED` mark: a stub kernel
    /// without one of its own would compile, run and give a wrong result, not a message.
    #[test]
    fn every_stub_kernel_says_it_is_not_written() {
        let root = workspace_root();
        let mut kernels = 0;
        for path in tracked_files(&root).unwrap() {
            if path.extension().is_none_or(|e| e != "cu") {
                continue;
            }
            let text = fs::read_to_string(root.join(&path)).unwrap();
            let stubs: String = text
                .lines()
                .filter_map(|line| line.trim_start().strip_prefix("// stub:"))
                .collect::<Vec<_>>()
                .join("\n");
            for kernel in stubs.split("__global__").skip(1) {
                kernels += 1;
                assert!(
                    kernel.contains("// UNFINISHED: "),
                    "{}: a stub kernel with no mark: {kernel}",
                    path.display()
                );
            }
        }
        assert!(kernels >= 7, "only {kernels} stub kernels found");
    }

    /// A student looks in vain for what the hand-out names but leaves out: no instructor-only
    /// file, and none of the instructor's commands.
    #[test]
    fn the_hand_out_names_nothing_it_leaves_out() {
        let (files, _) = files(Keep::Stub).unwrap();
        let commands = ["handout", "grade", "autograder", "classroom", "test"]
            .map(|c| format!("instructor {c}"))
            .into_iter()
            .chain(["xtask grade", "xtask handout"].map(String::from));
        let left_out = INSTRUCTOR_ONLY
            .iter()
            .map(|path| path.trim_end_matches('/').to_string())
            .chain(commands);
        let names: Vec<String> = left_out.collect();
        let mut found = Vec::new();
        for file in &files {
            let text = String::from_utf8_lossy(&file.bytes);
            for name in names.iter().filter(|name| text.contains(name.as_str())) {
                found.push(format!("{} names {name}", file.path.display()));
            }
        }
        assert!(found.is_empty(), "{found:#?}");
    }

    /// cargo refuses `--locked` with a lock file that lists packages no member uses: the
    /// hand-out's lists none of this crate's alone, and keeps the versions of the others.
    #[test]
    fn the_hand_outs_lock_file_holds_only_what_its_members_use() {
        let (files, _) = files(Keep::Stub).unwrap();
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

    /// cargo passes extra arguments to rustc for one target only: a README's `cargo rustc
    /// ... --` that names no `--bin` or `--lib` fails in a package that has both.
    #[test]
    fn every_cargo_rustc_in_a_readme_names_its_target() {
        let (files, _) = files(Keep::Stub).unwrap();
        let mut commands = 0;
        for file in files
            .iter()
            .filter(|f| f.path.extension().is_some_and(|e| e == "md"))
        {
            let text = String::from_utf8_lossy(&file.bytes);
            for rest in text.split("cargo rustc ").skip(1) {
                let before_rustc_args = rest.split(" -- ").next().unwrap_or_default();
                commands += 1;
                assert!(
                    before_rustc_args.contains("--bin ") || before_rustc_args.contains("--lib"),
                    "{}: cargo rustc {before_rustc_args}",
                    file.path.display()
                );
            }
        }
        assert!(commands > 0, "no README shows cargo rustc");
    }

    #[test]
    fn a_non_empty_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(refuse_non_empty(dir.path()).is_ok());
        assert!(refuse_non_empty(&dir.path().join("new")).is_ok());
        fs::write(dir.path().join("work.rs"), "").unwrap();
        let error = refuse_non_empty(dir.path()).unwrap_err().to_string();
        assert!(
            error.ends_with("is not empty; give a new or empty folder"),
            "{error}"
        );
    }
}
