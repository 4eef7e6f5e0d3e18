//! `cargo xtask`: the student's commands. This file only reads the command line and hands
//! it to the command's module in the library (`lib.rs`), which other tools may share.

use std::process::ExitCode;

use clap::Parser;
use xtask::{
    bench, cli, crosscheck, dist, docs, model, nvrtc, predict, profile, run, sanitize, test, verify,
};

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
    /// Time the GPU labs' kernels on the GPU beside the CPU device's H100 model's predictions
    Model(model::Args),
    /// Without a GPU: your kernels' predicted H100 times against the reference solution's
    Predict(predict::Args),
    /// Run each GPU lab under compute-sanitizer (memcheck; racecheck and synccheck on lab06)
    Sanitize(sanitize::Args),
    /// Install NVRTC into .nvrtc with pip: the CPU device (no GPU) compiles the kernels with it
    InstallNvrtc(nvrtc::Args),
    /// Run a suite of kernels (DIR/crosscheck.toml) on the CPU device and on the GPU; compare
    Crosscheck(crosscheck::Args),
    /// One side of `crosscheck`, run by it in a process of its own
    #[command(name = "crosscheck-side", hide = true)]
    CrosscheckSide(crosscheck::side::SideArgs),
}

fn main() -> ExitCode {
    let command = match Command::try_parse() {
        Ok(command) => command,
        Err(err) => return cli::argument_error(&err),
    };
    cli::exit_code(match command {
        Command::Run(args) => run::run(args),
        Command::Verify(args) => verify::run(args).map(|()| ExitCode::SUCCESS),
        Command::Bench(args) => bench::run(args).map(|()| ExitCode::SUCCESS),
        Command::Test(args) => test::run(args)
            .map(|()| ExitCode::SUCCESS)
            .map_err(anyhow::Error::msg),
        Command::Docs(args) => docs::run(args).map(|()| ExitCode::SUCCESS),
        Command::Profile(args) => profile::run(args).map(|()| ExitCode::SUCCESS),
        Command::Model(args) => model::run(args).map(|()| ExitCode::SUCCESS),
        Command::Predict(args) => predict::run(args).map(|()| ExitCode::SUCCESS),
        Command::Sanitize(args) => sanitize::run(args).map(|()| ExitCode::SUCCESS),
        Command::InstallNvrtc(args) => nvrtc::install(args).map(|()| ExitCode::SUCCESS),
        Command::Crosscheck(args) => crosscheck::run(args),
        Command::CrosscheckSide(args) => crosscheck::side::run(args),
        Command::Dist(args) => dist::run(args)
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

    /// A new lab is one entry of the table: every task that runs labs finds it there, none
    /// by its name (`dist` takes every binary cargo builds).
    #[test]
    fn every_task_picks_up_a_lab_added_to_the_table() {
        use xtask::labs::{self, Device, Exact, KernelRuns, Lab, Table, Variant, Work, LABS};
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
                untimed: &[],
                back_to_back: false,
                model: &[labs::ModelRun {
                    name: "64x64",
                    args: &["64", "64"],
                }],
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
        assert!(
            model::runs(table).iter().any(|(lab, _)| is_lab07(lab)),
            "model"
        );
        let plans = sanitize::plans(table, None).expect("sanitize's plans");
        let lab07_plan = plans.iter().find(|plan| is_lab07(plan.lab));
        assert_eq!(lab07_plan.map(|plan| plan.tools.len()), Some(3), "sanitize");
    }

    /// The notebook for Colab and Kaggle (docs/notebook.ipynb) runs each code cell with bash:
    /// every one is a `%%bash` cell whose script parses (`bash -n`), and every xtask command
    /// in it parses as this xtask's (a flag renamed here fails this test, not a student's
    /// notebook).
    #[test]
    fn the_notebook_s_cells_are_bash_and_its_commands_parse() {
        let path = xtask::bins::workspace_root().join("docs/notebook.ipynb");
        let text = std::fs::read_to_string(&path).expect("the notebook");
        let notebook: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let mut commands = Vec::new();
        for cell in notebook["cells"].as_array().expect("cells") {
            if cell["cell_type"] != "code" {
                continue;
            }
            let lines = cell["source"].as_array().expect("the cell's lines");
            let source: String = lines.iter().filter_map(|line| line.as_str()).collect();
            let script = source.strip_prefix("%%bash\n").expect("a %%bash cell");
            let parsed = std::process::Command::new("bash")
                .args(["-n", "-c", script])
                .status()
                .expect("bash runs");
            assert!(parsed.success(), "{script}");
            for line in script.lines().map(str::trim) {
                let Some(args) = ["dist/xtask ", "cargo xtask "]
                    .iter()
                    .find_map(|command| line.strip_prefix(command))
                else {
                    continue;
                };
                let words = ["cargo xtask"].into_iter().chain(args.split_whitespace());
                if let Err(e) = Command::try_parse_from(words) {
                    panic!("{line}: {e}");
                }
                commands.push(
                    args.split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                );
            }
        }
        assert_eq!(commands, ["install-nvrtc", "dist", "verify", "bench"]);
    }

    #[test]
    fn test_takes_one_lab_but_not_with_a_dist_folder() {
        let Ok(Command::Test(_)) = Command::try_parse_from(["cargo xtask", "test", "lab05"]) else {
            panic!("test LAB parses");
        };
        let both = Command::try_parse_from(["cargo xtask", "test", "lab05", "--bin-dir", "d"]);
        assert!(both.is_err(), "a dist folder's executables are every lab's");
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
