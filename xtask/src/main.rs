//! `cargo xtask`: the labs' task runner, one module per command (rust-analyzer's pattern).
//!
//! Every command that runs labs can use binaries from a `cargo xtask dist` folder instead of
//! cargo (`--bin-dir DIR`), so the same commands work on a GPU machine with no Rust toolchain.
//! What the labs are comes from one table ([`labs`]); each lab process is run through one
//! runner ([`runner`]); each file and line xtask writes goes through [`output`].

mod bench;
mod bins;
mod dist;
mod gpu;
// BEGIN SOLUTION
mod grade;
mod handout;
// END SOLUTION
mod labs;
mod output;
mod ppm;
// BEGIN SOLUTION
mod regions;
// END SOLUTION
mod run;
mod runner;
mod test;
mod verify;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

/// The labs' task runner.
#[derive(Parser)]
#[command(name = "cargo xtask", arg_required_else_help = true)]
enum Command {
    /// Build in release and run one lab: `cargo xtask run lab04 -- 4096 4096`
    Run(run::Args),
    /// Run the Mandelbrot labs and lab05 at several sizes and compare them byte for byte
    Verify(verify::Args),
    /// Time the Mandelbrot labs over sizes 512 to 16384: Markdown table, CSV and SVG chart
    Bench(bench::Args),
    /// The test suite, plus the GPU tests where a GPU is present
    Test(test::Args),
    /// Copy the release binaries (and optionally the test executables) into one folder
    Dist(dist::Args),
    // BEGIN SOLUTION
    /// Write the student's workspace: every solution region replaced by its stub
    Handout(handout::Args),
    /// Grade a student's workspace with this workspace's checks and rubric
    Grade(grade::Args),
    // END SOLUTION
}

/// The error type of `test` and `dist`: a message for the user. The other commands use
/// `anyhow`, whose context chain prints as one line.
pub type Result<T> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let command = match Command::try_parse() {
        Ok(command) => command,
        Err(err) => return argument_error(&err),
    };
    let outcome = match command {
        Command::Run(args) => run::run(args),
        Command::Verify(args) => verify::run(args).map(|()| ExitCode::SUCCESS),
        Command::Bench(args) => bench::run(args).map(|()| ExitCode::SUCCESS),
        Command::Test(args) => test::run(args)
            .map(|()| ExitCode::SUCCESS)
            .map_err(anyhow::Error::msg),
        Command::Dist(args) => dist::run(args)
            .map(|()| ExitCode::SUCCESS)
            .map_err(anyhow::Error::msg),
        // BEGIN SOLUTION
        Command::Handout(args) => handout::run(args).map(|()| ExitCode::SUCCESS),
        Command::Grade(args) => grade::run(args).map(|()| ExitCode::SUCCESS),
        // END SOLUTION
    };
    outcome.unwrap_or_else(|err| {
        // `{:#}` puts anyhow's context chain on one line: "what failed: why".
        output::note(&format!("xtask: {err:#}"));
        ExitCode::FAILURE
    })
}

/// Help and version print in full and exit 0 (help with no command exits 2, as clap does);
/// an argument error is one line, like the labs' own (`shared::cli::run`), with clap's tip.
fn argument_error(err: &clap::Error) -> ExitCode {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Nothing useful can be done if stdout is closed.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            return ExitCode::from(2);
        }
        _ => {}
    }
    let rendered = err.render().to_string();
    let mut lines = rendered.lines().map(str::trim);
    let first = lines.next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let tip = lines
        .find_map(|line| line.strip_prefix("tip: "))
        .map(|tip| format!("; {tip}"))
        .unwrap_or_default();
    output::note(&format!("xtask: {first}{tip} (see --help)"));
    ExitCode::from(2)
}

/// A clap value parser for a whole number above zero, whose messages name the unit:
/// `--runs -1` is "'-1' is not above zero", not clap's "unexpected argument '-1'" (the
/// flags that take it accept a leading hyphen).
pub fn positive<T: TryFrom<u128>>(
    unit: &'static str,
) -> impl Fn(&str) -> Result<T> + Clone + Send + Sync + 'static {
    move |text: &str| {
        let trimmed = text.trim();
        let digits = trimmed.strip_prefix('+').unwrap_or(trimmed);
        let (negative, digits) = match digits.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, digits),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("'{text}' is not a whole number of {unit}"));
        }
        let above_zero = digits.bytes().any(|b| b != b'0');
        if negative || !above_zero {
            return Err(format!(
                "'{text}' is not above zero: give a number of {unit}"
            ));
        }
        digits
            .parse::<u128>()
            .ok()
            .and_then(|value| T::try_from(value).ok())
            .ok_or_else(|| format!("'{text}' is too large a number of {unit}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positive_numbers_name_what_is_wrong() {
        let runs = positive::<u32>("runs");
        assert_eq!(runs("5"), Ok(5));
        assert_eq!(runs(" +7 "), Ok(7));
        assert_eq!(
            runs("-1"),
            Err("'-1' is not above zero: give a number of runs".into())
        );
        assert_eq!(
            runs("0"),
            Err("'0' is not above zero: give a number of runs".into())
        );
        assert_eq!(
            runs("1.5"),
            Err("'1.5' is not a whole number of runs".into())
        );
        assert_eq!(runs("-x"), Err("'-x' is not a whole number of runs".into()));
        assert_eq!(runs(""), Err("'' is not a whole number of runs".into()));
        assert_eq!(
            runs("4294967296"),
            Err("'4294967296' is too large a number of runs".into())
        );
        let samples = positive::<u64>("samples");
        assert_eq!(samples("4294967296"), Ok(1 << 32));
        assert!(samples(&"9".repeat(60)).is_err_and(|e| e.contains("too large")));
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Command::command().debug_assert();
    }
}
