//! `cargo instructor`: the instructor's tools, a crate of their own that the hand-out leaves
//! out whole, so that no student compiles the grader or its dependencies (archives, YAML,
//! Landlock, seccomp). What they share with the student's commands (the labs table, the
//! runner, the comparisons, the test runner) comes from the `xtask` library.
//!
//! This file only reads the command line and hands it to the command's module;
//! INSTRUCTORS.md is the guide.

mod autograder;
mod classroom;
mod files;
mod grade;
mod handout;
mod model;
mod regions;
mod rubric;
mod sandbox;
mod scratch;
mod test;

use std::process::ExitCode;

use clap::Parser;
use xtask::cli;

/// The instructor's tools: the hand-out, grading, and their tests.
#[derive(Parser)]
#[command(
    name = "cargo instructor",
    bin_name = "cargo instructor",
    arg_required_else_help = true
)]
enum Command {
    /// Write the student's workspace: every solution region replaced by its stub
    Handout(handout::Args),
    /// Grade a student's workspace with this workspace's checks and rubric, or a class
    // Boxed: grade's options outweigh every other command's.
    Grade(Box<grade::Args>),
    /// Write Gradescope's autograder zip: setup.sh, run_autograder and this workspace
    Autograder(autograder::Args),
    /// Write the labs as a Classroom 50 assignment: its runtime and its autograder
    Classroom(classroom::Args),
    /// The instructor's tests: the grader's, the class grader's, the coursework loop
    Test(test::Args),
    /// `cargo xtask model` with the runs the hand-out leaves out (they would answer its
    /// exercises): the whole validation of the CPU device's model of the H100
    Model(xtask::model::Args),
    /// One task of a class's Slurm job array, run by the job script `grade --class --slurm`
    /// writes: grade the plan's submission number SLURM_ARRAY_TASK_ID
    #[command(hide = true)]
    ClassTask {
        #[arg(value_name = "PLAN")]
        plan: std::path::PathBuf,
    },
    /// Write what the grader needs beside it in a dist folder, run by `cargo xtask dist`:
    /// the hand-out's digest
    #[command(hide = true)]
    DistFiles {
        #[arg(value_name = "DIR")]
        dir: std::path::PathBuf,
    },
}

fn main() -> ExitCode {
    let command = match Command::try_parse() {
        Ok(command) => command,
        Err(err) => return cli::argument_error(&err),
    };
    cli::exit_code(match command {
        Command::Handout(args) => handout::run(args).map(|()| ExitCode::SUCCESS),
        Command::Grade(args) => grade::run(*args).map(|()| ExitCode::SUCCESS),
        Command::Autograder(args) => autograder::run(args).map(|()| ExitCode::SUCCESS),
        Command::Classroom(args) => classroom::run(args).map(|()| ExitCode::SUCCESS),
        Command::Model(args) => model::run(args).map(|()| ExitCode::SUCCESS),
        Command::ClassTask { plan } => grade::task(&plan).map(|()| ExitCode::SUCCESS),
        Command::DistFiles { dir } => files::write_dist_files(&dir).map(|()| ExitCode::SUCCESS),
        Command::Test(args) => test::run(args)
            .map(|()| ExitCode::SUCCESS)
            .map_err(anyhow::Error::msg),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Command::command().debug_assert();
    }
}
