//! Argument parsing and the exit path every lab shares: bad input and failures end in one
//! clear line on stderr and a non-zero status, never a panic.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

use crate::{Error, Result};

/// Parse the command line into `A` and run `main` with it.
///
/// `--help` and `--version` print and exit 0. A parse error prints its first line (clap's
/// own message names the argument and the reason) and exits 2. An error from `main` prints
/// `lab: error: ...` and exits 1.
pub fn run<A: Parser>(lab: &'static str, main: impl FnOnce(A) -> Result<()>) -> ExitCode {
    contain_library_panics(lab);
    let args = match A::try_parse() {
        Ok(args) => args,
        Err(err)
            if matches!(
                err.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) =>
        {
            // Nothing useful can be done if stdout is closed.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            eprint_line(&format!("{lab}: {}", one_line(&err.render().to_string())));
            return ExitCode::from(2);
        }
    };
    match main(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprint_line(&format!("{lab}: error: {err}"));
            ExitCode::FAILURE
        }
    }
}

/// clap's message in one line: its first line, plus the list of choices where it gives one
/// (`--backend tpu`: "possible values: cpu, gpu").
fn one_line(rendered: &str) -> String {
    let first = rendered.lines().next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let choices = rendered
        .lines()
        .map(str::trim)
        .find_map(|line| line.strip_prefix("[possible values: "))
        .and_then(|rest| rest.strip_suffix(']'));
    match choices {
        Some(choices) => format!("{first}; the choices are {choices} (see --help)"),
        None => format!("{first} (see --help)"),
    }
}

/// Print `text` and a newline on stderr. If stderr itself cannot be written (`2>/dev/full`),
/// there is nowhere left to say so: unlike `eprintln!`, this does not panic.
pub fn eprint_line(text: &str) {
    let _ = writeln!(io::stderr().lock(), "{text}");
}

/// Print `text` and a newline on stdout, for a program reading it (`--json`).
///
/// A reader that went away (`--json | head -c1`, `| true`) is not an error worth a message:
/// nobody is left to read it. Any other failure (`> /dev/full`) is one error line.
pub fn print_line(text: &str) -> Result<()> {
    let mut stdout = io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(Error::output(Path::new("standard output"), e))
        }
        _ => Ok(()),
    }
}

/// Start rayon's worker threads now, so that a limit on processes (`ulimit -u`) or on
/// memory (`ulimit -v`, which each thread's stack counts against) is one clear line. Left to
/// itself, rayon starts them on first use and panics if it cannot.
pub fn start_threads() -> Result<()> {
    check_thread_request(
        std::env::var("RAYON_NUM_THREADS").ok().as_deref(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    )?;
    rayon::ThreadPoolBuilder::new().build_global().map_err(|e| {
        Error::Environment(format!(
            "cannot start the worker threads ({e}); a limit on processes (ulimit -u) or \
                 memory (ulimit -v) is too low: raise it, or ask for fewer threads with \
                 RAYON_NUM_THREADS=1"
        ))
    })
}

/// More threads than this many per hardware thread only slow a run down (and 20000 of them
/// took minutes just to start).
const THREADS_PER_CORE: usize = 8;

/// Refuse a `RAYON_NUM_THREADS` far beyond what the machine can run at once.
fn check_thread_request(requested: Option<&str>, cores: usize) -> Result<()> {
    let limit = (THREADS_PER_CORE * cores).max(64);
    match requested.map(|n| n.trim().parse::<usize>()) {
        Some(Ok(n)) if n > limit => Err(Error::Usage(format!(
            "RAYON_NUM_THREADS={n} is far more threads than this machine's {cores} hardware \
             threads can run: ask for at most {limit}, or unset it to use one per hardware thread"
        ))),
        _ => Ok(()),
    }
}

/// cudarc loads the CUDA libraries on first use and panics when a library or one of its
/// functions is missing. `Gpu::open` checks for both first; should a library still lack a
/// function (a stub, a driver older than the API level), this turns that panic into the
/// lab's one error line and exit status 1, and leaves every other panic (a bug) as it is.
fn contain_library_panics(lab: &'static str) {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("Missing symbol")
            || message.starts_with("Unable to dynamically load")
        {
            let first = message.split(". ").next().unwrap_or(message);
            eprint_line(&format!(
                "{lab}: error: no usable GPU: a CUDA library is incomplete ({first}); install \
                 the NVIDIA driver (CUDA 12.0 or newer) and NVRTC, or run a CPU lab"
            ));
            std::process::exit(1);
        }
        default(info);
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_thread_counts_are_refused() {
        assert!(check_thread_request(None, 2).is_ok());
        assert!(check_thread_request(Some("64"), 2).is_ok());
        assert!(
            check_thread_request(Some("0"), 2).is_ok(),
            "rayon's own default"
        );
        let error = check_thread_request(Some("20000"), 2)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("RAYON_NUM_THREADS=20000 is far more threads"),
            "{error}"
        );
        assert!(check_thread_request(Some("200"), 32).is_ok());
    }
}
