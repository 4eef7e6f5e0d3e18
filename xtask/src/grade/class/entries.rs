//! What a class folder holds: one entry per submission (a folder, a zip or a tarball), the
//! students each belongs to, and a digest of its content.
//!
//! Layouts:
//! - Gradescope's "Export Submissions": `submission_metadata.yml` beside one
//!   `submission_ID/` folder per submission, the metadata naming its students (a group
//!   submission is one folder, one row per student). The download's own top folder
//!   (`assignment_ID_export/`) may be given, or the folder it was unpacked in.
//! - GitHub Classroom's `gh classroom clone student-repos`: `ASSIGNMENT-submissions/`
//!   holding `ASSIGNMENT-USERNAME/` per student.
//! - Anything else: each entry is one student, named after the entry.
//!
//! The names are the students' and the entries' own, so hostile: each entry gets a folder
//! name of safe characters for its results, and links, special files and stray files are
//! reported, not followed.

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::unpack::{self, Kind};
use crate::grade::inert;
use crate::grade::{classroom, gradescope};

/// Entries of a class folder looked at, at most.
const MAX_ENTRIES: usize = 10_000;

/// Files and bytes a folder's digest reads; past them the digest notes the cut and stops
/// (the grader's intake reads far less of a submission anyway).
const DIGEST_MAX_FILES: usize = 50_000;
const DIGEST_MAX_BYTES: u64 = 1 << 30;

/// The longest folder name made from an entry's name.
const MAX_KEY: usize = 80;

/// One submission of the class.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    /// The entry's name in the class folder, for messages.
    pub name: String,
    pub path: PathBuf,
    pub form: Form,
    /// The folder of its results under OUT/students: safe characters, unique in the class.
    pub key: String,
    /// Who it belongs to: one row of the gradebook each.
    pub students: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Form {
    Folder,
    Archive(Kind),
    /// Not graded, and why (a link, a special file).
    Refused(String),
}

/// A class folder's entries, its layout and what was passed over.
#[derive(Debug)]
pub struct Class {
    pub layout: &'static str,
    pub entries: Vec<Entry>,
    pub notes: Vec<String>,
}

/// How the class folder is laid out: named by the instructor (`--layout`), or read from the
/// class folder itself, never from inside an entry (a student's folder may hold anything).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// Gradescope's when the class folder holds `submission_metadata.yml`, GitHub
    /// Classroom's when its name ends in `-submissions`, else one entry per student.
    #[default]
    Auto,
    /// Gradescope's "Export Submissions": the class folder holds `submission_metadata.yml`.
    Gradescope,
    /// `gh classroom clone student-repos`: entries named `ASSIGNMENT-USERNAME`.
    Classroom,
    /// One entry per student, named after the entry.
    Plain,
}

/// Read the class folder `dir` (already made absolute), laid out as `layout` says.
pub fn discover(dir: &Path, layout: Layout) -> Result<Class> {
    let meta = fs::symlink_metadata(dir)
        .with_context(|| format!("cannot read the class folder {}", dir.display()))?;
    if !meta.is_dir() {
        bail!(
            "{} is not a folder; give the folder that holds one entry per submission",
            dir.display()
        );
    }
    let dir = dir.to_path_buf();
    let class_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let has_metadata = fs::symlink_metadata(dir.join(gradescope::METADATA)).is_ok();
    let layout = match layout {
        Layout::Auto if has_metadata => Layout::Gradescope,
        Layout::Auto if class_name.ends_with(classroom::CLONE_SUFFIX) => Layout::Classroom,
        Layout::Auto => Layout::Plain,
        Layout::Gradescope if !has_metadata => bail!(
            "{} holds no {}; give the folder Gradescope's export unpacks to \
             (assignment_ID_export)",
            dir.display(),
            gradescope::METADATA
        ),
        named => named,
    };
    let mut notes = Vec::new();
    // The metadata is Gradescope's file, but what it says is what students typed: a file
    // that cannot be read names each submission after its folder, and grading goes on.
    let metadata = match layout {
        Layout::Gradescope => match gradescope::export_students(&dir) {
            Ok(map) => Some(map.unwrap_or_default()),
            Err(e) => {
                notes.push(format!(
                    "warning: {} cannot be read ({}): each submission is named after its folder",
                    gradescope::METADATA,
                    inert::line(&format!("{e:#}"))
                ));
                Some(Default::default())
            }
        },
        _ => None,
    };
    let layout_name = match layout {
        Layout::Gradescope => "Gradescope's export",
        Layout::Classroom => "GitHub Classroom's clone",
        Layout::Auto | Layout::Plain => "one entry per student",
    };

    let mut names = Vec::new();
    for entry in fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        names.push(entry.file_name());
        if names.len() > MAX_ENTRIES {
            bail!(
                "{} has more than {MAX_ENTRIES} entries; is it the class folder?",
                dir.display()
            );
        }
    }
    names.sort();

    let mut entries = Vec::new();
    let mut keys = BTreeSet::new();
    for raw in names {
        let name = inert::line(&raw.to_string_lossy());
        let skipped = layout == Layout::Gradescope && name == gradescope::METADATA;
        if name.starts_with('.') || name == "__MACOSX" || skipped {
            continue;
        }
        let path = dir.join(&raw);
        let kind = fs::symlink_metadata(&path)
            .map(|m| m.file_type())
            .with_context(|| format!("cannot read {}", path.display()))?;
        let (form, stem) = if kind.is_dir() {
            (Form::Folder, name.as_str())
        } else if kind.is_symlink() {
            (
                Form::Refused("is a symbolic link".to_string()),
                name.as_str(),
            )
        } else if kind.is_file() {
            match Kind::of(&name) {
                Some((archive, stem)) => (Form::Archive(archive), stem),
                None => {
                    notes.push(format!(
                        "{name}: neither a folder nor a .zip or tarball: passed over"
                    ));
                    continue;
                }
            }
        } else {
            (
                Form::Refused("is a special file".to_string()),
                name.as_str(),
            )
        };
        let key = unique_key(stem, &mut keys);
        let students = match &metadata {
            Some(map) => match map.get(&name) {
                Some(ids) if !ids.is_empty() => ids.clone(),
                _ => {
                    notes.push(format!(
                        "{name}: not in {} (or no student named): graded as {key}",
                        gradescope::METADATA
                    ));
                    vec![key.clone()]
                }
            },
            None if layout == Layout::Classroom => {
                vec![classroom::clone_student(&class_name, stem)
                    .unwrap_or(stem)
                    .to_string()]
            }
            None => vec![stem.to_string()],
        };
        entries.push(Entry {
            name,
            path,
            form,
            key,
            students,
        });
    }
    if entries.is_empty() {
        bail!(
            "{} holds no submission (a folder, a .zip or a tarball per student)",
            dir.display()
        );
    }
    // An entry is a student's: what it holds never changes how the class is read. One that
    // looks like Gradescope's whole export was perhaps meant as the class folder: say so.
    if let [only] = entries.as_slice() {
        if only.form == Form::Folder
            && fs::symlink_metadata(only.path.join(gradescope::METADATA)).is_ok()
        {
            notes.push(format!(
                "{} holds {}: graded as one submission; if it is Gradescope's export, give it \
                 as the class folder (--class {})",
                only.name,
                gradescope::METADATA,
                inert::line(&only.path.to_string_lossy())
            ));
        }
    }
    Ok(Class {
        layout: layout_name,
        entries,
        notes,
    })
}

/// A folder name for `stem`: safe characters only, short, unique in the class.
fn unique_key(stem: &str, taken: &mut BTreeSet<String>) -> String {
    let mut key: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(MAX_KEY)
        .collect();
    if key.is_empty() || key.starts_with('.') {
        key.insert(0, '_');
    }
    let mut candidate = key.clone();
    let mut n = 2;
    while !taken.insert(candidate.clone()) {
        candidate = format!("{key}-{n}");
        n += 1;
    }
    candidate
}

/// The workspace inside a submission's folder: the folder itself when it has a Cargo.toml,
/// else its only sub-folder, two levels down at most (a zip of the workspace's folder).
pub fn workspace_in(dir: &Path) -> PathBuf {
    let mut at = dir.to_path_buf();
    for _ in 0..2 {
        if fs::symlink_metadata(at.join("Cargo.toml")).is_ok() {
            break;
        }
        let Ok(entries) = fs::read_dir(&at) else {
            break;
        };
        let mut folders = entries.flatten().filter(|e| {
            let name = e.file_name();
            name != "__MACOSX" && !name.to_string_lossy().starts_with('.')
        });
        match (folders.next(), folders.next()) {
            (Some(only), None) if only.file_type().is_ok_and(|t| t.is_dir()) => {
                at = only.path();
            }
            _ => break,
        }
    }
    at
}

/// The digest of an entry's content: the bytes of an archive; for a folder, every path,
/// kind and content below it but for the top's `.git/` and `target/`, which the grader
/// never reads.
pub fn digest(entry: &Entry) -> String {
    let mut hash = Sha256::new();
    match &entry.form {
        Form::Folder => digest_folder(&entry.path, &mut hash),
        Form::Archive(_) => {
            hash.update(b"archive\0");
            hash_file(&entry.path, DIGEST_MAX_BYTES, &mut hash);
        }
        Form::Refused(why) => {
            hash.update(b"refused\0");
            hash.update(why.as_bytes());
        }
    }
    hex(&hash.finalize())
}

fn digest_folder(root: &Path, hash: &mut Sha256) {
    hash.update(b"folder\0");
    let mut stack = vec![PathBuf::new()];
    let (mut files, mut budget) = (0usize, DIGEST_MAX_BYTES);
    while let Some(relative) = stack.pop() {
        let Ok(read) = fs::read_dir(root.join(&relative)) else {
            hash.update(b"unreadable\0");
            continue;
        };
        let mut names: Vec<_> = read.flatten().map(|e| e.file_name()).collect();
        names.sort();
        // Folders are pushed in reverse so they come off the stack in name order.
        let mut folders = Vec::new();
        for name in names {
            if relative.as_os_str().is_empty() && (name == ".git" || name == "target") {
                continue;
            }
            files += 1;
            if files > DIGEST_MAX_FILES {
                hash.update(b"too many files\0");
                return;
            }
            let path = relative.join(&name);
            hash.update(path.as_os_str().as_encoded_bytes());
            hash.update([0]);
            let Ok(meta) = fs::symlink_metadata(root.join(&path)) else {
                hash.update(b"gone\0");
                continue;
            };
            let kind = meta.file_type();
            if kind.is_dir() {
                hash.update(b"d\0");
                folders.push(path);
            } else if kind.is_symlink() {
                hash.update(b"l\0");
                if let Ok(target) = fs::read_link(root.join(&path)) {
                    hash.update(target.as_os_str().as_encoded_bytes());
                }
            } else if kind.is_file() {
                hash.update(b"f\0");
                hash.update(meta.len().to_le_bytes());
                budget = budget.saturating_sub(hash_file(&root.join(&path), budget, hash));
            } else {
                hash.update(b"s\0");
            }
            hash.update([0]);
        }
        stack.extend(folders.into_iter().rev());
    }
}

/// Hash at most `budget` bytes of the regular file `path` (a link or FIFO is not opened);
/// the bytes read.
fn hash_file(path: &Path, budget: u64, hash: &mut Sha256) -> u64 {
    let Ok(file) = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        hash.update(b"unreadable\0");
        return 0;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        hash.update(b"not a file\0");
        return 0;
    }
    let mut reader = file.take(budget);
    let mut buffer = vec![0u8; 1 << 16];
    let mut read = 0;
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                hash.update(&buffer[..n]);
                read += n as u64;
            }
            Err(_) => {
                hash.update(b"read error\0");
                break;
            }
        }
    }
    read
}

/// Lower-case hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Unpack an archive entry into `into`: the notes of what was passed over, or why not.
pub fn unpack_entry(entry: &Entry, into: &Path) -> Result<Vec<String>, String> {
    match &entry.form {
        Form::Archive(kind) => unpack::unpack(&entry.path, *kind, into),
        Form::Folder | Form::Refused(_) => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().expect("a parent")).expect("created");
        fs::write(path, text).expect("written");
    }

    #[test]
    fn a_classroom_clone_names_its_students_by_user() {
        let top = tempfile::tempdir().expect("a temp folder");
        let dir = top.path().join("mandelbrot-submissions");
        write(&dir.join("mandelbrot-ada/Cargo.toml"), "[workspace]\n");
        write(&dir.join("mandelbrot-grace/.git/HEAD"), "ref\n");
        write(&dir.join("notes.txt"), "x");
        fs::write(dir.join("mandelbrot-linus.zip"), "zip").expect("written");
        std::os::unix::fs::symlink("/etc", dir.join("mandelbrot-eve")).expect("a link");
        let class = discover(&dir, Layout::Auto).expect("a class");
        assert_eq!(class.layout, "GitHub Classroom's clone");
        let rows: Vec<(&str, &str, &Form)> = class
            .entries
            .iter()
            .map(|e| (e.students[0].as_str(), e.key.as_str(), &e.form))
            .collect();
        assert_eq!(
            rows,
            [
                ("ada", "mandelbrot-ada", &Form::Folder),
                (
                    "eve",
                    "mandelbrot-eve",
                    &Form::Refused("is a symbolic link".into())
                ),
                ("grace", "mandelbrot-grace", &Form::Folder),
                ("linus", "mandelbrot-linus", &Form::Archive(Kind::Zip)),
            ]
        );
        assert!(
            class.notes[0].starts_with("notes.txt: neither"),
            "{:?}",
            class.notes
        );
    }

    #[test]
    fn a_gradescope_export_names_its_students_from_the_metadata() {
        let top = tempfile::tempdir().expect("a temp folder");
        let export = top.path().join("assignment_77_export");
        write(
            &export.join(gradescope::METADATA),
            "submission_1:\n  :submitters:\n  - :name: Ada\n    :sid: '11'\n\
             submission_2:\n  :submitters:\n  - :name: B\n    :email: b@x.edu\n  - :name: C\n    :sid: '13'\n",
        );
        write(&export.join("submission_1/Cargo.toml"), "[workspace]\n");
        write(&export.join("submission_2/Cargo.toml"), "[workspace]\n");
        write(&export.join("submission_3/Cargo.toml"), "[workspace]\n");
        let class = discover(&export, Layout::Auto).expect("a class");
        assert_eq!(class.layout, "Gradescope's export");
        let students: Vec<Vec<String>> = class.entries.iter().map(|e| e.students.clone()).collect();
        assert_eq!(
            students,
            [
                vec!["11".to_string()],
                vec!["b@x.edu".to_string(), "13".to_string()],
                vec!["submission_3".to_string()]
            ]
        );
        assert!(
            class.notes[0].starts_with("submission_3: not in"),
            "{:?}",
            class.notes
        );
    }

    /// The attack: a class whose one entry holds a `submission_metadata.yml` beside
    /// `submission_N/` folders named its rows ("Alice Victim") and the real entry got none.
    /// An entry is one submission, whatever it holds.
    #[test]
    fn an_entry_holding_an_export_is_one_submission() {
        let top = tempfile::tempdir().expect("a temp folder");
        let class = top.path().join("class");
        let mallory = class.join("mallory");
        write(
            &mallory.join(gradescope::METADATA),
            "submission_1:\n  :submitters:\n  - :name: Alice Victim\n    :sid: 'Alice Victim'\n",
        );
        write(&mallory.join("submission_1/Cargo.toml"), "[workspace]\n");
        for layout in [Layout::Auto, Layout::Plain] {
            let found = discover(&class, layout).expect("a class");
            assert_eq!(found.layout, "one entry per student");
            let rows: Vec<(&str, &[String])> = found
                .entries
                .iter()
                .map(|e| (e.key.as_str(), e.students.as_slice()))
                .collect();
            assert_eq!(rows, [("mallory", &["mallory".to_string()][..])]);
            assert!(
                found.notes.iter().any(|n| n.starts_with(
                    "mallory holds submission_metadata.yml: graded as one submission"
                )),
                "{:?}",
                found.notes
            );
        }
        // Named Gradescope's by the instructor, the class folder must hold the metadata.
        let error = discover(&class, Layout::Gradescope).expect_err("no metadata");
        assert!(
            format!("{error}").contains("holds no submission_metadata.yml"),
            "{error}"
        );
    }

    /// A 200,000-deep metadata file failed the whole class (exit 1): now each submission is
    /// named after its folder and the class is graded.
    #[test]
    fn hostile_metadata_does_not_fail_the_class() {
        let top = tempfile::tempdir().expect("a temp folder");
        let export = top.path().join("assignment_1_export");
        write(&export.join(gradescope::METADATA), &"[".repeat(200_000));
        write(&export.join("submission_1/Cargo.toml"), "[workspace]\n");
        let class = discover(&export, Layout::Auto).expect("a class all the same");
        assert_eq!(class.layout, "Gradescope's export");
        assert_eq!(class.entries[0].students, ["submission_1"]);
        assert!(
            class.notes[0].starts_with("warning: submission_metadata.yml cannot be read"),
            "{:?}",
            class.notes
        );
    }

    #[test]
    fn hostile_names_get_safe_unique_keys() {
        let mut taken = BTreeSet::new();
        assert_eq!(unique_key("ada", &mut taken), "ada");
        assert_eq!(unique_key("ada", &mut taken), "ada-2");
        assert_eq!(unique_key("../../etc", &mut taken), "_.._.._etc");
        assert_eq!(unique_key("a\nb\u{202e}c", &mut taken), "a_b_c");
        assert_eq!(unique_key("..", &mut taken), "_..");
        assert_eq!(unique_key("", &mut taken), "_");
        assert_eq!(unique_key(&"x".repeat(500), &mut taken).len(), MAX_KEY);
    }

    #[test]
    fn the_workspace_is_found_inside_one_folder() {
        let top = tempfile::tempdir().expect("a temp folder");
        write(&top.path().join("a/Cargo.toml"), "");
        assert_eq!(workspace_in(&top.path().join("a")), top.path().join("a"));
        write(&top.path().join("b/__MACOSX/x"), "");
        write(&top.path().join("b/work/Cargo.toml"), "");
        assert_eq!(
            workspace_in(&top.path().join("b")),
            top.path().join("b/work")
        );
        write(&top.path().join("c/one/x"), "");
        write(&top.path().join("c/two/x"), "");
        assert_eq!(workspace_in(&top.path().join("c")), top.path().join("c"));
    }

    #[test]
    fn the_digest_follows_content_not_git_or_builds() {
        let top = tempfile::tempdir().expect("a temp folder");
        let dir = top.path().join("ada");
        write(&dir.join("lab02/src/main.rs"), "fn main() {}\n");
        let entry = Entry {
            name: "ada".into(),
            path: dir.clone(),
            form: Form::Folder,
            key: "ada".into(),
            students: vec!["ada".into()],
        };
        let first = digest(&entry);
        write(&dir.join(".git/HEAD"), "ref: x\n");
        write(&dir.join("target/release/lab02"), "binary");
        assert_eq!(digest(&entry), first, "git and builds do not count");
        write(&dir.join("lab02/src/main.rs"), "fn main() { }\n");
        assert_ne!(digest(&entry), first, "a changed source counts");
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link")).expect("a link");
        let with_link = digest(&entry);
        fs::remove_file(dir.join("link")).expect("removed");
        std::os::unix::fs::symlink("/etc/shadow", dir.join("link")).expect("a link");
        assert_ne!(
            digest(&entry),
            with_link,
            "a link's target counts, unfollowed"
        );
    }
}
