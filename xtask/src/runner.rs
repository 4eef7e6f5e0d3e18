//! Running one lab process for a task: a time limit (a hung lab is killed, not waited on
//! forever), stdout and stderr captured, and every way it can go wrong turned into one
//! [`Failure`] with a one-line message, so a task records a failed row and carries on.

use std::fmt;
use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use shared::timing::LabReport;
use wait_timeout::ChildExt;

/// A run that ended well: exit status 0.
#[derive(Debug)]
pub struct Finished {
    pub stdout: Vec<u8>,
    /// From spawn to exit, measured here: the same clock for every lab.
    pub wall: Duration,
}

/// How a lab run went wrong. Its `Display` is one line, fit for a table cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// It could not be started (a missing binary, no permission, no threads left).
    Spawn(String),
    /// Still running at the time limit, so it was killed.
    TimedOut(Duration),
    /// Ended by a signal or a panic: a fault, never a lab's answer to its input.
    Crashed(String),
    /// Exited non-zero on its own; `message` is its last line on stderr, its one-line error.
    Refused { code: Option<i32>, message: String },
    /// Exited 0, but its output is not what was asked for.
    Malformed(String),
    /// Went over a limit of its whole process tree (memory, disk, files, cores): killed.
    /// Set by a tool that limits a whole tree (a grader's sandbox), never by these commands.
    OverLimit(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Spawn(why) => write!(f, "{why}"),
            Failure::TimedOut(limit) => write!(
                f,
                "timed out after {} s and was killed (raise --time-limit if it is only slow)",
                limit.as_secs()
            ),
            Failure::Crashed(how) => write!(f, "crashed: {how}"),
            Failure::Refused { message, .. } => write!(f, "{message}"),
            Failure::Malformed(why) => write!(f, "{why}"),
            Failure::OverLimit(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for Failure {}

/// Run `command` with stdin closed, capturing its output, killing it after `limit`.
///
/// A lab is one process (rayon and CUDA use threads), so killing it ends the run and closes
/// its pipes.
pub fn run(command: &mut Command, limit: Duration) -> Result<Finished, Failure> {
    let program = command.get_program().to_string_lossy().into_owned();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group: whatever it starts and leaves behind is killed with it, so a
    // child still holding stdout cannot keep the run (and its pipes) open. (Windows has no
    // process groups to kill: there the pipes' grace below bounds the wait instead.)
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(command, 0);
    let started = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| Failure::Spawn(format!("cannot run {program}: {e}")))?;
    // Both pipes drain while the lab runs: a lab that fills one would otherwise block.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let waited = child.wait_timeout(limit);
    let wall = started.elapsed();
    let status = match waited {
        Ok(Some(status)) => Some(status),
        Ok(None) | Err(_) => {
            // Killing a process that has just exited fails harmlessly; `wait` reaps it.
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    };
    kill_group(&child);
    let stdout = collect(stdout);
    let stderr = collect(stderr);
    let status = match (status, waited) {
        (Some(status), _) => status,
        (None, Ok(_)) => return Err(Failure::TimedOut(limit)),
        (None, Err(e)) => return Err(Failure::Spawn(format!("cannot wait for {program}: {e}"))),
    };
    if status.success() {
        return Ok(Finished { stdout, wall });
    }
    Err(failure(status, &String::from_utf8_lossy(&stderr)))
}

/// Run a lab with `--json` and read its report (and the wall time measured here).
pub fn report(command: &mut Command, limit: Duration) -> Result<(LabReport, Duration), Failure> {
    let finished = run(command.arg("--json"), limit)?;
    let report = serde_json::from_slice(&finished.stdout)
        .map_err(|e| Failure::Malformed(format!("its --json output is not a lab report: {e}")))?;
    Ok((report, finished.wall))
}

/// A default time limit for a run that makes `pixels` pixels: a minute to start (a CUDA
/// context, NVRTC) plus 2 s per megapixel. lab01, one core, is the slowest: about
/// 0.06 µs per pixel of the default view and under 0.5 µs where every pixel runs all 255
/// iterations, so the limit leaves room for a machine shared with other work.
pub fn limit_for(pixels: u64) -> Duration {
    Duration::from_secs(60) + Duration::from_nanos(pixels.saturating_mul(2000))
}

/// Kill what is left of the run's process group (the lab itself has ended or been killed).
#[cfg(unix)]
fn kill_group(child: &std::process::Child) {
    if let Ok(group) = i32::try_from(child.id()) {
        // SAFETY: a signal to the group this run made; it may be gone already, harmlessly.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_: &std::process::Child) {}

/// How long the pipes may stay open once the run has ended: a process that left the group
/// (setsid) and kept them is not waited for.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// A reader thread collecting one pipe. With no thread to be had, the pipe is not read:
/// `collect` then yields nothing, and a lab that writes a lot may block until the limit.
type Drain = Option<std::sync::mpsc::Receiver<Vec<u8>>>;

fn drain(pipe: Option<impl Read + Send + 'static>) -> Drain {
    let mut pipe = pipe?;
    let (send, receive) = std::sync::mpsc::channel();
    thread::Builder::new()
        .spawn(move || {
            let mut bytes = Vec::new();
            // A read error ends the capture; what was read still counts.
            let _ = pipe.read_to_end(&mut bytes);
            let _ = send.send(bytes);
        })
        .ok()?;
    Some(receive)
}

fn collect(drain: Drain) -> Vec<u8> {
    drain
        .and_then(|receive| receive.recv_timeout(PIPE_GRACE).ok())
        .unwrap_or_default()
}

/// What a non-zero exit means: a panic (Rust's 101) or a signal is a crash; any other
/// status is the lab refusing, with its own one-line message.
fn failure(status: ExitStatus, stderr: &str) -> Failure {
    let message = last_line(stderr);
    if let Some(signal) = signal(status) {
        return Failure::Crashed(format!("killed by {signal}"));
    }
    match status.code() {
        Some(101) => Failure::Crashed(format!(
            "panicked: {}",
            message.as_deref().unwrap_or("no message")
        )),
        code => Failure::Refused {
            code,
            message: message.map_or_else(
                || format!("failed ({status}) with no message"),
                String::from,
            ),
        },
    }
}

/// A message longer than this is cut: it is a table cell, not a log.
const MESSAGE_CHARS: usize = 300;

/// The last line worth showing: not blank, not Rust's "note: run with RUST_BACKTRACE" hint.
fn last_line(stderr: &str) -> Option<String> {
    let line = stderr
        .lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty() && !line.starts_with("note: "))?;
    Some(match line.char_indices().nth(MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    })
}

#[cfg(unix)]
fn signal(status: ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    let number = status.signal()?;
    let name = match number {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        25 => "SIGXFSZ",
        _ => return Some(format!("signal {number}")),
    };
    Some(format!("signal {number} ({name})"))
}

#[cfg(not(unix))]
fn signal(_: ExitStatus) -> Option<String> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A fake lab: `sh -c SCRIPT`.
    fn lab(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn a_hung_lab_is_killed_at_the_limit() {
        let started = Instant::now();
        let outcome = run(&mut lab("exec sleep 30"), Duration::from_millis(300));
        assert_eq!(
            outcome.err(),
            Some(Failure::TimedOut(Duration::from_millis(300)))
        );
        assert!(
            started.elapsed() < 5 * SECOND,
            "waited {:?}",
            started.elapsed()
        );
    }

    /// A child left holding stdout (a verify run once took 80 s with --time-limit 3).
    #[test]
    fn a_child_holding_stdout_does_not_hold_the_run() {
        let started = Instant::now();
        let outcome = run(&mut lab("sleep 60 & echo done"), 10 * SECOND);
        assert!(outcome.is_ok(), "{outcome:?}");
        assert!(
            started.elapsed() < 5 * SECOND,
            "waited {:?}",
            started.elapsed()
        );
        let detached = run(&mut lab("setsid sleep 60 & echo done"), 10 * SECOND);
        assert!(detached.is_ok());
        assert!(
            started.elapsed() < 10 * SECOND,
            "waited {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn garbage_on_stdout_is_a_malformed_report() {
        let outcome = report(&mut lab("echo 'not json'"), 10 * SECOND);
        let Err(Failure::Malformed(why)) = outcome else {
            panic!("{outcome:?}");
        };
        assert!(
            why.starts_with("its --json output is not a lab report"),
            "{why}"
        );
    }

    #[test]
    fn a_report_is_parsed_with_the_wall_time() {
        let json =
            r#"{"lab":"lab01","width":2,"height":3,"device":"cpu","phases_ms":{"total":1.5}}"#;
        // `sh -c SCRIPT --json`: the flag lands in $0, so the script ignores it.
        let (report, wall) =
            report(&mut lab(&format!("echo '{json}'")), 10 * SECOND).expect("a report");
        assert_eq!(
            (report.lab.as_str(), report.width, report.height),
            ("lab01", 2, 3)
        );
        assert_eq!(report.phases_ms["total"], 1.5);
        assert!(wall < 10 * SECOND);
    }

    #[test]
    fn a_refusal_carries_the_labs_own_last_line() {
        let outcome = run(
            &mut lab("echo progress >&2; echo 'lab09: error: width 0 is not positive' >&2; exit 2"),
            10 * SECOND,
        );
        assert_eq!(
            outcome.err(),
            Some(Failure::Refused {
                code: Some(2),
                message: "lab09: error: width 0 is not positive".to_string()
            })
        );
        let silent = run(&mut lab("exit 1"), 10 * SECOND)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            silent.as_deref(),
            Some("failed (exit status: 1) with no message")
        );
    }

    #[test]
    fn a_signal_or_a_panic_is_a_crash() {
        let killed = run(&mut lab("kill -SEGV $$"), 10 * SECOND).err();
        assert_eq!(
            killed,
            Some(Failure::Crashed(
                "killed by signal 11 (SIGSEGV)".to_string()
            ))
        );
        let panicked = run(
            &mut lab("printf 'thread main panicked at x.rs:1:1:\\nboom\\nnote: run with RUST_BACKTRACE=1\\n' >&2; exit 101"),
            10 * SECOND,
        );
        assert_eq!(
            panicked.err().map(|e| e.to_string()).as_deref(),
            Some("crashed: panicked: boom")
        );
    }

    #[test]
    fn a_missing_binary_cannot_be_started() {
        let outcome = run(&mut Command::new("/nonexistent/lab01"), SECOND);
        let Err(Failure::Spawn(why)) = outcome else {
            panic!("{outcome:?}");
        };
        assert!(why.starts_with("cannot run /nonexistent/lab01: "), "{why}");
    }

    #[test]
    fn output_larger_than_a_pipe_is_captured_whole() {
        let finished = run(
            &mut lab("head -c 1000000 /dev/zero; head -c 300000 /dev/zero >&2"),
            10 * SECOND,
        )
        .expect("it runs");
        assert_eq!(finished.stdout.len(), 1_000_000);
        let noisy = "head -c 300000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last >&2; exit 3";
        let failed = run(&mut lab(noisy), 10 * SECOND);
        assert_eq!(failed.err().map(|e| e.to_string()).as_deref(), Some("last"));
        let long = run(
            &mut lab("head -c 5000 /dev/zero | tr '\\0' x >&2; exit 3"),
            10 * SECOND,
        );
        let message = long.err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            message.chars().count(),
            MESSAGE_CHARS + 1,
            "cut, with an ellipsis"
        );
    }

    #[test]
    fn the_default_limit_grows_with_the_image() {
        assert_eq!(limit_for(0), Duration::from_secs(60));
        assert_eq!(
            limit_for(1 << 20),
            Duration::from_secs(60) + Duration::from_micros(2 << 20)
        );
        assert!(limit_for(16384 * 16384) > Duration::from_secs(500));
        assert!(limit_for(u64::MAX) > limit_for(16384 * 16384));
    }
}
