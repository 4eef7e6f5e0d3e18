//! The file modes behind the fallback sandbox, which runs the student's code at the host's
//! paths as a uid of its own (run by root): what that user may reach, and what it may not.
//!
//! - The files a run reads from outside the grade's own folder are staged into it
//!   ([`stage`]): each copied (or, for what any user may read already, linked) once per grade
//!   into a folder only root and the sandbox's group may pass. The program a run executes
//!   from there (the reference binaries, whose strings hold the solved kernels) is
//!   executable and unreadable to that group: not even the process it starts can read it.
//! - The way to what cannot be staged (the toolchain, the grader's cache of the hand-out)
//!   is opened to every user, search only ([`open_way_to`]), and every mode so changed is
//!   recorded first, in one record per machine ([`record_path`]), with the grades that hold
//!   it changed, and put back when the last of those ends ([`let_go_all`]); a grade killed
//!   with -9 is struck from the record by the next ([`give_back`]), which puts back what no
//!   living grade holds. Each path has holders of its own: a grade's folders are put back when it ends,
//!   whatever other grades run on the machine. The grade's own folders are passed by its
//!   sandbox's group alone; the folder above them all, shared by every grade, is never
//!   changed.
//! - Where Landlock is missing too (a kernel older than 5.13, or one built without it),
//!   before any student process starts, [`protect`] takes the "other" rights off the
//!   folders of the instructor's workspace, the references (`--bin-dir`), the folder of the
//!   results file and the submissions' folders, keeping only the way (search, not list) to
//!   what the sandbox must reach inside them; recorded and put back the same way.
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

/// What the grades on this machine share: each path one of them changed, its mode before
/// the first change, and the grades (processes) that hold it changed.
#[derive(Serialize, Deserialize, Default)]
struct Record {
    #[serde(default)]
    changed: Vec<Change>,
    /// The record's form before each path had holders of its own: one list of holders for
    /// every path. Read (a grade killed then left its changes in it), never written.
    #[serde(default, skip_serializing)]
    holders: Vec<u32>,
    #[serde(default, skip_serializing)]
    saved: Vec<(PathBuf, u32)>,
}

#[derive(Serialize, Deserialize)]
struct Change {
    path: PathBuf,
    mode: u32,
    holders: Vec<u32>,
}

impl Record {
    /// This process holds `path` as changed: with the grades that hold it already where it
    /// is recorded, else recorded with `mode`, its mode before this change.
    fn hold(&mut self, path: &Path, mode: u32) {
        let me = std::process::id();
        match self.changed.iter_mut().find(|c| c.path == path) {
            Some(change) if !change.holders.contains(&me) => change.holders.push(me),
            Some(_) => {}
            None => self.changed.push(Change {
                path: path.to_path_buf(),
                mode,
                holders: vec![me],
            }),
        }
    }

    /// Strike off every holder that no longer runs (killed: it let go of nothing itself),
    /// and this process too where `me_too`; put back every path no one holds any more,
    /// deepest first (a folder's mode after what is in it).
    fn strike(&mut self, me_too: bool) {
        let me = std::process::id();
        for change in &mut self.changed {
            change.holders.retain(|&pid| {
                !(me_too && pid == me) && Path::new(&format!("/proc/{pid}")).exists()
            });
        }
        let (mut free, held): (Vec<Change>, Vec<Change>) = std::mem::take(&mut self.changed)
            .into_iter()
            .partition(|c| c.holders.is_empty());
        self.changed = held;
        free.sort_by_key(|c| std::cmp::Reverse(c.path.components().count()));
        for change in free {
            // Never through a link: a recorded folder replaced by one since is left.
            if fs::symlink_metadata(&change.path).is_ok_and(|m| m.is_dir()) {
                let _ = fs::set_permissions(&change.path, fs::Permissions::from_mode(change.mode));
            }
        }
    }
}

/// The protection this grade holds; dropped, it lets go (and every mode no other grade
/// holds is put back).
pub struct Protection {
    record: PathBuf,
}

/// Take the "other" rights off `roots`, keeping the way to `keep`, for as long as the
/// returned value lives.
pub fn protect(roots: &[PathBuf], keep: &[PathBuf]) -> Result<Protection> {
    protect_in(roots, keep, &record_path()?)
}

fn protect_in(roots: &[PathBuf], keep: &[PathBuf], record: &Path) -> Result<Protection> {
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
        for root in &roots {
            lock_down(root, &keep, state)?;
        }
        Ok(())
    })?;
    Ok(protection)
}

/// Where every grade run by this user on this machine records the modes it changed outside
/// its own folders: one record whatever a grade's TMPDIR (two grades with different ones
/// open the same toolchain), in /var/tmp, which a reboot keeps, in a folder of the grader's
/// own (checked as the scratch folder's is: another user's, or a link, is refused).
pub fn record_path() -> Result<PathBuf> {
    let var_tmp = Path::new("/var/tmp");
    let place = if var_tmp.is_dir() {
        var_tmp.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let folder = place.join(format!("xtask-grader-modes-{}", unsafe { libc::geteuid() }));
    crate::scratch::open_base(&folder)?;
    Ok(folder.join("modes.json"))
}

/// The folders outside its own that this process holds, or found open and recorded by no
/// grade (open by their own modes), each with its record: [`open_way_to`] reads the record
/// only for a folder not among them. A record's are forgotten when this process lets go.
static SEEN: std::sync::Mutex<Vec<(PathBuf, PathBuf)>> = std::sync::Mutex::new(Vec::new());

/// Let go of what this process holds, and of what any killed holder held; every path no
/// living grade holds is put back. Err: the record could not be read.
fn let_go(record: &Path) -> Result<()> {
    if let Ok(mut seen) = SEEN.lock() {
        seen.retain(|(r, _)| r != record);
    }
    with_record(record, |state| {
        state.strike(true);
        Ok(())
    })
}

/// Put back what killed grades left changed and no living grade holds, run by root only (no
/// other grader changes a mode outside its own folders) when a grade starts; what this
/// process holds stays held (its [`Protection`], or [`let_go_all`] when the grade ends, lets
/// go). A failure is said, not fatal: the record keeps the modes for the next grade.
pub fn give_back() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    if let Err(e) = record_path().and_then(|record| give_back_in(&record)) {
        say_kept(&e);
    }
}

/// Let go of every mode this process holds changed (its grade is over), and put back what
/// no living grade holds. Run by root only, as [`give_back`].
pub fn let_go_all() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    match record_path() {
        Ok(record) => let_go_or_say(&record),
        Err(e) => say_kept(&e),
    }
}

fn give_back_in(record: &Path) -> Result<()> {
    with_record(record, |state| {
        state.strike(false);
        Ok(())
    })
}

fn let_go_or_say(record: &Path) {
    if let Err(e) = let_go(record) {
        say_kept(&e);
    }
}

fn say_kept(e: &anyhow::Error) {
    shared::cli::eprint_line(&format!(
        "xtask: warning: cannot put back the modes the sandbox changed ({e:#}); the next grade \
         puts them back"
    ));
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
fn lock_down(path: &Path, keep: &[PathBuf], state: &mut Record) -> Result<()> {
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
    // Held wherever another grade changed it already, though it needs no change now.
    let recorded = state.changed.iter().any(|c| c.path == path);
    if wanted != mode || recorded {
        state.hold(path, mode);
    }
    if wanted != mode {
        fs::set_permissions(path, fs::Permissions::from_mode(wanted))
            .with_context(|| format!("cannot make {} unreadable to the sandbox", path.display()))?;
    }
    if on_the_way {
        let entries =
            fs::read_dir(path).with_context(|| format!("cannot read {}", path.display()))?;
        for entry in entries.flatten() {
            lock_down(&entry.path(), keep, state)?;
        }
    }
    Ok(())
}

impl Drop for Protection {
    fn drop(&mut self) {
        let_go_or_say(&self.record);
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
    for (path, mode) in std::mem::take(&mut state.saved) {
        let holders = state.holders.clone();
        state.changed.push(Change {
            path,
            mode,
            holders,
        });
    }
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

/// Let the sandbox's user pass (search, not list) every folder above `path`, so that it
/// reaches what the run may read or write there. The grade's own folders (under `own`, and
/// `own` itself) are passed by the sandbox's group `gid` alone: no other grade's student,
/// knowing their names, finds this one's files. Any other folder (the toolchain's, the
/// grader's cache's) is opened to every user, search only, its mode recorded first and put
/// back when the last grade that holds it ends ([`give_back`]); nothing else is changed,
/// and the folder above every grade's own (shared by all) never is. `record`: where the
/// changes are recorded ([`record_path`]).
pub fn open_way_to(path: &Path, own: &Path, gid: u32, record: &Path) -> Result<()> {
    let mut outside = Vec::new();
    for folder in path.ancestors().skip(1) {
        let meta =
            fs::metadata(folder).with_context(|| format!("cannot read {}", folder.display()))?;
        let mode = meta.mode() & 0o7777;
        if folder.starts_with(own) {
            if meta.uid() == 0 && (meta.gid() != gid || mode & 0o070 != 0o010) {
                pass_by_group(folder, gid, mode)?;
            }
        } else {
            outside.push(folder.to_path_buf());
        }
    }
    let mut seen = SEEN
        .lock()
        .map_err(|_| anyhow::anyhow!("the list of folders held is poisoned"))?;
    outside.retain(|folder| !seen.iter().any(|(r, f)| r == record && f == folder));
    if outside.is_empty() {
        return Ok(());
    }
    // A way another grade opened is held too: the last grade out closes it, never one that
    // ends while this one still runs through it.
    with_record(record, |state| {
        for folder in &outside {
            let mode = fs::symlink_metadata(folder)
                .with_context(|| format!("cannot read {}", folder.display()))?
                .mode()
                & 0o7777;
            let recorded = state.changed.iter().any(|c| &c.path == folder);
            if mode & 0o001 == 0 || recorded {
                state.hold(folder, mode);
            }
            if mode & 0o001 == 0 {
                fs::set_permissions(folder, fs::Permissions::from_mode(mode | 0o001))
                    .with_context(|| format!("cannot let the sandbox pass {}", folder.display()))?;
            }
            seen.push((record.to_path_buf(), folder.clone()));
        }
        Ok(())
    })
}

/// A folder of the grade's own, passed (not listed) by the group `gid` alone: its old
/// group's rights are not the sandbox's, and other users (another grade's student) have
/// none.
fn pass_by_group(folder: &Path, gid: u32, mode: u32) -> Result<()> {
    std::os::unix::fs::chown(folder, None, Some(gid))
        .and_then(|()| {
            fs::set_permissions(folder, fs::Permissions::from_mode(mode & !0o077 | 0o010))
        })
        .with_context(|| format!("cannot let the sandbox pass {}", folder.display()))
}

/// Whether any user may reach `path` as the folders above it stand (search on each).
fn reachable(path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .all(|folder| fs::metadata(folder).is_ok_and(|m| m.mode() & 0o001 != 0))
}

/// What one grade has staged: each source (its path, size and date, the group and how it
/// was staged) and its place in the grade's folder.
type Staged = Vec<((PathBuf, u64, i64, u32, bool), PathBuf)>;

static STAGED: std::sync::Mutex<Staged> = std::sync::Mutex::new(Vec::new());

/// The path a run of the sandbox's group `gid` reads `host` at (a read-only mount): `host`
/// itself where it lies in the grade's own folder `own`, or where any user reaches it and
/// it is not `program`; else its copy in the grade's own folder, made once per grade. A
/// `program` (what the run executes: a reference binary) is copied executable and
/// unreadable to the group, so that the student's uid never reads it, even from the
/// process it starts; another file readable to the group; a folder that holds only files
/// (NVRTC's) staged file by file, each linked where any user may read it already (NVRTC's
/// 220 MB cost nothing), else copied. A folder with folders in it stays where it is (its
/// way opened): the caller's.
pub fn stage(host: &Path, own: &Path, gid: u32, program: bool) -> Result<PathBuf> {
    if host.starts_with(own) || (!program && reachable(host)) {
        return Ok(host.to_path_buf());
    }
    let meta = fs::metadata(host).with_context(|| format!("cannot read {}", host.display()))?;
    if meta.is_dir() && !is_flat(host) {
        return Ok(host.to_path_buf());
    }
    let key = (
        host.to_path_buf(),
        meta.len(),
        meta.mtime_nsec() + meta.mtime() * 1_000_000_000,
        gid,
        program,
    );
    let mut staged = STAGED
        .lock()
        .map_err(|_| anyhow::anyhow!("the staged files' list is poisoned"))?;
    if let Some((_, path)) = staged.iter().find(|(k, _)| *k == key) {
        return Ok(path.clone());
    }
    // Each in a folder of its own, so that two of one name stay apart and each keeps its
    // name (a program's `argv[0]`, a library's soname).
    let folder = own.join("stage").join(staged.len().to_string());
    fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
    let name = host.file_name().unwrap_or(std::ffi::OsStr::new("file"));
    let to = folder.join(name);
    if meta.is_dir() {
        fs::create_dir(&to).with_context(|| format!("cannot create {}", to.display()))?;
        for entry in
            fs::read_dir(host).with_context(|| format!("cannot read {}", host.display()))?
        {
            let from = entry
                .with_context(|| format!("cannot read {}", host.display()))?
                .path();
            let target = to.join(from.file_name().unwrap_or_default());
            let open = fs::metadata(&from).is_ok_and(|m| m.mode() & 0o004 != 0);
            let linked = open
                && fs::canonicalize(&from).is_ok_and(|real| fs::hard_link(real, &target).is_ok());
            if !linked {
                stage_copy(&from, &target, gid, false)?;
            }
        }
        std::os::unix::fs::chown(&to, Some(0), Some(gid))
            .and_then(|()| fs::set_permissions(&to, fs::Permissions::from_mode(0o750)))
            .with_context(|| format!("cannot hand {} to the sandbox's group", to.display()))?;
    } else {
        stage_copy(host, &to, gid, program)?;
    }
    staged.push((key, to.clone()));
    Ok(to)
}

/// Whether `folder` holds regular files alone (links to them count).
fn is_flat(folder: &Path) -> bool {
    fs::read_dir(folder).is_ok_and(|entries| {
        entries
            .flatten()
            .all(|e| fs::metadata(e.path()).is_ok_and(|m| m.is_file()))
    })
}

/// Copy `from` to `to`, root's, of the group `gid`: executable alone for a `program`,
/// readable (and executable where `from` is) otherwise.
fn stage_copy(from: &Path, to: &Path, gid: u32, program: bool) -> Result<()> {
    let source = fs::metadata(from).with_context(|| format!("cannot read {}", from.display()))?;
    let mode = match (program, source.mode() & 0o111 != 0) {
        (true, _) => 0o110,
        (false, true) => 0o550,
        (false, false) => 0o440,
    };
    // Made unreadable to all before a byte is copied, then given to the group.
    let mut out = {
        use std::os::unix::fs::OpenOptionsExt;
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(to)
            .with_context(|| format!("cannot write {}", to.display()))?
    };
    let mut input =
        fs::File::open(from).with_context(|| format!("cannot read {}", from.display()))?;
    std::io::copy(&mut input, &mut out)
        .with_context(|| format!("cannot stage {} for the sandbox", from.display()))?;
    drop(out);
    std::os::unix::fs::chown(to, Some(0), Some(gid))
        .and_then(|()| fs::set_permissions(to, fs::Permissions::from_mode(mode)))
        .with_context(|| format!("cannot hand {} to the sandbox's group", to.display()))
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

    /// The process id of a process that has ended: a grade killed with -9.
    fn dead_pid() -> u32 {
        let mut dead = std::process::Command::new("true")
            .spawn()
            .expect("true runs");
        let pid = dead.id();
        dead.wait().expect("ended");
        pid
    }

    /// A grade that makes its scratch folder after it has protected the instructor's files
    /// gives back only what killed grades left: its own protection holds until dropped.
    #[test]
    fn giving_back_at_a_grades_start_keeps_what_this_grade_holds() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let root = dir.path().join("autograder");
        fs::create_dir(&root).expect("created");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).expect("a mode");
        let record = dir.path().join("modes.json");
        let mode = |p: &Path| fs::metadata(p).expect("exists").mode() & 0o777;
        let protection = protect_in(std::slice::from_ref(&root), &[], &record).expect("protected");
        assert_eq!(mode(&root), 0o750);
        give_back_in(&record).expect("given back");
        assert_eq!(mode(&root), 0o750, "the grade's own protection was let go");
        drop(protection);
        assert_eq!(mode(&root), 0o755);
    }

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
        let protection = protect_in(
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

    /// The way to the toolchain in a 0700 home was opened for good (`o+x`), and the base of
    /// every grade's folder was given each grade's group in turn: now the way is recorded and
    /// put back by the last grade out, or by the next grade after a kill -9, and only the
    /// grade's own folder changes group.
    #[test]
    fn a_way_opened_is_recorded_and_put_back_and_only_the_grades_own_folder_changes_group() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let home = dir.path().join("home");
        let tool = home.join("toolchain/bin/cargo");
        fs::create_dir_all(tool.parent().expect("a folder")).expect("created");
        fs::write(&tool, "").expect("written");
        let base = dir.path().join("xtask-grader-0");
        let own = base.join("1-2");
        let scratch = own.join("grade-x/work");
        fs::create_dir_all(&scratch).expect("created");
        for (p, mode) in [(&home, 0o700), (&base, 0o711), (&own, 0o700)] {
            fs::set_permissions(p, fs::Permissions::from_mode(mode)).expect("a mode");
        }
        let meta = |p: &Path| fs::symlink_metadata(p).expect("exists");
        let mode = |p: &Path| meta(p).mode() & 0o7777;
        let record = dir.path().join("modes.json");
        // SAFETY: getegid has no preconditions and cannot fail.
        let gid = unsafe { libc::getegid() };
        open_way_to(&tool, &own, gid, &record).expect("opened");
        open_way_to(&scratch, &own, gid, &record).expect("opened");
        assert_eq!(mode(&home), 0o701);
        assert_eq!(mode(&own), 0o710);
        assert_eq!(mode(&own.join("grade-x")) & 0o077, 0o010);
        assert_eq!(mode(&base), 0o711, "the shared base is never changed");
        // A second grade that finds the way open holds it too: the first out leaves it.
        let text = fs::read_to_string(&record).expect("the record");
        let mut both: Record = serde_json::from_str(&text).expect("the record reads");
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep runs");
        for change in &mut both.changed {
            change.holders.push(other.id());
        }
        fs::write(&record, serde_json::to_string(&both).expect("encoded")).expect("written");
        let_go(&record).expect("let go");
        assert_eq!(mode(&home), 0o701, "the other grade still runs through it");
        let _ = other.kill();
        let _ = other.wait();
        // The last grade out puts the way back.
        let_go(&record).expect("let go");
        assert_eq!(mode(&home), 0o700);

        // Killed with -9, a grade holds what it opened until the next lets go of it.
        open_way_to(&tool, &own, gid, &record).expect("opened");
        let dead_pid = dead_pid();
        let text = fs::read_to_string(&record).expect("the record");
        let mut theirs: Record = serde_json::from_str(&text).expect("the record reads");
        for change in &mut theirs.changed {
            assert_eq!(change.holders, [std::process::id()]);
            change.holders = vec![dead_pid];
        }
        fs::write(&record, serde_json::to_string(&theirs).expect("encoded")).expect("written");
        assert_eq!(mode(&home), 0o701);
        let_go(&record).expect("let go");
        assert_eq!(mode(&home), 0o700);
    }

    /// Each path is put back when the grades that hold it end, whatever other grades hold
    /// on the machine: one record for the whole machine with one list of holders kept every
    /// mode changed until the last grade anywhere ended, and CI's tests of the sandbox found
    /// their own folders still locked while another test graded.
    #[test]
    fn a_grades_own_changes_are_put_back_while_another_grade_holds_others() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let (mine, theirs) = (dir.path().join("mine"), dir.path().join("theirs"));
        for folder in [&mine, &theirs] {
            fs::create_dir(folder).expect("created");
            fs::set_permissions(folder, fs::Permissions::from_mode(0o755)).expect("a mode");
        }
        let record = dir.path().join("modes.json");
        let mode = |p: &Path| fs::metadata(p).expect("exists").mode() & 0o777;
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep runs");
        // The other grade locked its folder, and still runs.
        fs::set_permissions(&theirs, fs::Permissions::from_mode(0o750)).expect("a mode");
        let held = Record {
            changed: vec![Change {
                path: theirs.clone(),
                mode: 0o755,
                holders: vec![other.id()],
            }],
            ..Record::default()
        };
        fs::write(&record, serde_json::to_string(&held).expect("encoded")).expect("written");
        let protection = protect_in(std::slice::from_ref(&mine), &[], &record).expect("protected");
        assert_eq!(mode(&mine), 0o750);
        drop(protection);
        assert_eq!(mode(&mine), 0o755, "put back when its own grade ended");
        assert_eq!(mode(&theirs), 0o750, "held by the grade still running");
        let _ = other.kill();
        let _ = other.wait();
        give_back_in(&record).expect("given back");
        assert_eq!(mode(&theirs), 0o755, "put back once its grade is gone");
    }

    /// A record a grade killed under the grader before left (one list of holders for every
    /// path) is read, and what it kept changed put back: not refused, which failed every
    /// grade on the machine after an upgrade.
    #[test]
    fn a_record_of_the_form_before_is_read_and_put_back() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let home = dir.path().join("home");
        fs::create_dir(&home).expect("created");
        fs::set_permissions(&home, fs::Permissions::from_mode(0o701)).expect("a mode");
        let dead_pid = dead_pid();
        let record = dir.path().join("modes.json");
        let before = serde_json::json!({"holders": [dead_pid], "saved": [[home, 0o700]]});
        fs::write(&record, before.to_string()).expect("written");
        give_back_in(&record).expect("given back");
        assert_eq!(fs::metadata(&home).expect("exists").mode() & 0o777, 0o700);
        let after: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&record).expect("read")).expect("JSON");
        assert_eq!(after, serde_json::json!({"changed": []}));
    }

    /// A 0700 `--bin-dir`'s reference binary reached through the grade's own copy, which
    /// the sandbox's group may run but not read; a library readable; NVRTC's folder, whose
    /// files every user may read, linked file by file.
    #[test]
    fn the_references_are_staged_executable_alone() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let bin_dir = dir.path().join("dist");
        let nvrtc = dir.path().join("nvrtc");
        for folder in [&bin_dir, &nvrtc] {
            fs::create_dir(folder).expect("created");
        }
        let own = dir.path().join("own");
        fs::create_dir(&own).expect("created");
        fs::write(bin_dir.join("lab04"), "solved kernels").expect("written");
        fs::write(bin_dir.join("libcpu_device.so"), "device").expect("written");
        fs::write(nvrtc.join("libnvrtc.so.12"), "nvrtc").expect("written");
        fs::set_permissions(bin_dir.join("lab04"), fs::Permissions::from_mode(0o755))
            .expect("a mode");
        fs::set_permissions(&bin_dir, fs::Permissions::from_mode(0o700)).expect("a mode");
        fs::set_permissions(&nvrtc, fs::Permissions::from_mode(0o700)).expect("a mode");
        let gid = 0x7000_1234;
        let staged = stage(&bin_dir.join("lab04"), &own, gid, true).expect("staged");
        let meta = fs::metadata(&staged).expect("staged");
        assert!(staged.starts_with(&own) && staged.ends_with("lab04"));
        assert_eq!((meta.mode() & 0o7777, meta.gid()), (0o110, gid));
        assert_eq!(fs::read(&staged).expect("root reads it"), b"solved kernels");
        // Staged once per grade.
        assert_eq!(
            stage(&bin_dir.join("lab04"), &own, gid, true).expect("staged"),
            staged
        );
        let library = stage(&bin_dir.join("libcpu_device.so"), &own, gid, false).expect("staged");
        assert_eq!(
            fs::metadata(&library).expect("staged").mode() & 0o7777,
            0o440
        );
        let folder = stage(&nvrtc, &own, gid, false).expect("staged");
        let linked = fs::metadata(folder.join("libnvrtc.so.12")).expect("staged");
        let original = fs::metadata(nvrtc.join("libnvrtc.so.12")).expect("exists");
        assert_eq!(linked.ino(), original.ino());
        assert_eq!(
            fs::metadata(&bin_dir).expect("exists").mode() & 0o7777,
            0o700
        );
        // In the grade's own folder already: used where it is.
        let own_file = own.join("built-lab04");
        fs::write(&own_file, "").expect("written");
        assert_eq!(stage(&own_file, &own, gid, true).expect("staged"), own_file);
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
