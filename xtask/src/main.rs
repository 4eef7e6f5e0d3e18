//! `cargo xtask`: the labs' task runner, one module per command (rust-analyzer's pattern).
//!
//! Every command that runs labs can use binaries from a `cargo xtask dist` folder instead of
//! cargo (`--bin-dir DIR`), so the same commands work on a GPU machine with no Rust toolchain.

mod bench;
mod bins;
mod chart;
mod dist;
mod gpu;
// BEGIN SOLUTION
mod grade;
mod handout;
// END SOLUTION
mod labs;
mod ppm;
// BEGIN SOLUTION
mod regions;
// END SOLUTION
mod run;
mod test;
mod verify;

use std::process::ExitCode;

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

/// The error type of every command: a message for the user.
pub type Result<T> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let outcome = match Command::parse() {
        Command::Run(args) => run::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Test(args) => test::run(args),
        Command::Dist(args) => dist::run(args),
        // BEGIN SOLUTION
        Command::Handout(args) => handout::run(args),
        Command::Grade(args) => grade::run(args),
        // END SOLUTION
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}
