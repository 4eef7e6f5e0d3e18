//! The faults every lab must survive, checked from the outside on the lab's own binary: the
//! output policy of `shared::output` (modes, special files, symlinks, signals, file-size
//! limits), stdout that closes or fills, process limits. Each lab's `tests/faults.rs` calls
//! these with its own name and arguments; each runs the binary and asserts what it leaves.

use std::ffi::CString;
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The lab's binary, built with the tests.
pub fn lab_command(lab: &str) -> Command {
    Command::new(assert_cmd::cargo::cargo_bin(lab))
}

/// `lab args -o path`.
fn run_to(lab: &str, args: &[&str], path: &Path) -> Command {
    let mut command = lab_command(lab);
    command.args(args).arg("-o").arg(path);
    command
}

/// The run's output. A lab copied for an unprivileged run ([`as_unprivileged`]) may be
/// refused with ETXTBSY ("text file busy") for a moment: a test on another thread that
/// forks while the copy is open for writing holds it open until that child execs (on the
/// H100 machine's 16 cores, lab05's 17 fault tests did). That is retried, not failed.
fn output_of(command: &mut Command) -> Output {
    let started = Instant::now();
    loop {
        match command.output() {
            Err(e)
                if e.raw_os_error() == Some(libc::ETXTBSY)
                    && started.elapsed() < Duration::from_secs(5) =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            result => return result.expect("the lab should start"),
        }
    }
}

/// The run succeeded; its stderr has no panic.
fn assert_succeeds(output: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{what} should succeed: {stderr}");
    assert!(!stderr.contains("panicked"), "{what} panicked: {stderr}");
}

/// The run failed with one line starting `lab:`, no panic and no temporary path; the line.
pub fn assert_one_line_failure(output: &Output, lab: &str) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{lab} should fail: {stderr}");
    assert_eq!(
        output.status.code(),
        Some(1),
        "{lab}: exit status: {stderr}"
    );
    assert_eq!(
        stderr.lines().count(),
        1,
        "{lab}: one line expected: {stderr:?}"
    );
    assert!(stderr.starts_with(&format!("{lab}:")), "{stderr:?}");
    assert!(!stderr.contains("panicked"), "{lab} panicked: {stderr}");
    assert!(
        !stderr.contains("/.out-"),
        "{lab} shows a temporary path: {stderr}"
    );
    stderr
}

/// The names in `dir`, sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("the test folder exists")
        .map(|e| {
            e.expect("a folder entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

fn mode_of(path: &Path) -> u32 {
    fs::metadata(path)
        .expect("the file exists")
        .permissions()
        .mode()
        & 0o7777
}

/// The bytes a plain run writes to a regular file.
pub fn reference_bytes(lab: &str, args: &[&str], name: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join(name);
    assert_succeeds(&output_of(&mut run_to(lab, args, &path)), lab);
    fs::read(path).expect("the lab wrote its file")
}

/// A new file gets 0666 less the umask, under two umasks.
pub fn assert_mode_follows_umask(lab: &str, args: &[&str], name: &str) {
    for (umask, expected) in [(0o077, 0o600), (0o022, 0o644)] {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join(name);
        let mut command = run_to(lab, args, &path);
        // SAFETY: umask is async-signal-safe and touches only the child.
        unsafe {
            command.pre_exec(move || {
                libc::umask(umask);
                Ok(())
            });
        }
        assert_succeeds(&output_of(&mut command), lab);
        assert_eq!(mode_of(&path), expected, "{lab} under umask {umask:o}");
    }
}

/// A replaced file keeps its mode, and gets the new bytes.
pub fn assert_replaced_file_keeps_its_mode(lab: &str, args: &[&str], name: &str) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join(name);
    fs::write(&path, b"old").expect("an old file");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
    assert_succeeds(&output_of(&mut run_to(lab, args, &path)), lab);
    assert_eq!(mode_of(&path), 0o640);
    assert_ne!(fs::read(&path).expect("the file"), b"old");
    assert_eq!(names_in(dir.path()), [name]);
}

/// `/dev/null` stays the null device.
pub fn assert_dev_null_stays(lab: &str, args: &[&str]) {
    assert_succeeds(
        &output_of(&mut run_to(lab, args, Path::new("/dev/null"))),
        lab,
    );
    let meta = fs::metadata("/dev/null").expect("/dev/null");
    assert!(meta.file_type().is_char_device(), "/dev/null was replaced");
}

fn mknod(path: &Path, mode: libc::mode_t, device: libc::dev_t) -> std::io::Result<()> {
    let c_path = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: a NUL-terminated path that lives across the call.
    if unsafe { libc::mknod(c_path.as_ptr(), mode, device) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A character device (a null device made with mknod in a temporary folder) is written in
/// place, not replaced. Where mknod is not permitted, a FIFO with a reader stands in.
pub fn assert_device_written_in_place(lab: &str, args: &[&str]) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let node = dir.path().join("null");
    // Major 1, minor 3: the null device.
    match mknod(&node, libc::S_IFCHR | 0o666, libc::makedev(1, 3)) {
        Ok(()) => {
            assert_succeeds(&output_of(&mut run_to(lab, args, &node)), lab);
            let meta = fs::metadata(&node).expect("the device");
            assert!(meta.file_type().is_char_device(), "the device was replaced");
            assert_eq!(names_in(dir.path()), ["null"]);
        }
        Err(e) => {
            crate::cli::eprint_line(&format!(
                "mknod is not permitted here ({e}): checking a FIFO instead"
            ));
            assert_fifo_gets_every_byte(lab, args, "");
        }
    }
}

/// A FIFO with a reader gets exactly the bytes a regular file would, and stays a FIFO.
pub fn assert_fifo_gets_every_byte(lab: &str, args: &[&str], name: &str) {
    let expected = (!name.is_empty()).then(|| reference_bytes(lab, args, name));
    let dir = tempfile::tempdir().expect("a temporary folder");
    let fifo = dir.path().join("fifo");
    mknod(&fifo, libc::S_IFIFO | 0o600, 0).expect("mkfifo");
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        fs::File::open(reader_path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .expect("read the FIFO");
        bytes
    });
    assert_succeeds(&output_of(&mut run_to(lab, args, &fifo)), lab);
    let got = reader.join().expect("the reader");
    assert!(!got.is_empty(), "the reader got nothing");
    if let Some(expected) = expected {
        assert!(got == expected, "the FIFO got other bytes than a file");
    }
    let meta = fs::symlink_metadata(&fifo).expect("the FIFO");
    assert!(meta.file_type().is_fifo(), "the FIFO was replaced");
    assert_eq!(names_in(dir.path()), ["fifo"]);
}

/// A symlink is kept and the file it points to gets the new bytes.
pub fn assert_symlink_target_replaced(lab: &str, args: &[&str], name: &str) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let target = dir.path().join(name);
    let link = dir.path().join("link");
    fs::write(&target, b"old").expect("an old file");
    std::os::unix::fs::symlink(name, &link).expect("a symlink");
    assert_succeeds(&output_of(&mut run_to(lab, args, &link)), lab);
    let meta = fs::symlink_metadata(&link).expect("the link");
    assert!(meta.file_type().is_symlink(), "the link was replaced");
    let written = fs::read(&target).expect("the target");
    assert!(
        written == reference_bytes(lab, args, name),
        "the target has other bytes"
    );
}

/// A name of 255 bytes (the most a name may have) is written, new and over an old file.
pub fn assert_longest_name_works(lab: &str, args: &[&str], extension: &str) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let name = format!("{}{extension}", "n".repeat(255 - extension.len()));
    let path = dir.path().join(&name);
    assert_succeeds(&output_of(&mut run_to(lab, args, &path)), lab);
    fs::write(&path, b"old").expect("an old file");
    assert_succeeds(&output_of(&mut run_to(lab, args, &path)), lab);
    assert_ne!(fs::read(&path).expect("the file"), b"old");
    assert_eq!(names_in(dir.path()), [name]);
}

/// How far process `pid` has written into a file it holds open in `dir` (its output, named
/// or not), if it holds one.
fn written_in(pid: u32, dir: &Path) -> Option<u64> {
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    fds.flatten()
        .filter(|fd| fs::read_link(fd.path()).is_ok_and(|target| target.starts_with(dir)))
        .filter_map(|fd| {
            let info = fs::read_to_string(format!(
                "/proc/{pid}/fdinfo/{}",
                fd.file_name().to_string_lossy()
            ))
            .ok()?;
            info.lines()
                .find_map(|line| line.strip_prefix("pos:"))
                .and_then(|pos| pos.trim().parse().ok())
        })
        .max()
}

/// SIGINT, SIGTERM, SIGHUP and SIGKILL, sent while the lab works (once its output is open
/// and holds at least `after_bytes`: 0 for mid-computation, more for mid-write, which only
/// a lab that writes in several calls can show, since the file offset moves when a write
/// call returns), leave the old file as it was and nothing beside it.
pub fn assert_signals_leave_nothing(lab: &str, long_args: &[&str], name: &str, after_bytes: u64) {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGKILL] {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let dir_path = fs::canonicalize(dir.path()).expect("the folder");
        let path = dir_path.join(name);
        fs::write(&path, b"old").expect("an old file");
        let mut command = run_to(lab, long_args, &path);
        // SAFETY: signal() is async-signal-safe and touches only the child. A shell starts
        // background jobs with SIGINT ignored, and the child would inherit that.
        unsafe {
            command.pre_exec(|| {
                for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                    libc::signal(signal, libc::SIG_DFL);
                }
                Ok(())
            });
        }
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the lab starts");
        let started = Instant::now();
        while written_in(child.id(), &dir_path).is_none_or(|written| written < after_bytes) {
            assert!(
                child.try_wait().expect("wait").is_none(),
                "{lab} finished before the signal: make the run longer"
            );
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{lab} never wrote {after_bytes} bytes"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        // SAFETY: sends a signal to our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let status = child.wait().expect("wait");
        assert!(!status.success(), "{lab} ignored signal {signal}");
        assert_eq!(names_in(&dir_path), [name], "after signal {signal}");
        let kept = fs::read(&path).expect("the old file");
        assert!(kept == b"old", "signal {signal} replaced the old file");
    }
}

/// A file-size limit (`ulimit -f`) below the output's size is one error line naming the
/// limit, not a kill by SIGXFSZ, and leaves nothing.
pub fn assert_file_size_limit_is_one_line(lab: &str, args: &[&str], name: &str) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut command = run_to(lab, args, &dir.path().join(name));
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 50_000,
                rlim_max: 50_000,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            Ok(())
        });
    }
    let line = assert_one_line_failure(&output_of(&mut command), lab);
    assert!(line.contains("ulimit -f"), "{line}");
    assert!(names_in(dir.path()).is_empty());
}

/// `--json` into a closed pipe succeeds quietly; into a full device, one error line; with
/// stderr closed, the lab still does its work.
pub fn assert_stdout_faults_handled(lab: &str, args: &[&str]) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("out");
    let mut child = run_to(lab, args, &path)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the lab starts");
    // The reader goes away before the lab writes: `lab --json | true`.
    drop(child.stdout.take());
    let closed = child.wait_with_output().expect("wait");
    assert_succeeds(&closed, "--json into a closed pipe");

    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let mut command = run_to(lab, args, &path);
    command.arg("--json").stdout(full);
    let line = assert_one_line_failure(&output_of(&mut command), lab);
    assert!(line.contains("standard output"), "{line}");

    assert_closed_stderr_is_quiet(lab, &mut run_to(lab, args, &path));
    assert!(path.exists(), "{lab} with stderr closed wrote nothing");
}

/// Nobody reads stderr (`lab 2>&1 | head -1` once head has exited): `command` still
/// finishes its work and succeeds, instead of panicking on its report.
pub fn assert_closed_stderr_is_quiet(lab: &str, command: &mut Command) {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the lab starts");
    drop(child.stderr.take());
    let status = child.wait().expect("wait");
    assert!(status.success(), "{lab} with stderr closed: {status}");
}

/// The user a test drops to when it runs as root: not nobody (65534), under which the
/// grader's sandbox runs student code, since a process limit counts every process of the
/// user, a grade's included; a uid with no name is as unprivileged.
const UNPRIVILEGED: u32 = 65533;

/// `command` ready to drop to [`UNPRIVILEGED`]: run by root, its program is a copy in a
/// folder any user may enter, since the workspace may be under one only root may enter
/// (`/root`, as in most containers), where the dropped process could not start it. The
/// copy lasts as long as the folder handed back.
fn as_unprivileged(command: Command) -> (Option<tempfile::TempDir>, Command) {
    // SAFETY: getuid has no preconditions and cannot fail.
    if unsafe { libc::getuid() } != 0 {
        return (None, command);
    }
    let folder = tempfile::tempdir().expect("a temporary folder");
    fs::set_permissions(folder.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    let program = Path::new(command.get_program());
    let copy = folder
        .path()
        .join(program.file_name().expect("a program name"));
    fs::copy(program, &copy).expect("copy the lab");
    let mut copied = Command::new(&copy);
    copied.args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => copied.env(key, value),
            None => copied.env_remove(key),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        copied.current_dir(dir);
    }
    (Some(folder), copied)
}

/// A process limit that leaves no room for worker threads is one error line.
pub fn assert_thread_limit_is_one_line(lab: &str, args: &[&str]) {
    assert_one_line_under_a_thread_limit(lab, run_to(lab, args, Path::new("/dev/null")));
}

/// `command` under a process limit that leaves no room for worker threads ends in one error
/// line that names threads. As root the limit does not bind, so the run drops to an
/// unprivileged user first.
pub fn assert_one_line_under_a_thread_limit(lab: &str, command: Command) {
    let (_copy, mut command) = as_unprivileged(command);
    // SAFETY: setrlimit, setgid and setuid are async-signal-safe and touch only the child.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 1,
                rlim_max: 1,
            };
            libc::setrlimit(libc::RLIMIT_NPROC, &limit);
            if libc::getuid() == 0
                && (libc::setgid(UNPRIVILEGED) != 0 || libc::setuid(UNPRIVILEGED) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let line = assert_one_line_failure(&output_of(&mut command), lab);
    assert!(line.contains("threads"), "{line}");
}

/// Bad output paths fail before the work (`long_args` would take seconds), in one line
/// that says what to do and shows no temporary path; nothing is created.
pub fn assert_path_errors_come_first(lab: &str, long_args: &[&str], name: &str) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let cases: [(PathBuf, &str); 4] = [
        (
            dir.path().join("missing").join(name),
            "folder does not exist",
        ),
        (dir.path().to_path_buf(), "it is a folder"),
        (PathBuf::from("."), "it is a folder"),
        (dir.path().join("new-folder/"), "it is a folder"),
    ];
    for (path, expected) in cases {
        let started = Instant::now();
        let output = output_of(run_to(lab, long_args, &path).current_dir(dir.path()));
        let elapsed = started.elapsed();
        let line = assert_one_line_failure(&output, lab);
        assert!(line.contains(expected), "{}: {line}", path.display());
        let shown = format!("cannot write {}: ", path.display());
        assert!(line.contains(&shown), "the path as given: {line}");
        assert!(
            elapsed < Duration::from_millis(900),
            "{lab} took {elapsed:?} to reject {}",
            path.display()
        );
        assert!(names_in(dir.path()).is_empty(), "{lab} left files");
    }
}

/// The first line of `--help` is the lab's own description.
pub fn assert_help_opens_with(lab: &str, about: &str) {
    let output = output_of(lab_command(lab).arg("--help"));
    assert_succeeds(&output, "--help");
    let help = String::from_utf8_lossy(&output.stdout);
    assert_eq!(help.lines().next(), Some(about), "{help}");
}

/// `lab args` fails at parse time (status 2) with one line containing `expected`.
pub fn assert_rejected(lab: &str, args: &[&str], expected: &str) {
    let output = output_of(lab_command(lab).args(args).arg("-o").arg("/dev/null"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        matches!(output.status.code(), Some(1 | 2)),
        "{args:?}: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr:?}");
    assert!(stderr.contains(expected), "{args:?}: {stderr}");
}

/// `lab args` succeeds (written to /dev/null).
pub fn assert_accepted(lab: &str, args: &[&str]) {
    let output = output_of(lab_command(lab).args(args).arg("-o").arg("/dev/null"));
    assert_succeeds(&output, &format!("{lab} {args:?}"));
}

/// Under every address-space limit (`ulimit -v`) from 4 MiB to 24 MiB, `lab args` either
/// runs, or fails in one line: never an abort ("memory allocation of N bytes failed"). Limits
/// too small for the program to start at all are passed over: those where the loader fails
/// (exit 127), and those where `lab --version`, which allocates only what every run needs
/// before the lab's own code, cannot run either. At least one limit must reach the lab's
/// own "cannot allocate" line.
pub fn assert_memory_limits_never_abort(lab: &str, args: &[&str]) {
    let under = |kib: u64, command: &mut Command| {
        // SAFETY: setrlimit is async-signal-safe and touches only the child.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: kib * 1024,
                    rlim_max: kib * 1024,
                };
                libc::setrlimit(libc::RLIMIT_AS, &limit);
                Ok(())
            });
        }
        output_of(command)
    };
    let mut refused = 0;
    for kib in (4096..24576).step_by(256) {
        if !under(kib, lab_command(lab).arg("--version"))
            .status
            .success()
        {
            continue;
        }
        let output = under(kib, &mut run_to(lab, args, Path::new("/dev/null")));
        let stderr = String::from_utf8_lossy(&output.stderr);
        match output.status.code() {
            Some(0) => {}
            Some(1) => {
                assert_eq!(stderr.lines().count(), 1, "{kib} KiB: {stderr}");
                refused += usize::from(stderr.contains("cannot allocate"));
            }
            _ => panic!(
                "{lab} under a {kib} KiB limit: {:?}: {stderr}",
                output.status
            ),
        }
    }
    assert!(refused > 0, "no limit reached the lab's allocation");
}

/// A `libcuda.so` that is not a driver (a copy of another library, here `libgcc_s`, which
/// every Rust program on Linux loads) makes a GPU run fail in one line naming the missing
/// function, not panic inside cudarc. No compiler needed.
pub fn assert_fake_driver_is_one_line(lab: &str, args: &[&str]) {
    let maps = fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let library = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.ends_with("/libgcc_s.so.1"))
        .expect("libgcc_s.so.1 is loaded by every Rust test");
    let dir = tempfile::tempdir().expect("a temporary folder");
    fs::copy(library, dir.path().join("libcuda.so")).expect("copy the library");
    let output = output_of(
        lab_command(lab)
            .args(args)
            .env_remove(crate::gpu::EMULATE_VARIABLE)
            .env("LD_LIBRARY_PATH", dir.path()),
    );
    let line = assert_one_line_failure(&output, lab);
    assert!(line.contains("has no function cuInit"), "{line}");
    assert!(line.contains("install the NVIDIA driver"), "{line}");
}

/// A folder the user may not write to fails before the work, in one line that says so. As
/// root, who may write anywhere, the run drops to an unprivileged user first.
pub fn assert_unwritable_folder_fails_first(lab: &str, long_args: &[&str], name: &str) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o555)).expect("chmod");
    let (_copy, mut command) = as_unprivileged(run_to(lab, long_args, &dir.path().join(name)));
    // SAFETY: setgid and setuid are async-signal-safe and touch only the child.
    unsafe {
        command.pre_exec(|| {
            if libc::getuid() == 0
                && (libc::setgid(UNPRIVILEGED) != 0 || libc::setuid(UNPRIVILEGED) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let line = assert_one_line_failure(&output_of(&mut command), lab);
    assert!(line.contains("permission denied"), "{line}");
    assert!(started.elapsed() < Duration::from_millis(900));
    assert!(names_in(dir.path()).is_empty());
}
