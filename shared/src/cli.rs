//! Argument parsing and the exit path every lab shares: bad input and failures end in one
//! clear line on stderr and a non-zero status, never a panic.

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

use crate::Result;

/// Parse the command line into `A` and run `main` with it.
///
/// `--help` and `--version` print and exit 0. A parse error prints its first line (clap's
/// own message names the argument and the reason) and exits 2. An error from `main` prints
/// `lab: error: ...` and exits 1.
pub fn run<A: Parser>(lab: &str, main: impl FnOnce(A) -> Result<()>) -> ExitCode {
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
            let rendered = err.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("{lab}: {first} (see --help)");
            return ExitCode::from(2);
        }
    };
    match main(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{lab}: error: {err}");
            ExitCode::FAILURE
        }
    }
}
