//! Where a grade keeps its files while it runs: one known folder per user,
//! `$TMPDIR/xtask-grader-UID/`, holding each running grade's own folder `NAME/` beside its
//! lock file `NAME.lock`, which the grade holds (`flock`) while it lives.
//!
//! A grade that ends, well or not, removes its folder. One killed with -9 cannot (a grade
//! killed mid-check left 3.1 GB of scratch in /tmp): the kernel releases its lock, and the
//! next grade to start removes every folder whose lock no one holds.

use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use anyhow::{anyhow, bail, Context, Result};

/// This process's own folder and the lock that says it is alive.
struct Own {
    dir: PathBuf,
    lock: PathBuf,
    _held: File,
}

static OWN: OnceLock<std::result::Result<Mutex<Option<Own>>, String>> = OnceLock::new();

/// The folder every grade of this user keeps its scratch under.
fn base() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    std::env::temp_dir().join(format!("xtask-grader-{uid}"))
}

/// The base folder, made if need be, and checked to be this user's alone: a folder another
/// user made (or a link) in a shared /tmp would let them swap a grade's files. Mode 0711:
/// any user passes it (a sandbox reaches its grade's folder), none lists it, and no grade
/// changes it (two grades at once each gave it their own group, and each lost its runs).
pub fn open_base(base: &Path) -> Result<()> {
    match fs::DirBuilder::new().mode(0o711).create(base) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "its folder does not exist".to_string(),
                std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                _ => e.to_string(),
            };
            bail!(
                "cannot create the grader's folder {} ({why}); set TMPDIR to a folder you may \
                 write to",
                base.display()
            );
        }
    }
    let meta = fs::symlink_metadata(base)
        .with_context(|| format!("cannot read the grader's folder {}", base.display()))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o022 != 0 {
        bail!(
            "{} is not the grader's own folder (a link, another user's, or writable by others); \
             remove it, or set TMPDIR to another folder",
            base.display()
        );
    }
    // An older grader gave it each grade's group in turn, mode 0710: the next grade's
    // sandbox could not pass it.
    // SAFETY: getegid has no preconditions and cannot fail.
    let group = unsafe { libc::getegid() };
    if meta.mode() & 0o7777 != 0o711 || meta.gid() != group {
        std::os::unix::fs::chown(base, None, Some(group))
            .and_then(|()| fs::set_permissions(base, fs::Permissions::from_mode(0o711)))
            .with_context(|| format!("cannot give {} its mode back", base.display()))?;
    }
    Ok(())
}

/// Try to take `lock` (a lock file) without waiting: Some(file) holds it.
fn try_lock(lock: &Path) -> Option<File> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(lock)
        .ok()?;
    // SAFETY: flock on a descriptor this function owns.
    let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    taken.then_some(file)
}

/// Remove the folders of grades that are gone: their lock is held by no one. Returns how
/// many were removed.
pub fn sweep(base: &Path) -> usize {
    let mut removed = 0;
    for entry in fs::read_dir(base).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".lock")) else {
            continue;
        };
        if stem.is_empty() || stem.starts_with('.') {
            continue;
        }
        let Some(_held) = try_lock(&entry.path()) else {
            continue;
        };
        // Its grade is dead: its folder goes first, then the lock (held until then, so no
        // other sweep removes what a new grade of the same name makes).
        let dir = base.join(stem);
        if fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            let _ = fs::remove_dir_all(&dir);
        }
        if !dir.exists() && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Make this process's folder under `base`: its lock is made under a temporary name, taken,
/// then renamed, so that no sweep ever sees a lock that no one holds yet.
fn make_own(base: &Path) -> Result<Own> {
    open_base(base)?;
    sweep(base);
    // And the modes a killed grade changed outside its folder, where no grade holds them.
    crate::sandbox::give_back();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("{}-{nanos:09}", std::process::id());
    let temporary = base.join(format!(".{name}.new"));
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&temporary)
        .with_context(|| format!("cannot make a lock file in {}", base.display()))?;
    // SAFETY: flock on a descriptor owned here.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let _ = fs::remove_file(&temporary);
        bail!("cannot lock {}", temporary.display());
    }
    let lock = base.join(format!("{name}.lock"));
    fs::rename(&temporary, &lock).with_context(|| format!("cannot make {}", lock.display()))?;
    let dir = base.join(&name);
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("cannot make {}", dir.display()))?;
    Ok(Own {
        dir,
        lock,
        _held: file,
    })
}

/// This process's scratch folder, made on first use (the stale ones removed then).
pub fn own() -> Result<PathBuf> {
    let own = OWN.get_or_init(|| {
        make_own(&base())
            .map(|own| Mutex::new(Some(own)))
            .map_err(|e| format!("{e:#}"))
    });
    let own = own.as_ref().map_err(|e| anyhow!("{e}"))?;
    let guard = own
        .lock()
        .map_err(|_| anyhow!("the scratch folder's lock is poisoned"))?;
    guard
        .as_ref()
        .map(|own| own.dir.clone())
        .ok_or_else(|| anyhow!("this grade's scratch folder was already removed"))
}

/// A new folder in this process's scratch folder, removed when dropped.
pub fn tempdir(prefix: &str) -> Result<tempfile::TempDir> {
    let own = own()?;
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&own)
        .with_context(|| format!("cannot make a folder in {}", own.display()))
}

/// Remove this process's folder and lock, and let go of the modes it changed outside it
/// (the grade is over).
pub fn finish() {
    let Some(Ok(own)) = OWN.get() else {
        return;
    };
    crate::sandbox::let_go();
    let Ok(mut guard) = own.lock() else {
        return;
    };
    if let Some(own) = guard.take() {
        let _ = fs::remove_dir_all(&own.dir);
        let _ = fs::remove_file(&own.lock);
    }
}

/// Removes this process's folder when the grade returns, whichever way it does.
pub struct Finish;

impl Drop for Finish {
    fn drop(&mut self) {
        finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    #[test]
    fn a_grade_killed_with_9_leaves_its_scratch_to_the_next() {
        let base = tempfile::tempdir().expect("a temp folder");
        let base = base.path().join("xtask-grader");
        // A grade that lives (this test's own folder) and one that will be killed: another
        // process holding its lock, as a grade does, with a file in its folder.
        let mine = make_own(&base).expect("a folder");
        fs::write(mine.dir.join("kept"), "x").expect("written");
        let dead = base.join("4242-000000001");
        fs::create_dir(&dead).expect("made");
        fs::write(dead.join("image.ppm"), vec![0u8; 1 << 16]).expect("written");
        let lock = base.join("4242-000000001.lock");
        fs::write(&lock, "").expect("written");
        // In a process group of its own, so that the kill below takes flock and the sleep
        // it starts alike, whichever of them holds the lock (`-o` closes it in the sleep, but
        // not with every util-linux: on CI the sleep kept it).
        let mut holder = {
            use std::os::unix::process::CommandExt;
            Command::new("flock")
                .arg("-o")
                .arg(&lock)
                .args(["sleep", "60"])
                .process_group(0)
                .spawn()
                .expect("flock runs")
        };
        let waited = Instant::now();
        while try_lock(&lock).is_some() && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Alive: kept.
        assert_eq!(sweep(&base), 0);
        assert!(dead.join("image.ppm").exists());
        // Killed with -9: the kernel lets its lock go; the next start removes its folder.
        // SAFETY: kill has no memory preconditions; the group is the holder's own.
        unsafe { libc::kill(-(holder.id() as i32), libc::SIGKILL) };
        let _ = holder.wait();
        // flock is reaped, but the sleep it started may let the lock go a moment later (on
        // a loaded machine, after the sweep: CI saw it keep the folder).
        let killed = Instant::now();
        while try_lock(&lock).is_none() && killed.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(sweep(&base), 1);
        assert!(!dead.exists() && !lock.exists());
        // The living grade's folder is untouched.
        assert!(mine.dir.join("kept").exists());
    }

    /// An older grader left the base folder of its group, 0710: given back 0711, ours.
    #[test]
    fn a_base_folder_an_older_grader_closed_is_opened_again() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let base = dir.path().join("xtask-grader");
        fs::create_dir(&base).expect("created");
        fs::set_permissions(&base, fs::Permissions::from_mode(0o710)).expect("a mode");
        open_base(&base).expect("ours");
        assert_eq!(fs::metadata(&base).expect("exists").mode() & 0o7777, 0o711);
    }

    #[test]
    fn a_base_folder_of_another_kind_is_refused() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let base = dir.path().join("xtask-grader");
        std::os::unix::fs::symlink(dir.path(), &base).expect("a link");
        let error = open_base(&base).expect_err("refused").to_string();
        assert!(error.contains("not the grader's own folder"), "{error}");
    }
}
