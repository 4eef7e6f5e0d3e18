//! What a class folder holds: one entry per submission (a folder, a zip or a tarball), the
//! students each belongs to, and a digest of its content.
//!
//! Layouts:
//! - Gradescope's "Export Submissions": `submission_metadata.yml` beside one
//!   `submission_ID/` folder per submission, the metadata naming its students (a group
//!   submission is one folder, one row per student). The download's own top folder
//!   (`assignment_ID_export/`) may be given, or the folder it was unpacked in.
//! - Classroom 50's `gh teacher download`: `CLASSROOM-ASSIGNMENT-USERNAME/` per student, in a
//!   folder of the tool's default name or holding its `scores.csv` ([`classroom50`]).
//! - Anything else: each entry is one student, named after the entry.
//!
//! The names are the students' and the entries' own, so hostile: each entry gets a folder
//! name of safe characters for its results, and links, special files and stray files are
//! reported, not followed.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::unpack::{self, Kind};
use super::{classroom50, gradescope};
use crate::grade::inert;

/// Entries of a class folder looked at, at most.
const MAX_ENTRIES: usize = 10_000;

/// The largest submission graded, in bytes (every file's length, a sparse file's too) and in
/// files and folders. The digest reads every byte of an entry, so that a kept grade is the
/// grade a fresh run would give; a larger entry is refused (one row saying why) rather than
/// read in part, which a same-length edit past the part read would game.
const MAX_ENTRY_BYTES: u64 = 1 << 30;
const MAX_ENTRY_FILES: usize = 100_000;

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
    /// Gradescope's when the class folder holds `submission_metadata.yml`, Classroom 50's
    /// when it has `gh teacher download`'s default name or holds its `scores.csv`, else one
    /// entry per student.
    #[default]
    Auto,
    /// Gradescope's "Export Submissions": the class folder holds `submission_metadata.yml`.
    Gradescope,
    /// Classroom 50's `gh teacher download`: entries named `CLASSROOM-ASSIGNMENT-USERNAME`.
    #[value(name = "classroom50")]
    Classroom50,
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
    let layout = resolve_layout(&dir, &class_name, layout)?;
    let mut notes = Vec::new();
    let metadata = read_metadata(&dir, layout, &mut notes);
    let download =
        (layout == Layout::Classroom50).then(|| classroom50::Download::read(&dir, &class_name));
    let layout_name = match layout {
        Layout::Gradescope => "Gradescope's export",
        Layout::Classroom50 => "Classroom 50's download",
        Layout::Auto | Layout::Plain => "one entry per student",
    };
    let names = list_names(&dir)?;
    let reader = EntryReader {
        dir: &dir,
        layout,
        metadata: metadata.as_ref(),
        download: download.as_ref(),
    };
    let mut entries = Vec::new();
    let mut keys = BTreeSet::new();
    for raw in names {
        if let Some(entry) = reader.entry(&raw, &mut keys, &mut notes)? {
            entries.push(entry);
        }
    }
    if entries.is_empty() {
        bail!(
            "{} holds no submission (a folder, a .zip or a tarball per student)",
            dir.display()
        );
    }
    rename_shared_students(&mut entries, &mut notes);
    note_nested_exports(&entries, &mut notes);
    Ok(Class {
        layout: layout_name,
        entries,
        notes,
    })
}

/// The layout `layout` names, `Auto` settled by what the class folder `dir` holds and its
/// name; Gradescope's named without its metadata file is an error.
fn resolve_layout(dir: &Path, class_name: &str, layout: Layout) -> Result<Layout> {
    let has_metadata = fs::symlink_metadata(dir.join(gradescope::METADATA)).is_ok();
    Ok(match layout {
        Layout::Auto if has_metadata => Layout::Gradescope,
        Layout::Auto if classroom50::Download::recognise(dir, class_name) => Layout::Classroom50,
        Layout::Auto => Layout::Plain,
        Layout::Gradescope if !has_metadata => bail!(
            "{} holds no {}; give the folder Gradescope's export unpacks to \
             (assignment_ID_export)",
            dir.display(),
            gradescope::METADATA
        ),
        named => named,
    })
}

/// Gradescope's entry-to-students map, for its layout only (`None` for the others).
///
/// The metadata is Gradescope's file, but what it says is what students typed: a file
/// that cannot be read names each submission after its folder, and grading goes on.
fn read_metadata(
    dir: &Path,
    layout: Layout,
    notes: &mut Vec<String>,
) -> Option<BTreeMap<String, Vec<String>>> {
    match layout {
        Layout::Gradescope => match gradescope::export_students(dir) {
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
    }
}

/// The names in the class folder, sorted; more than `MAX_ENTRIES` is refused.
fn list_names(dir: &Path) -> Result<Vec<OsString>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
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
    Ok(names)
}

/// What reading one name of the class folder needs to know of the class.
struct EntryReader<'a> {
    dir: &'a Path,
    layout: Layout,
    metadata: Option<&'a BTreeMap<String, Vec<String>>>,
    download: Option<&'a classroom50::Download>,
}

impl EntryReader<'_> {
    /// The entry named `raw`, or `None` where it is passed over (hidden, macOS's litter,
    /// Gradescope's metadata, Classroom 50's `scores.csv`, or a stray file, which gets a
    /// note).
    fn entry(
        &self,
        raw: &OsStr,
        keys: &mut BTreeSet<String>,
        notes: &mut Vec<String>,
    ) -> Result<Option<Entry>> {
        let name = inert::line(&raw.to_string_lossy());
        let skipped = match self.layout {
            Layout::Gradescope => name == gradescope::METADATA,
            Layout::Classroom50 => name == classroom50::SCORES,
            Layout::Auto | Layout::Plain => false,
        };
        if name.starts_with('.') || name == "__MACOSX" || skipped {
            return Ok(None);
        }
        let path = self.dir.join(raw);
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
                    return Ok(None);
                }
            }
        } else {
            (
                Form::Refused("is a special file".to_string()),
                name.as_str(),
            )
        };
        let key = unique_key(stem, keys);
        let students = self.students(&name, stem, &key, notes);
        Ok(Some(Entry {
            name,
            path,
            form,
            key,
            students,
        }))
    }

    /// Who the entry `name` (of stem `stem`, results under `key`) belongs to: Gradescope's
    /// metadata, else the user a Classroom 50 clone's name gives, else the stem.
    fn students(&self, name: &str, stem: &str, key: &str, notes: &mut Vec<String>) -> Vec<String> {
        match self.metadata {
            Some(map) => match map.get(name) {
                Some(ids) if !ids.is_empty() => ids.clone(),
                _ => {
                    notes.push(format!(
                        "{name}: not in {} (or no student named): graded as {key}",
                        gradescope::METADATA
                    ));
                    vec![key.to_string()]
                }
            },
            None => vec![self
                .download
                .and_then(|download| download.student(stem))
                .unwrap_or_else(|| stem.to_string())],
        }
    }
}

/// Two entries of one student (`ada/` and `ada.zip`, or one student in two Gradescope
/// groups) would be two rows of the same name: each row says which entry it grades.
fn rename_shared_students(entries: &mut [Entry], notes: &mut Vec<String>) {
    let mut count: BTreeMap<String, usize> = Default::default();
    for entry in entries.iter() {
        for student in &entry.students {
            *count.entry(student.clone()).or_default() += 1;
        }
    }
    for (student, n) in count.iter().filter(|(_, &n)| n > 1) {
        let names: Vec<&str> = entries
            .iter()
            .filter(|e| e.students.contains(student))
            .map(|e| e.name.as_str())
            .collect();
        notes.push(format!(
            "warning: {n} entries are {student}'s ({}): graded apart, as \"{student} (ENTRY)\"; \
             keep one and grade again",
            names.join(", ")
        ));
        for entry in entries.iter_mut() {
            let name = entry.name.clone();
            for s in entry.students.iter_mut().filter(|s| *s == student) {
                *s = format!("{student} ({name})");
            }
        }
    }
}

/// An entry is a student's: what it holds never changes how the class is read. One that
/// looks like Gradescope's whole export was perhaps meant as the class folder: say so.
fn note_nested_exports(entries: &[Entry], notes: &mut Vec<String>) {
    for only in entries {
        if only.form == Form::Folder
            && fs::symlink_metadata(only.path.join(gradescope::METADATA)).is_ok()
        {
            notes.push(format!(
                "{} holds {}: graded as one submission; if it is Gradescope's export, give it \
                 as the class folder (grade-class {})",
                only.name,
                gradescope::METADATA,
                inert::line(&only.path.to_string_lossy())
            ));
        }
    }
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
/// kind, mode and content below it, `target/` and `.git/` included (a workspace can be
/// hidden in either, and the grade reads what the folder holds, not what its author says
/// is a build). An entry over [`MAX_ENTRY_BYTES`] or [`MAX_ENTRY_FILES`], or one that cannot
/// be read whole: why it is refused.
pub fn digest(entry: &Entry) -> Result<String, String> {
    digest_within(entry, Limit::default())
}

/// The most an entry may hold: [`MAX_ENTRY_BYTES`] and [`MAX_ENTRY_FILES`] (less in tests).
#[derive(Clone, Copy)]
struct Limit {
    bytes: u64,
    files: usize,
}

impl Default for Limit {
    fn default() -> Limit {
        Limit {
            bytes: MAX_ENTRY_BYTES,
            files: MAX_ENTRY_FILES,
        }
    }
}

fn digest_within(entry: &Entry, limit: Limit) -> Result<String, String> {
    let mut hash = Sha256::new();
    match &entry.form {
        Form::Folder => digest_folder(&entry.path, limit, &mut hash)?,
        Form::Archive(_) => {
            hash.update(b"archive\0");
            let mut budget = limit.bytes;
            hash_file(&entry.path, &mut budget, &mut hash)?;
        }
        Form::Refused(why) => {
            hash.update(b"refused\0");
            hash.update(why.as_bytes());
        }
    }
    Ok(hex(&hash.finalize()))
}

/// Too large to grade: the row's reason.
fn too_large() -> String {
    format!(
        "is larger than {} MiB or {MAX_ENTRY_FILES} files (leave out build folders such as target/)",
        MAX_ENTRY_BYTES >> 20
    )
}

fn digest_folder(root: &Path, limit: Limit, hash: &mut Sha256) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    hash.update(b"folder\0");
    let mut stack = vec![PathBuf::new()];
    let (mut files, mut budget) = (0usize, limit.bytes);
    let unreadable = |path: &Path| {
        format!(
            "cannot be read whole ({} is unreadable)",
            inert::line(&path.to_string_lossy())
        )
    };
    while let Some(relative) = stack.pop() {
        let read = fs::read_dir(root.join(&relative)).map_err(|_| unreadable(&relative))?;
        let mut names = Vec::new();
        for entry in read {
            names.push(entry.map_err(|_| unreadable(&relative))?.file_name());
            if files + names.len() > limit.files {
                return Err(too_large());
            }
        }
        names.sort();
        files += names.len();
        // Folders are pushed in reverse so they come off the stack in name order.
        let mut folders = Vec::new();
        for name in names {
            let path = relative.join(&name);
            hash.update(path.as_os_str().as_encoded_bytes());
            hash.update([0]);
            let meta = fs::symlink_metadata(root.join(&path)).map_err(|_| unreadable(&path))?;
            hash.update(meta.mode().to_le_bytes());
            let kind = meta.file_type();
            if kind.is_dir() {
                hash.update(b"d\0");
                folders.push(path);
            } else if kind.is_symlink() {
                hash.update(b"l\0");
                let target = fs::read_link(root.join(&path)).map_err(|_| unreadable(&path))?;
                hash.update(target.as_os_str().as_encoded_bytes());
            } else if kind.is_file() {
                hash.update(b"f\0");
                hash.update(meta.len().to_le_bytes());
                hash_file(&root.join(&path), &mut budget, hash)?;
            } else {
                hash.update(b"s\0");
            }
            hash.update([0]);
        }
        stack.extend(folders.into_iter().rev());
    }
    Ok(())
}

/// Hash every byte of the regular file `path` (a link or FIFO is not opened), taking its
/// length from `budget`: a file longer than what is left refuses the entry before a byte
/// is read (its length, not the blocks it holds: a sparse file counts whole).
fn hash_file(path: &Path, budget: &mut u64, hash: &mut Sha256) -> Result<(), String> {
    let unreadable = || "cannot be read whole".to_string();
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|_| unreadable())?;
    let meta = file.metadata().map_err(|_| unreadable())?;
    if !meta.is_file() {
        return Err("is not a regular file".to_string());
    }
    if meta.len() > *budget {
        return Err(too_large());
    }
    // Read to the end, whatever the length said: a file that grows while it is read still
    // cannot pass the budget.
    let mut reader = file.take(*budget + 1);
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                hash.update(&buffer[..n]);
                *budget = budget.checked_sub(n as u64).ok_or_else(too_large)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(unreadable()),
        }
    }
    Ok(())
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
    fn a_classroom_50_download_names_its_students_by_user() {
        let top = tempfile::tempdir().expect("a temp folder");
        let dir = top
            .path()
            .join("gpu-mandelbrot_submissions_2026_11_27_T_01_02_03");
        write(&dir.join("gpu-mandelbrot-ada/Cargo.toml"), "[workspace]\n");
        // What the tool writes into a clone is the student's, graded as any file of theirs.
        write(&dir.join("gpu-mandelbrot-ada/result.json"), "{}");
        write(&dir.join("gpu-mandelbrot-grace/.git/HEAD"), "ref\n");
        write(&dir.join("notes.txt"), "x");
        write(&dir.join(classroom50::SCORES), "username\nmallory\n");
        fs::write(dir.join("gpu-mandelbrot-linus.zip"), "zip").expect("written");
        std::os::unix::fs::symlink("/etc", dir.join("gpu-mandelbrot-eve")).expect("a link");
        let class = discover(&dir, Layout::Auto).expect("a class");
        assert_eq!(class.layout, "Classroom 50's download");
        let rows: Vec<(&str, &str, &Form)> = class
            .entries
            .iter()
            .map(|e| (e.students[0].as_str(), e.key.as_str(), &e.form))
            .collect();
        assert_eq!(
            rows,
            [
                ("ada", "gpu-mandelbrot-ada", &Form::Folder),
                (
                    "eve",
                    "gpu-mandelbrot-eve",
                    &Form::Refused("is a symbolic link".into())
                ),
                ("grace", "gpu-mandelbrot-grace", &Form::Folder),
                ("linus", "gpu-mandelbrot-linus", &Form::Archive(Kind::Zip)),
            ]
        );
        assert_eq!(
            class.notes,
            ["notes.txt: neither a folder nor a .zip or tarball: passed over"]
        );
    }

    /// Named by `gh teacher download -d`, the folder is known by its scores.csv, whose users
    /// name the clones; without one it is one entry per student, unless named Classroom 50's.
    #[test]
    fn a_download_named_by_the_instructor_is_read_from_its_scores() {
        let top = tempfile::tempdir().expect("a temp folder");
        let dir = top.path().join("hw1");
        write(&dir.join("cs-hw1-ada/Cargo.toml"), "[workspace]\n");
        write(&dir.join("cs-hw1-b-ada/Cargo.toml"), "[workspace]\n");
        let students = |layout| -> (&'static str, Vec<String>) {
            let class = discover(&dir, layout).expect("a class");
            let names = class
                .entries
                .iter()
                .map(|e| e.students[0].clone())
                .collect();
            (class.layout, names)
        };
        assert_eq!(
            students(Layout::Auto),
            (
                "one entry per student",
                vec!["cs-hw1-ada".into(), "cs-hw1-b-ada".into()]
            )
        );
        assert_eq!(
            students(Layout::Classroom50),
            (
                "Classroom 50's download",
                vec!["cs-hw1-ada".into(), "cs-hw1-b-ada".into()]
            )
        );
        write(
            &dir.join(classroom50::SCORES),
            "username,first_name,last_name,email,section,score,max_score,datetime,\
             submission_tag,submitted_by,review_url,late,override\nAda,,,,,,,,,,,,\nb-ada,,,,,,,,,,,,\n",
        );
        assert_eq!(
            students(Layout::Auto),
            (
                "Classroom 50's download",
                vec!["Ada".into(), "b-ada".into()]
            )
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

    /// `ada/` and `ada.zip` gave two `ada` rows and no warning.
    #[test]
    fn two_entries_of_one_student_are_told_apart_with_a_warning() {
        let top = tempfile::tempdir().expect("a temp folder");
        let dir = top.path().join("class");
        write(&dir.join("ada/Cargo.toml"), "[workspace]\n");
        fs::write(dir.join("ada.zip"), "zip").expect("written");
        write(&dir.join("bob/Cargo.toml"), "[workspace]\n");
        let class = discover(&dir, Layout::Auto).expect("a class");
        let rows: Vec<(&str, &str)> = class
            .entries
            .iter()
            .map(|e| (e.key.as_str(), e.students[0].as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                ("ada", "ada (ada)"),
                ("ada-2", "ada (ada.zip)"),
                ("bob", "bob")
            ]
        );
        assert_eq!(
            class.notes,
            ["warning: 2 entries are ada's (ada, ada.zip): graded apart, as \"ada (ENTRY)\"; keep one and grade again"]
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

    fn folder_entry(dir: &Path) -> Entry {
        Entry {
            name: "ada".into(),
            path: dir.to_path_buf(),
            form: Form::Folder,
            key: "ada".into(),
            students: vec!["ada".into()],
        }
    }

    /// A workspace hidden in `target/` or `.git/` was left out of the digest: the solved
    /// version's grade was kept after it was replaced by the hand-out. Every byte counts.
    #[test]
    fn the_digest_covers_every_byte_target_and_git_included() {
        let top = tempfile::tempdir().expect("a temp folder");
        let dir = top.path().join("ada");
        write(&dir.join("lab02/src/main.rs"), "fn main() {}\n");
        let entry = folder_entry(&dir);
        let mut seen = BTreeSet::new();
        let mut changed = |what: &str| {
            let digest = digest(&entry).expect("a digest");
            assert!(seen.insert(digest), "{what} did not change the digest");
        };
        changed("the first");
        write(&dir.join("target/work/lab02-rayon/src/main.rs"), "solved\n");
        changed("a workspace in target/");
        write(
            &dir.join("target/work/lab02-rayon/src/main.rs"),
            "handout\n",
        );
        changed("an edit in target/");
        write(&dir.join(".git/HEAD"), "ref: x\n");
        changed("a .git/ file");
        write(&dir.join("lab02/src/main.rs"), "fn main() { }\n");
        changed("a changed source");
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link")).expect("a link");
        changed("a link");
        fs::remove_file(dir.join("link")).expect("removed");
        std::os::unix::fs::symlink("/etc/shadow", dir.join("link")).expect("a link");
        changed("a link's target, unfollowed");
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(
            dir.join("lab02/src/main.rs"),
            fs::Permissions::from_mode(0o755),
        )
        .expect("a mode");
        changed("a mode");
    }

    /// The digest stopped reading after 1 GiB: a sparse file that sorts first, then a
    /// same-length edit past it, kept a stale 14. Now such an entry is refused, one row (a
    /// limit of 1 MiB here: the same code as 1 GiB, in a test's time).
    #[test]
    fn an_entry_over_the_limit_is_refused_not_read_in_part() {
        let limit = Limit {
            bytes: 1 << 20,
            files: 100,
        };
        let top = tempfile::tempdir().expect("a temp folder");
        let dir = top.path().join("ada");
        write(&dir.join("lab02/src/main.rs"), "fn main() {}\n");
        let sparse = fs::File::create(dir.join("aaa")).expect("created");
        sparse.set_len(limit.bytes + 1).expect("a sparse file");
        let why = digest_within(&folder_entry(&dir), limit).expect_err("refused");
        assert!(why.starts_with("is larger than 1024 MiB"), "{why}");
        // Two files under the limit each, over it together.
        sparse.set_len(limit.bytes - 13).expect("shorter");
        write(&dir.join("bbb"), "1");
        assert_eq!(digest_within(&folder_entry(&dir), limit), Err(why));
        fs::remove_file(dir.join("bbb")).expect("removed");
        assert!(
            digest_within(&folder_entry(&dir), limit).is_ok(),
            "at the limit"
        );
        // The real limit refuses a sparse file of 1 GiB and a byte without reading it.
        sparse.set_len(MAX_ENTRY_BYTES + 1).expect("a sparse file");
        assert!(digest(&folder_entry(&dir)).is_err());
    }

    #[test]
    fn an_entry_with_too_many_files_is_refused() {
        let limit = Limit {
            bytes: 1 << 20,
            files: 50,
        };
        let top = tempfile::tempdir().expect("a temp folder");
        let dir = top.path().join("ada");
        fs::create_dir_all(dir.join("many")).expect("created");
        for i in 0..limit.files {
            fs::File::create(dir.join(format!("many/{i}"))).expect("created");
        }
        let why = digest_within(&folder_entry(&dir), limit).expect_err("refused");
        assert!(why.contains("100000 files"), "{why}");
        fs::remove_file(dir.join("many/0")).expect("removed");
        assert!(digest_within(&folder_entry(&dir), limit).is_ok(), "{why}");
    }
}
