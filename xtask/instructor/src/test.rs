//! `cargo instructor test`: this crate's tests, through the student's test runner
//! (`xtask::test`), with the needs grading adds to what it probes (a GPU, NVRTC for the CPU
//! device, a C compiler), each declared by a test as the reason it is ignored, as there:
//! - the grading tests, which run student code in the sandbox (the sandbox's own unit tests
//!   among them), wherever a sandbox starts; those of the fallback without Landlock only as
//!   root (only root gives the student a user of its own);
//! - the class grader's tests that start a one-node Slurm cluster of their own wherever
//!   Slurm's daemons and `sbatch` are found.
//!
//! What was skipped, and why, is in the closing summary, as in `cargo xtask test`, which
//! leaves this crate's tests to this command (its manifest says so).

use std::path::PathBuf;

use xtask::needs::Need;
use xtask::test::Plan;

use crate::sandbox;

/// The tests that grade, running student code in the sandbox (the sandbox's own tests among
/// them): they run wherever a sandbox starts.
const SANDBOX: Need = Need {
    reason: "needs a sandbox (cargo instructor test runs it where one starts)",
    on_cpu_device: false,
};

/// The sandbox's tests of the fallback without Landlock: only root gives the student a user
/// of its own.
const ROOT: Need = Need {
    reason: "needs root and a sandbox (cargo instructor test runs it as root where one starts)",
    on_cpu_device: false,
};

/// The class grader's tests that start a one-node Slurm cluster of their own.
const SLURM: Need = Need {
    reason: "needs Slurm's daemons and sbatch (cargo instructor test runs it where they are found)",
    on_cpu_device: false,
};

#[derive(clap::Args)]
pub struct Args {
    /// Run the GPU tests whatever the GPU probe says, and fail if no GPU opens
    #[arg(long)]
    require_gpu: bool,
}

pub fn run(args: Args) -> xtask::bins::Result<()> {
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
    let as_root = match (&sandbox, root) {
        (Ok(_), true) => Ok(()),
        (Ok(_), false) => Err("not root".to_string()),
        (Err(why), _) => Err(why.clone()),
    };
    let slurm = find_slurm();
    let slurm_line = match &slurm {
        Ok(dir) => format!("ran with Slurm from {}", dir.display()),
        Err(why) => format!("skipped: {why}"),
    };
    let plan = Plan {
        packages: vec!["--package".to_string(), env!("CARGO_PKG_NAME").to_string()],
        needs: vec![
            (SANDBOX, sandbox.map(|_| ())),
            (ROOT, as_root),
            (SLURM, slurm.map(|_| ())),
        ],
        lines: vec![
            format!("Slurm tests (a one-node cluster of their own): {slurm_line}"),
            format!("grading tests (student code in the sandbox): {sandbox_line}"),
        ],
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason this crate's tests declare is a need of xtask's or of this command's: a
    /// test whose reason is no need's would never run. (The corpus's submissions are
    /// students' code, not this crate's tests.)
    #[test]
    fn every_declared_reason_is_a_need() {
        let needs: Vec<Need> = xtask::needs::NEEDS
            .iter()
            .copied()
            .chain([SANDBOX, ROOT, SLURM])
            .collect();
        let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let declared = xtask::needs::declared(crate_dir, &|dir| dir.ends_with("submissions"));
        for need in [SANDBOX, ROOT, SLURM] {
            let declares =
                |(_, reason): &&(PathBuf, Option<String>)| reason.as_deref() == Some(need.reason);
            assert!(declared.iter().any(|d| declares(&d)), "{need:?}");
        }
        assert_eq!(
            xtask::needs::unknown(&declared, &needs),
            Vec::<String>::new()
        );
    }
}
