//! Every student process, the build included, runs here: in a bubblewrap sandbox (`bwrap`,
//! the sandbox Flatpak uses), never with the grader's own rights.
//!
//! What a process inside sees: the system's programs and libraries read-only (`/usr`, `/etc`),
//! the Rust toolchain read-only, a private `/tmp`, a fresh `/proc` and `/dev` (and the GPU's
//! device files when the check needs them), and the [`Mount`]s its check names, nothing
//! else: not the instructor's workspace, the rubric, the reference binaries or images, the
//! results file, other submissions or any home folder. It has no network, its own PID
//! namespace (when the check's main process ends, every process it left behind is killed
//! with it), the [`fallback`]'s seccomp filter (the same system calls refused in both
//! sandboxes), and limits on wall time, CPU time, processes, file size and kept output.
//!
//! Run by root, the sandbox sets up its mounts as root and then drops to uid 65534 (nobody)
//! with `setpriv`, so the student's code runs as an unprivileged user on the host too. The
//! grades of a class that run at once each run as a user of their own ([`class_user`]): a
//! process limit counts every process of a user, so a fork bomb in one submission would
//! otherwise starve the submission graded beside it. Run by anyone else, bwrap maps that user
//! into a user namespace of its own.
//!
//! Where bubblewrap cannot start (a container without CAP_SYS_ADMIN, as Gradescope runs every
//! autograder; a kernel that refuses unprivileged user namespaces), the [`fallback`] sandbox
//! runs the same commands at their host paths under Landlock and seccomp, as a uid of its own;
//! the report says which sandbox ran and what the fallback lacks.
//!
//! `--unsandboxed` runs the same commands directly, for code the instructor trusts; the
//! report says so.

mod fallback;
mod permissions;
pub mod tree;

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use wait_timeout::ChildExt;

pub use tree::TreeLimits;
use xtask::runner::Failure;

/// The unprivileged user and group the student's code runs as (nobody, nogroup).
pub const NOBODY: u32 = 65534;

/// The first of the users that the grades of a class running at once are given, one each:
/// above the ranges that systems give to people, services and containers, so no account's
/// files or processes are theirs.
const CLASS_USERS: u32 = 0x7000_0000;

/// The user of the `n`th grade of a class that may run beside others (a GPU's slot, a Slurm
/// task), this process's own: every process of it is killed when its grade ends, and another
/// class graded at once on the machine (two tests, two Slurm jobs on one node) lost its
/// builds to that while the users were the slot's number alone. Below `CLASS_USERS +
/// 0x0080_0000`, where the fallback's users of one grade start.
pub fn class_user(n: usize) -> u32 {
    let run = std::process::id() as usize % 0x4000;
    CLASS_USERS + ((run << 9) | (n % 0x200)) as u32
}

/// A user of its own for each grade of a class, drawn in turn from the 512 of
/// [`class_user`] (far more than run at once): a process that one grade left, were it to
/// escape being killed, shares no user, and with it no process limit, with the next grade
/// in its slot.
pub fn next_class_user() -> u32 {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    class_user(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The user of a grade run on its own (not a class's slot), this process's own.
fn grade_user() -> u32 {
    CLASS_USERS + 0x0080_0000 + std::process::id() % 0x0080_0000
}

/// The kernel's Landlock ABI, or None.
///
/// A test hook, read only by the grader's own debug builds (those its tests run; `cargo
/// xtask dist` builds release, which never reads it): with `XTASK_TEST_NO_LANDLOCK=1` the
/// kernel is taken to have no Landlock, so that the fallback without Landlock is tested on a
/// kernel that has it.
fn landlock_abi() -> Option<i32> {
    #[cfg(debug_assertions)]
    if std::env::var_os("XTASK_TEST_NO_LANDLOCK").is_some_and(|v| v == "1") {
        return None;
    }
    fallback::landlock_abi()
}

/// Output kept from each stream of a process: enough for any report and error message.
pub const OUTPUT_CAP: usize = 1 << 20;

/// How a grade runs student code.
#[derive(Debug, Clone)]
pub struct Jail {
    kind: Kind,
    /// The uid and gid the student's code runs as, run by root.
    user: u32,
    /// The minor number of the GPU this grade may use (`/dev/nvidiaN`): a GPU run sees that
    /// device file alone, never another slot's GPU. None: not known (every one is given).
    gpu: Option<u32>,
    /// That GPU's UUID, which a GPU run is given as `CUDA_VISIBLE_DEVICES`: a driver that
    /// lists only the GPUs whose device files it finds would number this one 0, so the
    /// grader's own number for it could name no GPU inside.
    gpu_uuid: Option<String>,
}

#[derive(Debug, Clone)]
enum Kind {
    Bwrap {
        program: PathBuf,
        as_root: bool,
    },
    /// Landlock and seccomp ([`fallback`]); `bwrap` says why bubblewrap could not run.
    /// Without Landlock (None), run by root only, ownership and permissions keep what it
    /// would refuse ([`permissions`]).
    Fallback {
        as_root: bool,
        landlock: Option<i32>,
        bwrap: String,
    },
    Unsandboxed,
}

/// A host folder or file seen inside at `inside` (at its host path if `inside` is None).
#[derive(Debug, Clone)]
pub struct Mount {
    pub host: PathBuf,
    pub inside: PathBuf,
    pub writable: bool,
}

impl Mount {
    pub fn read_only(host: impl Into<PathBuf>, inside: impl Into<PathBuf>) -> Mount {
        Mount {
            host: host.into(),
            inside: inside.into(),
            writable: false,
        }
    }

    pub fn writable(host: impl Into<PathBuf>, inside: impl Into<PathBuf>) -> Mount {
        Mount {
            host: host.into(),
            inside: inside.into(),
            writable: true,
        }
    }
}

/// The limits of one process tree.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Wall time from start to the exit of the main process; past it, all are killed.
    pub wall: Duration,
    /// CPU seconds per process (RLIMIT_CPU).
    pub cpu_seconds: u64,
    /// Processes and threads of the sandbox's user (RLIMIT_NPROC).
    pub processes: u64,
    /// The largest file a process may write (RLIMIT_FSIZE).
    pub file_bytes: u64,
    /// Address space per process (RLIMIT_AS); `None` for GPU work, whose driver reserves
    /// far more address space than it uses.
    pub memory_bytes: Option<u64>,
    /// The limits of the whole process tree ([`tree`]): memory, processes, disk and files.
    pub tree: TreeLimits,
}

impl Limits {
    /// The limits of a check that may take `wall`: its CPU time for every core, a few
    /// hundred threads (rayon and CUDA start one per core and a few more), files up to 1 GiB
    /// (the largest image a check writes is 8192x8192, 201 MB).
    pub fn check(wall: Duration) -> Limits {
        let cores = thread::available_parallelism().map_or(1, |n| n.get() as u64);
        Limits {
            wall,
            cpu_seconds: wall.as_secs().max(1) * cores + 10,
            processes: 512 + 4 * cores,
            file_bytes: 1 << 30,
            memory_bytes: Some(8 << 30),
            tree: TreeLimits::DEFAULT,
        }
    }

    /// The same, with the rubric's limits of the whole tree.
    pub fn with_tree(self, tree: TreeLimits) -> Limits {
        Limits { tree, ..self }
    }

    /// The same, for work on the GPU (no address-space limit).
    pub fn on_gpu(self) -> Limits {
        Limits {
            memory_bytes: None,
            ..self
        }
    }
}

/// A process that ran to its end (whatever its exit status).
#[derive(Debug)]
pub struct Ran {
    pub stdout: Vec<u8>,
    /// The start-to-exit time by the grader's clock, sandbox start-up included.
    pub wall: Duration,
}

/// One command to run in the sandbox: the program and arguments as seen inside.
#[derive(Clone)]
pub struct Spec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub mounts: Vec<Mount>,
    pub env: Vec<(String, OsString)>,
    /// The GPU's device files and /sys are visible.
    pub gpu: bool,
    /// The working folder inside.
    pub cwd: PathBuf,
}

impl Spec {
    pub fn new(program: impl Into<PathBuf>) -> Spec {
        Spec {
            program: program.into(),
            args: Vec::new(),
            mounts: Vec::new(),
            env: Vec::new(),
            gpu: false,
            cwd: PathBuf::from("/tmp"),
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Spec {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Spec {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn mount(mut self, mount: Mount) -> Spec {
        self.mounts.push(mount);
        self
    }

    pub fn env(mut self, key: &str, value: impl Into<OsString>) -> Spec {
        self.env.push((key.to_string(), value.into()));
        self
    }

    pub fn gpu(mut self, gpu: bool) -> Spec {
        self.gpu = gpu;
        self
    }

    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Spec {
        self.cwd = cwd.into();
        self
    }
}

impl Jail {
    /// bubblewrap, checked by starting a sandbox; where it cannot start, the fallback,
    /// checked the same way; or, with `unsandboxed`, no sandbox.
    pub fn detect(unsandboxed: bool) -> Result<Jail> {
        if unsandboxed {
            return Ok(Jail {
                kind: Kind::Unsandboxed,
                user: NOBODY,
                gpu: None,
                gpu_uuid: None,
            });
        }
        let as_root = is_root();
        let installed = find_program("bwrap").is_some();
        // What would let bubblewrap run: never "install it" where it is installed.
        let remedy = if installed {
            namespace_remedy(as_root)
        } else {
            "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap)"
        };
        let bwrap = match (find_program("bwrap"), find_program("setpriv")) {
            (None, _) => "bwrap (bubblewrap) is not installed".to_string(),
            (Some(_), None) if as_root => {
                "setpriv (util-linux), which drops root's rights in bwrap, is not installed"
                    .to_string()
            }
            (Some(program), _) => {
                let jail = Jail {
                    kind: Kind::Bwrap { program, as_root },
                    // Run by root, a uid of this grade's own, not nobody's: the process limit
                    // counts every process of a user, so a fork bomb in one grade would stop
                    // the builds of any other grade beside it.
                    user: if as_root { grade_user() } else { NOBODY },
                    gpu: None,
                    gpu_uuid: None,
                };
                match jail.probe() {
                    Ok(()) => return Ok(jail),
                    Err(why) => format!("bwrap cannot start a sandbox here ({why})"),
                }
            }
        };
        let landlock = landlock_abi();
        if landlock.is_none() && !as_root {
            // Without Landlock only a uid of its own keeps the student from the grader's
            // files, and only root can give one.
            bail!(
                "no sandbox can run here: {bwrap}, and this kernel has no Landlock (Linux \
                 5.13 or later with landlock among its LSMs), so the fallback sandbox needs \
                 root to run the student's code as a user of its own, which cannot read your \
                 files: run grade as root (sudo), or {remedy}, or pass --unsandboxed for code \
                 you trust"
            );
        }
        let jail = Jail {
            kind: Kind::Fallback {
                as_root,
                landlock,
                bwrap: bwrap.clone(),
            },
            // A uid of this grade's own, never nobody's: every process of it is killed after
            // each check.
            user: grade_user(),
            gpu: None,
            gpu_uuid: None,
        };
        match jail.probe() {
            Ok(()) => Ok(jail),
            Err(why) => bail!(
                "no sandbox can run here: {bwrap}, and the fallback sandbox ({}) cannot start \
                 either ({why}); {remedy}, or pass --unsandboxed for code you trust",
                match landlock {
                    Some(_) => "Landlock and seccomp",
                    None => "a user of its own and seccomp, without Landlock",
                }
            ),
        }
    }

    /// Start a shell in the sandbox: None, or why it did not run.
    fn probe(&self) -> std::result::Result<(), String> {
        let probe = Spec::new("/bin/sh").args(["-c", "exit 0"]);
        match self.run(&probe, &Limits::check(Duration::from_secs(30))) {
            Ok((status, _, _)) if status.success() => Ok(()),
            Ok((_, _, stderr)) => Err(last_line(&stderr)),
            Err(failure) => Err(failure.to_string()),
        }
    }

    /// The same sandbox, the student's code run as `user` (by root; not 0).
    pub fn for_user(self, user: u32) -> Result<Jail> {
        if user == 0 {
            bail!("the sandbox's user cannot be root (uid 0)");
        }
        Ok(Jail { user, ..self })
    }

    /// The same sandbox, its GPU runs given only the device file of `device` (its minor
    /// number and UUID, [`gpu_device`]) with `nvidiactl` and `nvidia-uvm`, which every CUDA
    /// process needs. A MIG instance (`CUDA_VISIBLE_DEVICES=MIG-...`) needs the capability
    /// files too: it is left as it was, every device file given.
    pub fn for_gpu(self, device: Option<(u32, Option<String>)>) -> Jail {
        let mig = std::env::var("CUDA_VISIBLE_DEVICES").is_ok_and(|v| v.starts_with("MIG"));
        match device {
            Some((minor, uuid)) if !mig => Jail {
                gpu: Some(minor),
                gpu_uuid: uuid,
                ..self
            },
            _ => self,
        }
    }

    /// Whether two grades run at once by this user share one process limit: a sandbox run by
    /// anyone but root is the user who runs it.
    pub fn shares_one_user(&self) -> bool {
        matches!(
            self.kind,
            Kind::Bwrap { as_root: false, .. } | Kind::Fallback { as_root: false, .. }
        )
    }

    /// How the sandbox runs, whoever its user: what a build made in it depends on.
    pub fn kind(&self) -> &'static str {
        match &self.kind {
            Kind::Bwrap { as_root: true, .. } => "bubblewrap, run by root",
            Kind::Bwrap { as_root: false, .. } => "bubblewrap, in a user namespace",
            Kind::Fallback { landlock: None, .. } => "fallback without Landlock",
            Kind::Fallback { as_root: true, .. } => "fallback, run by root",
            Kind::Fallback { as_root: false, .. } => "fallback",
            Kind::Unsandboxed => "no sandbox",
        }
    }

    /// The kind of sandbox a build's outputs depend on, which names the grader's cache: the
    /// fallback builds alike with Landlock and without (the same paths, run by root), so
    /// both share one cache (a second one took CI 2 minutes more to build).
    pub fn build_kind(&self) -> &'static str {
        match &self.kind {
            Kind::Fallback { landlock: None, .. } => "fallback, run by root",
            _ => self.kind(),
        }
    }

    /// What the report says about how the student's code ran.
    pub fn describe(&self) -> String {
        let how = match &self.kind {
            Kind::Bwrap { as_root: true, .. } => format!(
                "student code ran in a bubblewrap sandbox as uid {}, under seccomp (no \
                 sockets but unix ones, ptrace, namespaces, mount, keyrings or bpf)",
                self.user
            ),
            Kind::Bwrap { as_root: false, .. } => "student code ran in a bubblewrap sandbox \
                                                   (user namespace), under seccomp (no \
                                                   sockets but unix ones, ptrace, \
                                                   namespaces, mount, \
                                                   keyrings or bpf)"
                .to_string(),
            Kind::Fallback {
                landlock: None,
                bwrap,
                ..
            } => format!(
                "student code ran in the fallback sandbox without Landlock ({bwrap}; {}) as \
                 uid {}, a user of its own, under seccomp (no \
                 sockets, ptrace, namespaces, mount, keyrings or bpf), every process of it \
                 killed after each check; by ownership and permissions, the instructor's \
                 workspace, the references, the results folder and the submissions were made \
                 unreadable to it before it ran, and {} were emptied of its files after each \
                 check; it lacks bubblewrap's PID, network and IPC namespaces and Landlock's \
                 confinement: other users' processes are listed in /proc with their command \
                 lines (the grader's blanked past `grade`), and it may read any file that \
                 every user of this machine may read",
                match fallback::landlock_abi() {
                    None => "this kernel has no Landlock",
                    Some(_) => "Landlock taken as missing by the grader's test hook",
                },
                self.user,
                permissions::WORLD_WRITABLE.join(", ")
            ),
            Kind::Fallback {
                as_root,
                landlock: Some(landlock),
                bwrap,
            } => {
                let who = if *as_root {
                    format!("as uid {}, a user of its own", self.user)
                } else {
                    "as the grader's own user (only root can give it a user of its own, so \
                     its processes count against the grader's process limit)"
                        .to_string()
                };
                let signals = if *landlock < 6 && !as_root {
                    " and may signal the grader's processes (Landlock ABI 6, Linux 6.12, \
                     scopes signals)"
                } else {
                    ""
                };
                format!(
                    "student code ran in the fallback sandbox ({bwrap}) {who}, under Landlock \
                     (ABI {landlock}: it reads only the system, the toolchain and its check's \
                     files, and writes only its output and a scratch folder) and seccomp (no \
                     sockets, ptrace, namespaces, mount, keyrings or bpf), every process of it \
                     killed after each check; it lacks bubblewrap's PID, network and IPC \
                     namespaces: other users' processes are listed in /proc, though it may \
                     read no file there{signals}"
                )
            }
            Kind::Unsandboxed => {
                return "UNSANDBOXED: student code ran with the grader's own rights \
                        (--unsandboxed)"
                    .to_string()
            }
        };
        let gpu = match self.gpu {
            Some(minor) => format!("; its GPU runs saw /dev/nvidia{minor} alone of the GPUs"),
            None => String::new(),
        };
        format!("{how}; {}{gpu}", tree_limits(&tree::describe()))
    }

    /// The path at which a sandboxed process finds `host`, mounted at `inside`: the fallback
    /// and no sandbox map the paths of a command's program, arguments and environment, but
    /// not a path within an argument.
    pub fn path_of(&self, host: &Path, inside: &Path) -> PathBuf {
        match self.kind {
            Kind::Bwrap { .. } => inside.to_path_buf(),
            Kind::Fallback { .. } | Kind::Unsandboxed => host.to_path_buf(),
        }
    }

    /// Whether writable folders must be handed to the unprivileged user first.
    pub fn needs_chown(&self) -> bool {
        matches!(
            self.kind,
            Kind::Bwrap { as_root: true, .. } | Kind::Fallback { as_root: true, .. }
        )
    }

    /// Run `spec` within `limits`: its exit status, what it printed (capped), and the stderr
    /// kept. A process still running at the wall limit is killed with everything it started.
    pub fn run(
        &self,
        spec: &Spec,
        limits: &Limits,
    ) -> std::result::Result<(std::process::ExitStatus, Ran, Vec<u8>), Failure> {
        let (mut command, confined, descriptors) = self.sandboxed_command(spec)?;
        // The run's own control group (or none: then it is measured), joined by the child
        // before exec, so that every process it starts is in it.
        let cores = tree::slot_cores();
        let group = match self.kind {
            Kind::Unsandboxed => None,
            _ => tree::Group::create(&limits.tree, cores.as_deref()),
        };
        set_limits(
            &mut command,
            *limits,
            group
                .as_ref()
                .map(tree::Group::procs_files)
                .unwrap_or_default(),
        );
        if let Some(confined) = &confined {
            fallback::confine(&mut command, confined.user, confined.ruleset.as_ref())
                .map_err(grader_fault)?;
        }
        let folders: Vec<PathBuf> = confined
            .as_ref()
            .map_or(&spec.mounts, |c| &c.mounts)
            .iter()
            .filter(|m| m.writable)
            .map(|m| m.host.clone())
            .collect();
        if let Some(disk) = limits.tree.disk {
            tree::room_to_watch(&folders, disk)
                .map_err(|why| grader_fault(anyhow::anyhow!(why)))?;
        }
        let mut watch = tree::Watch::new(limits.tree, group.as_ref(), folders, cores);
        let started = Instant::now();
        let mut child = command
            .spawn()
            .map_err(|e| Failure::Spawn(format!("cannot start the sandbox: {e}")))?;
        drop(command);
        drop(descriptors);
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        let (status, over) = wait_within(&mut child, limits.wall, started, &mut watch);
        let wall = started.elapsed();
        if status.is_none() {
            kill_run(&mut child, group.as_ref(), over.is_some());
        }
        // No PID namespace: every process of the check's session is killed now, before its
        // output is read; one that survives fails the check.
        let survivors = match &confined {
            Some(_) => fallback::end_all(child.id() as i32).err(),
            None => None,
        };
        if let Some(group) = &group {
            group.kill_all();
        }
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        // What it left counts too: a process that wrote fast and ended between two ticks.
        let over = over.or_else(|| watch.after());
        drop(group);
        if let Some(why) = over {
            return Err(Failure::OverLimit(why));
        }
        if let Some(survivors) = survivors {
            return Err(Failure::Crashed(format!(
                "{survivors} of its processes survived being killed after the check"
            )));
        }
        if let Some(Confined {
            user: Some(user),
            ruleset: None,
            ..
        }) = &confined
        {
            clear_user(*user)?;
        }
        match status {
            Some(status) => Ok((status, Ran { stdout, wall }, stderr)),
            None => Err(Failure::TimedOut(limits.wall)),
        }
    }

    /// The command that runs `spec` in this sandbox, its output piped; the fallback's
    /// confinement of it (its scratch folder, ruleset and user), kept until the run ends;
    /// and the descriptors bubblewrap reads, kept until the spawn.
    fn sandboxed_command(
        &self,
        spec: &Spec,
    ) -> std::result::Result<(Command, Option<Confined>, Vec<OwnedFd>), Failure> {
        // A GPU run names its GPU by UUID (after the grader's environment, so it wins).
        let named;
        let spec = match (&self.gpu_uuid, spec.gpu) {
            (Some(uuid), true) => {
                named = spec.clone().env("CUDA_VISIBLE_DEVICES", uuid);
                &named
            }
            _ => spec,
        };
        // The fallback's own scratch folder (its /tmp), its ruleset and its user.
        let confined = match &self.kind {
            Kind::Fallback {
                as_root, landlock, ..
            } => Some(
                self.confinement(spec, *as_root, landlock.is_some())
                    .map_err(grader_fault)?,
            ),
            _ => None,
        };
        let (mut command, descriptors) = match &confined {
            Some(confined) => (direct_command(spec, &confined.mounts), Vec::new()),
            None => self.command(spec).map_err(grader_fault)?,
        };
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Ok((command, confined, descriptors))
    }

    /// What the fallback needs for one run: its scratch folder, seen as `/tmp`, handed to its
    /// user; the way to every folder it may reach; and the Landlock ruleset of those folders.
    fn confinement(&self, spec: &Spec, as_root: bool, landlock: bool) -> Result<Confined> {
        // In the grade's own scratch folder: a grade killed with -9 leaves it to the next.
        let scratch = crate::scratch::tempdir("sandbox-")
            .context("cannot make the sandbox's scratch folder")?;
        self.give(scratch.path())?;
        let mut mounts = spec.mounts.clone();
        let own = crate::scratch::own()?;
        if as_root {
            // What a run reads from outside the grade's own folder is staged into it, never
            // reached through the instructor's folders; the program it runs (a reference
            // binary) executable alone.
            for mount in mounts.iter_mut().filter(|m| !m.writable) {
                let program = mount.inside == spec.program;
                mount.host = permissions::stage(&mount.host, &own, self.user, program)?;
            }
        }
        mounts.push(Mount::writable(scratch.path(), "/tmp"));
        let mut reach = fallback::Reach::base(toolchain().as_deref());
        for mount in &mounts {
            let list = if mount.writable {
                &mut reach.write
            } else {
                &mut reach.read
            };
            list.push(mount.host.clone());
        }
        if spec.gpu {
            reach.write.extend(gpu_devices(self.gpu));
            reach.read.push(PathBuf::from("/sys"));
            reach.read.push(PathBuf::from("/proc/driver/nvidia"));
        }
        if as_root {
            let record = permissions::record_path()?;
            for path in reach.read.iter().chain(&reach.write) {
                if path.exists() {
                    permissions::open_way_to(path, &own, self.user, &record)?;
                }
            }
        }
        Ok(Confined {
            ruleset: match landlock {
                true => Some(fallback::ruleset(&reach)?),
                false => None,
            },
            user: as_root.then_some(self.user),
            mounts,
            _scratch: scratch,
        })
    }

    /// The command that runs `spec`: bwrap and its arguments, or the program itself; and
    /// the descriptors bwrap reads, kept open until the command is spawned.
    fn command(&self, spec: &Spec) -> Result<(Command, Vec<OwnedFd>)> {
        match &self.kind {
            Kind::Bwrap { program, as_root } => {
                let (options, run) = bwrap_args(spec, *as_root, self.user, self.gpu);
                bwrap_through_descriptors(program, &options, &run)
            }
            Kind::Fallback { .. } | Kind::Unsandboxed => {
                Ok((direct_command(spec, &spec.mounts), Vec::new()))
            }
        }
    }
}

/// How each check's whole process tree was limited, by `mechanism`: a clause of the report's
/// "Grading:" line (it read "limited ... by measured by the grader").
fn tree_limits(how: &str) -> String {
    format!(
        "each check's memory, processes, disk and files were limited for its whole process \
         tree: {how}"
    )
}

/// A sandbox that could not be set up: a [`Failure::Spawn`], which the grade counts as the
/// grader's failure, not the student's.
fn grader_fault(e: anyhow::Error) -> Failure {
    Failure::Spawn(format!("cannot start the sandbox: {e:#}"))
}

/// Wait for `child` until `wall` after `started`, in ticks: between them the grader
/// measures the run ([`tree::Watch`]). Its exit status (none when it ran out of time or
/// went over a limit) and the limit it went over.
fn wait_within(
    child: &mut std::process::Child,
    wall: Duration,
    started: Instant,
    watch: &mut tree::Watch,
) -> (Option<std::process::ExitStatus>, Option<String>) {
    loop {
        let left = wall.saturating_sub(started.elapsed());
        if left.is_zero() {
            return (None, None);
        }
        match child.wait_timeout(left.min(tree::TICK)) {
            Ok(Some(status)) => return (Some(status), None),
            Ok(None) => {}
            Err(_) => return (None, None),
        }
        if let Some(why) = watch.check(child.id() as i32) {
            return (None, Some(why));
        }
    }
}

/// Kill a run that is still going (out of time, or `over` a limit) and reap it.
///
/// bwrap's own process holds the PID namespace: killing it kills every process inside
/// (--die-with-parent), so the pipes close and the drains end. The fallback's processes are
/// ended by the caller; a group's, here.
fn kill_run(child: &mut std::process::Child, group: Option<&tree::Group>, over: bool) {
    if let Some(group) = group {
        group.kill_all();
    } else if over {
        for pid in tree::tree(child.id() as i32) {
            // SAFETY: kill has no memory effects; a pid that ended gives ESRCH.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Without Landlock the sandbox's `user` may have written wherever any user may: every
/// process of it is ended (whatever its session), then every file of it there removed, so
/// that no check reads what an earlier one left. A file that stays is the grader's failure,
/// not the student's.
fn clear_user(user: u32) -> std::result::Result<(), Failure> {
    fallback::end_user(user);
    permissions::sweep(user)
        .map_err(|e| Failure::Spawn(format!("cannot clear the sandbox's files: {e:#}")))
}

/// The fallback's confinement of one run, kept until its processes are gone.
struct Confined {
    /// None without Landlock.
    ruleset: Option<std::os::fd::OwnedFd>,
    /// The uid it runs as, run by root.
    user: Option<u32>,
    /// The check's mounts and the scratch folder as its `/tmp`: the host paths of the
    /// sandbox's paths.
    mounts: Vec<Mount>,
    _scratch: tempfile::TempDir,
}

/// The program itself at its host path, its paths, working folder and environment mapped
/// through `mounts`.
fn direct_command(spec: &Spec, mounts: &[Mount]) -> Command {
    let map = |p: &Path| outside(p, mounts);
    let mut command = Command::new(map(&spec.program));
    command.args(spec.args.iter().map(|a| {
        let path = Path::new(a);
        if path.is_absolute() {
            map(path).into_os_string()
        } else {
            a.clone()
        }
    }));
    command.current_dir(map(&spec.cwd));
    command
        .env_clear()
        .envs(base_env().iter().chain(&spec.env).map(|(k, v)| {
            let path = Path::new(v);
            let value = if path.is_absolute() {
                map(path).into_os_string()
            } else {
                v.clone()
            };
            (k.clone(), value)
        }));
    command
}

/// The environment every student process gets: nothing of the grader's.
fn base_env() -> Vec<(String, OsString)> {
    let mut path = OsString::from("/usr/local/bin:/usr/bin:/bin");
    if let Some(sysroot) = toolchain() {
        let mut with = sysroot.join("bin").into_os_string();
        with.push(":");
        with.push(path);
        path = with;
    }
    let mut env = vec![
        ("PATH".to_string(), path),
        ("HOME".to_string(), OsString::from("/tmp")),
        ("TMPDIR".to_string(), OsString::from("/tmp")),
        ("LANG".to_string(), OsString::from("C.UTF-8")),
        // No progress bars or colours in captured output.
        ("TERM".to_string(), OsString::from("dumb")),
    ];
    // The GPU: which device a grade may use, and where the driver's libraries are.
    for key in ["CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"] {
        if let Some(value) = std::env::var_os(key) {
            env.push((key.to_string(), value));
        }
    }
    env
}

/// bubblewrap's arguments to run `spec`: its options (its namespaces, the system it sees,
/// its mounts, where and with what environment its command runs), then its command.
fn bwrap_args(
    spec: &Spec,
    as_root: bool,
    user: u32,
    gpu: Option<u32>,
) -> (Vec<OsString>, Vec<OsString>) {
    let mut options: Vec<OsString> = Vec::new();
    bwrap_namespaces(&mut options, as_root);
    bwrap_system(&mut options, spec);
    bwrap_mounts(&mut options, spec, gpu);
    push(&mut options, &[&"--chdir", &spec.cwd]);
    for (key, value) in base_env().iter().chain(&spec.env) {
        push(&mut options, &[&"--setenv", &key, value]);
    }
    (options, bwrap_command(spec, as_root, user))
}

/// bubblewrap (`program`) given its `options` through a descriptor (`--args`) and the
/// fallback's seccomp filter through another (`--seccomp`), then `run`: the same system
/// calls are refused in both sandboxes, and bwrap's own command line, which every process
/// inside reads as `/proc/1/cmdline`, names no host path (the mounts' sources are options).
/// The descriptors are closed on exec in every other child; this one's inherits them.
fn bwrap_through_descriptors(
    program: &Path,
    options: &[OsString],
    run: &[OsString],
) -> Result<(Command, Vec<OwnedFd>)> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    let mut listed = Vec::new();
    for option in options {
        listed.extend_from_slice(option.as_bytes());
        listed.push(0);
    }
    let descriptors = vec![
        memory_file(c"bwrap-args", &listed)?,
        memory_file(c"bwrap-seccomp", &fallback::filter_bytes()?)?,
    ];
    let raw: Vec<i32> = descriptors.iter().map(|d| d.as_raw_fd()).collect();
    let mut command = Command::new(program);
    command.env_clear();
    command
        .arg("--args")
        .arg(raw[0].to_string())
        .arg("--seccomp")
        .arg(raw[1].to_string())
        .arg("--")
        .args(run);
    // SAFETY: fcntl in the forked child before exec, on descriptors open in the parent
    // until the spawn returns (the caller keeps them); it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            for &fd in &raw {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    Ok((command, descriptors))
}

/// A file in memory holding `bytes`, read from its start, closed on exec.
fn memory_file(name: &std::ffi::CStr, bytes: &[u8]) -> Result<OwnedFd> {
    use std::io::{Seek, Write};
    use std::os::fd::FromRawFd;
    // SAFETY: memfd_create reads a valid C string and returns a new descriptor or -1.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("cannot make a file in memory");
    }
    // SAFETY: a descriptor just opened, owned by nothing else.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(bytes)
        .and_then(|()| file.rewind())
        .context("cannot write a file in memory")?;
    Ok(file.into())
}

/// Append `items` to bubblewrap's arguments.
fn push(args: &mut Vec<OsString>, items: &[&dyn AsRef<std::ffi::OsStr>]) {
    args.extend(items.iter().map(|i| i.as_ref().to_os_string()));
}

/// The sandbox's lifetime and namespaces, and who the student is in them.
fn bwrap_namespaces(args: &mut Vec<OsString>, as_root: bool) {
    push(args, &[&"--die-with-parent", &"--new-session"]);
    if as_root {
        // Every namespace but the user's: in a user namespace made by root the student would
        // still be root outside. setpriv (below) drops to the sandbox's user instead.
        push(
            args,
            &[
                &"--unshare-pid",
                &"--unshare-net",
                &"--unshare-ipc",
                &"--unshare-uts",
                &"--unshare-cgroup-try",
            ],
        );
    } else {
        push(
            args,
            &[&"--unshare-all", &"--uid", &"65534", &"--gid", &"65534"],
        );
    }
}

/// The system the student sees, read-only: the host's programs and libraries, the
/// toolchain, /proc and /dev, and a private /tmp and /dev/shm.
fn bwrap_system(args: &mut Vec<OsString>, spec: &Spec) {
    push(
        args,
        &[
            &"--ro-bind",
            &"/usr",
            &"/usr",
            &"--ro-bind",
            &"/etc",
            &"/etc",
        ],
    );
    for link in ["bin", "sbin", "lib", "lib64", "lib32"] {
        let host = Path::new("/").join(link);
        match std::fs::read_link(&host) {
            Ok(target) => push(args, &[&"--symlink", &target, &host]),
            Err(_) if host.is_dir() => push(args, &[&"--ro-bind", &host, &host]),
            Err(_) => {}
        }
    }
    // Every folder a mount point needs, made readable: bwrap would make them with the
    // grader's umask, which may shut the student out of its own mounts.
    let mut folders: Vec<PathBuf> = toolchain()
        .iter()
        .chain(spec.mounts.iter().map(|m| &m.inside))
        .flat_map(|p| {
            p.ancestors()
                .skip(1)
                .map(Path::to_path_buf)
                .collect::<Vec<_>>()
        })
        .filter(|p| p.parent().is_some())
        .collect();
    folders.sort();
    folders.dedup();
    for folder in &folders {
        push(args, &[&"--perms", &"0755", &"--dir", folder]);
    }
    if let Some(sysroot) = toolchain() {
        push(args, &[&"--ro-bind", &sysroot, &sysroot]);
    }
    push(args, &[&"--proc", &"/proc", &"--dev", &"/dev"]);
    // A private /tmp and /dev/shm the student may write, of a bounded size (in memory).
    push(
        args,
        &[
            &"--perms",
            &"1777",
            &"--size",
            &"268435456",
            &"--tmpfs",
            &"/tmp",
        ],
    );
    push(
        args,
        &[
            &"--perms",
            &"1777",
            &"--size",
            &"67108864",
            &"--tmpfs",
            &"/dev/shm",
        ],
    );
}

/// The GPU (device `gpu`, or all) where `spec` asks for it, and `spec`'s own mounts; then
/// the root is made read-only.
fn bwrap_mounts(args: &mut Vec<OsString>, spec: &Spec, gpu: Option<u32>) {
    if spec.gpu {
        for device in gpu_devices(gpu) {
            push(args, &[&"--dev-bind", &device, &device]);
        }
        push(args, &[&"--ro-bind", &"/sys", &"/sys"]);
    }
    for mount in &spec.mounts {
        let how = if mount.writable {
            "--bind"
        } else {
            "--ro-bind"
        };
        push(args, &[&how, &mount.host, &mount.inside]);
    }
    push(args, &[&"--remount-ro", &"/"]);
}

/// `spec`'s program and arguments, run as the sandbox's `user` when bubblewrap runs as
/// root.
fn bwrap_command(spec: &Spec, as_root: bool, user: u32) -> Vec<OsString> {
    let mut args = Vec::new();
    if as_root {
        let user = user.to_string();
        push(
            &mut args,
            &[
                &"setpriv",
                &"--reuid",
                &user,
                &"--regid",
                &user,
                &"--clear-groups",
                &"--inh-caps=-all",
                &"--bounding-set=-all",
                &"--no-new-privs",
                &"--",
            ],
        );
    }
    push(&mut args, &[&spec.program]);
    args.extend(spec.args.iter().cloned());
    args
}

/// The host path a process sees as `inside`, without a sandbox (the longest mount wins).
fn outside(inside: &Path, mounts: &[Mount]) -> PathBuf {
    mounts
        .iter()
        .filter_map(|m| {
            inside.strip_prefix(&m.inside).ok().map(|rest| {
                // Joining "" would add a slash: a file's path would name a folder.
                let host = if rest.as_os_str().is_empty() {
                    m.host.clone()
                } else {
                    m.host.join(rest)
                };
                (m.inside.components().count(), host)
            })
        })
        .max_by_key(|(depth, _)| *depth)
        .map_or_else(|| inside.to_path_buf(), |(_, host)| host)
}

/// The Rust toolchain's own folder (`rustc --print sysroot`), where cargo and rustc are.
pub fn toolchain() -> Option<PathBuf> {
    static SYSROOT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    SYSROOT
        .get_or_init(|| {
            let output = Command::new("rustc")
                .args(["--print", "sysroot"])
                .output()
                .ok()?;
            let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
            path.join("bin/cargo").is_file().then_some(path)
        })
        .clone()
}

/// The NVIDIA device files a GPU run is given: `/dev/nvidiactl`, `/dev/nvidia-uvm` and the
/// GPU of minor `only` (`/dev/nvidiaN`); every `/dev/nvidia*` where `only` is not known. A
/// run given every GPU's file could drop `CUDA_VISIBLE_DEVICES` and run on the GPU where
/// another grade's speed is being timed.
fn gpu_devices(only: Option<u32>) -> Vec<PathBuf> {
    let names: Vec<String> = std::fs::read_dir("/dev")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    let mut devices: Vec<PathBuf> = gpu_device_names(&names, only)
        .into_iter()
        .map(|n| Path::new("/dev").join(n))
        .collect();
    devices.sort();
    devices
}

/// Of `/dev`'s `names`, those a GPU run of the GPU of minor `only` is given.
fn gpu_device_names(names: &[String], only: Option<u32>) -> Vec<String> {
    names
        .iter()
        .filter(|name| {
            let Some(rest) = name.strip_prefix("nvidia") else {
                return false;
            };
            match (only, rest.parse::<u32>()) {
                // A GPU's own file: this grade's alone.
                (Some(minor), Ok(n)) => n == minor,
                // The control and memory devices every CUDA process opens; not modeset or
                // the capability folder (MIG), which no check needs.
                (Some(_), Err(_)) => matches!(rest, "ctl" | "-uvm" | "-uvm-tools"),
                (None, _) => true,
            }
        })
        .cloned()
        .collect()
}

/// The minor number (`/dev/nvidiaN`) and UUID of the GPU at PCI address `bus`
/// (`0000:3b:00.0`), read from the driver's `/proc/driver/nvidia/gpus/BUS/information`
/// ("Device Minor: N", "GPU UUID: GPU-...").
pub fn gpu_device(bus: &str) -> Option<(u32, Option<String>)> {
    let text = std::fs::read_to_string(
        Path::new("/proc/driver/nvidia/gpus")
            .join(bus)
            .join("information"),
    )
    .ok()?;
    Some((minor_in(&text)?, uuid_in(&text)))
}

fn minor_in(information: &str) -> Option<u32> {
    information
        .lines()
        .find_map(|l| l.trim().strip_prefix("Device Minor:"))
        .and_then(|n| n.trim().parse().ok())
}

fn uuid_in(information: &str) -> Option<String> {
    information
        .lines()
        .find_map(|l| l.trim().strip_prefix("GPU UUID:"))
        .map(str::trim)
        .filter(|u| {
            u.starts_with("GPU-") && u.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
        .map(str::to_string)
}

/// What would let an installed bubblewrap make its namespaces here: the kernel's switch that
/// refuses them to users (Ubuntu 24.04's AppArmor, Debian's older sysctl), or the
/// container's capabilities.
fn namespace_remedy(as_root: bool) -> &'static str {
    let switch = |name: &str| {
        std::fs::read_to_string(Path::new("/proc/sys/kernel").join(name))
            .is_ok_and(|v| v.trim() == "1")
    };
    if as_root {
        "let bubblewrap make namespaces (a Docker container: --cap-add SYS_ADMIN \
         --security-opt apparmor=unconfined)"
    } else if switch("apparmor_restrict_unprivileged_userns") {
        "let bubblewrap make namespaces (this kernel's AppArmor refuses them to users: run \
         grade as root with sudo, or sysctl kernel.apparmor_restrict_unprivileged_userns=0)"
    } else if std::fs::read_to_string("/proc/sys/kernel/unprivileged_userns_clone")
        .is_ok_and(|v| v.trim() == "0")
    {
        "let bubblewrap make namespaces (this kernel refuses them to users: run grade as \
         root with sudo, or sysctl kernel.unprivileged_userns_clone=1)"
    } else {
        "let bubblewrap make namespaces (run grade as root with sudo; in a Docker container \
         also --cap-add SYS_ADMIN --security-opt apparmor=unconfined)"
    }
}

fn find_program(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain(["/usr/bin", "/bin", "/usr/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Put back the modes that grades killed with -9 changed outside their own folders and no
/// living grade holds: run when a grade starts.
pub fn give_back() {
    permissions::give_back();
}

/// Let go of the modes this grade changed outside its own folders, each put back where no
/// other grade holds it: run when a grade ends.
pub fn let_go() {
    permissions::let_go_all();
}

/// Kill every process of a grade's own `user`, run by root, once the grade is over: a grade
/// stopped at its time limit cannot end its sandboxes itself.
pub fn end_user(user: u32) {
    if is_root() && user != 0 {
        fallback::end_user(user);
    }
}

fn fs_create(folder: &Path) -> Result<()> {
    std::fs::create_dir_all(folder).with_context(|| format!("cannot create {}", folder.display()))
}

/// Which sandbox a grade would run the student's code in here, or why none can start
/// (`cargo instructor test` skips the grading tests with that reason).
pub fn here() -> std::result::Result<&'static str, String> {
    Jail::detect(false)
        .map(|jail| jail.kind())
        .map_err(|e| format!("{e:#}"))
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Set the sandbox's resource limits in the child before it runs bwrap: every process the
/// student starts inherits them.
fn set_limits(command: &mut Command, limits: Limits, groups: Vec<std::ffi::CString>) {
    use std::os::unix::process::CommandExt;
    let set = [
        (libc::RLIMIT_CPU, limits.cpu_seconds),
        (libc::RLIMIT_NPROC, limits.processes),
        (libc::RLIMIT_FSIZE, limits.file_bytes),
        (libc::RLIMIT_CORE, 0),
        (
            libc::RLIMIT_AS,
            limits.memory_bytes.unwrap_or(libc::RLIM_INFINITY),
        ),
    ];
    // SAFETY: the closure runs in the forked child before exec and calls only open, write,
    // close, setrlimit and signal, which are async-signal-safe; `groups` was made before.
    unsafe {
        command.pre_exec(move || {
            // First, as the grader's user: the fallback drops to the sandbox's after.
            tree::join(&groups)?;
            for (resource, value) in set {
                let limit = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(resource, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // A file over the size limit is an error for the writer, not a killing signal.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
}

/// A reader thread: it keeps up to [`OUTPUT_CAP`] bytes and reads on to the end, so a
/// process that prints without end is stopped only by its time limit, not by memory.
fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let Some(mut pipe) = pipe else {
            return Vec::new();
        };
        let mut kept = Vec::new();
        let mut buffer = vec![0u8; 1 << 16];
        loop {
            let n = match pipe.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let room = OUTPUT_CAP.saturating_sub(kept.len());
            kept.extend_from_slice(&buffer[..n.min(room)]);
        }
        kept
    })
}

/// The last line worth showing of a process's stderr.
pub fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with("note: "))
        .unwrap_or("no message");
    match line.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

impl Jail {
    /// Without Landlock, make `roots` (the instructor's workspace, the references, the
    /// results' folder, the submissions) and the grader's folders in the temporary folder
    /// unreadable to the sandbox's user until the returned
    /// value is dropped; the grader's cache of the hand-out, the toolchain and the temporary
    /// folder stay reachable. Nothing to do with Landlock or bubblewrap: they show the
    /// sandbox none of it.
    pub fn protect(&self, roots: &[PathBuf]) -> Result<Option<permissions::Protection>> {
        let Kind::Fallback { landlock: None, .. } = self.kind else {
            return Ok(None);
        };
        // What is not staged (the toolchain, the cache's vendored sources and target) is
        // reached where it is; NVRTC and the CPU device are staged, the references too. From
        // a dist folder nothing is built: there is no cache, nor a workspace to hold one.
        let mut keep = vec![std::env::temp_dir()];
        keep.extend(toolchain());
        if xtask::bins::dist_folder().is_none() {
            let cache = xtask::bins::target_dir().join("grade-cache");
            fs_create(&cache)?;
            keep.push(cache);
        }
        // Other grades' folders (a class's, or one killed with -9 that left its folder: another
        // student's build) are their own sandboxes' groups' alone, in a folder no user lists.
        let protection = permissions::protect(roots, &keep)?;
        // Any user may read this process's command line: it names the results and the
        // references. Not blanked, it still names only what is now locked.
        if let Err(e) = permissions::hide_arguments() {
            shared::cli::eprint_line(&format!(
                "xtask: warning: the grader's command line stays readable to the sandbox ({e:#})"
            ));
        }
        Ok(Some(protection))
    }

    /// Hand a writable folder, and everything in it, to the sandbox's user (run by root).
    pub fn give(&self, path: &Path) -> Result<()> {
        if !self.needs_chown() {
            return Ok(());
        }
        let status = Command::new("chown")
            .arg("-R")
            .arg(format!("{0}:{0}", self.user))
            .arg(path)
            .status()
            .context("cannot run chown")?;
        if !status.success() {
            bail!("cannot hand {} to the sandbox's user", path.display());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jail() -> Jail {
        Jail::detect(false).expect("a sandbox starts here")
    }

    fn sh(script: &str) -> Spec {
        Spec::new("/bin/sh").args(["-c", script])
    }

    fn limits(seconds: u64) -> Limits {
        Limits::check(Duration::from_secs(seconds))
    }

    #[test]
    fn the_tree_limits_clause_reads_for_every_mechanism() {
        for mechanism in [
            tree::Mechanism::V2,
            tree::Mechanism::V1,
            tree::Mechanism::Measured,
        ] {
            for cores in [true, false] {
                let clause = tree_limits(&mechanism.describe(cores));
                assert!(!clause.contains(" by measured"), "{clause}");
                assert!(
                    clause.contains("tree: a cgroup") || clause.contains("tree: measured"),
                    "{clause}"
                );
            }
        }
    }

    #[test]
    fn inside_paths_map_to_the_longest_mount_without_a_sandbox() {
        let mounts = [
            Mount::read_only("/host/a", "/grade"),
            Mount::writable("/host/b", "/grade/out"),
        ];
        assert_eq!(
            outside(Path::new("/grade/out/x.ppm"), &mounts),
            Path::new("/host/b/x.ppm")
        );
        assert_eq!(
            outside(Path::new("/grade/bin"), &mounts),
            Path::new("/host/a/bin")
        );
        let file = [Mount::read_only("/host/lab02", "/grade/bin/lab02")];
        assert_eq!(
            outside(Path::new("/grade/bin/lab02"), &file).as_os_str(),
            "/host/lab02"
        );
        assert_eq!(
            outside(Path::new("/usr/bin/sh"), &mounts),
            Path::new("/usr/bin/sh")
        );
    }

    #[test]
    fn each_grade_of_a_class_has_a_user_of_its_own() {
        // Fewer than 512: a class test drawing beside this one cannot wrap them around.
        let users: std::collections::HashSet<u32> = (0..256).map(|_| next_class_user()).collect();
        assert_eq!(users.len(), 256);
        assert!(users
            .iter()
            .all(|&u| (CLASS_USERS..CLASS_USERS + 0x0080_0000).contains(&u)));
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn the_student_is_nobody_and_sees_none_of_the_host() {
        let secret = tempfile::tempdir().expect("a temp folder");
        std::fs::write(secret.path().join("rubric.toml"), "hidden").expect("written");
        let script = format!(
            "id -u; cat {}/rubric.toml 2>/dev/null && echo LEAKED; ls /work /root/.cargo 2>/dev/null && echo LEAKED; \
             touch /usr/x 2>/dev/null && echo LEAKED; echo $CARGO_MANIFEST_DIR",
            secret.path().display()
        );
        let jail = jail();
        let (status, ran, _) = jail.run(&sh(&script), &limits(30)).expect("runs");
        let out = String::from_utf8_lossy(&ran.stdout);
        assert!(status.success(), "{out}");
        assert!(!out.contains("LEAKED"), "{out}");
        if is_root() {
            assert_eq!(
                out.lines().next(),
                Some(jail.user.to_string().as_str()),
                "{out}"
            );
        }
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn only_writable_mounts_can_be_written() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let (out, ro) = (dir.path().join("out"), dir.path().join("ro"));
        for d in [&out, &ro] {
            std::fs::create_dir(d).expect("created");
        }
        jail().give(&out).expect("chown");
        // Paths through the environment: the fallback sandbox runs at the host's paths.
        let spec = sh("echo ok > $OUT/f && echo no > $RO/f; echo tmp > $TMPDIR/t && cat $TMPDIR/t")
            .mount(Mount::writable(&out, "/grade/out"))
            .mount(Mount::read_only(&ro, "/grade/ro"))
            .env("OUT", "/grade/out")
            .env("RO", "/grade/ro");
        let (_, ran, _) = jail().run(&spec, &limits(30)).expect("runs");
        assert_eq!(
            std::fs::read_to_string(out.join("f")).ok().as_deref(),
            Some("ok\n")
        );
        assert!(!ro.join("f").exists());
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "tmp\n");
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn grades_at_once_each_have_a_process_limit_of_their_own() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let first = jail().for_user(class_user(1)).expect("a user");
        if !is_root() {
            // Without root every sandbox is the user who runs it: one limit for all.
            assert!(first.shares_one_user());
            return;
        }
        first.give(dir.path()).expect("chown");
        let mut few = limits(60);
        few.processes = 40;
        // The first grade's student takes every process its user may have (39 sleeps and
        // itself), and keeps them.
        let bomb = sh("i=0; while [ $i -lt 39 ]; do sleep 30 & i=$((i+1)); done; \
                       echo $i > $OUT/full; exec sleep 30")
        .mount(Mount::writable(dir.path(), "/grade/out"))
        .env("OUT", "/grade/out");
        let holder = {
            let first = first.clone();
            thread::spawn(move || first.run(&bomb, &few))
        };
        let full = dir.path().join("full");
        let waited = Instant::now();
        while !full.exists() && waited.elapsed() < Duration::from_secs(30) {
            thread::sleep(Duration::from_millis(50));
        }
        assert!(full.exists(), "the first grade took its 40 processes");
        let starts = |jail: &Jail| {
            jail.run(&sh("sleep 0 & sleep 0 & wait; echo started"), &few)
                .map(|(_, ran, _)| String::from_utf8_lossy(&ran.stdout).into_owned())
                .unwrap_or_default()
        };
        // The grade beside it, as its own user, starts its processes; the same user could not.
        let second = jail().for_user(class_user(2)).expect("a user");
        assert_eq!(starts(&second), "started\n");
        assert_ne!(starts(&first), "started\n");
        let _ = Command::new("pkill")
            .args(["-KILL", "-U", &class_user(1).to_string()])
            .status();
        let _ = holder.join();
    }

    /// The tests of the fallback sandbox run as root one at a time: a grade's own folder is
    /// passed by one group, its one user's (a grade is a process; the tests share one), and
    /// each run ends by killing every process of that user. Side by side, CI saw one test's
    /// student killed mid-run, and another's refused its own folder ("Permission denied") as
    /// the folder's group turned to the other test's user.
    fn one_without_landlock() -> std::sync::MutexGuard<'static, ()> {
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        ONE.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The fallback without Landlock, as `grade` runs it where the kernel has none (run by
    /// root: only root can give the student a user of its own).
    fn jail_without_landlock() -> Jail {
        assert!(
            is_root(),
            "the fallback sandbox without Landlock needs root (run this test as root)"
        );
        Jail {
            kind: Kind::Fallback {
                as_root: true,
                landlock: None,
                bwrap: "a test of the fallback without Landlock".to_string(),
            },
            // Not `grade_user()`, which the bubblewrap tests beside it run as: every process
            // of this user is killed after each run.
            user: class_user(0x1ff),
            gpu: None,
            gpu_uuid: None,
        }
    }

    #[test]
    #[ignore = "needs root and a sandbox (cargo instructor test runs it as root where one starts)"]
    fn without_landlock_the_instructors_files_are_unreadable_and_nothing_is_left_behind() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let _one = one_without_landlock();
        let jail = jail_without_landlock();
        let dir = tempfile::tempdir().expect("a temp folder");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("a mode");
        // The instructor's files, every one readable by any user, at a path the student
        // knows; and the solution, which the sandbox runs, among them.
        let instructor = dir.path().join("autograder");
        std::fs::create_dir_all(instructor.join("bin")).expect("created");
        std::fs::write(instructor.join("rubric.toml"), "hidden").expect("written");
        let solution = instructor.join("bin/solution");
        std::fs::write(&solution, "#!/bin/sh\necho solution ran\n").expect("written");
        for (path, mode) in [
            (&instructor, 0o755),
            (&instructor.join("bin"), 0o755),
            (&solution, 0o755),
            (&instructor.join("rubric.toml"), 0o644),
        ] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("a mode");
        }
        let protection = jail
            .protect(std::slice::from_ref(&instructor))
            .expect("protected");
        assert!(protection.is_some());
        let tag = format!("xtask-left-{}", std::process::id());
        let script = format!(
            "$SOLUTION; id -u; \
             cat {rubric} 2>/dev/null && echo LEAKED; ls {root} 2>/dev/null && echo LEAKED; \
             for place in /tmp /var/tmp /dev/shm; do echo x > $place/{tag} && echo wrote; done; \
             mkdir /var/tmp/{tag}.d && echo x > /var/tmp/{tag}.d/f && echo wrote",
            rubric = instructor.join("rubric.toml").display(),
            root = instructor.display(),
        );
        // /tmp is the run's own scratch folder; /var/tmp and /dev/shm are the host's.
        // Paths through the environment: the fallback sandbox runs at the host's paths.
        let spec = sh(&script)
            .mount(Mount::read_only(&solution, "/grade/bin/solution"))
            .env("SOLUTION", "/grade/bin/solution");
        let (status, ran, stderr) = jail.run(&spec, &limits(30)).expect("runs");
        let out = String::from_utf8_lossy(&ran.stdout);
        assert!(
            status.success(),
            "{out}{}",
            String::from_utf8_lossy(&stderr)
        );
        assert!(out.starts_with("solution ran\n"), "{out}");
        assert_eq!(
            out.lines().nth(1),
            Some(jail.user.to_string().as_str()),
            "{out}"
        );
        assert!(!out.contains("LEAKED"), "{out}");
        assert_eq!(out.matches("wrote").count(), 4, "{out}");
        for place in ["/tmp", "/var/tmp", "/dev/shm"] {
            let left = std::fs::read_dir(place)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| {
                    e.metadata().is_ok_and(|m| m.uid() == jail.user)
                        || e.file_name().to_string_lossy().starts_with(&tag)
                })
                .count();
            assert_eq!(left, 0, "the sandbox left files in {place}");
        }
        // Put back once the grade lets go.
        drop(protection);
        let mode = std::fs::metadata(instructor.join("rubric.toml"))
            .expect("exists")
            .mode();
        assert_eq!(mode & 0o777, 0o644);
        assert_eq!(
            std::fs::metadata(&instructor).expect("exists").mode() & 0o777,
            0o755
        );
    }

    /// The fallback (with Landlock where the kernel has it, and without) runs a reference
    /// binary kept in a 0700 `--bin-dir`: the folders keep their modes (the way to them was
    /// opened for good, and user nobody read the solved kernels in lab04's strings), and the
    /// student's uid cannot read the binary, not even from the process it runs.
    #[test]
    #[ignore = "needs root and a sandbox (cargo instructor test runs it as root where one starts)"]
    fn a_reference_in_a_closed_folder_runs_unread_and_the_folder_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let _one = one_without_landlock();
        let mut jails = vec![jail_without_landlock()];
        if let Some(abi) = fallback::landlock_abi() {
            jails.push(Jail {
                kind: Kind::Fallback {
                    as_root: true,
                    landlock: Some(abi),
                    bwrap: "a test of the fallback".to_string(),
                },
                ..jail_without_landlock()
            });
        }
        let dir = tempfile::tempdir().expect("a temp folder");
        let bin_dir = dir.path().join("dist");
        std::fs::create_dir(&bin_dir).expect("created");
        // cat stands in for lab04: an ELF program, as the references are.
        std::fs::copy("/bin/cat", bin_dir.join("lab04")).expect("copied");
        std::fs::write(bin_dir.join("libcpu_device.so"), "device\n").expect("written");
        for (path, mode) in [(dir.path(), 0o755), (&bin_dir, 0o700)] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("a mode");
        }
        let mode = |p: &Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o7777;
        for jail in jails {
            let run = |args: &[&str]| {
                let spec = Spec::new("/grade/bin/lab04")
                    .args(args)
                    .mount(Mount::read_only(bin_dir.join("lab04"), "/grade/bin/lab04"))
                    .mount(Mount::read_only(
                        bin_dir.join("libcpu_device.so"),
                        "/grade/cpu-device.so",
                    ));
                let (status, ran, stderr) = jail.run(&spec, &limits(30)).expect("runs");
                (
                    status.success(),
                    String::from_utf8_lossy(&ran.stdout).into_owned(),
                    String::from_utf8_lossy(&stderr).into_owned(),
                )
            };
            // It runs, and reads what it is given.
            let (ran, out, err) = run(&["/grade/cpu-device.so"]);
            assert!(ran && out == "device\n", "{}: {out}{err}", jail.kind());
            // Its own binary it may not read.
            let (ran, out, err) = run(&["/proc/self/exe"]);
            assert!(!ran && out.is_empty(), "{}: {out}", jail.kind());
            assert!(err.contains("Permission denied"), "{}: {err}", jail.kind());
            assert_eq!(mode(&bin_dir), 0o700, "{}", jail.kind());
            assert_eq!(mode(dir.path()), 0o755, "{}", jail.kind());
        }
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn the_sandbox_never_runs_as_root() {
        let error = jail().for_user(0).expect_err("refused").to_string();
        assert!(error.contains("cannot be root"), "{error}");
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn a_process_left_behind_dies_with_the_check() {
        // A child holds stdout open and sleeps: without the PID namespace the grader would
        // wait for it; here the check ends when the main process does.
        let started = Instant::now();
        let (status, _, _) = jail()
            .run(&sh("(sleep 60 &) ; echo started"), &limits(30))
            .expect("runs");
        assert!(status.success());
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn endless_output_is_capped_and_stopped_at_the_limit() {
        let started = Instant::now();
        let outcome = jail().run(&sh("yes"), &limits(3));
        assert!(matches!(outcome, Err(Failure::TimedOut(_))), "{outcome:?}");
        assert!(started.elapsed() < Duration::from_secs(15));
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn a_file_past_the_size_limit_is_refused() {
        let mut small = limits(30);
        small.file_bytes = 1 << 20;
        let (status, ran, _) = jail()
            .run(
                &sh("head -c 2000000 /dev/zero > $TMPDIR/big; echo $?; wc -c < $TMPDIR/big"),
                &small,
            )
            .expect("runs");
        assert!(status.success());
        let out = String::from_utf8_lossy(&ran.stdout);
        assert_eq!(out.lines().last(), Some("1048576"), "{out}");
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn no_network_inside() {
        // bubblewrap gives a network namespace with only the loopback; the fallback refuses
        // every socket. perl-base is in every Debian and Ubuntu.
        let script = "perl -MSocket -e 'socket(S, PF_INET, SOCK_STREAM, 0) or die \"no socket: $!\\n\"; \
                      connect(S, pack_sockaddr_in(53, inet_aton(\"1.1.1.1\"))) or die \"no route: $!\\n\"; \
                      print \"connected\\n\"'";
        let (status, ran, stderr) = jail().run(&sh(script), &limits(30)).expect("runs");
        let said = String::from_utf8_lossy(&stderr);
        assert!(
            !status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stdout)
        );
        assert!(
            said.starts_with("no socket: Operation not permitted")
                || said.starts_with("no route: Network is unreachable"),
            "{said}"
        );
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn a_stopped_grade_leaves_no_process_of_its_user() {
        use std::os::unix::process::CommandExt;
        // A process of a class grade's user, as one that outlived its grader would be.
        let user = class_user(7);
        let mut command = Command::new("sleep");
        command.arg("30");
        if is_root() {
            command.uid(user).gid(user);
        }
        let mut left = command.spawn().expect("sleep starts");
        end_user(user);
        thread::sleep(Duration::from_millis(100));
        let ended = left.try_wait().expect("waits");
        if is_root() {
            assert!(ended.is_some(), "the grade's user still has a process");
        } else {
            // Without root the sandbox is the grader's own user: nothing is killed by user.
            assert!(ended.is_none());
            let _ = left.kill();
        }
        let _ = left.wait();
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn no_process_leaves_the_check_by_a_session_of_its_own() {
        // Without a PID namespace the fallback finds a check's processes by their session:
        // setsid is refused, so a process that tries stays in it and is killed. The sleep's
        // length is this test's own, so that no other sleep on the machine is taken for it.
        let sleep = format!("sleep 60.{}", std::process::id());
        let started = Instant::now();
        let (status, ran, _) = jail()
            .run(
                &sh(&format!("setsid {sleep} & sleep 0.2; echo started")),
                &limits(30),
            )
            .expect("runs");
        assert!(status.success());
        assert_eq!(String::from_utf8_lossy(&ran.stdout), "started\n");
        assert!(started.elapsed() < Duration::from_secs(20));
        let sleeping = Command::new("pgrep")
            .args(["-f", &format!("^{sleep}$")])
            .output()
            .expect("pgrep runs");
        assert!(sleeping.stdout.is_empty(), "a sleep survived the check");
    }

    /// The program that hides a check's process (tests/sandbox/hides.c), built in `dir`.
    pub(super) fn hides_built(dir: &Path) -> PathBuf {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sandbox/hides.c");
        let program = dir.join("hides");
        let status = Command::new("cc")
            .args(["-O1", "-pthread", "-o"])
            .arg(&program)
            .arg(&source)
            .status()
            .expect("cc (a C compiler) runs");
        assert!(status.success(), "hides.c does not compile");
        program
    }

    /// The live threads on this machine named `name`, whatever their process's state (a
    /// zombie leader's threads included), read straight from /proc.
    pub(super) fn threads_named(name: &str) -> usize {
        let tasks = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().parse::<i32>().is_ok())
            .flat_map(|e| {
                std::fs::read_dir(e.path().join("task"))
                    .into_iter()
                    .flatten()
            })
            .flatten();
        tasks
            .filter(|task| {
                let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
                let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
                let state = stat.rsplit_once(") ").map(|(_, rest)| &rest[..1]);
                comm.trim_end() == name && !matches!(state, Some("Z" | "X") | None)
            })
            .count()
    }

    /// A check's process hidden by `mode` (hides.c) neither outlives the check nor holds
    /// memory uncounted: first it hides and the check ends, then it holds more memory than
    /// the check may while the check runs on. Each time, no thread of it is left.
    fn nothing_hides_by(jail: &Jail, mode: &str) {
        let dir = tempfile::tempdir().expect("a temp folder");
        let program = hides_built(dir.path());
        let out = dir.path().join("out");
        std::fs::create_dir(&out).expect("created");
        jail.give(&out).expect("chown");
        // A thread's name holds 15 bytes: the mode's first letters and this test's pid.
        let name = format!("h{}{}", &mode[..3], std::process::id() % 1_000_000);
        let hide = |mib: &str, linger: &str, done: &str| {
            Spec::new("/grade/bin/hides")
                .args([mode, mib, &name, &format!("/grade/out/{done}"), linger])
                .mount(Mount::read_only(&program, "/grade/bin/hides"))
                .mount(Mount::writable(&out, "/grade/out"))
        };
        let (status, _, stderr) = jail
            .run(&hide("16", "0", "hidden"), &limits(30))
            .expect("runs");
        assert!(
            status.success() && out.join("hidden").exists(),
            "{mode}: it did not hide ({status}): {}",
            String::from_utf8_lossy(&stderr)
        );
        assert_eq!(
            threads_named(&name),
            0,
            "{mode}: a thread outlived its check"
        );
        let mut small = limits(30);
        small.tree.memory = 96 << 20;
        let started = Instant::now();
        match jail.run(&hide("160", "20", "held"), &small) {
            Err(Failure::OverLimit(why)) => {
                assert!(why.starts_with("used more than 96 MiB"), "{mode}: {why}")
            }
            other => panic!("{mode}: its memory was not counted: {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{mode}");
        assert_eq!(
            threads_named(&name),
            0,
            "{mode}: a thread outlived its check"
        );
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn a_zombie_leaders_threads_are_counted_and_killed() {
        nothing_hides_by(&jail(), "zombie-leader");
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn a_double_fork_is_counted_and_killed() {
        nothing_hides_by(&jail(), "double-fork");
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn a_new_session_is_counted_and_killed() {
        nothing_hides_by(&jail(), "new-session");
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn a_clone_of_its_parents_child_is_counted_and_killed() {
        nothing_hides_by(&jail(), "clone-parent");
    }

    #[test]
    #[ignore = "needs root and a sandbox (cargo instructor test runs it as root where one starts)"]
    fn without_landlock_no_process_hides() {
        let _one = one_without_landlock();
        let jail = jail_without_landlock();
        for mode in [
            "zombie-leader",
            "double-fork",
            "new-session",
            "clone-parent",
        ] {
            nothing_hides_by(&jail, mode);
        }
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn the_same_system_calls_are_refused_in_every_sandbox() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sandbox/refused.c");
        let program = dir.path().join("refused");
        let built = Command::new("cc")
            .arg("-o")
            .arg(&program)
            .arg(&source)
            .status()
            .expect("cc (a C compiler) runs");
        assert!(built.success(), "refused.c does not compile");
        let jail = jail();
        let spec =
            Spec::new("/grade/bin/refused").mount(Mount::read_only(&program, "/grade/bin/refused"));
        let (status, ran, stderr) = jail.run(&spec, &limits(30)).expect("runs");
        let out = String::from_utf8_lossy(&ran.stdout);
        assert!(
            status.success(),
            "{out}{}",
            String::from_utf8_lossy(&stderr)
        );
        assert_eq!(out.lines().count(), 13, "{out}");
        for line in out.lines() {
            assert!(line.ends_with(" refused"), "{}: {line}\n{out}", jail.kind());
        }
        // bubblewrap's own process is PID 1 inside: its command line names no host path;
        // and the files in memory it read its options and filter from are closed.
        if let Kind::Bwrap { .. } = jail.kind {
            let seen =
                sh("tr '\\0' ' ' < /proc/1/cmdline; echo; ls -l /proc/self/fd | tr '\\n' ' '")
                    .mount(Mount::read_only(dir.path(), "/grade/bin"));
            let (_, ran, _) = jail.run(&seen, &limits(30)).expect("runs");
            let seen = String::from_utf8_lossy(&ran.stdout);
            let (cmdline, descriptors) = seen.split_once('\n').unwrap_or_default();
            assert!(cmdline.contains("--args"), "{cmdline}");
            assert!(
                !cmdline.contains(&*dir.path().to_string_lossy()),
                "{cmdline}"
            );
            assert!(!descriptors.contains("memfd:"), "{descriptors}");
        }
    }

    /// `processes` shells that each hold `mib` MiB (a string of that size in memory), and
    /// the check's limits with `memory` for the whole tree.
    fn hogs(processes: usize, mib: usize) -> Spec {
        let hog = format!("perl -e '$x = \"a\" x ({mib} << 20); sleep 30' corpus-attack");
        let all = vec![format!("{hog} &"); processes].join(" ");
        sh(&format!("{all} wait"))
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn memory_is_limited_for_the_whole_tree() {
        // Four processes of 200 MiB, each far under RLIMIT_AS: 800 MiB together, over 512.
        let mut small = limits(60);
        small.tree.memory = 512 << 20;
        let started = Instant::now();
        let outcome = jail().run(&hogs(4, 200), &small);
        let said = match outcome {
            Err(Failure::OverLimit(why)) => why,
            other => panic!("{other:?}"),
        };
        assert!(
            said.starts_with("used more than 512 MiB of memory"),
            "{said}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(25),
            "{:?}",
            started.elapsed()
        );
        // The same tree under the default limit runs to its end.
        let mut fine = limits(60);
        fine.tree.memory = 2 << 30;
        let (status, _, _) = jail()
            .run(&sh("perl -e '$x = \"a\" x (100 << 20)' & perl -e '$x = \"a\" x (100 << 20)' & wait"), &fine)
            .expect("runs");
        assert!(status.success());
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn disk_and_files_are_limited_for_the_whole_tree() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let out = dir.path().join("out");
        std::fs::create_dir(&out).expect("created");
        jail().give(&out).expect("chown");
        let mut small = limits(60);
        small.tree.disk = Some(8 << 20);
        small.tree.files = Some(100);
        // Three files of 5 MiB, each under RLIMIT_FSIZE.
        let big = sh(
            "for i in 1 2 3; do head -c 5000000 /dev/zero > $OUT/corpus-attack-$i; done; sleep 5",
        )
        .mount(Mount::writable(&out, "/grade/out"))
        .env("OUT", "/grade/out");
        match jail().run(&big, &small) {
            Err(Failure::OverLimit(why)) => {
                assert!(why.starts_with("wrote more than 8 MiB to disk"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        // Many small files, written fast and ended before a tick: counted after the run.
        std::fs::remove_dir_all(&out).expect("removed");
        std::fs::create_dir(&out).expect("created");
        jail().give(&out).expect("chown");
        let many = sh(
            "cd $OUT && mkdir m && cd m && i=0; while [ $i -lt 150 ]; do : > f$i; i=$((i+1)); done",
        )
        .mount(Mount::writable(&out, "/grade/out"))
        .env("OUT", "/grade/out");
        match jail().run(&many, &small) {
            Err(Failure::OverLimit(why)) => {
                assert!(why.starts_with("made more than 100 files"), "{why}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    #[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
    fn a_gpu_run_is_given_its_own_gpu_alone() {
        let names: Vec<String> = [
            "nvidia0",
            "nvidia1",
            "nvidia2",
            "nvidiactl",
            "nvidia-uvm",
            "nvidia-uvm-tools",
            "nvidia-modeset",
            "nvidia-caps",
            "null",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            gpu_device_names(&names, Some(1)),
            ["nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]
        );
        assert_eq!(gpu_device_names(&names, None).len(), 8);
        let information = "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t GPU-x\n\
                           Video BIOS: \t 96.00\nBus Type: \t PCIe\nDMA Size: \t 52 bits\n\
                           Device Minor: \t 3\nGPU Excluded:\t No\n";
        assert_eq!(minor_in(information), Some(3));
        assert_eq!(uuid_in(information).as_deref(), Some("GPU-x"));
        assert_eq!(minor_in("Model: x\n"), None);
    }
}
