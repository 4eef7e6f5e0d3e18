//! `cargo instructor test`: this crate's tests, through the student's test runner
//! (`xtask::test`), with what grading needs on top of what it probes (a GPU, NVRTC for the
//! CPU device, a C compiler):
//! - the grading tests, which run student code in the sandbox (the sandbox's own unit tests
//!   among them), wherever a sandbox starts; those of the fallback without Landlock only as
//!   root (only root gives the student a user of its own);
//! - the class grader's tests that start a one-node Slurm cluster of their own (tests named
//!   `slurm_*`, ignored by plain `cargo test`) wherever Slurm's daemons and `sbatch` are
//!   found.
//!
//! What was skipped, and why, is in the closing summary, as in `cargo xtask test`, which
//! leaves this crate's tests to this command (its manifest says so).

use std::path::PathBuf;

use xtask::test::Plan;

use crate::sandbox;

/// The tests that grade, running student code in the sandbox (the sandbox's own unit tests
/// among them): skipped, with the reason, where no sandbox can start here.
const SANDBOX_TESTS: &[&str] = &[
    "grade::sandbox::tests::",
    "the_corpus_earns_what_its_honest_part_earns_and_leaves_nothing",
    "two_grades_at_once_both_get_every_mark",
    "a_class_of_five_grades_alike_through_class_and_the_autograder",
    "an_archive_that_attacks_costs_its_own_row",
    "an_entry_decides_nothing_of_how_the_class_is_read",
    "hand_out_grade_and_put_the_solutions_back",
];

/// The sandbox's tests of the fallback without Landlock, which only root can run.
const ROOT_SANDBOX_TESTS: &str = "without_landlock_";

/// The name prefix of the tests that need Slurm's daemons and client commands.
const SLURM_TESTS: &str = "slurm_";

#[derive(clap::Args)]
pub struct Args {
    /// Run the GPU tests whatever the GPU probe says, and fail if no GPU opens
    #[arg(long)]
    require_gpu: bool,
}

pub fn run(args: Args) -> xtask::bins::Result<()> {
    let mut plan = Plan {
        packages: vec!["--package".to_string(), env!("CARGO_PKG_NAME").to_string()],
        ..Plan::default()
    };
    // The grading tests need a sandbox: where none starts they are skipped, and the summary
    // says why (as the GPU tests are), never a panic in each of them.
    let sandbox = sandbox::here();
    let root = sandbox::is_root();
    let sandbox_line = match (&sandbox, root) {
        (Ok(kind), true) => format!("ran in the sandbox here ({kind})"),
        (Ok(kind), false) => format!(
            "ran in the sandbox here ({kind}), but for those of the fallback without Landlock: \
             skipped: they need root"
        ),
        (Err(why), _) => format!("skipped: {why}"),
    };
    if sandbox.is_err() {
        plan.skips
            .extend(SANDBOX_TESTS.iter().map(|test| test.to_string()));
    }
    if !root {
        plan.skips.push(ROOT_SANDBOX_TESTS.to_string());
    }
    let slurm_line = match find_slurm() {
        Ok(dir) => {
            plan.ignored.push(SLURM_TESTS.to_string());
            format!("ran with Slurm from {}", dir.display())
        }
        Err(why) => {
            plan.skips.push(SLURM_TESTS.to_string());
            format!("skipped: {why}")
        }
    };
    plan.lines = vec![
        format!("Slurm tests (a one-node cluster of their own): {slurm_line}"),
        format!("grading tests (student code in the sandbox): {sandbox_line}"),
    ];
    xtask::test::run_plan(None, args.require_gpu, &plan)
}

/// The folder of Slurm's daemons, where `sbatch` is found too; or why not.
fn find_slurm() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .collect();
    let find = |name: &str| dirs.iter().find(|dir| dir.join(name).is_file()).cloned();
    match (find("slurmctld"), find("slurmd"), find("sbatch")) {
        (Some(daemons), Some(_), Some(_)) => Ok(daemons),
        _ => Err("Slurm not found (slurmctld, slurmd and sbatch); \
             `sudo apt-get install slurmctld slurmd slurm-client` installs them"
            .to_string()),
    }
}
