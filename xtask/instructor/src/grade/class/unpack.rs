//! A submission that came as an archive (`.zip`, `.tar`, `.tar.gz`, `.tgz`), unpacked into a
//! new folder of the class's own. Every byte of the archive is hostile:
//! - a member whose path leaves the folder (`..`, an absolute path), is too deep or too
//!   long, or comes twice refuses the whole archive;
//! - links, devices and FIFOs are never made: they are passed over, each said;
//! - sizes are counted as the bytes come out of the decompressor, never taken from a header,
//!   so a zip bomb or a gzip bomb stops at the cap and refuses its archive (its own row);
//! - build folders (`target/`) and `.git/` are passed over, not unpacked;
//! - files are made new (`O_EXCL`, `O_NOFOLLOW`), mode 0644, in folders made here.
//!
//! What comes out is read again by the grader's intake as hostile; this step only makes sure
//! that reading an archive cannot reach outside its folder or fill the disk.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The caps on one archive.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// The largest archive read at all.
    archive: u64,
    /// Bytes written out, all files together: a workspace is a few MB.
    unpacked: u64,
    /// Decompressed bytes a tarball may take to read through, passed-over members included.
    stream: u64,
    /// Members, folders and passed-over ones included.
    members: usize,
}

const LIMITS: Limits = Limits {
    archive: 256 << 20,
    unpacked: 256 << 20,
    stream: 512 << 20,
    members: 20_000,
};
/// Components of a member's path.
const MAX_DEPTH: usize = 32;
/// Bytes of a member's path; also the largest GNU long name read.
const MAX_PATH_BYTES: usize = 1024;
/// The largest PAX extended header read.
const MAX_PAX_BYTES: u64 = 64 << 10;
/// Passed-over members named one by one; past this, a count.
const MAX_NOTES: usize = 20;

/// The kinds of archive a class may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    Zip,
    Tar,
    TarGz,
}

impl Kind {
    /// The kind a file name says, and the name without its extension.
    pub fn of(name: &str) -> Option<(Kind, &str)> {
        let lower = name.to_ascii_lowercase();
        for (suffix, kind) in [
            (".zip", Kind::Zip),
            (".tar.gz", Kind::TarGz),
            (".tgz", Kind::TarGz),
            (".tar", Kind::Tar),
        ] {
            if lower.ends_with(suffix) && lower.len() > suffix.len() {
                return Some((kind, &name[..name.len() - suffix.len()]));
            }
        }
        None
    }
}

/// Unpack `archive` into `into` (a new, empty folder): what was passed over, one line each;
/// or the one line that says why the archive is refused.
pub fn unpack(archive: &Path, kind: Kind, into: &Path) -> Result<Vec<String>, String> {
    unpack_within(archive, kind, into, LIMITS)
}

fn unpack_within(
    archive: &Path,
    kind: Kind,
    into: &Path,
    limits: Limits,
) -> Result<Vec<String>, String> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(archive)
        .map_err(|e| format!("cannot be read ({e})"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read ({e})"))?;
    if !meta.is_file() {
        return Err("is not a regular file".to_string());
    }
    if meta.len() > limits.archive {
        return Err(format!(
            "is larger than {}; submit the workspace without its target folder",
            size(limits.archive)
        ));
    }
    let mut out = Writer::new(into, limits);
    match kind {
        Kind::Zip => unzip(file, &mut out)?,
        Kind::Tar => untar(Capped::new(file, limits.stream), &mut out)?,
        Kind::TarGz => untar(
            Capped::new(flate2::read::GzDecoder::new(file), limits.stream),
            &mut out,
        )?,
    }
    Ok(out.notes())
}

fn unzip(file: File, out: &mut Writer) -> Result<(), String> {
    let mut archive =
        zip::ZipArchive::new(file).map_err(|e| format!("is not a valid zip ({e})"))?;
    // The reader keeps one member per name: a second copy of a name (the one a careless
    // unpacker keeps, or not) would never reach the check below that refuses it.
    if archive.has_duplicate_names() {
        return Err("holds a member twice (the same name in its directory)".to_string());
    }
    if archive.len() > out.limits.members {
        return Err(format!("has more than {} members", out.limits.members));
    }
    for index in 0..archive.len() {
        let mut member = archive
            .by_index(index)
            .map_err(|e| format!("has a member that cannot be read ({e})"))?;
        let name = member.name_raw().to_vec();
        let mode = member.unix_mode().unwrap_or(0) & libc::S_IFMT;
        let what = if member.is_dir() {
            What::Folder
        } else if member.is_symlink() || !(mode == 0 || mode == libc::S_IFREG) {
            What::Other("a link or special file")
        } else {
            What::File
        };
        out.member(&name, what, &mut member)?;
    }
    Ok(())
}

fn untar(stream: Capped<impl Read>, out: &mut Writer) -> Result<(), String> {
    let mut archive = tar::Archive::new(stream);
    let entries = archive
        .entries()
        .map_err(|e| format!("is not a valid tarball ({e})"))?;
    // Raw: the long names and PAX headers come as members of their own, read here with caps
    // (the tar crate would read them whole into memory).
    let mut long_name: Option<Vec<u8>> = None;
    let mut pax_path: Option<Vec<u8>> = None;
    for entry in entries.raw(true) {
        let mut entry = entry.map_err(|e| tar_error(&e))?;
        let kind = entry.header().entry_type();
        let size = entry.size();
        if kind.is_gnu_longname() {
            if size > MAX_PATH_BYTES as u64 {
                return Err(format!(
                    "has a member name longer than {MAX_PATH_BYTES} bytes"
                ));
            }
            let mut name = read_small(&mut entry, size)?;
            if name.last() == Some(&0) {
                name.pop();
            }
            long_name = Some(name);
            continue;
        }
        if kind.is_pax_local_extensions() {
            if size > MAX_PAX_BYTES {
                return Err("has a PAX header larger than 64 KiB".to_string());
            }
            pax_path = pax_value(&read_small(&mut entry, size)?, b"path");
            continue;
        }
        if kind.is_pax_global_extensions() || kind.is_gnu_longlink() {
            if size > MAX_PAX_BYTES {
                return Err("has a PAX header larger than 64 KiB".to_string());
            }
            read_small(&mut entry, size)?;
            continue;
        }
        let name = pax_path
            .take()
            .or_else(|| long_name.take())
            .unwrap_or_else(|| entry.path_bytes().into_owned());
        long_name = None;
        let what = if kind.is_dir() {
            What::Folder
        } else if kind.is_file() || kind.is_contiguous() {
            What::File
        } else {
            What::Other("a link or special file")
        };
        out.member(&name, what, &mut entry)?;
    }
    Ok(())
}

/// A tar error in one line; the cap's own error says what was exceeded.
fn tar_error(e: &io::Error) -> String {
    match too_large(e) {
        Some(cap) => cap.to_string(),
        None => format!("is not a valid tarball ({e})"),
    }
}

/// The cap's error inside `e`, if that is what it is.
fn too_large(e: &io::Error) -> Option<&TooLarge> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<TooLarge>())
}

/// `256 MiB`, `1 KiB`.
fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

fn read_small(entry: &mut impl Read, size: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    entry
        .take(size)
        .read_to_end(&mut bytes)
        .map_err(|e| tar_error(&e))?;
    Ok(bytes)
}

/// The value of `key` in a PAX extended header (`LENGTH key=value\n` records).
fn pax_value(mut records: &[u8], key: &[u8]) -> Option<Vec<u8>> {
    while !records.is_empty() {
        let space = records.iter().position(|&b| b == b' ')?;
        let length: usize = std::str::from_utf8(&records[..space]).ok()?.parse().ok()?;
        if length <= space || length > records.len() {
            return None;
        }
        let record = &records[space + 1..length];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(value) = record
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(b"="))
        {
            return Some(value.to_vec());
        }
        records = &records[length..];
    }
    None
}

enum What {
    File,
    Folder,
    Other(&'static str),
}

/// Makes the members' files and folders under `root`, counting and capping as it goes.
struct Writer<'a> {
    root: &'a Path,
    limits: Limits,
    members: usize,
    written: u64,
    notes: Vec<String>,
    passed_over: usize,
}

impl<'a> Writer<'a> {
    fn new(root: &'a Path, limits: Limits) -> Writer<'a> {
        Writer {
            root,
            limits,
            members: 0,
            written: 0,
            notes: Vec::new(),
            passed_over: 0,
        }
    }

    fn member(&mut self, raw: &[u8], what: What, data: &mut impl Read) -> Result<(), String> {
        self.members += 1;
        if self.members > self.limits.members {
            return Err(format!("has more than {} members", self.limits.members));
        }
        let Some(relative) = member_path(raw)? else {
            return Ok(());
        };
        let shown = relative.display().to_string();
        if passed_over(&relative) {
            self.passed_over += 1;
            return Ok(());
        }
        let path = self.root.join(&relative);
        match what {
            What::Other(kind) => {
                self.notes
                    .push(format!("{shown} is {kind}: passed over, not unpacked"));
                Ok(())
            }
            What::Folder => fs::create_dir_all(&path)
                .map_err(|e| format!("cannot unpack the folder {shown} ({e})")),
            What::File => {
                if let Some(parent) = path.parent() {
                    fs::create_dir_all(parent)
                        .map_err(|e| format!("cannot unpack {shown} ({e})"))?;
                }
                let mut file = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o644)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&path)
                    .map_err(|e| match e.kind() {
                        io::ErrorKind::AlreadyExists => format!("holds {shown} twice"),
                        _ => format!("cannot unpack {shown} ({e})"),
                    })?;
                let budget = self.limits.unpacked - self.written;
                let copied =
                    io::copy(&mut data.take(budget + 1), &mut file).map_err(
                        |e| match too_large(&e) {
                            Some(cap) => cap.to_string(),
                            None => format!("has a member that cannot be read: {shown} ({e})"),
                        },
                    )?;
                if copied > budget {
                    return Err(TooLarge(self.limits.unpacked).to_string());
                }
                self.written += copied;
                file.flush()
                    .map_err(|e| format!("cannot unpack {shown} ({e})"))
            }
        }
    }

    fn notes(mut self) -> Vec<String> {
        if self.notes.len() > MAX_NOTES {
            let more = self.notes.len() - MAX_NOTES;
            self.notes.truncate(MAX_NOTES);
            self.notes.push(format!("... and {more} more passed over"));
        }
        if self.passed_over > 0 {
            self.notes.push(format!(
                "{} members of build folders (target/) and .git/ passed over",
                self.passed_over
            ));
        }
        self.notes
    }
}

/// A member's path inside the archive's folder, or `None` for the archive's own top (`./`);
/// an error for a path that would leave it.
fn member_path(raw: &[u8]) -> Result<Option<PathBuf>, String> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(format!(
            "has a member name longer than {MAX_PATH_BYTES} bytes"
        ));
    }
    let text =
        std::str::from_utf8(raw).map_err(|_| "has a member whose name is not UTF-8".to_string())?;
    if text.contains('\0') {
        return Err("has a member whose name holds a NUL byte".to_string());
    }
    // Zip files made on Windows may separate with backslashes.
    let text = text.replace('\\', "/");
    if text.starts_with('/') {
        return Err(format!("has a member with an absolute path ({text})"));
    }
    let mut path = PathBuf::new();
    for component in Path::new(&text).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(format!("has a member outside its folder ({text})"));
            }
        }
    }
    if path.components().count() > MAX_DEPTH {
        return Err(format!(
            "has a member more than {MAX_DEPTH} folders deep ({text})"
        ));
    }
    Ok((!path.as_os_str().is_empty()).then_some(path))
}

/// Build outputs, git's own folder and macOS's resource forks: never a student's source.
fn passed_over(path: &Path) -> bool {
    path.components()
        .any(|c| matches!(c.as_os_str().to_str(), Some("target" | ".git" | "__MACOSX")))
}

/// The archive gives more bytes than its cap (the number).
#[derive(Debug)]
struct TooLarge(u64);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unpacks to more than {}; submit the workspace without its target folder",
            size(self.0)
        )
    }
}

impl std::error::Error for TooLarge {}

/// A reader that fails once it has given `cap` bytes.
struct Capped<R> {
    inner: R,
    cap: u64,
    left: u64,
}

impl<R> Capped<R> {
    fn new(inner: R, cap: u64) -> Capped<R> {
        Capped {
            inner,
            cap,
            left: cap,
        }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::other(TooLarge(self.cap)));
        }
        let most = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..most])?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zip_of(members: &[(&str, &[u8])], symlink: Option<(&str, &str)>) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default();
        for (name, bytes) in members {
            writer.start_file(*name, options).expect("a member");
            writer.write_all(bytes).expect("written");
        }
        if let Some((name, target)) = symlink {
            writer.add_symlink(name, target, options).expect("a link");
        }
        writer.finish().expect("finished").into_inner()
    }

    /// Caps a thousandth of the real ones, so that a bomb is quick to make and to defuse.
    const SMALL: Limits = Limits {
        archive: 1 << 20,
        unpacked: 256 << 10,
        stream: 512 << 10,
        members: 50,
    };

    fn unpack_bytes(bytes: &[u8], kind: Kind) -> (tempfile::TempDir, Result<Vec<String>, String>) {
        let dir = tempfile::tempdir().expect("a temp folder");
        let archive = dir.path().join("archive");
        fs::write(&archive, bytes).expect("written");
        let into = dir.path().join("out");
        fs::create_dir(&into).expect("created");
        let result = unpack_within(&archive, kind, &into, SMALL);
        (dir, result)
    }

    /// A tarball of one member `name` that claims `size` bytes of zeros, gzipped.
    fn gzip_bomb(name: &str, size: u64) -> Vec<u8> {
        use flate2::write::GzEncoder;
        let mut tarball =
            tar::Builder::new(GzEncoder::new(Vec::new(), flate2::Compression::best()));
        let mut header = tar::Header::new_gnu();
        header.set_size(size);
        header.set_mode(0o644);
        tarball
            .append_data(&mut header, name, io::repeat(0).take(size))
            .expect("appended");
        tarball
            .into_inner()
            .and_then(|gz| gz.finish())
            .expect("finished")
    }

    #[test]
    fn the_real_caps_are_what_the_messages_say() {
        assert_eq!(size(LIMITS.unpacked), "256 MiB");
        assert_eq!(size(LIMITS.stream), "512 MiB");
        assert_eq!(LIMITS.archive, 256 << 20);
        assert_eq!(LIMITS.members, 20_000);
        assert_eq!(
            TooLarge(LIMITS.unpacked).to_string(),
            "unpacks to more than 256 MiB; submit the workspace without its target folder"
        );
    }

    #[test]
    fn kinds_are_told_by_their_extension() {
        assert_eq!(Kind::of("alice.zip"), Some((Kind::Zip, "alice")));
        assert_eq!(Kind::of("bob.TAR.GZ"), Some((Kind::TarGz, "bob")));
        assert_eq!(Kind::of("carol.tgz"), Some((Kind::TarGz, "carol")));
        assert_eq!(Kind::of("dave.tar"), Some((Kind::Tar, "dave")));
        assert_eq!(Kind::of(".zip"), None);
        assert_eq!(Kind::of("notes.txt"), None);
    }

    #[test]
    fn a_zip_unpacks_and_its_links_and_build_folders_are_passed_over() {
        let bytes = zip_of(
            &[
                ("work/Cargo.toml", b"[workspace]\n"),
                ("work/lab02-rayon/src/main.rs", b"fn main() {}\n"),
                ("work/target/release/lab02", b"binary"),
                ("__MACOSX/work/._Cargo.toml", b"fork"),
            ],
            Some(("work/secret", "/etc/shadow")),
        );
        let (dir, result) = unpack_bytes(&bytes, Kind::Zip);
        let notes = result.expect("unpacked");
        let out = dir.path().join("out/work");
        assert_eq!(
            fs::read(out.join("lab02-rayon/src/main.rs")).expect("a file"),
            b"fn main() {}\n"
        );
        assert!(!out.join("target").exists());
        assert!(
            fs::symlink_metadata(out.join("secret")).is_err(),
            "no link made"
        );
        let notes = notes.join("\n");
        assert!(
            notes.contains("work/secret is a link or special file: passed over"),
            "{notes}"
        );
        assert!(notes.contains("2 members of build folders"), "{notes}");
    }

    #[test]
    fn paths_out_of_the_folder_refuse_the_archive() {
        for name in [
            "../evil.rs",
            "work/../../evil.rs",
            "/etc/evil.rs",
            "..\\evil.rs",
        ] {
            let bytes = zip_of(&[(name, b"x")], None);
            let (dir, result) = unpack_bytes(&bytes, Kind::Zip);
            let error = result.expect_err(name);
            assert!(
                error.contains("outside its folder") || error.contains("absolute path"),
                "{name}: {error}"
            );
            assert!(!dir.path().join("evil.rs").exists());
        }
        let deep = vec!["d"; MAX_DEPTH + 1].join("/");
        let (_dir, result) = unpack_bytes(&zip_of(&[(&deep, b"x")], None), Kind::Zip);
        assert!(result.expect_err("too deep").contains("folders deep"));
    }

    #[test]
    fn a_member_twice_refuses_the_archive() {
        let mut tarball = tar::Builder::new(Vec::new());
        for _ in 0..2 {
            let mut header = tar::Header::new_gnu();
            header.set_size(1);
            header.set_mode(0o644);
            tarball
                .append_data(&mut header, "lab02/src/main.rs", &b"x"[..])
                .expect("appended");
        }
        let bytes = tarball.into_inner().expect("finished");
        let (_dir, result) = unpack_bytes(&bytes, Kind::Tar);
        assert_eq!(result.expect_err("twice"), "holds lab02/src/main.rs twice");
    }

    /// A zip holding lab02's main.rs twice (the second copy, read last, the one a careless
    /// unpacker keeps) was not refused: the zip reader keeps one entry per name.
    #[test]
    fn a_zip_holding_a_file_twice_is_refused() {
        let bytes = zip_of(
            &[
                ("lab02/src/main.rs", b"fn main() { honest() }"),
                ("lab02/src/mbin.rs", b"fn main() { attack() }"),
            ],
            None,
        );
        // The same name twice, in the local headers and the central directory alike.
        let text = String::from_utf8_lossy(&bytes).into_owned();
        assert_eq!(text.matches("lab02/src/mbin.rs").count(), 2);
        let twice: Vec<u8> = {
            let mut b = bytes.clone();
            let needle = b"lab02/src/mbin.rs";
            let mut at = 0;
            while let Some(found) = b[at..].windows(needle.len()).position(|w| w == needle) {
                b[at + found..at + found + needle.len()].copy_from_slice(b"lab02/src/main.rs");
                at += found + needle.len();
            }
            b
        };
        let (dir, result) = unpack_bytes(&twice, Kind::Zip);
        assert_eq!(
            result.expect_err("twice"),
            "holds a member twice (the same name in its directory)"
        );
        assert!(!dir.path().join("out/lab02").exists(), "nothing unpacked");
        // The same file under two spellings of its path: refused as it comes.
        let bytes = zip_of(
            &[
                ("lab02/src/main.rs", b"fn main() {}"),
                ("./lab02//src/main.rs", b"fn main() {}"),
            ],
            None,
        );
        let (_dir, result) = unpack_bytes(&bytes, Kind::Zip);
        assert_eq!(result.expect_err("twice"), "holds lab02/src/main.rs twice");
    }

    #[test]
    fn a_zip_bomb_costs_its_archive_only() {
        // Eight times the cap in zeros deflates to a few KiB.
        let mut writer = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        writer
            .start_file("bomb.rs", zip::write::SimpleFileOptions::default())
            .expect("a member");
        writer
            .write_all(&vec![0u8; 8 * SMALL.unpacked as usize])
            .expect("written");
        let bytes = writer.finish().expect("finished").into_inner();
        assert!(bytes.len() < 64 << 10, "{} bytes", bytes.len());
        let (dir, result) = unpack_bytes(&bytes, Kind::Zip);
        assert_eq!(
            result.expect_err("a bomb"),
            "unpacks to more than 256 KiB; submit the workspace without its target folder"
        );
        let written = fs::metadata(dir.path().join("out/bomb.rs")).map_or(0, |m| m.len());
        assert!(written <= SMALL.unpacked + 1, "{written}");
    }

    #[test]
    fn a_gzip_bomb_stops_at_its_caps() {
        // A member that would be written stops at the cap on what is written ...
        let (_dir, result) = unpack_bytes(&gzip_bomb("bomb.rs", 4 * SMALL.unpacked), Kind::TarGz);
        assert_eq!(
            result.expect_err("a bomb"),
            "unpacks to more than 256 KiB; submit the workspace without its target folder"
        );
        // ... and one passed over (a build folder) at the cap on what is read through.
        let (dir, result) = unpack_bytes(&gzip_bomb("target/bomb", 4 * SMALL.stream), Kind::TarGz);
        assert_eq!(
            result.expect_err("a bomb"),
            "unpacks to more than 512 KiB; submit the workspace without its target folder"
        );
        assert!(!dir.path().join("out/target").exists());
    }

    #[test]
    fn too_many_members_refuse_the_archive() {
        let names: Vec<String> = (0..=SMALL.members).map(|i| format!("f{i}.rs")).collect();
        let members: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        let (_dir, result) = unpack_bytes(&zip_of(&members, None), Kind::Zip);
        assert_eq!(result.expect_err("too many"), "has more than 50 members");
    }

    #[test]
    fn tar_links_devices_and_long_names_are_handled() {
        let mut tarball = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_size(0);
        tarball
            .append_link(&mut header, "work/lab02-rayon/src/main.rs", "/etc/passwd")
            .expect("a link");
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Fifo);
        header.set_size(0);
        tarball
            .append_data(&mut header, "work/fifo", io::empty())
            .expect("a fifo");
        let long = format!("work/{}/main.rs", "l".repeat(200));
        let mut header = tar::Header::new_gnu();
        header.set_size(3);
        header.set_mode(0o755);
        tarball
            .append_data(&mut header, &long, &b"ok\n"[..])
            .expect("a long name");
        let bytes = tarball.into_inner().expect("finished");
        let (dir, result) = unpack_bytes(&bytes, Kind::Tar);
        let notes = result.expect("unpacked").join("\n");
        assert!(
            notes.contains("work/lab02-rayon/src/main.rs is a link"),
            "{notes}"
        );
        assert!(
            notes.contains("work/fifo is a link or special file"),
            "{notes}"
        );
        assert!(!dir.path().join("out/work/lab02-rayon").exists());
        assert_eq!(
            fs::read(dir.path().join("out").join(&long)).expect("the long name"),
            b"ok\n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.path().join("out").join(&long))
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644, "no mode from the archive");
    }

    #[test]
    fn pax_records_are_read_by_length() {
        let records = b"20 path=a/b/main.rs\n10 x=yyyy\n";
        assert_eq!(pax_value(records, b"path"), Some(b"a/b/main.rs".to_vec()));
        assert_eq!(pax_value(records, b"x"), Some(b"yyyy".to_vec()));
        assert_eq!(pax_value(b"99 path=short\n", b"path"), None);
        assert_eq!(pax_value(b"garbage", b"path"), None);
    }

    #[test]
    fn garbage_is_one_line() {
        let (_dir, result) = unpack_bytes(b"not an archive at all", Kind::Zip);
        assert!(result
            .expect_err("garbage")
            .starts_with("is not a valid zip"));
        let (_dir, result) = unpack_bytes(b"not an archive at all", Kind::TarGz);
        assert!(result.expect_err("garbage").contains("valid tarball"));
    }
}
