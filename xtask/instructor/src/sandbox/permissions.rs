//! The fallback sandbox where Landlock is missing too (a kernel older than 5.13, or one
//! built without it): what Landlock would refuse is refused by ownership and permissions.
//!
//! Run by root only: the student's code then runs as a uid of its own, which owns nothing on
//! the host and is in no group but its own, so every file it reads is read as "other".
//!
//! - Before any student process starts, [`protect`] takes the "other" rights off the folders
//!   of the instructor's workspace, the references (`--bin-dir`), the folder of the results file
//!   and the submissions' folders, keeping only the way (search, not list) to what the
//!   sandbox must reach inside them (the grader's cache of the built hand-out). The modes
//!   are put back when the last grade that holds them ends: grades run at once (a class)
//!   share one record of them, kept in the cache's folder, and a grade that was killed is
//!   struck from it by the next.
//! - The files a check reads that lie elsewhere (the solution, the CPU device's library)
//!   are linked, or copied, into a folder only the sandbox's group may pass, for that run
//!   only ([`stage`]).
//! - After each check every world-writable place ([`WORLD_WRITABLE`]) is emptied of the
//!   sandbox user's files ([`sweep`]): nothing a check leaves there is read by the next.

use std::fs;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The places any user may write: the FHS's, and the grader's own temporary folder.
pub const WORLD_WRITABLE: &[&str] = &[
    "/tmp",
    "/var/tmp",
    "/dev/shm",
    "/dev/mqueue",
    "/run/lock",
    "/var/lock",
    "/var/crash",
    "/var/metrics",
];

/// What the grades that hold the protection share: who holds it, and the modes to put back.
#[derive(Serialize, Deserialize, Default)]
struct Record {
    holders: Vec<u32>,
    /// Each changed path and its mode before the first grade changed it.
    saved: Vec<(PathBuf, u32)>,
}

/// The protection this grade holds; dropped, it lets go (and the last one out puts every
/// mode back).
pub struct Protection {
    record: PathBuf,
}

/// Take the "other" rights off `roots`, keeping the way to `keep`, for as long as the
/// returned value lives.
pub fn protect(roots: &[PathBuf], keep: &[PathBuf], record: &Path) -> Result<Protection> {
    let keep: Vec<PathBuf> = keep
        .iter()
        .filter_map(|p| fs::canonicalize(p).ok())
        .collect();
    let roots = roots_to_lock(roots, &keep);
    // Made first: a protection that fails midway is let go at once, and every mode it
    // changed put back (unless another grade holds them).
    let protection = Protection {
        record: record.to_path_buf(),
    };
    with_record(record, |state| {
        let me = std::process::id();
        // A holder that no longer runs was killed: it lets go of nothing itself.
        state
            .holders
            .retain(|&pid| pid != me && Path::new(&format!("/proc/{pid}")).exists());
        state.holders.push(me);
        for root in &roots {
            lock_down(root, &keep, &mut state.saved)?;
        }
        Ok(())
    })?;
    Ok(protection)
}

/// The roots worth locking: existing, canonical, and never a system folder or one that holds
/// what every user needs (`/`, `/tmp`, the folders of `keep` themselves).
fn roots_to_lock(roots: &[PathBuf], keep: &[PathBuf]) -> Vec<PathBuf> {
    let mut locked: Vec<PathBuf> = roots
        .iter()
        .filter_map(|p| fs::canonicalize(p).ok())
        .filter(|p| {
            let system = p.parent().is_none()
                || ["/usr", "/etc", "/bin", "/lib", "/dev", "/proc", "/sys"]
                    .iter()
                    .any(|s| Path::new(s).starts_with(p) || p.starts_with(s));
            let shared = fs::metadata(p).is_ok_and(|m| m.mode() & 0o002 != 0);
            // What is kept is never locked whole (a root above it keeps the way to it).
            !system && !shared && !keep.contains(p)
        })
        .collect();
    locked.sort();
    locked.dedup();
    locked
}

/// Take the "other" rights off the folder `path`, but for the way to `keep`: the folders
/// above a kept path keep only "other"'s search right (no listing), and the folders in them
/// are locked whole. Only folders change: a locked folder keeps everything under it, and the
/// grader copies files' modes (the hand-out's) from the workspace. So a file directly in a
/// folder above a kept one (the workspace's own Cargo.toml) stays readable by its name. Links
/// are never followed.
fn lock_down(path: &Path, keep: &[PathBuf], saved: &mut Vec<(PathBuf, u32)>) -> Result<()> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.is_dir() || keep.iter().any(|k| k == path) {
        return Ok(());
    }
    let mode = meta.mode() & 0o7777;
    let on_the_way = meta.is_dir() && keep.iter().any(|k| k.starts_with(path));
    let wanted = if on_the_way {
        mode & !0o006
    } else {
        mode & !0o007
    };
    if wanted != mode {
        if !saved.iter().any(|(p, _)| p == path) {
            saved.push((path.to_path_buf(), mode));
        }
        fs::set_permissions(path, fs::Permissions::from_mode(wanted))
            .with_context(|| format!("cannot make {} unreadable to the sandbox", path.display()))?;
    }
    if on_the_way {
        let entries =
            fs::read_dir(path).with_context(|| format!("cannot read {}", path.display()))?;
        for entry in entries.flatten() {
            lock_down(&entry.path(), keep, saved)?;
        }
    }
    Ok(())
}

impl Drop for Protection {
    fn drop(&mut self) {
        let result = with_record(&self.record, |state| {
            let me = std::process::id();
            state
                .holders
                .retain(|&pid| pid != me && Path::new(&format!("/proc/{pid}")).exists());
            if state.holders.is_empty() {
                // Deepest first: a folder's mode is put back after what is in it.
                for (path, mode) in state.saved.drain(..).rev() {
                    let _ = fs::set_permissions(&path, fs::Permissions::from_mode(mode));
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            shared::cli::eprint_line(&format!(
                "xtask: warning: cannot put back the modes the sandbox changed ({e:#}); \
                 they are listed in {}",
                self.record.display()
            ));
        }
    }
}

/// Read the shared record under an exclusive lock, change it, and write it back.
fn with_record(path: &Path, change: impl FnOnce(&mut Record) -> Result<()>) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(folder) = path.parent() {
        fs::create_dir_all(folder)
            .with_context(|| format!("cannot create {}", folder.display()))?;
    }
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns; released when `file` closes.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        bail!("cannot lock {}", path.display());
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut state: Record = if text.trim().is_empty() {
        Record::default()
    } else {
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not the sandbox's record", path.display()))?
    };
    // Saved before any change is made: a grade killed midway leaves every mode it changed
    // recorded for the next to put back.
    let outcome = change(&mut state);
    let json = serde_json::to_string(&state).context("cannot encode the sandbox's record")?;
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(json.as_bytes()))
        .and_then(|()| file.sync_data())
        .with_context(|| format!("cannot write {}", path.display()))?;
    outcome
}

/// A folder for one run that only root and the sandbox's group (`gid`) may pass, holding a
/// link to (or a copy of) each of `files`: what the run reads from the protected folders.
pub struct Staged {
    dir: tempfile::TempDir,
}

impl Staged {
    pub fn new(gid: u32) -> Result<Staged> {
        let dir = tempfile::Builder::new()
            .prefix("xtask-stage-")
            .tempdir()
            .context("cannot make the sandbox's folder of staged files")?;
        chgrp(dir.path(), gid, 0o750)?;
        Ok(Staged { dir })
    }

    /// `file`'s place in the stage, the `n`th staged (each in a folder of its own, so two
    /// files of one name stay apart and each keeps its name, a program's `argv[0]`).
    pub fn stage(&self, file: &Path, n: usize, gid: u32) -> Result<PathBuf> {
        let folder = self.dir.path().join(n.to_string());
        fs::create_dir(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
        chgrp(&folder, gid, 0o750)?;
        let name = file.file_name().unwrap_or(std::ffi::OsStr::new("file"));
        let staged = folder.join(name);
        // A link shares the file's mode and costs nothing; across file systems, a copy.
        if fs::hard_link(file, &staged).is_err() {
            fs::copy(file, &staged)
                .with_context(|| format!("cannot stage {} for the sandbox", file.display()))?;
        }
        Ok(staged)
    }
}

fn chgrp(path: &Path, gid: u32, mode: u32) -> Result<()> {
    std::os::unix::fs::chown(path, Some(0), Some(gid))
        .and_then(|()| fs::set_permissions(path, fs::Permissions::from_mode(mode)))
        .with_context(|| format!("cannot hand {} to the sandbox's group", path.display()))
}

/// Remove every file and folder of `user` from the world-writable places (and the
/// world-writable folders within them, a few levels down). Run once no process of `user` is
/// left; links are removed, never followed. Err: what could not be removed.
pub fn sweep(user: u32) -> Result<()> {
    let mut places: Vec<PathBuf> = WORLD_WRITABLE.iter().map(PathBuf::from).collect();
    places.push(std::env::temp_dir());
    places.sort();
    places.dedup();
    let mut left = Vec::new();
    for place in &places {
        sweep_folder(place, user, 0, &mut left);
    }
    match left.first() {
        None => Ok(()),
        Some(first) => bail!(
            "{} of the sandbox's files could not be removed (the first: {})",
            left.len(),
            first.display()
        ),
    }
}

fn sweep_folder(folder: &Path, user: u32, depth: usize, left: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.uid() == user {
            let removed = if meta.is_dir() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
            if removed.is_err() {
                left.push(path);
            }
        } else if meta.is_dir() && meta.mode() & 0o002 != 0 && depth < 8 {
            // Someone else's folder that anyone may write in (`/tmp/.X11-unix`).
            sweep_folder(&path, user, depth + 1, left);
        }
    }
}

/// Blank this process's arguments past the first two (`instructor grade`) where /proc shows them:
/// without a PID namespace or Landlock any user may read a process's command line, which
/// names the results file and the references. Only the memory the kernel reads them from is
/// blanked; they were parsed before. Err: the memory could not be found (nothing changed).
pub fn hide_arguments() -> Result<()> {
    let stat = fs::read_to_string("/proc/self/stat").context("cannot read /proc/self/stat")?;
    // After the command's name (which may hold spaces and parentheses), the fields from the
    // third on; arg_start and arg_end are the 48th and 49th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<usize>().ok());
    let (Some(start), Some(end)) = (field(48), field(49)) else {
        bail!("no argument area in /proc/self/stat");
    };
    let args = fs::read("/proc/self/cmdline").context("cannot read /proc/self/cmdline")?;
    if start == 0 || end <= start || args.len() != end - start {
        bail!("the argument area does not hold the command line");
    }
    // Keep the program and its first argument, each with its NUL.
    let kept: usize = args
        .split_inclusive(|&b| b == 0)
        .take(2)
        .map(<[u8]>::len)
        .sum();
    // SAFETY: [start, end) is this process's own argument area, as the kernel reports it and
    // as /proc/self/cmdline just read back in full: mapped, writable (the initial stack) and
    // of that length. It is overwritten with NULs only, so every argument stays terminated.
    unsafe { std::ptr::write_bytes((start + kept) as *mut u8, 0, end - start - kept) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_tree_keeps_only_the_way_to_what_is_kept_and_is_put_back() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let root = dir.path().join("workspace");
        let kept = root.join("target/grade-cache");
        fs::create_dir_all(&kept).expect("created");
        fs::create_dir_all(root.join("target/release")).expect("created");
        fs::create_dir_all(root.join("xtask")).expect("created");
        fs::write(root.join("xtask/rubric.toml"), "secret").expect("written");
        fs::write(root.join("Cargo.toml"), "[workspace]").expect("written");
        for p in [
            &root,
            &root.join("target"),
            &root.join("target/release"),
            &root.join("xtask"),
            &kept,
        ] {
            fs::set_permissions(p, fs::Permissions::from_mode(0o755)).expect("a mode");
        }
        let mode = |p: &Path| fs::symlink_metadata(p).expect("exists").mode() & 0o777;
        let record = dir.path().join("record.json");
        let protection = protect(
            std::slice::from_ref(&root),
            std::slice::from_ref(&kept),
            &record,
        )
        .expect("protects");
        assert_eq!(mode(&root), 0o751);
        assert_eq!(mode(&root.join("target")), 0o751);
        assert_eq!(mode(&root.join("target/release")), 0o750);
        assert_eq!(mode(&root.join("xtask")), 0o750);
        // Files keep their modes: the grader copies the hand-out's.
        assert_eq!(mode(&root.join("xtask/rubric.toml")) & 0o004, 0o004);
        assert_eq!(mode(&root.join("Cargo.toml")) & 0o004, 0o004);
        assert_eq!(mode(&kept), 0o755);
        // A second grade at once: the first to end leaves the protection to it.
        let record_text = fs::read_to_string(&record).expect("a record");
        assert!(record_text.contains(&std::process::id().to_string()));
        drop(protection);
        assert_eq!(mode(&root), 0o755);
        assert_eq!(mode(&root.join("target/release")), 0o755);
        assert_eq!(mode(&root.join("xtask")), 0o755);
    }

    #[test]
    fn the_temporary_folder_and_the_root_are_never_locked() {
        let roots = roots_to_lock(
            &[
                PathBuf::from("/"),
                PathBuf::from("/tmp"),
                PathBuf::from("/usr"),
            ],
            &[],
        );
        assert!(roots.is_empty(), "{roots:?}");
    }
}
