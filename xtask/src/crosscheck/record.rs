//! What one side (a child process on the CPU device or on the GPU) tells the parent: one
//! JSON line per event in its record file, and the bytes each kernel left in its buffers and
//! printed, appended to its data file. Lines are flushed as they are written, so that a
//! side that dies mid-kernel (a crash, a hang the parent ends) leaves every kernel before
//! it recorded, and the `Begin` of the one it died in.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Line {
    /// The device opened: its name and the architecture the kernels are compiled for.
    Device { name: String, arch: String },
    /// No device opened, and why (the side then stops).
    Unavailable { why: String },
    /// Kernel `index` (of the selected ones) starts.
    Begin { index: usize },
    /// Kernel `index` is done.
    Done(Outcome),
}

/// How a kernel's launch went on one side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    /// It ran to the end.
    Ok,
    /// NVRTC did not compile it.
    Compile,
    /// The device refused the module (at load) or the launch (before running).
    Refused,
    /// It started and stopped with an error (an illegal address, a trap, an assert).
    Fault,
    /// It ran past the deadline (the CPU device stopped it) or the parent's watchdog.
    Timeout,
    /// The side's process died during it.
    Crash,
    /// The suite's own mistake: no such entry, a buffer that could not be allocated.
    Setup,
}

impl Status {
    pub fn word(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Compile => "compile error",
            Status::Refused => "refused",
            Status::Fault => "fault",
            Status::Timeout => "timeout",
            Status::Crash => "crash",
            Status::Setup => "setup error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub index: usize,
    pub status: Status,
    /// The device's, NVRTC's or the side's own line where it did not run.
    #[serde(default)]
    pub line: String,
    /// Each buffer after the launch, in argument order.
    #[serde(default)]
    pub buffers: Vec<Stored>,
    /// What its printfs printed.
    #[serde(default)]
    pub printf: Option<Stored>,
    /// Wall time of the launch and its synchronisation, milliseconds.
    #[serde(default)]
    pub ms: f64,
}

impl Outcome {
    pub fn failed(index: usize, status: Status, line: impl Into<String>) -> Outcome {
        Outcome {
            index,
            status,
            line: line.into(),
            buffers: Vec::new(),
            printf: None,
            ms: 0.0,
        }
    }
}

/// Bytes kept in the side's data file: where, how many, and their digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    /// The kernel argument's number (0 for printf's output).
    pub arg: usize,
    pub offset: u64,
    pub len: u64,
    pub digest: String,
}

/// The first 16 hex digits of the SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Append one line to the record file and flush it.
pub fn append(file: &mut std::fs::File, line: &Line) -> Result<()> {
    let mut text = serde_json::to_string(line).context("writing a record")?;
    text.push('\n');
    file.write_all(text.as_bytes())
        .and_then(|()| file.flush())
        .context("writing the record file")
}

/// Every whole line of a record file (a line cut short by a crash is left out).
pub fn read(path: &Path) -> Result<Vec<Line>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut lines = Vec::new();
    for line in text.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break;
        }
        let parsed = serde_json::from_str(line)
            .with_context(|| format!("{} holds a line that is not a record", path.display()))?;
        lines.push(parsed);
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_go_and_come_back_and_a_cut_line_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut file = std::fs::File::create(&path).unwrap();
        let lines = [
            Line::Device {
                name: "CPU".into(),
                arch: "compute_90".into(),
            },
            Line::Begin { index: 0 },
            Line::Done(Outcome {
                buffers: vec![Stored {
                    arg: 1,
                    offset: 0,
                    len: 4,
                    digest: digest(b"abcd"),
                }],
                ..Outcome::failed(0, Status::Ok, "")
            }),
        ];
        for line in &lines {
            append(&mut file, line).unwrap();
        }
        file.write_all(b"{\"Begin\":{\"ind").unwrap();
        assert_eq!(read(&path).unwrap(), lines);
        assert!(read(&dir.path().join("none")).unwrap().is_empty());
    }

    #[test]
    fn digests_are_short_and_stable() {
        assert_eq!(digest(b""), "e3b0c44298fc1c14");
    }
}
