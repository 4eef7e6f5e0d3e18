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
    rayon::ThreadPoolBuilder::new().build_global().map_err(|e| {
        Error::Environment(format!(
            "cannot start the worker threads ({e}); a limit on processes (ulimit -u) or \
                 memory (ulimit -v) is too low: raise it, or ask for fewer threads with \
                 RAYON_NUM_THREADS=1"
        ))
    })
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
