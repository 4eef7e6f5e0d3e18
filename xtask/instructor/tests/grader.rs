//! The grader against a corpus of hostile and wrong submissions (`tests/submissions/*/`):
//! each earns exactly what its honest part earns, grading ends within its limits, and
//! afterwards the instructor's workspace and reference binaries are unchanged, no process
//! of the submission is alive, no file of it is left outside the grade's own folder, and
//! nothing it read found its way into the results.
//!
//! A submission is a `submission.toml`: the hand-out (`base = "handout"`) or the hand-out
//! with the solutions (`"solved"`), changed by `remove`, `[[write]]`, `[[inject]]` (code put
//! after a given line) and `[[link]]` (symbolic links; `{workspace}` is this workspace, there
//! and in injected code). `says` is text the grade's report must hold (the limit that stopped
//! an attack: "used more than 4 GiB of memory"), and `check_seconds` how long each check may
//! take at most (both, for an entry with `on_cpu_device`, where that lab is so graded);
//! `cores = N` grades it pinned to the first N cores, as a class slot is (skipped on a
//! machine without more). `layer` is the defence it attacks, which decides the passes that
//! grade it ([`Layer`]). `CORPUS_ONLY=a,b` grades those entries alone. `on_cpu_device`,
//! where given, names the GPU lab an entry attacks and what it earns when that lab alone is
//! graded with the CPU device (`grade --only LAB`: half a minute less than a whole grade's
//! CPU device runs): such an entry is graded so where NVRTC is found, else as the others are
//! and must earn `points_here`.
//! Every process an attack starts carries `corpus-attack` in its command line, and every
//! file it writes outside its output has `corpus-attack` in its name, so that the checks
//! below find what a failed defence would have left.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use xtask_test_support::{binary, cargo_run, copy_dir, workspace};

/// The build limit the corpus grades with: a lab builds in well under it (6 s at most on a
/// busy 2-core machine), a compile-time loop is cut off at it.
const BUILD_LIMIT_S: &str = "30";

/// How long one grade may take here, building included.
const GRADE_LIMIT: Duration = Duration::from_secs(420);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Submission {
    what: String,
    stopped_by: String,
    /// Which defence it attacks, and so which of CI's passes grade it.
    layer: Layer,
    base: String,
    /// Points earned on a machine without a GPU, speed checks left out.
    points_here: f64,
    /// The attacked GPU lab's points graded alone with the CPU device: for attacks on the
    /// GPU labs' checks.
    #[serde(default)]
    on_cpu_device: Option<OnCpuDevice>,
    /// The speed check: "earned" (the honest part's credit, more than none), "none", or
    /// "any" (an attack that slows its own runs).
    #[serde(default)]
    speed: Option<String>,
    /// What the grade's output must say (the limit that stopped it, for one).
    #[serde(default)]
    says: Option<String>,
    /// Seconds each graded check may take at most, its references included (the grade's log
    /// gives each check's): a kernel that never ends costs seconds a check, not its limit.
    #[serde(default)]
    check_seconds: Option<f64>,
    /// Grade pinned to this many of the machine's first cores, as a class slot is (`grade-class
    /// --gpus N` gives each grade its share); skipped where the machine has no more.
    #[serde(default)]
    cores: Option<usize>,
    #[serde(default)]
    remove: Vec<String>,
    #[serde(default)]
    write: Vec<Write>,
    #[serde(default)]
    inject: Vec<Inject>,
    #[serde(default)]
    link: Vec<Link>,
}

/// The layer of the grader an entry attacks. CI grades the corpus in three sandboxes; only
/// what differs between them is graded in each (the whole corpus in each took CI past its 35
/// minutes).
#[derive(Deserialize, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "lowercase")]
enum Layer {
    /// The grader's own logic (the intake, the checks, the references, the report), the same
    /// whichever sandbox runs the student's code: graded in the first pass (bubblewrap's).
    Grader,
    /// The sandbox's defences (namespaces, limits, sessions): graded in every sandbox.
    Sandbox,
    /// What the fallback guards with Landlock (files, /proc, signals): graded in every
    /// sandbox, and by the fallback without Landlock, which guards them with file modes.
    Landlock,
}

/// The GPU lab an entry attacks, and what it earns graded alone on the CPU device.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OnCpuDevice {
    only: String,
    points: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Write {
    path: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    append: bool,
    /// Replace the first string by the second in the base's file.
    #[serde(default)]
    replace: Option<(String, String)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Inject {
    file: String,
    after: String,
    code: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Link {
    path: String,
    target: String,
}

/// Run `COMMAND ARGS OUT`, which must succeed (a hand-out, a dist folder).
fn run_into(mut command: Command, args: &[&str], out: &Path) {
    let status = command.args(args).arg(out).status().expect("it runs");
    assert!(status.success(), "{command:?} {}", out.display());
}

/// Lay `submission` out in `dir` from its base.
fn lay_out(submission: &Submission, bases: &BTreeMap<&str, PathBuf>, dir: &Path, port: u16) {
    copy_dir(&bases[submission.base.as_str()], dir);
    for path in &submission.remove {
        let at = dir.join(path);
        if at.is_dir() {
            fs::remove_dir_all(&at).expect("removed");
        } else {
            fs::remove_file(&at).expect("removed");
        }
    }
    for write in &submission.write {
        let at = dir.join(&write.path);
        fs::create_dir_all(at.parent().expect("a folder")).expect("created");
        let old = fs::read_to_string(&at).unwrap_or_default();
        let new = match (&write.replace, &write.text) {
            (Some((a, b)), _) => {
                assert!(old.contains(a.as_str()), "{}: no {a:?}", write.path);
                old.replacen(a.as_str(), b, 1)
            }
            (None, Some(text)) if write.append => format!("{old}{text}\n"),
            (None, Some(text)) => format!("{text}\n"),
            (None, None) => panic!("{}: a write needs text or replace", write.path),
        };
        fs::write(&at, new).expect("written");
    }
    for inject in &submission.inject {
        let at = dir.join(&inject.file);
        let text = fs::read_to_string(&at).expect("the file to inject into");
        let place = text
            .find(inject.after.as_str())
            .unwrap_or_else(|| panic!("{}: no line {:?}", inject.file, inject.after))
            + inject.after.len();
        let code = inject
            .code
            .replace("{port}", &port.to_string())
            .replace("{workspace}", &workspace().to_string_lossy());
        fs::write(
            &at,
            format!("{}\n{code}\n{}", &text[..place], &text[place..]),
        )
        .expect("written");
    }
    for link in &submission.link {
        let target = link
            .target
            .replace("{workspace}", &workspace().to_string_lossy());
        std::os::unix::fs::symlink(target, dir.join(&link.path)).expect("a link");
    }
}

/// What a defence that failed would leave: attack processes, files named `corpus-attack*`.
/// A process is read by each of its threads: one whose first thread exited alone shows no
/// command line of its own, though its other threads run on.
fn leftovers() -> Vec<String> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let threads = fs::read_dir(entry.path().join("task"))
            .into_iter()
            .flatten();
        if threads.flatten().any(|thread| {
            let cmdline = fs::read(thread.path().join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains("corpus-attack")
        }) {
            found.push(format!("process {}", entry.file_name().to_string_lossy()));
        }
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let folders = [
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
        PathBuf::from("/"),
        PathBuf::from(home),
        workspace(),
        workspace().join("target"),
        workspace().join("target/release"),
    ];
    for folder in folders {
        for entry in fs::read_dir(&folder).into_iter().flatten().flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with("corpus-attack")
            {
                found.push(entry.path().display().to_string());
            }
        }
    }
    found
}

/// The state of the instructor's workspace: what git sees, and the reference binaries the
/// grader uses (`bin_dir`).
fn workspace_state(bin_dir: &Path) -> (String, Vec<(String, String)>) {
    let status = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(workspace())
        .output()
        .expect("git runs");
    let mut digests = Vec::new();
    for lab in ["lab01", "lab02", "lab03", "lab04", "lab05", "lab06"] {
        let bytes = fs::read(bin_dir.join(lab)).unwrap_or_default();
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        digests.push((lab.to_string(), digest));
    }
    (
        String::from_utf8_lossy(&status.stdout).into_owned(),
        digests,
    )
}

/// Grade `dir` with the reference binaries in `bin_dir`, pinned to the first `cores` cores
/// where given; with the CPU device only where `only` names a lab, that lab alone:
/// results.json's tests, the stdout, the time it took, and the longest any check took.
fn grade(
    dir: &Path,
    bin_dir: &Path,
    results: &Path,
    cores: Option<usize>,
    only: Option<&str>,
) -> (Vec<Value>, String, Duration, f64) {
    let started = Instant::now();
    let mut command = binary("instructor");
    if let Some(cores) = cores {
        use std::os::unix::process::CommandExt;
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET stays below CPU_SETSIZE; the
        // closure makes one system call in the child before exec.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for core in 0..cores.min(64) {
            unsafe { libc::CPU_SET(core, &mut set) };
        }
        unsafe {
            command.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    command.arg("grade").arg(dir);
    // The GPU checks on the CPU device are the coursework test's, and the GPU attacks' here
    // (their own lab's): for every entry they would add a minute to each of the corpus's
    // grades.
    match only {
        Some(lab) => command.args(["--only", lab]),
        None => command.arg("--no-cpu-device"),
    };
    let mut child = command
        .args(["--build-time-limit", BUILD_LIMIT_S, "--bin-dir"])
        .arg(bin_dir)
        .arg("--gradescope")
        .arg(results)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("xtask runs");
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read");
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read");
    let status = child.wait().expect("xtask ends");
    let took = started.elapsed();
    assert!(
        status.success(),
        "grade {} failed:\n{stdout}\n{stderr}",
        dir.display()
    );
    let json: Value = serde_json::from_slice(&fs::read(results).expect("results.json"))
        .expect("results.json is JSON");
    let tests = json["tests"].as_array().expect("tests").clone();
    // The log's line after each check: "xtask:   3 of 3 points, 1.4 s".
    let slowest = stderr
        .lines()
        .filter_map(|line| line.strip_prefix("xtask:   ")?.split(" points, ").nth(1))
        .filter_map(|seconds| seconds.strip_suffix(" s")?.parse::<f64>().ok())
        .fold(0.0, f64::max);
    (tests, stdout, took, slowest)
}

fn is_speed(test: &Value) -> bool {
    test["name"]
        .as_str()
        .unwrap_or_default()
        .contains("time against the solution")
}

#[test]
#[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
fn the_corpus_earns_what_its_honest_part_earns_and_leaves_nothing() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let handout = scratch.path().join("handout");
    let solved = scratch.path().join("solved");
    run_into(binary("instructor"), &["handout", "--out"], &handout);
    run_into(
        binary("instructor"),
        &["handout", "--solved", "--out"],
        &solved,
    );
    let bases: BTreeMap<&str, PathBuf> = [("handout", handout), ("solved", solved)].into();
    // The reference binaries, built once: the grades use these, and nothing may change them.
    let bin_dir = scratch.path().join("dist");
    run_into(cargo_run("xtask"), &["dist", "--out"], &bin_dir);
    // A server on the loopback that no sandboxed process may reach.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("an address").port();
    // And an abstract unix socket (no file guards it), named after that port.
    let abstract_socket = {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("corpus-attack-{port}");
        let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
            .expect("an abstract address");
        std::os::unix::net::UnixListener::bind_addr(&address).expect("an abstract socket")
    };
    abstract_socket.set_nonblocking(true).expect("non-blocking");

    let before = workspace_state(&bin_dir);
    let mut corpus: Vec<PathBuf> =
        fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/submissions"))
            .expect("the corpus")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("submission.toml").is_file())
            .collect();
    corpus.sort();
    assert!(corpus.len() >= 30, "the corpus: {corpus:?}");

    // Every description first: a malformed one fails before minutes of grading.
    let corpus: Vec<(String, Submission)> = corpus
        .iter()
        .map(|path| {
            let name = path
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            let text = fs::read_to_string(path.join("submission.toml")).expect("submission.toml");
            let submission: Submission =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{name}/submission.toml: {e}"));
            assert!(
                !submission.what.is_empty() && !submission.stopped_by.is_empty(),
                "{name}"
            );
            (name, submission)
        })
        .collect();

    // CI grades the corpus three times and names the sandbox each pass must have run in:
    // CORPUS_SANDBOX=bubblewrap; =fallback under `capsh --drop=cap_sys_admin`; and
    // =fallback-without-landlock there with XTASK_TEST_NO_LANDLOCK=1, the grader's test hook
    // that takes the kernel to have no Landlock.
    let pass = std::env::var("CORPUS_SANDBOX")
        .ok()
        .map(|name| match name.as_str() {
            "bubblewrap" => ("a bubblewrap sandbox", Layer::Grader),
            "fallback" => ("the fallback sandbox", Layer::Sandbox),
            "fallback-without-landlock" => {
                ("the fallback sandbox without Landlock", Layer::Landlock)
            }
            other => panic!(
                "CORPUS_SANDBOX={other}: give bubblewrap, fallback or fallback-without-landlock"
            ),
        });
    let expected_sandbox = pass.map(|(sandbox, _)| sandbox);
    // The pass grades the layers from its own down: Grader all, Sandbox the sandbox's and
    // Landlock's, Landlock Landlock's alone.
    let graded_here = |layer: Layer| match pass.map_or(Layer::Grader, |(_, from)| from) {
        Layer::Grader => true,
        Layer::Sandbox => layer != Layer::Grader,
        Layer::Landlock => layer == Layer::Landlock,
    };
    // The CPU device needs NVRTC (the README's set-up); without it the GPU attacks are graded
    // as the others are.
    let on_cpu_device = shared::nvrtc::is_present();
    let mut failures = Vec::new();
    let mut written = Vec::new();
    let mut table = String::from("submission | points here | seconds\n");
    // CORPUS_ONLY=a,b grades those entries alone (every description is still read).
    let only: Option<Vec<String>> = std::env::var("CORPUS_ONLY")
        .ok()
        .map(|names| names.split(',').map(str::to_string).collect());
    let corpus: Vec<&(String, Submission)> = corpus
        .iter()
        .filter(|(name, submission)| {
            only.as_ref().is_none_or(|o| o.contains(name)) && graded_here(submission.layer)
        })
        .collect();
    for (n, (name, submission)) in corpus.iter().enumerate() {
        // A line on the terminal per grade (libtest keeps `eprintln!` back until the end).
        shared::cli::eprint_line(&format!(
            "corpus: grading {} of {}: {name}",
            n + 1,
            corpus.len()
        ));
        let dir = scratch.path().join(name);
        lay_out(submission, &bases, &dir, port);
        let results = scratch.path().join(format!("{name}.json"));
        let machine = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cores = submission.cores.filter(|&c| c < machine);
        if submission.cores.is_some() && cores.is_none() {
            shared::cli::eprint_line(&format!("corpus: {name} skipped: no core to spare here"));
            continue;
        }
        let (expected, only) = match &submission.on_cpu_device {
            Some(lab) if on_cpu_device => (lab.points, Some(lab.only.as_str())),
            _ => (submission.points_here, None),
        };
        let (tests, stdout, took, slowest) = grade(&dir, &bin_dir, &results, cores, only);
        let graded = |test: &&Value| {
            !test["output"]
                .as_str()
                .unwrap_or_default()
                .starts_with("not graded here")
        };
        let sum = |speed: bool| -> f64 {
            tests
                .iter()
                .filter(graded)
                .filter(|t| is_speed(t) == speed)
                .map(|t| t["score"].as_f64().unwrap_or(-1.0))
                // Not `sum`: f64's sum of nothing is -0.0, which the row would show as "-0".
                .fold(0.0, |total, score| total + score)
        };
        let (points, speed) = (sum(false), sum(true));
        let row = format!(
            "{name} | {points} + speed {speed} | {:.0}",
            took.as_secs_f64()
        );
        // The CI log shows each submission as it is graded.
        shared::cli::eprint_line(&row);
        table.push_str(&row);
        table.push('\n');
        let mut wrong = Vec::new();
        if (points - expected).abs() > 1e-9 {
            wrong.push(format!(
                "earned {points} (speed aside), expected {expected}{}",
                only.map_or(String::new(), |lab| format!(
                    " for {lab} alone on the CPU device"
                ))
            ));
        }
        // A GPU lab graded alone has no speed check that runs here: the speed is a whole
        // grade's.
        match submission.speed.as_deref().filter(|_| only.is_none()) {
            Some("earned") if speed <= 0.0 => {
                wrong.push("no speed credit for the honest part".into())
            }
            None | Some("none") if speed != 0.0 => wrong.push(format!("speed credit {speed}")),
            _ => {}
        }
        // What an entry attacking a GPU lab says is the CPU device's, where it grades.
        let says = submission
            .says
            .as_ref()
            .filter(|_| only.is_some() || submission.on_cpu_device.is_none());
        if let Some(said) = says {
            if !stdout.contains(said.as_str()) {
                wrong.push(format!("the grade does not say {said:?}"));
            }
        }
        if let Some(most) = submission.check_seconds.filter(|_| only.is_some()) {
            if slowest > most {
                wrong.push(format!("a check took {slowest} s, more than {most} s"));
            }
        }
        if took > GRADE_LIMIT {
            wrong.push(format!("grading took {took:?}"));
        }
        if let Some(sandbox) = &expected_sandbox {
            if !stdout.contains(&format!("Grading: student code ran in {sandbox}")) {
                wrong.push(format!("not graded in {sandbox}"));
            }
        }
        // The report is the grader's alone: no control character (an ANSI escape, a CR),
        // no bidi override, and one total line, the last.
        if stdout
            .chars()
            .any(|c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
        {
            wrong.push("a control or bidi character reached the report".into());
        }
        let totals = stdout.lines().filter(|l| l.starts_with("total: ")).count();
        if totals != 1
            || !stdout
                .trim_end()
                .lines()
                .last()
                .is_some_and(|l| l.starts_with("total: "))
        {
            wrong.push(format!("{totals} total lines in the report, or not last"));
        }
        let bytes = fs::read(&results).expect("results.json");
        if String::from_utf8_lossy(&bytes).contains("LEAKED") || stdout.contains("LEAKED") {
            wrong.push("something it read or reached shows in the results".into());
        }
        written.push((name.clone(), results, bytes));
        let left = leftovers();
        if !left.is_empty() {
            wrong.push(format!("left behind: {left:?}"));
        }
        let after = workspace_state(&bin_dir);
        if after != before {
            wrong.push(format!(
                "the instructor's workspace or reference binaries changed: {before:?} then {after:?}"
            ));
        }
        if listener.accept().is_ok() {
            wrong.push("reached a server on the loopback".into());
        }
        if abstract_socket.accept().is_ok() {
            wrong.push("reached an abstract unix socket".into());
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "{name} ({}): {}\n{stdout}",
                submission.what,
                wrong.join("; ")
            ));
        }
    }
    // Nothing rewrote a results file once its grader was done (a process left behind would
    // have had the whole corpus's time to do it).
    std::thread::sleep(Duration::from_secs(5));
    for (name, results, bytes) in written {
        let link = fs::symlink_metadata(&results).map_or(true, |m| m.file_type().is_symlink());
        if link || fs::read(&results).ok() != Some(bytes) {
            failures.push(format!(
                "{name}: results.json changed after the grader exited"
            ));
        }
    }
    assert!(failures.is_empty(), "{}\n\n{table}", failures.join("\n\n"));
}

/// Two grades at once, of the same solution, each in its own folders: both full marks.
#[test]
#[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
fn two_grades_at_once_both_get_every_mark() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let solved = scratch.path().join("solved");
    run_into(
        binary("instructor"),
        &["handout", "--solved", "--out"],
        &solved,
    );
    let second = scratch.path().join("solved-again");
    copy_dir(&solved, &second);
    let bin_dir = scratch.path().join("dist");
    run_into(cargo_run("xtask"), &["dist", "--out"], &bin_dir);
    let grades: Vec<_> = [solved, second]
        .into_iter()
        .enumerate()
        .map(|(i, dir)| {
            let results = scratch.path().join(format!("{i}.json"));
            let bin_dir = bin_dir.clone();
            std::thread::spawn(move || grade(&dir, &bin_dir, &results, None, None))
        })
        .collect();
    for grade in grades {
        let (tests, stdout, _, _) = grade.join().expect("a grade");
        for test in tests.iter().filter(|t| {
            !t["output"]
                .as_str()
                .unwrap_or_default()
                .starts_with("not graded here")
        }) {
            let full = test["score"] == test["max_score"]
                || (is_speed(test) && test["score"].as_f64() > Some(0.0));
            assert!(full, "{test}\n{stdout}");
        }
    }
}

/// Whether no process holds any grade's lock under `base` (each is taken and let go).
fn every_lock_is_free(base: &Path) -> bool {
    use std::os::fd::AsRawFd;
    fs::read_dir(base)
        .into_iter()
        .flatten()
        .flatten()
        .all(|entry| {
            let is_lock = entry.file_name().to_string_lossy().ends_with(".lock");
            !is_lock
                || fs::File::open(entry.path()).is_ok_and(|file| {
                    // SAFETY: flock on a descriptor owned here; it is let go when `file` drops.
                    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
                })
        })
}

/// A grade killed with -9 mid-grade cannot remove its folder: the next grade to start does
/// (a lock file says which grades are alive), and nothing of either is left.
#[test]
#[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
fn a_grade_killed_with_9_leaves_no_scratch_once_another_starts() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let handout = scratch.path().join("handout");
    run_into(binary("instructor"), &["handout", "--out"], &handout);
    let tmp = scratch.path().join("tmp");
    fs::create_dir(&tmp).expect("created");
    // SAFETY: geteuid has no preconditions.
    let base = tmp.join(format!("xtask-grader-{}", unsafe { libc::geteuid() }));
    // The folders the fallback may open (search) while it grades: those above the toolchain
    // and the workspace's. The killed grade cannot close them; the next puts them back.
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc runs");
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    let modes = || -> Vec<(PathBuf, u32)> {
        use std::os::unix::fs::PermissionsExt;
        sysroot
            .ancestors()
            .chain(workspace().join("target").ancestors())
            .filter_map(|p| Some((p.to_path_buf(), fs::metadata(p).ok()?.permissions().mode())))
            .collect()
    };
    let before = modes();
    let mut grade = binary("instructor")
        .arg("grade")
        .arg(&handout)
        .arg("--no-cpu-device")
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("xtask runs");
    // Its files are laid out for the build: killed now, mid-grade. The first grade on a
    // fresh machine builds the grader's cache first (2 minutes on 2 cores).
    let started = Instant::now();
    let laid_out = || {
        fs::read_dir(&base)
            .into_iter()
            .flatten()
            .flatten()
            .any(|grade| {
                fs::read_dir(grade.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|folder| folder.path().join("work").is_dir())
            })
    };
    while !laid_out() && started.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        laid_out(),
        "the grade laid out no files in {}",
        base.display()
    );
    grade.kill().expect("killed with -9");
    let _ = grade.wait();
    assert!(
        laid_out(),
        "the killed grade's folder is there until another starts"
    );
    // A child the grade forked a moment before (still in its pre-exec hook, which moves it
    // into its cgroup) shares the lock until it execs: on a loaded 2-core machine, long
    // enough for the next grade to find the lock held. The lock is let go within moments;
    // the next grade starts then.
    let released = Instant::now();
    while !every_lock_is_free(&base) && released.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // The next grade starts (and stops at once: there is no such submission).
    let next = binary("instructor")
        .arg("grade")
        .arg(scratch.path().join("no-such-submission"))
        .env("TMPDIR", &tmp)
        .output()
        .expect("xtask runs");
    assert!(!next.status.success());
    assert_eq!(modes(), before, "the modes the grades changed are put back");
    let left: Vec<_> = fs::read_dir(&base)
        .expect("the grader's folder")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left in {}: {left:?}", base.display());
}
