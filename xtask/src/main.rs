//! `cargo xtask`: the labs' task runner, one module per command (rust-analyzer's pattern).
//!
//! Every command that runs labs can use binaries from a `cargo xtask dist` folder instead of
//! cargo (`--bin-dir DIR`), so the same commands work on a GPU machine with no Rust toolchain.
//! What the labs are comes from one table ([`labs`]); each lab process is run through one
//! runner ([`runner`]); each file xtask writes goes through `shared::output`, each line
//! through `shared::cli`'s printers (a closed stdout is no panic).

mod bench;
mod bins;
mod csv;
mod dist;
mod docs;
mod format;
mod gpu;
// BEGIN INSTRUCTOR
mod grade;
mod handout;
// END INSTRUCTOR
mod labs;
mod nvrtc;
mod ppm;
mod profile;
mod recorded;
// BEGIN INSTRUCTOR
mod regions;
// END INSTRUCTOR
mod run;
mod runner;
mod sanitize;
mod test;
mod values;
mod verify;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

/// The labs' task runner.
#[derive(Parser)]
// `bin_name` too: clap's usage lines take the executable's name ("xtask") otherwise, and
// the command a reader types is `cargo xtask`.
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    arg_required_else_help = true
)]
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
    /// Regenerate the READMEs' tables of figures from the recorded runs in docs/*.csv
    Docs(docs::Args),
    /// Run one GPU lab under Nsight Compute (ncu) and print where its kernels' time goes
    Profile(profile::Args),
    /// Run each GPU lab under compute-sanitizer (memcheck; racecheck and synccheck on lab06)
    Sanitize(sanitize::Args),
    // BEGIN INSTRUCTOR
    /// Write the student's workspace: every solution region replaced by its stub
    Handout(handout::Args),
    /// Grade a student's workspace with this workspace's checks and rubric, or a class
    Grade(grade::Args),
    /// Write Gradescope's autograder zip: setup.sh, run_autograder and this workspace
    Autograder(grade::gradescope::Args),
    /// Write GitHub Classroom's autograding workflow into a hand-out's folder
    Classroom(grade::classroom::Args),
    // END INSTRUCTOR
}

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
        Command::Docs(args) => docs::run(args).map(|()| ExitCode::SUCCESS),
        Command::Profile(args) => profile::run(args).map(|()| ExitCode::SUCCESS),
        Command::Sanitize(args) => sanitize::run(args).map(|()| ExitCode::SUCCESS),
        Command::Dist(args) => dist::run(args)
            .map(|()| ExitCode::SUCCESS)
            .map_err(anyhow::Error::msg),
        // BEGIN INSTRUCTOR
        Command::Handout(args) => handout::run(args).map(|()| ExitCode::SUCCESS),
        Command::Grade(args) => grade::run(args).map(|()| ExitCode::SUCCESS),
        Command::Autograder(args) => grade::gradescope::run(args).map(|()| ExitCode::SUCCESS),
        Command::Classroom(args) => grade::classroom::run(args).map(|()| ExitCode::SUCCESS),
        // END INSTRUCTOR
    };
    outcome.unwrap_or_else(|err| {
        // `{:#}` puts anyhow's context chain on one line: "what failed: why".
        shared::cli::eprint_line(&format!("xtask: {err:#}"));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Command::command().debug_assert();
    }

    /// A new lab is one entry of the table: every task that runs labs finds it there, none
    /// by its name.
    #[test]
    fn every_task_picks_up_a_lab_added_to_the_table() {
        use labs::{Device, Exact, KernelRuns, Lab, Table, Variant, Work, LABS};
        static LAB07: [Variant; 1] = [Variant {
            label: "lab07",
            flags: &[],
            device: Device::Gpu,
        }];
        let lab07 = Lab {
            name: "lab07",
            package: "lab07-tensor-cores",
            work: Work::Mandelbrot,
            exact: Exact::Required,
            variants: &LAB07,
            kernels: Some(KernelRuns {
                profile: &["64", "64"],
                recorded: (&["8192", "8192"], 1),
                sanitize: &["33", "21"],
                shared_memory: true,
            }),
        };
        let table: Table = Vec::leak(LABS.iter().cloned().chain([lab07]).collect());
        let is_lab07 = |lab: &Lab| lab.name == "lab07";
        let parsed = |line: &[&str]| Command::try_parse_from(line).expect("a command line");

        assert!(labs::find_in(table, "7").is_ok_and(is_lab07), "run");
        assert!(verify::checked(table).any(is_lab07), "verify");
        let timed = bench::choose(table, &[], true).expect("bench's default labs");
        assert!(timed.iter().any(|program| is_lab07(program.lab)), "bench");
        for lab in ["all", "lab07"] {
            let Command::Profile(args) = parsed(&["cargo xtask", "profile", lab]) else {
                panic!("profile parses as profile");
            };
            let runs = profile::runs(table, &args).expect("profile's runs");
            assert!(
                runs.iter().any(|(lab, _, _)| is_lab07(lab)),
                "profile {lab}"
            );
        }
        let plans = sanitize::plans(table, None).expect("sanitize's plans");
        let lab07_plan = plans.iter().find(|plan| is_lab07(plan.lab));
        assert_eq!(lab07_plan.map(|plan| plan.tools.len()), Some(3), "sanitize");
        assert!(dist::binaries(table).any(|name| name == "lab07"), "dist");
    }

    #[test]
    fn usage_lines_name_the_command_a_reader_types() {
        use clap::CommandFactory;
        let mut command = Command::command();
        // Subcommands' names are completed when the command line is parsed, or here.
        command.build();
        let usage = command.render_usage().to_string();
        assert_eq!(usage, "Usage: cargo xtask <COMMAND>");
        let verify = command
            .find_subcommand_mut("verify")
            .expect("verify")
            .render_long_help()
            .to_string();
        assert!(verify.contains("Usage: cargo xtask verify"), "{verify}");
        assert!(verify.contains("zoom"), "{verify}");
    }
}
