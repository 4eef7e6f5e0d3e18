//! The hand-out's stubs: what a lab says when it runs code the student has not written yet.
//!
//! Each part of a lab that a student writes comes as a stub. A Rust stub calls
//! [`unfinished!`](crate::unfinished); a CUDA stub is a body that compiles and does nothing,
//! with a `// UNFINISHED: what` comment that [`Gpu::compile`](crate::gpu::Gpu::compile)
//! finds before compiling (see [`check_kernel`]).
//! Either way the lab stops with one line naming the file, the line and what is missing.

use crate::{Error, Result};

/// The comment that marks a CUDA stub.
pub const KERNEL_MARK: &str = "// UNFINISHED:";

/// Stop here: this part of the exercise is not written yet.
///
/// `unfinished!("what is missing", used, ...)` prints `FILE:LINE: not written yet: what is
/// missing` and exits with status 1. The values after the message are those the missing
/// code would use (`&mut x` for one it would change); naming them keeps the stub free of
/// unused-variable warnings. The macro has the type of whatever its place
/// needs; in a statement of its own, write `let () = shared::unfinished!(..);`.
///
/// Inside a unit test it panics instead, so the test fails and the others still run.
#[macro_export]
macro_rules! unfinished {
    ($what:expr $(, $used:expr)* $(,)?) => {{
        let _ = ($(&$used,)*);
        $crate::exercise::stop(file!(), line!(), $what, cfg!(test))
    }};
}

/// What [`unfinished!`](crate::unfinished) calls. It returns any type so that a stub fits
/// wherever the code it replaces stood, without making the code after it unreachable.
pub fn stop<T>(file: &str, line: u32, what: &str, in_test: bool) -> T {
    let message = format!(
        "{file}:{line}: not written yet: {what} (the Exercise section of the lab's README says \
         what to write)"
    );
    if in_test {
        panic!("{message}");
    }
    crate::cli::eprint_line(&message);
    std::process::exit(1)
}

/// Refuse a kernel file that still holds a stub: `kernels/FILE:LINE: not written yet: ...`.
///
/// A kernel stub compiles and does nothing, so without this check the lab would run and
/// write an empty image; the student would see a wrong picture instead of the place to work.
pub fn check_kernel(file_name: &str, source: &str) -> Result<()> {
    for (index, line) in source.lines().enumerate() {
        if let Some(what) = line.trim_start().strip_prefix(KERNEL_MARK) {
            return Err(Error::Unfinished(format!(
                "kernels/{file_name}:{}: not written yet: {} (write it, then delete this \
                 comment; the Exercise section of the lab's README says what to write)",
                index + 1,
                what.trim()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_stub_is_refused_with_its_place() {
        let source = "__global__ void k() {\n    // UNFINISHED: the body of k\n}\n";
        let message = check_kernel("k.cu", source).unwrap_err().to_string();
        assert!(
            message.starts_with("kernels/k.cu:2: not written yet: the body of k"),
            "{message}"
        );
    }

    #[test]
    fn a_written_kernel_passes() {
        assert!(check_kernel("k.cu", "__global__ void k() { /* UNFINISHED: no */ }\n").is_ok());
    }

    #[test]
    #[should_panic(expected = "not written yet: the loop")]
    fn the_rust_stub_names_what_is_missing() {
        let used = 3;
        let _: u8 = crate::unfinished!("the loop", used);
    }
}
