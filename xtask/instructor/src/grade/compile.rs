//! Building a submission: in the sandbox, `--locked --offline`, in a folder of its own, from
//! a prebuilt copy so that a grade compiles only what the student changed.
//!
//! The prebuilt copy (the cache) is the hand-out itself, built once in the sandbox at the
//! same paths every grade uses inside it (`/grade/work`, `/grade/target`) with every file
//! dated [`EPOCH`]. A grade lays its workspace out at its own host path with the same dates,
//! except the files the student changed (dated now), copies the cache's target folder, and
//! builds: cargo finds every crate but the changed ones fresh. The registry's sources are
//! vendored once into the cache, read-only in the sandbox; the student's build never sees
//! the registry, the network or the instructor's target folder.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};

use super::fault::Fault;
use crate::files::File;
use crate::sandbox::{self, Jail, Limits, Mount, Spec};
use xtask::bins::target_dir;
use xtask::labs::Lab;

/// Where the workspace, its target folder and the vendored sources are, inside the sandbox.
pub const WORK: &str = "/grade/work";
pub const TARGET: &str = "/grade/target";
const VENDOR: &str = "/grade/vendor";

/// The date of every file the student did not change: cargo compares dates, and the cache's
/// outputs are newer than this.
const EPOCH: Duration = Duration::from_secs(946_684_800);

/// Lay `files` out in `dir`, the ones in `changed` dated now, the others [`EPOCH`].
pub fn lay_out(
    dir: &Path,
    files: &[File],
    changed: &std::collections::BTreeSet<PathBuf>,
) -> Result<()> {
    let epoch = SystemTime::UNIX_EPOCH + EPOCH;
    for file in files {
        let to = dir.join(&file.path);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        fs::write(&to, &file.bytes).with_context(|| format!("cannot write {}", to.display()))?;
        fs::set_permissions(&to, fs::Permissions::from_mode(file.mode & 0o755))
            .with_context(|| format!("cannot set the mode of {}", to.display()))?;
        if !changed.contains(&file.path) {
            fs::File::options()
                .write(true)
                .open(&to)
                .and_then(|f| f.set_modified(epoch))
                .with_context(|| format!("cannot date {}", to.display()))?;
        }
    }
    Ok(())
}

/// The prebuilt hand-out: vendored sources and a target folder to start each grade from.
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    /// The cache for this hand-out, this toolchain and this kind of sandbox, built first if
    /// there is none yet. Grades that start together wait for one build (a file lock of the
    /// kind's own: a build for another kind keeps no grade waiting).
    pub fn open(files: &[File], jail: &Jail, labs: &[&Lab], limit: Duration) -> Result<Cache> {
        let root = target_dir().join("grade-cache");
        fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
        // One cache per kind of sandbox (CI grades with bubblewrap and with the fallback).
        let kind: String = jail
            .build_kind()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let key = key(files);
        let dir = root.join(format!("{kind}-{key}"));
        let lock = fs::File::create(root.join(format!("{kind}.lock")))
            .with_context(|| format!("cannot create the lock in {}", root.display()))?;
        // SAFETY: flock on a file descriptor this function owns; released when `lock` drops.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) } != 0 {
            bail!("cannot lock {}", root.display());
        }
        let cache = Cache { dir };
        if !cache.dir.join("ready").is_file() {
            // A cache of an older hand-out or toolchain is of no more use: one at a time
            // for each kind of sandbox.
            for entry in fs::read_dir(&root).into_iter().flatten().flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                // A name without a kind is an older grader's.
                let stale = name.starts_with(&format!("{kind}-")) || !name.contains('-');
                if entry.path() != cache.dir && entry.path().is_dir() && stale {
                    let _ = fs::remove_dir_all(entry.path());
                }
            }
            cache.build(files, jail, labs, limit)?;
        }
        Ok(cache)
    }

    fn build(&self, files: &[File], jail: &Jail, labs: &[&Lab], limit: Duration) -> Result<()> {
        shared::cli::eprint_line(
            "xtask: building the hand-out once as the grader's cache (a few minutes; later grades reuse it)...",
        );
        if self.dir.exists() {
            fs::remove_dir_all(&self.dir)
                .with_context(|| format!("cannot clear {}", self.dir.display()))?;
        }
        // Laid out outside the instructor's workspace: cargo reads the `.cargo/config.toml`
        // of every folder above the one it builds in, and the fallback sandbox, at host
        // paths, may read none of the workspace's.
        let scratch = crate::scratch::tempdir("grade-cache-")
            .context("cannot make a folder to build the grader's cache in")?;
        let work = scratch.path().join("work");
        lay_out(&work, files, &Default::default())?;
        let vendored = Command::new(cargo_program())
            .args(["vendor", "--locked", "--quiet", "--manifest-path"])
            .arg(work.join("Cargo.toml"))
            .arg(self.dir.join("vendor"))
            .output()
            .context("cannot run cargo vendor")?;
        if !vendored.status.success() {
            bail!(
                "cannot vendor the hand-out's dependencies: {}",
                sandbox::last_line(&vendored.stderr)
            );
        }
        let target = self.dir.join("target");
        fs::create_dir_all(&target)
            .with_context(|| format!("cannot create {}", target.display()))?;
        // Not seeded from the instructor's own target folder: it holds the solutions' builds,
        // which a student's code could read at compile time (include_bytes!).
        jail.give(&target)?;
        for lab in labs {
            if let Err(error) =
                build_lab(jail, &work, &target, &self.dir.join("vendor"), lab, limit)
            {
                bail!(
                    "the hand-out's {} does not build in the sandbox: {error}",
                    lab.package
                );
            }
        }
        // Built as the sandbox's user, the cache is taken back by the grader before any grade
        // copies it: the user student code runs as may not change what every later grade
        // starts from (the fallback sandbox shares the host's files with that user).
        reclaim(&target, jail.needs_chown())?;
        fs::write(self.dir.join("ready"), "").context("cannot mark the cache ready")?;
        Ok(())
    }

    /// A target folder for one grade: a copy of the cache's.
    /// A copy of the cache's build for one grade, handed to that grade's sandbox user.
    pub fn target_for(&self, grade_target: &Path, jail: &Jail) -> Result<()> {
        copy_tree(&self.dir.join("target"), grade_target)?;
        jail.give(grade_target)
    }

    pub fn vendor(&self) -> PathBuf {
        self.dir.join("vendor")
    }
}

/// Build one lab of the workspace laid out in `work` into `target`: Ok, or cargo's first
/// error (the student's), or why the grader could not build it (no toolchain, no sandbox).
pub fn build_lab(
    jail: &Jail,
    work: &Path,
    target: &Path,
    vendor: &Path,
    lab: &Lab,
    limit: Duration,
) -> std::result::Result<(), Fault> {
    build(jail, work, target, vendor, lab, None, limit)
}

/// Build one binary of `lab`'s package alone (`--bin`): a harness the grader planted, whose
/// failure to build leaves the lab's own binary as it was.
pub fn build_bin(
    jail: &Jail,
    work: &Path,
    target: &Path,
    vendor: &Path,
    lab: &Lab,
    bin: &str,
    limit: Duration,
) -> std::result::Result<(), Fault> {
    build(jail, work, target, vendor, lab, Some(bin), limit)
}

fn build(
    jail: &Jail,
    work: &Path,
    target: &Path,
    vendor: &Path,
    lab: &Lab,
    bin: Option<&str>,
    limit: Duration,
) -> std::result::Result<(), Fault> {
    let sysroot = sandbox::toolchain().ok_or_else(|| {
        Fault::Grader("no Rust toolchain found (rustc --print sysroot)".to_string())
    })?;
    let spec = Spec::new(sysroot.join("bin/cargo"))
        .args([
            "build",
            "--release",
            "--locked",
            "--offline",
            "--package",
            lab.package,
        ])
        .args(bin.map(|bin| ["--bin", bin]).into_iter().flatten())
        .arg("--config")
        .arg("source.crates-io.replace-with=\"vendored\"")
        .arg("--config")
        .arg(format!(
            "source.vendored.directory=\"{}\"",
            jail.path_of(vendor, Path::new(VENDOR)).display()
        ))
        .mount(Mount::read_only(work, WORK))
        .mount(Mount::writable(target, TARGET))
        .mount(Mount::read_only(vendor, VENDOR))
        .cwd(WORK)
        .env("CARGO_HOME", "/tmp/cargo-home")
        .env("CARGO_TARGET_DIR", TARGET)
        .env("CARGO_TERM_COLOR", "never")
        .env("RUSTC", sysroot.join("bin/rustc"));
    // A build's tree may hold 8 GiB (rustc and the linker of a release build at once); its
    // disk is not counted, its target folder being a copy of the hand-out's build.
    let limits = Limits::check(limit).with_tree(sandbox::TreeLimits {
        memory: 8 << 30,
        disk: None,
        files: None,
        ..sandbox::TreeLimits::DEFAULT
    });
    match jail.run(&spec, &limits) {
        Ok((status, _, _)) if status.success() => Ok(()),
        Ok((_, _, stderr)) => Err(Fault::Student(first_error(&String::from_utf8_lossy(
            &stderr,
        )))),
        Err(xtask::runner::Failure::TimedOut(_)) => Err(Fault::Student(format!(
            "the build did not finish within {} s",
            limit.as_secs()
        ))),
        // The sandbox (or cargo) could not start: nothing of the student's ran.
        Err(failure @ xtask::runner::Failure::Spawn(_)) => Err(Fault::Grader(failure.to_string())),
        Err(failure) => Err(Fault::Student(failure.to_string())),
    }
}

/// The first compiler error and its place: `error[E0425]: ... at lab02-rayon/src/main.rs:57:9`.
pub fn first_error(stderr: &str) -> String {
    let mut lines = stderr.lines().skip_while(|l| !l.starts_with("error"));
    let Some(error) = lines.next() else {
        return format!(
            "cargo build failed: {}",
            sandbox::last_line(stderr.as_bytes())
        );
    };
    match lines.find_map(|l| l.trim_start().strip_prefix("--> ")) {
        Some(place) => format!("{error} at {}", place.trim_start_matches("/grade/work/")),
        None => error.to_string(),
    }
}

/// What makes one cache differ from another beside the kind of sandbox (which its name
/// holds): the hand-out's files and the toolchain.
fn key(files: &[File]) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for file in files {
        hash.update(file.path.to_string_lossy().as_bytes());
        hash.update([0]);
        hash.update(&file.bytes);
        hash.update(file.mode.to_le_bytes());
    }
    let version = Command::new("rustc").arg("-vV").output().map(|o| o.stdout);
    hash.update(version.unwrap_or_default());
    // Caches built before the grader took them back were left to the sandbox's user, who
    // may have changed them: none is used again.
    hash.update(b"owned by the grader");
    let digest = hash.finalize();
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The toolchain's own cargo (not rustup's proxy, which would read toolchain files).
fn cargo_program() -> PathBuf {
    sandbox::toolchain().map_or_else(|| PathBuf::from("cargo"), |s| s.join("bin/cargo"))
}

/// Give `path` and everything in it back to the grader's own user (when it was handed to the
/// sandbox's, `chown`), and take write permission from everyone else.
fn reclaim(path: &Path, chown: bool) -> Result<()> {
    let failed = || {
        format!(
            "cannot take {} back from the sandbox's user",
            path.display()
        )
    };
    if chown {
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let status = Command::new("chown")
            .arg("-R")
            .arg(format!("{uid}:{gid}"))
            .arg(path)
            .status()
            .with_context(failed)?;
        if !status.success() {
            bail!(failed());
        }
    }
    let status = Command::new("chmod")
        .args(["-R", "go-w"])
        .arg(path)
        .status()
        .with_context(failed)?;
    if !status.success() {
        bail!(failed());
    }
    Ok(())
}

/// A copy that keeps dates, modes and owners (`cp -a`), so cargo finds the copy fresh.
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let status = Command::new("cp")
        .arg("-a")
        .arg("--reflink=auto")
        .arg(from)
        .arg(to)
        .status()
        .context("cannot run cp")?;
    if !status.success() {
        bail!("cannot copy {} to {}", from.display(), to.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache's build folder was left owned by the uid student code runs as.
    #[test]
    fn the_cache_is_taken_back_from_the_sandboxs_user() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let top = tempfile::tempdir().expect("a temp folder");
        let target = top.path().join("target");
        fs::create_dir_all(target.join("release")).expect("created");
        let file = target.join("release/lab02");
        fs::write(&file, "binary").expect("written");
        fs::set_permissions(&file, fs::Permissions::from_mode(0o777)).expect("a mode");
        fs::set_permissions(target.join("release"), fs::Permissions::from_mode(0o777))
            .expect("a mode");
        // SAFETY: getuid cannot fail.
        let root = unsafe { libc::getuid() } == 0;
        if root {
            std::os::unix::fs::chown(&file, Some(1_879_048_192), Some(1_879_048_192))
                .expect("handed to a sandbox user");
        }
        reclaim(&target, root).expect("taken back");
        for path in [&file, &target.join("release")] {
            let meta = fs::metadata(path).expect("its metadata");
            // SAFETY: getuid cannot fail.
            assert_eq!(meta.uid(), unsafe { libc::getuid() }, "{}", path.display());
            assert_eq!(meta.mode() & 0o022, 0, "{}", path.display());
        }
    }

    #[test]
    fn the_first_error_names_its_place_in_the_workspace() {
        let stderr = "   Compiling lab02-rayon v0.1.0 (/grade/work/lab02-rayon)\n\
                      error[E0425]: cannot find value `x` in this scope\n  \
                      --> /grade/work/lab02-rayon/src/main.rs:57:9\n";
        assert_eq!(
            first_error(stderr),
            "error[E0425]: cannot find value `x` in this scope at lab02-rayon/src/main.rs:57:9"
        );
        assert!(first_error("killed\n").starts_with("cargo build failed: killed"));
    }

    #[test]
    fn unchanged_files_are_dated_at_the_epoch_and_changed_ones_now() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let file = |path: &str| File {
            path: PathBuf::from(path),
            bytes: b"x".to_vec(),
            mode: 0o4755,
            writable: true,
        };
        let changed = [PathBuf::from("b.rs")].into_iter().collect();
        lay_out(dir.path(), &[file("a/a.rs"), file("b.rs")], &changed).expect("laid out");
        let date = |p: &str| {
            fs::metadata(dir.path().join(p))
                .and_then(|m| m.modified())
                .expect("a date")
        };
        assert_eq!(date("a/a.rs"), SystemTime::UNIX_EPOCH + EPOCH);
        assert!(date("b.rs") > SystemTime::UNIX_EPOCH + EPOCH);
        let mode = fs::metadata(dir.path().join("b.rs"))
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o755, "no set-uid bit from a submission");
    }
}
