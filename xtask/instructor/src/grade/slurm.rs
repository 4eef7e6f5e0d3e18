//! Slurm: a class graded on a cluster, one job-array task per submission.
//!
//! `grade-class DIR --out OUT --slurm` writes the class's plan (`OUT/.class/plan.json`:
//! each submission and its digest, and how to grade) and a job script, submits the array
//! with `sbatch --wait`, and gathers the gradebook when the array ends. Each task runs this
//! same instructor binary as `class-task PLAN`, a hidden command: it grades the submission
//! of its `SLURM_ARRAY_TASK_ID` into its own folder `OUT/students/KEY/`, in the sandbox,
//! exactly as a grade on one machine does. So the binary, OUT and the class folder must be at
//! the same paths on every node (a shared file system), and each node needs bubblewrap and,
//! to build the submissions, the Rust toolchain.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// What the array asks of the cluster.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub partition: Option<String>,
    pub gres: Option<String>,
}

/// The name of the tasks' array in `squeue`.
const JOB_NAME: &str = "xtask-grade";

/// Submit `tasks` tasks that grade the plan `plan` with `exe`, wait for the array to end,
/// calling `tick` every few seconds meanwhile; the job's id.
pub fn run_array(
    exe: &Path,
    plan: &Path,
    tasks: usize,
    limit: Duration,
    options: &Options,
    logs: &Path,
    mut tick: impl FnMut(),
) -> Result<String> {
    let sbatch = find("sbatch").context(
        "sbatch not found: --slurm submits a job array from a machine with Slurm's client \
         commands (Debian and Ubuntu: slurm-client)",
    )?;
    std::fs::create_dir_all(logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let script = logs.join("task.sh");
    shared::output::write_file(&script, job_script(exe, plan).as_bytes())?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", script.display()))?;

    let mut command = Command::new(sbatch);
    command
        .args(sbatch_args(tasks, limit, options, logs))
        .arg(&script);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().context("cannot run sbatch")?;
    // `--parsable` prints the job's id as soon as it is queued; `--wait` then holds on.
    let stdout = child.stdout.take().context("sbatch's output")?;
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = send.send(line.trim().to_string());
    });
    let stderr = child.stderr.take().context("sbatch's errors")?;
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::BufReader::new(stderr), &mut text);
        text
    });
    let mut job = String::new();
    let status = loop {
        if job.is_empty() {
            if let Ok(id) = receive.try_recv() {
                job = id.split(';').next().unwrap_or_default().to_string();
                shared::cli::eprint_line(&format!(
                    "xtask: Slurm job {job}: {tasks} tasks, one per submission; waiting for the array to end"
                ));
            }
        }
        if let Some(status) = child.try_wait().context("cannot wait for sbatch")? {
            break status;
        }
        tick();
        std::thread::sleep(Duration::from_secs(2));
    };
    let errors = errors.join().unwrap_or_default();
    if job.is_empty() {
        job = receive.try_recv().unwrap_or_default();
    }
    if job.is_empty() {
        bail!(
            "sbatch did not submit the array ({status}): {}",
            errors.lines().last().unwrap_or("no message")
        );
    }
    if !status.success() {
        shared::cli::eprint_line(&format!(
            "xtask: Slurm job {job} ended with {status}: some tasks failed; their rows say so \
             (logs in {})",
            logs.display()
        ));
    }
    Ok(job)
}

/// sbatch's arguments: the array, its name, its logs, its time, and the user's options.
fn sbatch_args(tasks: usize, limit: Duration, options: &Options, logs: &Path) -> Vec<String> {
    // A task's own time limit, in minutes, with room for the grade's own limit to act first.
    let minutes = limit.as_secs().div_ceil(60) + 5;
    let mut args = vec![
        "--parsable".to_string(),
        "--wait".to_string(),
        format!("--array=0-{}", tasks.saturating_sub(1)),
        format!("--job-name={JOB_NAME}"),
        format!("--output={}/task-%a.log", logs.display()),
        format!("--time={minutes}"),
    ];
    if let Some(partition) = &options.partition {
        args.push(format!("--partition={partition}"));
    }
    if let Some(gres) = &options.gres {
        args.push(format!("--gres={gres}"));
    }
    args
}

/// The job script: this binary, grading one task of the plan.
fn job_script(exe: &Path, plan: &Path) -> String {
    format!(
        "#!/bin/sh\n# One task of a class graded by `instructor grade-class --slurm`: the submission\n\
         # of $SLURM_ARRAY_TASK_ID in the plan, graded into its own folder.\n\
         exec {} class-task {}\n",
        quote(exe),
        quote(plan)
    )
}

/// A path for sh, in single quotes.
fn quote(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', r"'\''"))
}

/// The task this process is, in its array.
pub fn task_index() -> Result<usize> {
    let text = std::env::var("SLURM_ARRAY_TASK_ID")
        .context("class-task runs as a task of a Slurm job array (no SLURM_ARRAY_TASK_ID)")?;
    text.trim()
        .parse()
        .with_context(|| format!("SLURM_ARRAY_TASK_ID is not a task number: {text}"))
}

fn find(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_array_has_one_task_per_submission_and_the_users_options() {
        let options = Options {
            partition: Some("gpu".into()),
            gres: Some("gpu:1".into()),
        };
        let args = sbatch_args(
            5,
            Duration::from_secs(3601),
            &options,
            Path::new("/out/logs"),
        );
        assert_eq!(
            args,
            [
                "--parsable",
                "--wait",
                "--array=0-4",
                "--job-name=xtask-grade",
                "--output=/out/logs/task-%a.log",
                "--time=66",
                "--partition=gpu",
                "--gres=gpu:1"
            ]
        );
    }

    #[test]
    fn the_job_script_quotes_its_paths() {
        let script = job_script(
            Path::new("/opt/x task/xtask"),
            Path::new("/o/it's/plan.json"),
        );
        assert!(script.starts_with("#!/bin/sh\n"));
        assert!(
            script.ends_with("exec '/opt/x task/xtask' class-task '/o/it'\\''s/plan.json'\n"),
            "{script}"
        );
        let output = Command::new("sh")
            .args([
                "-c",
                &format!("set -- {}; echo \"$1\"", quote(Path::new("a'b c"))),
            ])
            .output()
            .expect("sh runs");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "a'b c\n");
    }
}
