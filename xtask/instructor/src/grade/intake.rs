//! What is taken from a submission: the files a student may write (those that hold solution
//! regions), and nothing else. Every other file of the grade's workspace is the hand-out's
//! own, so Cargo.toml, Cargo.lock, lab01, shared, xtask, the tests, build scripts, `.cargo/`
//! and toolchain files are the instructor's whatever the submission holds. Each difference is
//! reported, never silently dropped.
//!
//! The submission is read as hostile: a symbolic link, a special file, a path through a link
//! or a file over the size limit is refused, file by file; a refused file is replaced by the
//! hand-out's stub, which costs only the checks that need it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use crate::files::File;

/// A student's source file is text of a sensible size.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// Entries of a submission looked at, at most: a larger tree is reported, not walked.
const MAX_ENTRIES: usize = 20_000;

/// Differences listed one by one; past this, a count.
const MAX_NOTES: usize = 40;

/// What a grade builds, and what the report says about the submission.
pub struct Taken {
    /// Every hand-out file; the student's own text where they may write one.
    pub files: Vec<File>,
    /// The writable files whose text differs from the hand-out's.
    pub changed: BTreeSet<PathBuf>,
    /// One line per difference or refusal.
    pub notes: Vec<String>,
}

/// Take from `submission` the writable files of `handout`.
pub fn take(submission: &Path, handout: Vec<File>) -> anyhow::Result<Taken> {
    let meta = fs::symlink_metadata(submission)
        .map_err(|e| anyhow::anyhow!("cannot read the submission {}: {e}", submission.display()))?;
    if !meta.is_dir() {
        anyhow::bail!(
            "the submission {} is not a folder (give the student's workspace folder)",
            submission.display()
        );
    }
    let mut notes = Vec::new();
    let mut changed = BTreeSet::new();
    let mut files = Vec::with_capacity(handout.len());
    let known: BTreeMap<PathBuf, bool> = handout
        .iter()
        .map(|f| (f.path.clone(), f.writable))
        .collect();
    for mut file in handout {
        let found = read_regular(submission, &file.path);
        if file.writable {
            match found {
                Ok(Some(bytes)) if String::from_utf8(bytes.clone()).is_ok() => {
                    if bytes != file.bytes {
                        changed.insert(file.path.clone());
                        file.bytes = bytes;
                    }
                }
                Ok(Some(_)) => notes.push(format!(
                    "{} is not UTF-8 text: refused, the hand-out's stub was used",
                    file.path.display()
                )),
                Ok(None) => notes.push(format!(
                    "{} is missing: the hand-out's stub was used",
                    file.path.display()
                )),
                Err(why) => notes.push(format!(
                    "{}: {why}: refused, the hand-out's stub was used",
                    file.path.display()
                )),
            }
        } else {
            match found {
                Ok(Some(bytes)) if bytes == file.bytes => {}
                Ok(Some(_)) => notes.push(format!(
                    "{} differs from the hand-out: the hand-out's copy was used",
                    file.path.display()
                )),
                Ok(None) => notes.push(format!(
                    "{} is missing: the hand-out's copy was used",
                    file.path.display()
                )),
                Err(why) => notes.push(format!(
                    "{}: {why}: the hand-out's copy was used",
                    file.path.display()
                )),
            }
        }
        files.push(file);
    }
    notes.extend(extras(submission, &known));
    if notes.len() > MAX_NOTES {
        let more = notes.len() - MAX_NOTES;
        notes.truncate(MAX_NOTES);
        notes.push(format!("... and {more} more differences"));
    }
    Ok(Taken {
        files,
        changed,
        notes,
    })
}

/// The bytes of the regular file `relative` below `root`, `None` if there is none there, or
/// why it is refused. No component of the path may be a link, the file must be regular.
fn read_regular(root: &Path, relative: &Path) -> Result<Option<Vec<u8>>, String> {
    let mut at = root.to_path_buf();
    let parts: Vec<Component> = relative.components().collect();
    for (index, part) in parts.iter().enumerate() {
        let Component::Normal(name) = part else {
            return Err("not a plain relative path".to_string());
        };
        at.push(name);
        let meta = match fs::symlink_metadata(&at) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot be read ({e})")),
        };
        let last = index + 1 == parts.len();
        let kind = meta.file_type();
        let shown = at.strip_prefix(root).unwrap_or(&at).display().to_string();
        if kind.is_symlink() {
            return Err(format!("{shown} is a symbolic link"));
        }
        if !last && !kind.is_dir() {
            return Err(format!("{shown} is not a folder"));
        }
        if last && !kind.is_file() {
            return Err("not a regular file".to_string());
        }
    }
    // O_NOFOLLOW: a link swapped in since the look is refused, not followed.
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&at)
        .map_err(|e| format!("cannot be read ({e})"))?;
    if !file.metadata().map_err(|e| e.to_string())?.is_file() {
        return Err("not a regular file".to_string());
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read ({e})"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err("larger than 1 MiB".to_string());
    }
    Ok(Some(bytes))
}

/// What the submission holds beyond the hand-out's files: each extra file, link or special
/// file, one line each (build folders and git's own are passed over).
fn extras(root: &Path, known: &BTreeMap<PathBuf, bool>) -> Vec<String> {
    let mut notes = Vec::new();
    let mut stack = vec![PathBuf::new()];
    let mut seen = 0;
    while let Some(relative) = stack.pop() {
        let Ok(entries) = fs::read_dir(root.join(&relative)) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                notes.push(format!(
                    "the submission has more than {MAX_ENTRIES} entries: the rest was not looked at"
                ));
                return notes;
            }
            let path = relative.join(entry.file_name());
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let shown = path.display();
            if kind.is_dir() {
                let name = entry.file_name();
                if relative.as_os_str().is_empty() && (name == "target" || name == ".git") {
                    continue;
                }
                if !known.keys().any(|k| k.starts_with(&path)) {
                    notes.push(format!("{shown}/ is not in the hand-out: not taken"));
                } else {
                    stack.push(path);
                }
            } else if kind.is_symlink() {
                notes.push(format!("{shown} is a symbolic link: refused"));
            } else if kind.is_fifo()
                || kind.is_socket()
                || kind.is_block_device()
                || kind.is_char_device()
            {
                notes.push(format!("{shown} is a special file: refused"));
            } else if !known.contains_key(&path) {
                notes.push(format!(
                    "{shown} is not in the hand-out: not taken (only files with solution regions are)"
                ));
            }
        }
    }
    notes.sort();
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handout() -> Vec<File> {
        let file = |path: &str, text: &str, writable| File {
            path: PathBuf::from(path),
            bytes: text.as_bytes().to_vec(),
            mode: 0o644,
            writable,
        };
        vec![
            file("Cargo.toml", "[workspace]\n", false),
            file("lab01/src/main.rs", "given\n", false),
            file("lab02/src/main.rs", "stub\n", true),
            file("lab06/src/cpu.rs", "stub\n", true),
        ]
    }

    fn write(root: &Path, path: &str, text: &str) {
        let at = root.join(path);
        fs::create_dir_all(at.parent().expect("a parent")).expect("created");
        fs::write(at, text).expect("written");
    }

    fn text_of<'a>(taken: &'a Taken, path: &str) -> &'a str {
        let file = taken
            .files
            .iter()
            .find(|f| f.path == Path::new(path))
            .expect("a file");
        std::str::from_utf8(&file.bytes).expect("text")
    }

    #[test]
    fn only_writable_files_are_taken_and_every_difference_is_said() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let root = dir.path();
        write(root, "Cargo.toml", "[workspace]\n[patch.crates-io]\n");
        write(root, "lab01/src/main.rs", "black images\n");
        write(root, "lab02/src/main.rs", "work\n");
        write(root, "lab02/build.rs", "fn main() { loop {} }\n");
        write(root, ".cargo/config.toml", "[build]\n");
        write(root, "target/release/lab02", "ignored\n");
        let taken = take(root, handout()).expect("taken");
        assert_eq!(text_of(&taken, "lab02/src/main.rs"), "work\n");
        assert_eq!(text_of(&taken, "lab01/src/main.rs"), "given\n");
        assert_eq!(text_of(&taken, "Cargo.toml"), "[workspace]\n");
        assert_eq!(
            taken.changed.iter().collect::<Vec<_>>(),
            [Path::new("lab02/src/main.rs")]
        );
        let notes = taken.notes.join("\n");
        for said in [
            "Cargo.toml differs from the hand-out: the hand-out's copy was used",
            "lab01/src/main.rs differs from the hand-out: the hand-out's copy was used",
            "lab02/build.rs is not in the hand-out: not taken",
            ".cargo/ is not in the hand-out: not taken",
            "lab06/src/cpu.rs is missing: the hand-out's stub was used",
        ] {
            assert!(notes.contains(said), "{said}\n{notes}");
        }
        assert!(!notes.contains("target"), "{notes}");
    }

    #[test]
    fn links_and_special_files_are_refused_file_by_file() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let root = dir.path();
        let secret = tempfile::tempdir().expect("a temp folder");
        write(secret.path(), "src/main.rs", "the instructor's solution\n");
        write(secret.path(), "cpu.rs", "the instructor's solution\n");
        write(root, "Cargo.toml", "[workspace]\n");
        std::os::unix::fs::symlink(secret.path(), root.join("lab02")).expect("a link");
        write(root, "lab06/src/.keep", "");
        std::os::unix::fs::symlink(secret.path().join("cpu.rs"), root.join("lab06/src/cpu.rs"))
            .expect("a link");
        std::os::unix::fs::symlink("/etc", root.join("lab01")).expect("a link");
        let taken = take(root, handout()).expect("taken");
        assert_eq!(text_of(&taken, "lab02/src/main.rs"), "stub\n");
        assert_eq!(text_of(&taken, "lab06/src/cpu.rs"), "stub\n");
        assert!(taken.changed.is_empty());
        let notes = taken.notes.join("\n");
        assert!(
            notes.contains("lab02/src/main.rs: lab02 is a symbolic link: refused"),
            "{notes}"
        );
        assert!(
            notes.contains("lab06/src/cpu.rs: lab06/src/cpu.rs is a symbolic link: refused"),
            "{notes}"
        );
        assert!(
            notes.contains("lab01 is a symbolic link: refused"),
            "{notes}"
        );
    }

    #[test]
    fn a_huge_or_binary_file_is_refused() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let root = dir.path();
        write(
            root,
            "lab02/src/main.rs",
            &"x".repeat(MAX_FILE_BYTES as usize + 1),
        );
        fs::create_dir_all(root.join("lab06/src")).expect("created");
        fs::write(root.join("lab06/src/cpu.rs"), [0xff, 0xfe]).expect("written");
        let taken = take(root, handout()).expect("taken");
        let notes = taken.notes.join("\n");
        assert!(
            notes.contains("lab02/src/main.rs: larger than 1 MiB: refused"),
            "{notes}"
        );
        assert!(
            notes.contains("lab06/src/cpu.rs is not UTF-8 text: refused"),
            "{notes}"
        );
        assert!(taken.changed.is_empty());
    }

    #[test]
    fn a_submission_that_is_not_a_folder_is_an_error() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let file = dir.path().join("sub.zip");
        fs::write(&file, "zip").expect("written");
        let error = take(&file, handout())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("is not a folder"), "{error}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).expect("a link");
        assert!(
            take(&link, handout()).is_err(),
            "a link as the submission is refused"
        );
    }
}
