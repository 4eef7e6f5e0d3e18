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
    /// Grade a student's workspace with this workspace's checks and rubric
    // Boxed: grade's options outweigh every other command's.
    Grade(Box<grade::Args>),
    /// Grade a class: every submission of DIR by `grade`, into a gradebook in OUT
    GradeClass(Box<grade::ClassArgs>),
    /// Write Gradescope's autograder zip: setup.sh, run_autograder and this workspace
    Autograder(autograder::Args),
    /// Write the labs as a Classroom 50 assignment: its runtime and its autograder
    Classroom(classroom::Args),
    /// The instructor's tests: the grader's, the class grader's, the coursework loop
    Test(test::Args),
    /// `cargo xtask model` with the runs the hand-out leaves out (they would answer its
    /// exercises): the whole validation of the CPU device's model of the H100
    Model(xtask::model::Args),
    /// One task of a class's Slurm job array, run by the job script `grade-class --slurm`
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
        Err(err) => {
            return moved_class(std::env::args()).unwrap_or_else(|| cli::argument_error(&err))
        }
    };
    cli::exit_code(match command {
        Command::Handout(args) => handout::run(args).map(|()| ExitCode::SUCCESS),
        Command::Grade(args) => grade::run(&args).map(|()| ExitCode::SUCCESS),
        Command::GradeClass(args) => grade::run_class(*args).map(|()| ExitCode::SUCCESS),
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

/// `grade --class DIR`, the form before `grade-class` was a command of its own: one line
/// that says what to type now (clap's own error would only say that `--class` is unknown).
fn moved_class(mut args: impl Iterator<Item = String>) -> Option<ExitCode> {
    let grade = args.nth(1).is_some_and(|command| command == "grade");
    let class = args.any(|arg| arg == "--class" || arg.starts_with("--class="));
    (grade && class).then(|| {
        shared::cli::eprint_line(
            "xtask: `grade --class DIR` is now a command of its own: cargo instructor \
             grade-class DIR --out OUT (see --help)",
        );
        ExitCode::from(2)
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

    /// The old form of a class's grade names the new command; any other error is clap's.
    #[test]
    fn grade_class_the_old_way_says_what_to_type() {
        let args = |line: &str| line.split(' ').map(String::from).collect::<Vec<_>>();
        assert!(moved_class(args("instructor grade --class c --out o").into_iter()).is_some());
        assert!(moved_class(args("instructor grade --class=c").into_iter()).is_some());
        assert!(moved_class(args("instructor grade s --clas c").into_iter()).is_none());
        assert!(moved_class(args("instructor grade-class --class c").into_iter()).is_none());
    }

    /// The options a class hands to each grade come back as they went: a flag renamed in
    /// `Common` and not in its `to_args` fails here.
    #[test]
    fn common_options_parse_back() {
        let given = grade::Common {
            bin_dir: Some(std::path::PathBuf::from("/dist dir")),
            unsandboxed: true,
            build_time_limit: Some(90),
            no_cpu_device: true,
        };
        let argv = [
            "cargo instructor".into(),
            "grade".into(),
            "submission".into(),
        ]
        .into_iter()
        .chain(given.to_args());
        let Ok(Command::Grade(args)) = Command::try_parse_from(argv) else {
            panic!("{:?} is not a grade's command line", given.to_args());
        };
        assert_eq!(args.common, given);
        assert!(grade::Common::default().to_args().is_empty());
    }
}
