//! One error type for every lab. Its `Display` is the one clear line the user sees.

use std::io;
use std::path::PathBuf;

use cudarc::driver::DriverError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Input that the argument parser accepted but the lab cannot honour.
    #[error("{0}")]
    Usage(String),

    /// The output file could not be created, written or moved into place. The path is the
    /// one the user gave, never a temporary one.
    #[error("cannot write {}: {}", path.display(), explain(source))]
    Output { path: PathBuf, source: io::Error },

    /// The request does not fit in host or device memory.
    #[error("{0}")]
    OutOfMemory(String),

    /// The process's limits (threads, processes) do not allow the run.
    #[error("{0}")]
    Environment(String),

    /// No usable GPU: the driver, NVRTC or a device is missing.
    #[error("{0}")]
    NoGpu(String),

    /// A kernel did not compile. The message carries the options used and the NVRTC log.
    #[error("{0}")]
    Compile(String),

    /// A computed result failed its own check (a wrong sum, a wrong canvas): a bug, not input.
    #[error("{0}")]
    WrongResult(String),

    /// The hand-out's stub of a part the student has not written yet (see `exercise`).
    #[error("{0}")]
    Unfinished(String),

    /// An NCCL call failed (lab05's sum over several GPUs).
    #[error("NCCL failed while {what}: {detail}")]
    Nccl { what: &'static str, detail: String },

    /// A CUDA driver call failed.
    #[error("CUDA error while {what}: {source}")]
    Cuda {
        what: &'static str,
        source: DriverError,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

/// One line for an output error: what went wrong and, where it helps, what to do.
///
/// Told by the error's kind, which every platform maps its own codes to (Windows' too);
/// by the raw code only where std has no stable kind for it.
pub fn explain(error: &io::Error) -> String {
    use io::ErrorKind as Kind;
    let advice = match error.kind() {
        Kind::NotFound => "its folder does not exist; create the folder first or choose another path",
        Kind::NotADirectory => "a part of the path that should be a folder is a file; choose another path",
        Kind::IsADirectory => "it is a folder; add a file name to the path (e.g. DIR/out.ppm)",
        Kind::PermissionDenied => {
            "permission denied; choose a folder you may write to (a new file needs write permission on its folder)"
        }
        Kind::ReadOnlyFilesystem => "the file system is read-only; choose another folder",
        Kind::StorageFull => "no space left on the device; free some space, choose another disk or a smaller size",
        Kind::QuotaExceeded => "the disk quota is exhausted; free some space or choose a smaller size",
        Kind::FileTooLarge => {
            "the file would exceed this shell's file-size limit (ulimit -f); raise it or choose a smaller size"
        }
        #[cfg(unix)]
        Kind::InvalidFilename => "the name is too long (at most 255 bytes per name)",
        // Windows also refuses the characters <>:"/\\|?* in a name.
        #[cfg(not(unix))]
        Kind::InvalidFilename => "the name is not allowed here (too long, or with one of <>:\"|?*); choose another name",
        Kind::ResourceBusy | Kind::ExecutableFileBusy => "the file is busy; choose another path",
        #[cfg(unix)]
        _ if error.raw_os_error() == Some(libc::ELOOP) => "the path is a loop of symbolic links",
        _ => return error.to_string(),
    };
    advice.to_string()
}

impl Error {
    /// An output-file error for `path`.
    pub fn output(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Output {
            path: path.into(),
            source,
        }
    }
}

/// Attach "what was being done" to a driver error: `ctx.alloc(..).cuda("allocating the image")?`.
pub trait CudaResultExt<T> {
    fn cuda(self, what: &'static str) -> Result<T>;
}

impl<T> CudaResultExt<T> for std::result::Result<T, DriverError> {
    fn cuda(self, what: &'static str) -> Result<T> {
        self.map_err(|source| Error::Cuda { what, source })
    }
}

/// `len` zeroed bytes, turning an allocation failure into a clear error instead of an abort.
pub fn try_alloc_bytes(len: usize, what: &str) -> Result<Vec<u8>> {
    let mut buffer = try_with_capacity(len, what)?;
    buffer.resize(len, 0);
    Ok(buffer)
}

/// An empty vector with room for `len` items, or a clear error instead of the abort a plain
/// `Vec::with_capacity` gives when memory runs out (under `ulimit -v`, say). Use it for every
/// allocation whose size comes from the user.
pub fn try_with_capacity<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut items = Vec::new();
    items.try_reserve_exact(len).map_err(|_| {
        Error::OutOfMemory(format!(
            "cannot allocate {} MiB of host memory for {what}; try a smaller size",
            (len.saturating_mul(std::mem::size_of::<T>())).div_ceil(1 << 20)
        ))
    })?;
    Ok(items)
}
