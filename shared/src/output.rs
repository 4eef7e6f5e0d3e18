//! Every file the labs and xtask write goes through this module.
//!
//! The policy, in the order a run meets it:
//! - [`Output::create`] is called before the work starts, so a bad path fails at once. It
//!   opens the file that will receive the bytes: a path that cannot be written is known then,
//!   not after a computation of minutes.
//! - A regular file, or a path where nothing exists yet, is replaced atomically: the bytes go
//!   to a new file in the target's folder, which takes the target's name only at
//!   [`Output::commit`]. On Linux that file is unnamed (`O_TMPFILE`): it has no name on disk
//!   until the commit, so Ctrl-C, SIGTERM, SIGHUP and even SIGKILL leave nothing behind. Where
//!   the file system cannot make unnamed files, a named one beside the target is used and
//!   removed on every error path.
//! - The new file gets the mode a plain create gives under the umask, or, when it replaces a
//!   file, that file's mode (and owner, where permitted).
//! - A symlink is followed: the file it points to is replaced, the link stays.
//! - A target that is not a regular file (`/dev/null`, `/dev/stdout`, a FIFO, a terminal) is
//!   written in place and never replaced.
//! - Several outputs of one run are committed together by [`commit_all`]: every file is given
//!   a name beside its target first, and only when all have one are they renamed into place.
//! - A file-size limit (`ulimit -f`) makes a write fail with an error instead of killing the
//!   process with SIGXFSZ.
//! - On Windows the same policy holds with a named file beside the target, less what
//!   Windows has no equivalent for: no modes or owners to keep (the read-only flag is kept),
//!   no signals held during a commit (Ctrl-C between two renames of [`commit_all`] may leave
//!   some targets replaced and a temporary `.out-*.tmp` file beside the others), and two
//!   outputs are told apart by their canonical paths, not by hard links.
//! - Messages name the path the user gave and say what to do; never a temporary path.
//! - A lab's run notes what it committed ([`note_commits`]), so that its report can say
//!   where each file went.
//!
//! [`ImageFile`] writes the Mandelbrot labs' image on top of this: a PPM, or a PNG of the same
//! pixels when the path ends in `.png`.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
#[cfg(unix)]
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use crate::{Error, Result};

/// A file being written, which appears at its path only when committed. Dropped without a
/// commit, it leaves nothing (and the file it would have replaced is untouched).
pub struct Output {
    /// The path as the user gave it: the only path a message shows.
    shown: PathBuf,
    file: File,
    how: How,
    /// The picture's width and height, for the line that says where it went.
    size: Option<(u32, u32)>,
}

enum How {
    /// Not a regular file (a device, a FIFO): written in place, nothing to commit.
    InPlace,
    /// An unnamed file in `target`'s folder, linked into place at the commit.
    Unnamed { target: PathBuf },
    /// A named file beside `target` (no `O_TMPFILE` here), renamed at the commit. `None`
    /// once it is no longer ours to remove.
    Named {
        target: PathBuf,
        temp: Option<PathBuf>,
    },
}

impl Output {
    /// Check `path` and open the file that will become it. Call this before the work starts.
    pub fn create(path: &Path) -> Result<Output> {
        ignore_file_size_signal();
        let fail = |e: io::Error| Error::output(path, e);
        if path.as_os_str().is_empty() {
            return Err(fail(io::ErrorKind::NotFound.into()));
        }
        // "out/" names a folder even when it does not exist (`Path` forgets the slash).
        let ends_with_separator = path
            .as_os_str()
            .as_encoded_bytes()
            .last()
            .is_some_and(|&byte| std::path::is_separator(char::from(byte)));
        if ends_with_separator {
            return Err(fail(io::ErrorKind::IsADirectory.into()));
        }
        // `metadata` follows every link, the kernel's own /proc/self/fd links included.
        let followed = fs::metadata(path);
        match &followed {
            Ok(meta) if meta.is_dir() => return Err(fail(io::ErrorKind::IsADirectory.into())),
            Ok(meta) if !meta.is_file() => return in_place(path, false),
            _ => {}
        }
        let Some(target) = final_name(path).map_err(fail)? else {
            // A regular file reached through /proc (`-o /dev/stdout > file`): the shell
            // opened it; write into it as `cat` would.
            return in_place(path, true);
        };
        let dir = folder_of(&target);
        let (file, how) = match open_unnamed(dir) {
            Some(file) => (file.map_err(fail)?, How::Unnamed { target }),
            None => {
                let (file, temp) = open_named(dir).map_err(fail)?;
                let how = How::Named {
                    target,
                    temp: Some(temp),
                };
                (file, how)
            }
        };
        if let Ok(old) = followed {
            // Keep the replaced file's owner (only root may give a file away; otherwise this
            // fails harmlessly) and then its mode (a chown clears set-id bits).
            #[cfg(unix)]
            let _ = std::os::unix::fs::fchown(&file, Some(old.uid()), Some(old.gid()));
            file.set_permissions(old.permissions()).map_err(fail)?;
        }
        Ok(Output {
            shown: path.to_path_buf(),
            file,
            how,
            size: None,
        })
    }

    /// Append `bytes`: one `write` loop on the file descriptor, no copy, no buffer.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_all(bytes).map_err(|e| self.error(e))
    }

    /// The path as the user gave it.
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// Say that the file holds a picture of `width` x `height`: the line that reports the
    /// commit gives the size.
    pub fn set_size(&mut self, width: u32, height: u32) {
        self.size = Some((width, height));
    }

    /// An error about this output, naming the user's path.
    pub fn error(&self, source: io::Error) -> Error {
        Error::output(&self.shown, source)
    }

    /// Move the finished file into place (see [`commit_all`] for several).
    pub fn commit(self) -> Result<()> {
        commit_all(vec![self])
    }

    /// Give the file a name in its target's folder, if it has none yet: either the target's
    /// own name (`direct`: only when nothing is there, and no other output must wait for
    /// this one) or a temporary one. Returns the name to rename from, if any.
    fn stage(&mut self, direct: bool) -> io::Result<Option<PathBuf>> {
        match &mut self.how {
            How::InPlace => Ok(None),
            How::Named { temp, .. } => Ok(temp.clone()),
            How::Unnamed { target } => {
                if direct {
                    match link_unnamed(&self.file, target) {
                        Ok(()) => return Ok(None),
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(e),
                    }
                }
                let dir = folder_of(target).to_path_buf();
                loop {
                    let temp = dir.join(temp_name());
                    match link_unnamed(&self.file, &temp) {
                        Ok(()) => {
                            // From here on the name is ours to remove or rename.
                            self.how = How::Named {
                                target: target.clone(),
                                temp: Some(temp.clone()),
                            };
                            return Ok(Some(temp));
                        }
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }

    /// Rename the staged file over its target.
    fn rename_into_place(&mut self) -> io::Result<()> {
        if let How::Named { target, temp } = &mut self.how {
            if let Some(from) = temp.as_ref() {
                fs::rename(from, &*target)?;
                *temp = None;
            }
        }
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let How::Named {
            temp: Some(temp), ..
        } = &self.how
        {
            // Nothing better to do if the temporary name is already gone.
            let _ = fs::remove_file(temp);
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Commit several outputs of one run together: either every target is replaced, or (on an
/// error) none is. Ctrl-C, SIGTERM and SIGHUP wait until the renames are done.
///
/// Each file first gets a name beside its target; only when every one has a name are they
/// renamed into place (a rename within one folder does not fail for lack of space). No
/// `fsync`: the policy protects against interrupted processes, not power cuts, and an fsync
/// of a 805 MB image would cost more than lab04's whole computation.
pub fn commit_all(outputs: Vec<Output>) -> Result<()> {
    let mut outputs = outputs;
    let _held = SignalsHeld::new();
    let direct = outputs.len() == 1;
    for output in &mut outputs {
        // On an error the outputs are dropped: every name staged so far is removed.
        output.stage(direct).map_err(|e| output.error(e))?;
    }
    for output in &mut outputs {
        output.rename_into_place().map_err(|e| output.error(e))?;
    }
    if let Some(committed) = lock_committed().as_mut() {
        committed.extend(outputs.iter().map(|output| Committed {
            path: output.shown.clone(),
            size: output.size,
        }));
    }
    Ok(())
}

/// A file a run committed: the path as the user gave it, and the picture's size if it is one.
/// Displayed as `lab01-mandelbrot.ppm (4096x4096)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Committed {
    pub path: PathBuf,
    pub size: Option<(u32, u32)>,
}

impl fmt::Display for Committed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        match self.size {
            Some((width, height)) => write!(f, " ({width}x{height})"),
            None => Ok(()),
        }
    }
}

/// The files committed since [`note_commits`]; `None` while nobody asked (xtask writes
/// hundreds of files and reports none).
static COMMITTED: Mutex<Option<Vec<Committed>>> = Mutex::new(None);

fn lock_committed() -> std::sync::MutexGuard<'static, Option<Vec<Committed>>> {
    // The list stays valid even if a thread panicked while holding it.
    COMMITTED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Note every file committed from now on, for [`take_committed`]. `Timer::start` calls it, so
/// each lab's report says where its files went.
pub fn note_commits() {
    *lock_committed() = Some(Vec::new());
}

/// The files committed since [`note_commits`], in commit order; the list starts empty again.
pub fn take_committed() -> Vec<Committed> {
    lock_committed()
        .as_mut()
        .map(std::mem::take)
        .unwrap_or_default()
}

/// Write `bytes` to `path` atomically: create, write, commit.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut output = Output::create(path)?;
    output.write_all(bytes)?;
    output.commit()
}

/// Refuse two outputs of one run that name the same file (through a symlink, `./`, or a
/// hard link alike). `outputs` pairs each path with the flag that gave it, for the message.
/// Special files (`/dev/null` twice) may repeat.
pub fn check_distinct(outputs: &[(&str, &Path)]) -> Result<()> {
    let keys: Vec<Option<FileKey>> = outputs.iter().map(|(_, path)| file_key(path)).collect();
    for (a, key_a) in keys.iter().enumerate() {
        for (b, key_b) in keys.iter().enumerate().skip(a + 1) {
            if key_a.is_some() && key_a == key_b {
                let ((flag_a, path), (flag_b, _)) = (outputs[a], outputs[b]);
                return Err(Error::Usage(format!(
                    "{flag_a} and {flag_b} both name {}: give each output its own file",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// What identifies a file: its device and inode when it exists (on Windows, its canonical
/// path), else its folder's and its own name.
#[derive(PartialEq)]
enum FileKey {
    #[cfg(unix)]
    Existing(u64, u64),
    #[cfg(not(unix))]
    Existing(PathBuf),
    New(PathBuf),
}

fn file_key(path: &Path) -> Option<FileKey> {
    match fs::metadata(path) {
        #[cfg(unix)]
        Ok(meta) if meta.is_file() => Some(FileKey::Existing(meta.dev(), meta.ino())),
        #[cfg(not(unix))]
        Ok(meta) if meta.is_file() => fs::canonicalize(path).ok().map(FileKey::Existing),
        Ok(_) => None,
        Err(_) => {
            let target = final_name(path).ok()??;
            let dir = fs::canonicalize(folder_of(&target)).ok()?;
            Some(FileKey::New(dir.join(target.file_name()?)))
        }
    }
}

/// Write in place: a device, a FIFO (the open waits for a reader, as `cat > fifo` does), or a
/// regular file the shell already opened for us.
fn in_place(path: &Path, truncate: bool) -> Result<Output> {
    let file = OpenOptions::new()
        .write(true)
        .truncate(truncate)
        .open(path)
        .map_err(|e| Error::output(path, e))?;
    Ok(Output {
        shown: path.to_path_buf(),
        file,
        how: How::InPlace,
        size: None,
    })
}

/// Follow symlinks to the name that will be replaced (it need not exist: a dangling link
/// creates its target). `None` when the path leads through /proc, whose links name open
/// files rather than paths.
fn final_name(path: &Path) -> io::Result<Option<PathBuf>> {
    let mut current = path.to_path_buf();
    // The kernel's own limit on links followed in one lookup.
    for _ in 0..40 {
        if current.starts_with("/proc") {
            return Ok(None);
        }
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = folder_of(&current).join(link);
            }
            Ok(_) => return Ok(Some(current)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Some(current)),
            Err(e) => return Err(e),
        }
    }
    Err(links_loop())
}

/// The error of a path that is a loop of symbolic links (`io::ErrorKind` has no stable kind
/// for it).
fn links_loop() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::ELOOP);
    #[cfg(not(unix))]
    return io::Error::other("the path is a loop of symbolic links");
}

/// The folder a path lies in ("." for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// An unnamed file in `dir`, mode 0666 less the umask. `None` where unnamed files cannot be
/// made or later linked (not Linux, a file system without `O_TMPFILE`, no /proc).
fn open_unnamed(dir: &Path) -> Option<io::Result<File>> {
    #[cfg(target_os = "linux")]
    {
        if !Path::new("/proc/self/fd").is_dir() {
            return None;
        }
        let opened = OpenOptions::new()
            .write(true)
            .mode(0o666)
            .custom_flags(libc::O_TMPFILE)
            .open(dir);
        match opened {
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
                ) =>
            {
                None
            }
            other => Some(other),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        None
    }
}

/// Give an unnamed file the name `to` (fails with `AlreadyExists` if `to` exists).
#[cfg(target_os = "linux")]
fn link_unnamed(file: &File, to: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
    let to = CString::new(to.as_os_str().as_bytes())?;
    // SAFETY: both are NUL-terminated paths that live across the call. AT_SYMLINK_FOLLOW
    // links the file the /proc entry stands for, not the entry itself.
    let status = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if status == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn link_unnamed(_file: &File, _to: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// A new named file in `dir`, mode 0666 less the umask.
fn open_named(dir: &Path) -> io::Result<(File, PathBuf)> {
    loop {
        let temp = dir.join(temp_name());
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        options.mode(0o666);
        match options.open(&temp) {
            Ok(file) => return Ok((file, temp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A short hidden name, unique within this process: short, so that it fits beside a target
/// whose own name has the full 255 bytes.
fn temp_name() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!(".out-{}-{n}.tmp", std::process::id())
}

/// With SIGXFSZ ignored, a write past `ulimit -f` fails with EFBIG, which becomes an error
/// line; by default the signal kills the process without a word. (Windows has no such
/// limit.)
fn ignore_file_size_signal() {
    #[cfg(unix)]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: setting a signal's disposition to "ignore" installs no handler.
            unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
        });
    }
}

/// Ctrl-C, SIGTERM and SIGHUP held back until dropped: a signal that arrives meanwhile is
/// noted, and raised again once the previous handling is back. (A signal mask would not do:
/// it holds a signal back from one thread, and the kernel hands it to any other, such as one
/// of rayon's.) Windows has no such signals: nothing is held there.
struct SignalsHeld {
    #[cfg(unix)]
    old: Vec<(libc::c_int, libc::sigaction)>,
}

/// The signal that arrived while held, or 0.
#[cfg(unix)]
static HELD_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

#[cfg(unix)]
extern "C" fn note_signal(signal: libc::c_int) {
    HELD_SIGNAL.store(signal, Ordering::SeqCst);
}

#[cfg(not(unix))]
impl SignalsHeld {
    fn new() -> SignalsHeld {
        SignalsHeld {}
    }
}

#[cfg(unix)]
impl SignalsHeld {
    fn new() -> SignalsHeld {
        let mut old = Vec::new();
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: `action` is initialised field by field before use; the handler only
            // stores to an atomic, which is async-signal-safe.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = note_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                let mut previous: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut previous) == 0 {
                    old.push((signal, previous));
                }
            }
        }
        SignalsHeld { old }
    }
}

#[cfg(unix)]
impl Drop for SignalsHeld {
    fn drop(&mut self) {
        for (signal, previous) in &self.old {
            // SAFETY: restores the handling saved in `new`.
            unsafe { libc::sigaction(*signal, previous, std::ptr::null_mut()) };
        }
        let signal = HELD_SIGNAL.swap(0, Ordering::SeqCst);
        if signal != 0 {
            // SAFETY: raising a signal is always sound; its usual handling now applies.
            unsafe { libc::raise(signal) };
        }
    }
}

/// The Mandelbrot labs' image: a binary PPM, or, when the path ends in `.png`, a PNG of the
/// same pixels (for looking at; the PPM is what `verify` compares).
pub struct ImageFile {
    output: Output,
    width: u32,
    height: u32,
    /// The pixels of a PNG, collected until the commit encodes them (PNG is compressed as a
    /// whole); `None` for a PPM, whose rows go straight to the file.
    png: Option<Vec<u8>>,
}

impl ImageFile {
    /// Check the path and open the file. Call this before the work starts.
    pub fn create(path: &Path, width: u32, height: u32) -> Result<ImageFile> {
        let mut output = Output::create(path)?;
        output.set_size(width, height);
        let is_png = path
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("png"));
        let png = if is_png {
            let bytes = width as usize * height as usize * 3;
            Some(crate::error::try_with_capacity(bytes, "the PNG's pixels")?)
        } else {
            output.write_all(crate::ppm::header(width, height).as_bytes())?;
            None
        };
        Ok(ImageFile {
            output,
            width,
            height,
            png,
        })
    }

    /// Append pixel rows, in file order (the bottom row of the image first).
    pub fn write_rows(&mut self, rows: &[u8]) -> Result<()> {
        match &mut self.png {
            Some(pixels) => {
                pixels.extend_from_slice(rows);
                Ok(())
            }
            None => self.output.write_all(rows),
        }
    }

    /// Encode a PNG if that is what was asked for, and move the file into place.
    pub fn commit(mut self) -> Result<()> {
        if let Some(pixels) = self.png.take() {
            use image::codecs::png::PngEncoder;
            use image::{ExtendedColorType, ImageEncoder};
            let path = self.output.path().to_path_buf();
            let mut writer = BufWriter::new(&mut self.output);
            PngEncoder::new(&mut writer)
                .write_image(&pixels, self.width, self.height, ExtendedColorType::Rgb8)
                .map_err(|e| match e {
                    image::ImageError::IoError(e) => e,
                    other => io::Error::other(other),
                })
                .and_then(|()| writer.flush())
                .map_err(|e| Error::output(&path, e))?;
        }
        self.output.commit()
    }

    /// Write every pixel (rows in file order) and commit.
    pub fn write_all_and_commit(mut self, pixels: &[u8]) -> Result<()> {
        self.write_rows(pixels)?;
        self.commit()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_new_file_appears_only_at_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        let mut output = Output::create(&path).unwrap();
        output.write_all(b"hello").unwrap();
        // Elsewhere than Linux (no O_TMPFILE) the bytes have a hidden temporary name.
        let before = names(dir.path());
        assert!(
            before
                .iter()
                .all(|name| !cfg!(target_os = "linux") && name.starts_with(".out-")),
            "nothing visible before the commit: {before:?}"
        );
        output.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"hello");
        assert_eq!(names(dir.path()), ["out.txt"]);
    }

    #[test]
    fn an_uncommitted_file_leaves_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        fs::write(&path, b"good").unwrap();
        let mut output = Output::create(&path).unwrap();
        output.write_all(b"partial").unwrap();
        drop(output);
        assert_eq!(fs::read(&path).unwrap(), b"good");
        assert_eq!(names(dir.path()), ["out.txt"]);
    }

    #[test]
    #[cfg(unix)]
    fn a_replaced_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        fs::write(&path, b"old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write_file(&path, b"new").unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
    }

    #[test]
    #[cfg(unix)]
    fn a_symlink_is_followed_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        let link = dir.path().join("link.txt");
        fs::write(&real, b"old").unwrap();
        std::os::unix::fs::symlink("real.txt", &link).unwrap();
        write_file(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
    }

    #[test]
    #[cfg(unix)]
    fn dev_null_is_written_in_place() {
        write_file(Path::new("/dev/null"), b"discarded").unwrap();
        assert!(!fs::metadata("/dev/null").unwrap().is_file());
    }

    #[test]
    // Linux only: elsewhere the second file has a name in its folder, which then cannot be
    // removed.
    #[cfg(target_os = "linux")]
    fn a_group_commits_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("first.txt");
        fs::write(&first, b"old").unwrap();
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        let mut a = Output::create(&first).unwrap();
        let mut b = Output::create(&sub.join("second.txt")).unwrap();
        a.write_all(b"new").unwrap();
        b.write_all(b"new").unwrap();
        // The second folder disappears before the commit: staging the second file fails.
        fs::remove_dir(&sub).unwrap();
        assert!(commit_all(vec![a, b]).is_err());
        assert_eq!(fs::read(&first).unwrap(), b"old");
        assert_eq!(names(dir.path()), ["first.txt"]);
    }

    #[test]
    fn bad_paths_fail_at_create_with_advice() {
        let dir = tempfile::tempdir().unwrap();
        let missing = Output::create(&dir.path().join("no/x.ppm")).err().unwrap();
        assert!(
            missing.to_string().contains("folder does not exist"),
            "{missing}"
        );
        let folder = Output::create(dir.path()).err().unwrap();
        assert!(folder.to_string().contains("it is a folder"), "{folder}");
        let slash = Output::create(Path::new("nowhere/")).err().unwrap();
        assert!(slash.to_string().contains("it is a folder"), "{slash}");
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn a_name_of_255_bytes_works() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n".repeat(255));
        write_file(&path, b"x").unwrap();
        fs::write(&path, b"old").unwrap();
        write_file(&path, b"y").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"y");
    }

    #[test]
    fn the_same_file_twice_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("same.png");
        let b = dir.path().join(".").join("same.png");
        let err = check_distinct(&[("-o", &a), ("--raw", &b)]).unwrap_err();
        assert!(err.to_string().contains("-o and --raw both name"), "{err}");
        let other = dir.path().join("other.raw");
        check_distinct(&[("-o", &a), ("--raw", &other)]).unwrap();
        let null = Path::new("/dev/null");
        check_distinct(&[("-o", null), ("--raw", null)]).unwrap();
    }

    #[test]
    fn noted_commits_are_listed_once_with_their_size() {
        let dir = tempfile::tempdir().unwrap();
        let (image, text) = (dir.path().join("a.ppm"), dir.path().join("b.txt"));
        note_commits();
        ImageFile::create(&image, 2, 1)
            .unwrap()
            .write_all_and_commit(&[0; 6])
            .unwrap();
        write_file(&text, b"x").unwrap();
        // Uncommitted: not listed.
        drop(Output::create(&dir.path().join("c.txt")).unwrap());
        // Other tests commit files at the same time: look for this test's own.
        let ours: Vec<Committed> = take_committed()
            .into_iter()
            .filter(|c| c.path.starts_with(dir.path()))
            .collect();
        assert_eq!(
            ours,
            [
                Committed {
                    path: image.clone(),
                    size: Some((2, 1))
                },
                Committed {
                    path: text.clone(),
                    size: None
                }
            ]
        );
        assert_eq!(ours[0].to_string(), format!("{} (2x1)", image.display()));
        assert_eq!(ours[1].to_string(), text.display().to_string());
        assert!(take_committed()
            .iter()
            .all(|c| !c.path.starts_with(dir.path())));
    }

    #[test]
    fn png_and_ppm_hold_the_same_pixels() {
        let dir = tempfile::tempdir().unwrap();
        let pixels: Vec<u8> = (0..2 * 3 * 3).map(|v| v as u8 * 10).collect();
        let ppm = dir.path().join("a.ppm");
        let png = dir.path().join("a.PNG");
        ImageFile::create(&ppm, 3, 2)
            .unwrap()
            .write_all_and_commit(&pixels)
            .unwrap();
        let mut image = ImageFile::create(&png, 3, 2).unwrap();
        image.write_rows(&pixels[..9]).unwrap();
        image.write_rows(&pixels[9..]).unwrap();
        image.commit().unwrap();
        let ppm_bytes = fs::read(&ppm).unwrap();
        assert_eq!(&ppm_bytes[..11], b"P6\n3 2\n255\n");
        assert_eq!(&ppm_bytes[11..], &pixels[..]);
        let decoded = image::open(&png).unwrap().into_rgb8();
        assert_eq!(decoded.dimensions(), (3, 2));
        assert_eq!(decoded.into_raw(), pixels);
    }
}
