//! Everything xtask writes: files (atomically, so a full disk never leaves a truncated file
//! over a good one, nor a temporary file behind), lines on stdout (a reader that went away,
//! as in `cargo xtask verify | head`, is not an error) and notes on stderr.

use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context, Result};
use shared::output::Output;

/// Write several files as one result: each appears complete or not at all, and none is
/// moved into place before all are written.
pub fn files(outputs: &[(&Path, &[u8])]) -> Result<()> {
    let mut pending = Vec::with_capacity(outputs.len());
    for &(path, bytes) in outputs {
        let mut file = Output::create(path)?;
        file.write_all(bytes)?;
        pending.push(file);
    }
    shared::output::commit_all(pending)?;
    Ok(())
}

/// Write one file.
pub fn file(path: &Path, bytes: &[u8]) -> Result<()> {
    files(&[(path, bytes)])
}

/// Print `text` on stdout. A closed pipe ends the printing quietly (whoever read it has
/// seen enough); any other failure, a full disk say, is an error.
pub fn print(text: &str) -> Result<()> {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e).context("cannot write to stdout"),
        _ => Ok(()),
    }
}

/// A line on stderr for the person watching. Unlike `eprintln!`, never a panic: with stderr
/// gone there is no one left to tell.
pub fn note(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_appear_together_and_leave_nothing_else() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let (a, b) = (dir.path().join("a.md"), dir.path().join("b.csv"));
        files(&[(&a, b"one"), (&b, b"two")]).expect("written");
        assert_eq!(std::fs::read(&a).ok().as_deref(), Some(&b"one"[..]));
        assert_eq!(std::fs::read(&b).ok().as_deref(), Some(&b"two"[..]));
        assert_eq!(
            std::fs::read_dir(dir.path()).map(Iterator::count).ok(),
            Some(2)
        );
    }

    #[test]
    fn a_failed_output_keeps_the_good_files_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let good = dir.path().join("bench.md");
        std::fs::write(&good, "good").expect("written");
        let missing = dir.path().join("no-such-folder").join("bench.csv");
        let err = files(&[(&good, b"new"), (&missing, b"x")]).expect_err("a missing folder");
        assert!(format!("{err:#}").contains("no-such-folder"), "{err:#}");
        assert_eq!(std::fs::read_to_string(&good).ok().as_deref(), Some("good"));
        assert_eq!(
            std::fs::read_dir(dir.path()).map(Iterator::count).ok(),
            Some(1)
        );
    }
}
