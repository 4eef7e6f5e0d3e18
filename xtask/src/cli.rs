//! How a command of xtask (or of a tool built on its library) ends: help in full, an argument
//! error or a failure in one line, as the labs' own (`shared::cli::run`) do.

use std::process::ExitCode;

use clap::error::ErrorKind;

/// The exit code of a command's outcome: a failure is one line, `xtask: what failed: why`.
pub fn exit_code(outcome: anyhow::Result<ExitCode>) -> ExitCode {
    outcome.unwrap_or_else(|err| {
        // `{:#}` puts anyhow's context chain on one line: "what failed: why".
        shared::cli::eprint_line(&format!("xtask: {err:#}"));
        ExitCode::FAILURE
    })
}

/// Help and version print in full and exit 0 (help with no command exits 2, as clap does);
/// an argument error is one line, like the labs' own (`shared::cli::run`), with clap's tip.
pub fn argument_error(err: &clap::Error) -> ExitCode {
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
    let mut first = first.strip_prefix("error: ").unwrap_or(first).to_string();
    // clap lists the missing arguments on the lines after "...were not provided:".
    if first.ends_with(':') {
        let missing: Vec<&str> = rendered
            .lines()
            .skip(1)
            .map(str::trim)
            .take_while(|line| !line.is_empty())
            .collect();
        first = format!("{first} {}", missing.join(", "));
    }
    let tip = lines
        .find_map(|line| line.strip_prefix("tip: "))
        .map(|tip| format!("; {tip}"))
        .unwrap_or_default();
    shared::cli::eprint_line(&format!("xtask: {first}{tip} (see --help)"));
    ExitCode::from(2)
}
