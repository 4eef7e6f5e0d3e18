//! Binary PPM (P6) files, written atomically.
//!
//! Every lab writes through [`AtomicFile`]: the bytes go to a temporary file beside the target,
//! which is renamed over the target only once it is complete. A failed or interrupted run
//! therefore never leaves a partial image behind, nor clobbers a good one.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::{Error, Result};

/// The PPM header: magic, size, maximum channel value.
pub fn header(width: u32, height: u32) -> String {
    format!("P6\n{width} {height}\n255\n")
}

/// A file that appears at its path only when [`AtomicFile::commit`] is called. Dropped
/// without a commit, it vanishes.
pub struct AtomicFile {
    temp: NamedTempFile,
    path: PathBuf,
}

impl AtomicFile {
    /// Create the temporary file in the target's directory (a rename only stays atomic within
    /// one file system).
    pub fn create(path: &Path) -> Result<Self> {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.as_deref().unwrap_or("output")))
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| Error::output(path, e))?;
        Ok(AtomicFile {
            temp,
            path: path.to_path_buf(),
        })
    }

    /// The open temporary file, for positioned or chunked writes.
    pub fn file(&mut self) -> &mut File {
        self.temp.as_file_mut()
    }

    /// Append `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        let path = &self.path;
        self.temp
            .as_file_mut()
            .write_all(bytes)
            .map_err(|e| Error::output(path, e))
    }

    /// The path the file will have once committed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Move the finished file into place.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        self.temp
            .persist(&path)
            .map(drop)
            .map_err(|e| Error::output(&path, e.error))
    }
}

/// Write a whole image at once: the header, then `pixels` (rows already in file order).
pub fn write_ppm_atomic(path: &Path, width: u32, height: u32, pixels: &[u8]) -> Result<()> {
    debug_assert_eq!(pixels.len(), width as usize * height as usize * 3);
    let mut file = AtomicFile::create(path)?;
    file.write_all(header(width, height).as_bytes())?;
    file.write_all(pixels)?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_p6() {
        assert_eq!(header(3, 2), "P6\n3 2\n255\n");
    }

    #[test]
    fn atomic_write_leaves_only_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("image.ppm");
        write_ppm_atomic(&path, 1, 1, &[1, 2, 3]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"P6\n1 1\n255\n\x01\x02\x03");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn uncommitted_file_vanishes_and_keeps_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("image.ppm");
        std::fs::write(&path, b"good").unwrap();
        let mut file = AtomicFile::create(&path).unwrap();
        file.write_all(b"partial").unwrap();
        drop(file);
        assert_eq!(std::fs::read(&path).unwrap(), b"good");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
