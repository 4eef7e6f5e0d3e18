//! Limits on a check's whole process tree, not on each of its processes: memory, processes,
//! disk and files, and the cores of a class's slot.
//!
//! Per-process limits (RLIMIT_AS, RLIMIT_FSIZE) let a check multiply them: four processes of
//! 3 GiB each under an 8 GiB RLIMIT_AS held 12.3 GiB of the host; 3 files of 1023 MiB under
//! a 1 GiB RLIMIT_FSIZE and 200,000 small files took 3.4 GiB and 199k inodes. So each run is
//! put, where the grader may make one, in a control group of its own, and watched by the
//! grader while it runs whatever the kernel enforces:
//!
//! - cgroup v2 under the grader's own group or the nearest above it that hands `memory` and
//!   `pids` to its children (root on a systemd host: the slice above the grader's service):
//!   `memory.max`, `pids.max`, and a cpuset for a class's slot;
//! - else cgroup v1 where its hierarchies are writable (root on a host or a privileged
//!   container): `memory.limit_in_bytes`, `pids.max`, `cpuset.cpus`;
//! - else (a read-only cgroup file system: Gradescope's Docker) the grader measures: the
//!   resident memory of every process of the run (its descendants and its session), summed.
//!
//! Either way the grader itself measures what no cgroup limits, every [`TICK`]: the size and
//! the count of the files in the run's writable folders, and the cores each thread of the
//! run may use (a slot's share of the cores is an affinity mask, which a process may widen
//! with `taskset` where no cpuset holds it). A run over a limit is killed whole and fails
//! with the limit's name.

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How often a running check is measured: a process that touches memory at 2 GB/s is seen
/// within 0.2 GB of the limit where no cgroup holds it.
pub const TICK: Duration = Duration::from_millis(100);

/// How often its folders are walked: a walk reads every file's metadata (10,000 files, the
/// default limit, take about 20 ms), so it runs every third tick.
const DISK_EVERY: u32 = 3;

/// The limits of one run's whole process tree.
#[derive(Debug, Clone, Copy)]
pub struct TreeLimits {
    /// Memory of every process together (resident, or charged to its cgroup).
    pub memory: u64,
    /// Bytes on disk in the run's writable folders (None: not measured, a build's target).
    pub disk: Option<u64>,
    /// Files and folders in them.
    pub files: Option<u64>,
    /// Processes and threads together.
    pub processes: u64,
}

impl TreeLimits {
    /// The rubric's defaults: 4 GiB of memory, 1 GiB and 10,000 files of disk.
    pub const DEFAULT: TreeLimits = TreeLimits {
        memory: 4 << 30,
        disk: Some(1 << 30),
        files: Some(10_000),
        processes: 1024,
    };
}

/// What a size in bytes is called in a message: `4 GiB`, `512 MiB`.
pub fn size(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", bytes.div_ceil(1 << 20))
    }
}

/// Which cgroup a run is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    V2,
    V1,
    Measured,
}

/// What a run's control group holds here, for the report.
pub fn describe() -> String {
    let cores = place().is_some_and(|p| p.cpuset.is_some());
    mechanism().describe(cores)
}

impl Mechanism {
    /// What limits a check's process tree by this mechanism, `cores` where a cpuset holds a
    /// class slot's cores.
    pub fn describe(self, cores: bool) -> String {
        match (self, cores) {
            (Mechanism::V2, true) => "a cgroup v2 of its own (memory.max, pids.max, and a \
                                      class's slot its cores by cpuset.cpus)"
                .to_string(),
            (Mechanism::V2, false) => "a cgroup v2 of its own (memory.max, pids.max; no \
                                       cpuset controller here: a class's slot its cores by \
                                       the grader's watch)"
                .to_string(),
            (Mechanism::V1, true) => "a cgroup v1 of its own (memory, pids, cpuset)".to_string(),
            (Mechanism::V1, false) => "a cgroup v1 of its own (memory, pids)".to_string(),
            (Mechanism::Measured, _) => "measured by the grader (no cgroup may be made here: \
                                         the memory of its processes summed every 0.1 s)"
                .to_string(),
        }
    }
}

/// Where this grader may make control groups, found once.
#[derive(Debug, Clone)]
struct Place {
    mechanism: Mechanism,
    /// v2: the grader's own group. v1: the grader's group in the memory hierarchy, then in
    /// pids' and cpuset's where they are writable.
    memory: PathBuf,
    pids: Option<PathBuf>,
    cpuset: Option<PathBuf>,
}

fn place() -> Option<&'static Place> {
    static PLACE: OnceLock<Option<Place>> = OnceLock::new();
    PLACE
        .get_or_init(|| {
            let found = find_v2().or_else(find_v1);
            if let Some(place) = &found {
                sweep(place);
            }
            found
        })
        .as_ref()
}

/// The mechanism runs get here.
pub fn mechanism() -> Mechanism {
    place().map_or(Mechanism::Measured, |p| p.mechanism)
}

/// `/proc/self/mountinfo`'s cgroup mounts: (mount root, mount point, fstype, super options).
fn cgroup_mounts() -> Vec<(String, PathBuf, String, String)> {
    let Ok(text) = fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            let fstype = *right.first()?;
            if fstype != "cgroup" && fstype != "cgroup2" {
                return None;
            }
            Some((
                left.get(3)?.to_string(),
                PathBuf::from(unescape(left.get(4)?)),
                fstype.to_string(),
                right.get(2).unwrap_or(&"").to_string(),
            ))
        })
        .collect()
}

/// mountinfo writes a space, tab, newline and backslash as octal escapes.
fn unescape(field: &str) -> String {
    field
        .replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// The grader's own group in a hierarchy: `/proc/self/cgroup`'s path, under the mount.
fn own_group(mount_root: &str, mount_point: &Path, path: &str) -> Option<PathBuf> {
    let relative = Path::new(path).strip_prefix(mount_root).ok()?;
    let dir = mount_point.join(relative);
    dir.is_dir().then_some(dir)
}

fn find_v2() -> Option<Place> {
    let cgroups = fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroups.lines().find_map(|l| l.strip_prefix("0::"))?;
    let (root, point, _, _) = cgroup_mounts()
        .into_iter()
        .find(|(_, _, fstype, _)| fstype == "cgroup2")?;
    let own = own_group(&root, &point, path)?;
    // The grader's own group, or the nearest above it, that hands memory and pids to its
    // children. A group that holds processes cannot (EBUSY), so the grader's own rarely
    // does; the slice above it does on a systemd host (system.slice for a CI runner's
    // service, user-0.slice for root's session), and root may place a run there, still
    // under that slice's own limits. Only the cpuset controller is enabled above it, for a
    // class's slot (below).
    let enabled = |dir: &Path, name: &str| {
        fs::read_to_string(dir.join("cgroup.subtree_control"))
            .is_ok_and(|s| s.split_whitespace().any(|c| c == name))
    };
    let dir = own
        .ancestors()
        .take_while(|dir| dir.starts_with(&point))
        .find(|dir| enabled(dir, "memory") && enabled(dir, "pids") && joinable(dir))?
        .to_path_buf();
    let cpuset = enable_cpuset(&point, &dir).then(|| dir.clone());
    Some(Place {
        mechanism: Mechanism::V2,
        memory: dir.clone(),
        pids: Some(dir),
        cpuset,
    })
}

/// Hand the cpuset controller down from the cgroup v2 root at `point` to the children of
/// `dir`, enabling it in each group's `cgroup.subtree_control` on the way where it is not
/// (the kernel offers a group's children only what its parent enabled): whether it is.
/// Without it a class's slot holds its cores by an affinity mask alone, which `taskset`
/// widens. It is left enabled: the groups below, another grade's among them, may hold their
/// cores by it, and it limits none that sets no `cpuset.cpus`. Every group on the way hands
/// memory down already, so it holds no process of its own and may hand cpuset down too:
/// this fails only where the kernel offers no cpuset (a container's delegated subtree).
fn enable_cpuset(point: &Path, dir: &Path) -> bool {
    let mut from_top: Vec<&Path> = dir
        .ancestors()
        .take_while(|a| a.starts_with(point))
        .collect();
    from_top.reverse();
    from_top.into_iter().all(|group| {
        let control = group.join("cgroup.subtree_control");
        fs::read_to_string(&control).is_ok_and(|s| s.split_whitespace().any(|c| c == "cpuset"))
            || fs::write(&control, "+cpuset").is_ok()
    })
}

/// Hold a run's group `dir` to `cores`: `cpuset.cpus`, after v1's `cpuset.mems` (copied
/// from `parent`: a v1 group takes no process before it has memory nodes; v2's inherits
/// them). Whether it holds them.
fn hold_cores(mechanism: Mechanism, parent: &Path, dir: &Path, cores: &[usize]) -> bool {
    let list = cores
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mems = || {
        fs::read_to_string(parent.join("cpuset.mems"))
            .or_else(|_| fs::read_to_string(parent.join("cpuset.mems.effective")))
            .unwrap_or_default()
    };
    (mechanism == Mechanism::V2 || fs::write(dir.join("cpuset.mems"), mems().trim()).is_ok())
        && fs::write(dir.join("cpuset.cpus"), &list).is_ok()
}

fn find_v1() -> Option<Place> {
    let cgroups = fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = cgroup_mounts();
    let hierarchy = |controller: &str| -> Option<PathBuf> {
        let path = cgroups.lines().find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, names, path) = (fields.next()?, fields.next()?, fields.next()?);
            names.split(',').any(|n| n == controller).then_some(path)
        })?;
        let (root, point, _, _) = mounts.iter().find(|(_, _, fstype, options)| {
            fstype == "cgroup" && options.split(',').any(|o| o == controller)
        })?;
        let dir = own_group(root, point, path)?;
        joinable(&dir).then_some(dir)
    };
    Some(Place {
        mechanism: Mechanism::V1,
        memory: hierarchy("memory")?,
        pids: hierarchy("pids"),
        cpuset: hierarchy("cpuset"),
    })
}

/// Whether a group made in `dir` can be joined by a child: a probe group, and `true` run in
/// it. A place where the child could not join would fail every run's start (and with it the
/// sandbox's own probe), so it is no place: the runs are measured instead.
fn joinable(dir: &Path) -> bool {
    use std::os::unix::process::CommandExt;
    let probe = dir.join(format!("xtask-{}-probe", std::process::id()));
    if fs::create_dir(&probe).is_err() {
        return false;
    }
    let procs = CString::new(probe.join("cgroup.procs").into_os_string().into_vec());
    let joined = procs.is_ok_and(|procs| {
        let files = [procs];
        let mut command = std::process::Command::new("true");
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: `join` makes only system calls on strings made before the fork.
        unsafe {
            command.pre_exec(move || join(&files));
        }
        command.status().is_ok_and(|s| s.success())
    });
    for _ in 0..50 {
        if fs::remove_dir(&probe).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    joined
}

/// Remove the groups of graders that are gone (killed with -9): `xtask-PID-N`, empty once
/// their processes died. A group with a live process is left (rmdir refuses it).
fn sweep(place: &Place) {
    let dirs = [
        Some(&place.memory),
        place.pids.as_ref(),
        place.cpuset.as_ref(),
    ];
    for dir in dirs.into_iter().flatten() {
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix("xtask-"))
                .and_then(|n| n.split('-').next())
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = fs::remove_dir(entry.path());
            }
        }
    }
}

/// One run's control groups, removed (their processes killed) when dropped.
pub struct Group {
    mechanism: Mechanism,
    /// Every group made for the run: one (v2) or one per hierarchy (v1).
    dirs: Vec<PathBuf>,
    /// The `cgroup.procs` files the child writes itself into, made before the fork: the
    /// child may only make system calls.
    procs: Vec<CString>,
    memory_dir: PathBuf,
    /// Whether the slot's cores are held by a cpuset (else measured).
    pub holds_cores: bool,
}

impl Group {
    /// A group for one run with `limits` (and the slot's `cores`), or None where none may be
    /// made (the run is measured instead).
    pub fn create(limits: &TreeLimits, cores: Option<&[usize]>) -> Option<Group> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let place = place()?;
        let name = format!(
            "xtask-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut group = Group {
            mechanism: place.mechanism,
            dirs: Vec::new(),
            procs: Vec::new(),
            memory_dir: place.memory.join(&name),
            holds_cores: false,
        };
        let made = |group: &mut Group, dir: PathBuf| -> Option<PathBuf> {
            if !group.dirs.contains(&dir) {
                fs::create_dir(&dir).ok()?;
                group.dirs.push(dir.clone());
                let procs =
                    CString::new(dir.join("cgroup.procs").into_os_string().into_vec()).ok()?;
                group.procs.push(procs);
            }
            Some(dir)
        };
        let memory = made(&mut group, place.memory.join(&name))?;
        match place.mechanism {
            Mechanism::V2 => {
                fs::write(memory.join("memory.max"), limits.memory.to_string()).ok()?;
                // No swap: the limit is of memory, not of memory that may be paged out.
                let _ = fs::write(memory.join("memory.swap.max"), "0");
                fs::write(memory.join("pids.max"), limits.processes.to_string()).ok()?;
            }
            Mechanism::V1 => {
                fs::write(
                    memory.join("memory.limit_in_bytes"),
                    limits.memory.to_string(),
                )
                .ok()?;
                let _ = fs::write(
                    memory.join("memory.memsw.limit_in_bytes"),
                    limits.memory.to_string(),
                );
                if let Some(pids) = &place.pids {
                    let dir = made(&mut group, pids.join(&name))?;
                    fs::write(dir.join("pids.max"), limits.processes.to_string()).ok()?;
                }
            }
            Mechanism::Measured => return None,
        }
        if let (Some(cores), Some(cpuset)) = (cores, &place.cpuset) {
            group.holds_cores = made(&mut group, cpuset.join(&name))
                .is_some_and(|dir| hold_cores(place.mechanism, cpuset, &dir, cores));
        }
        Some(group)
    }

    /// The files the child writes `0` (itself) into before exec.
    pub fn procs_files(&self) -> Vec<CString> {
        self.procs.clone()
    }

    /// The processes in the group.
    pub fn pids(&self) -> Vec<i32> {
        fs::read_to_string(self.memory_dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// How many processes the kernel killed for memory in this group.
    pub fn oom_kills(&self) -> u64 {
        let file = match self.mechanism {
            Mechanism::V2 => "memory.events",
            _ => "memory.oom_control",
        };
        fs::read_to_string(self.memory_dir.join(file))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Kill every process in the group until none is left (at most 5 s).
    pub fn kill_all(&self) {
        if self.mechanism == Mechanism::V2 {
            let _ = fs::write(self.memory_dir.join("cgroup.kill"), "1");
        }
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            let left = self.pids();
            if left.is_empty() {
                return;
            }
            for pid in left {
                // SAFETY: kill has no memory effects; a pid that ended meanwhile gives ESRCH.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill_all();
        // A group is removed once its last process is reaped: a few tries.
        for dir in self.dirs.iter().rev() {
            for _ in 0..50 {
                if fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// Write `0` into each of `files` (the calling process joins those groups): run in the child
/// between fork and exec, so it makes only system calls (open, write, close) on C strings
/// made before the fork, and allocates nothing.
pub fn join(files: &[CString]) -> std::io::Result<()> {
    for file in files {
        // SAFETY: a valid C string; the descriptor is closed below.
        let fd = unsafe { libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: one byte of a static buffer to an open descriptor.
        let written = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
        let error = std::io::Error::last_os_error();
        // SAFETY: the descriptor opened above, closed once.
        unsafe { libc::close(fd) };
        if written != 1 {
            return Err(error);
        }
    }
    Ok(())
}

/// The cores this grader may use, where they are fewer than the machine's (a class slot's
/// share, [`crate::grade::class`]); None where it may use every core.
pub fn slot_cores() -> Option<Vec<usize>> {
    static CORES: OnceLock<Option<Vec<usize>>> = OnceLock::new();
    CORES
        .get_or_init(|| {
            // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it for this process.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::cpu_set_t>();
            if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
                return None;
            }
            let mine: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
                // SAFETY: every index is below CPU_SETSIZE.
                .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
                .collect();
            let online = fs::read_to_string("/sys/devices/system/cpu/online")
                .ok()
                .map_or(0, |s| parse_cpu_list(&s).len());
            (!mine.is_empty() && mine.len() < online).then_some(mine)
        })
        .clone()
}

/// `0-3,8,10-11` as a list of cores.
pub fn parse_cpu_list(text: &str) -> Vec<usize> {
    let mut cores = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
            if b >= a && b - a < 65536 {
                cores.extend(a..=b);
            }
        }
    }
    cores
}

/// The grader's watch over one run.
pub struct Watch<'a> {
    limits: TreeLimits,
    group: Option<&'a Group>,
    /// The run's writable folders (host paths), whose size and files are counted.
    folders: Vec<PathBuf>,
    cores: Option<HashSet<usize>>,
    ticks: u32,
}

impl<'a> Watch<'a> {
    pub fn new(
        limits: TreeLimits,
        group: Option<&'a Group>,
        folders: Vec<PathBuf>,
        cores: Option<Vec<usize>>,
    ) -> Watch<'a> {
        Watch {
            limits,
            group,
            folders,
            cores: cores.map(|c| c.into_iter().collect()),
            ticks: 0,
        }
    }

    /// Measure the run whose first process is `child` (its session leader in the fallback):
    /// None, or which limit it is over.
    pub fn check(&mut self, child: i32) -> Option<String> {
        self.ticks += 1;
        if let Some(over) = self.memory_and_cores(child) {
            return Some(over);
        }
        if self.ticks.is_multiple_of(DISK_EVERY) {
            return self.disk();
        }
        None
    }

    /// After the run: a memory kill the kernel made, a disk over its limit.
    pub fn after(&mut self) -> Option<String> {
        if self.group.is_some_and(|g| g.oom_kills() > 0) {
            return Some(self.memory_message());
        }
        self.disk()
    }

    fn memory_message(&self) -> String {
        format!(
            "used more than {} of memory (all its processes together) and was killed",
            size(self.limits.memory)
        )
    }

    fn memory_and_cores(&self, child: i32) -> Option<String> {
        if self.group.is_some_and(|g| g.oom_kills() > 0) {
            return Some(self.memory_message());
        }
        let held_cores = self.group.is_some_and(|g| g.holds_cores);
        let measure_memory = self.group.is_none();
        if !measure_memory && (held_cores || self.cores.is_none()) {
            return None;
        }
        let pids = match self.group {
            Some(group) => group.pids(),
            None => tree(child),
        };
        let (mut resident, mut threads) = (0u64, 0u64);
        for pid in pids {
            // Per thread group, as a live thread sees it (a zombie leader's own is empty).
            let Some(status) = status(pid) else {
                continue;
            };
            let field = |name: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(str::trim)
            };
            if measure_memory {
                resident += field("VmRSS:")
                    .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
                    .unwrap_or(0)
                    * 1024;
                threads += field("Threads:")
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(1);
            }
            if let (Some(cores), false) = (&self.cores, held_cores) {
                if let Some(wider) = widened(pid, cores) {
                    return Some(wider);
                }
            }
        }
        if measure_memory && resident > self.limits.memory {
            return Some(self.memory_message());
        }
        if measure_memory && threads > self.limits.processes {
            return Some(format!(
                "ran more than {} processes and threads at once and was killed",
                self.limits.processes
            ));
        }
        None
    }

    fn disk(&self) -> Option<String> {
        let (Some(bytes), files) = (self.limits.disk, self.limits.files) else {
            return None;
        };
        let files = files.unwrap_or(u64::MAX);
        let (used, count) = usage(&self.folders, bytes, files);
        if used > bytes {
            return Some(format!(
                "wrote more than {} to disk (all its files together) and was killed",
                size(bytes)
            ));
        }
        if count > files {
            return Some(format!(
                "made more than {files} files and folders and was killed"
            ));
        }
        None
    }
}

/// The free room a run's disk limit needs on each of its writable folders' file systems: the
/// limit itself and the most it can write past it before the next look ([`DISK_EVERY`] ticks).
/// With less, a program within its limit finds the disk full, and a program over it may not
/// get past it: either way its grade would be the grader's disk, not its work (CI once gave
/// `writes-3-gib-beside-its-image` 10 points so, on a nearly full disk).
pub fn room_to_watch(folders: &[PathBuf], disk: u64) -> Result<(), String> {
    let needed = disk.saturating_add(1 << 30);
    for folder in folders {
        let Some(free) = free_bytes(folder) else {
            continue;
        };
        if free < needed {
            return Err(format!(
                "the grader's disk has {} free under {}, less than the {} a check needs to be \
                 watched at its disk limit of {}: free some space (or set TMPDIR to a larger \
                 disk) and grade again",
                size(free),
                folder.display(),
                size(needed),
                size(disk)
            ));
        }
    }
    Ok(())
}

/// The bytes an unprivileged user may still write on `path`'s file system.
fn free_bytes(path: &Path) -> Option<u64> {
    let name = CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `name` is a NUL-terminated path and `stats` a buffer of the size statvfs fills.
    if unsafe { libc::statvfs(name.as_ptr(), stats.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled `stats`.
    let stats = unsafe { stats.assume_init() };
    Some(stats.f_bavail.saturating_mul(stats.f_frsize))
}

/// A thread of `pid` allowed a core outside the slot's `cores`: which.
fn widened(pid: i32, cores: &HashSet<usize>) -> Option<String> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for task in tasks.flatten() {
        let Ok(status) = fs::read_to_string(task.path().join("status")) else {
            continue;
        };
        let Some(list) = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        else {
            continue;
        };
        let allowed = parse_cpu_list(list);
        if allowed.iter().any(|c| !cores.contains(c)) {
            let mut own: Vec<usize> = cores.iter().copied().collect();
            own.sort_unstable();
            return Some(format!(
                "widened its share of the cores (to {}; its slot has {}) and was killed",
                list.trim(),
                own.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
    }
    None
}

/// The bytes on disk and the entries under `folders`, counted without following links and
/// stopped once past either limit (a folder of 200,000 files is not walked whole each tick).
pub fn usage(folders: &[PathBuf], bytes_cap: u64, files_cap: u64) -> (u64, u64) {
    let (mut bytes, mut count) = (0u64, 0u64);
    let mut stack: Vec<PathBuf> = folders.to_vec();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            count += 1;
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            // Blocks, not length: a sparse file of a terabyte takes no disk.
            bytes += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(entry.path());
            }
            if bytes > bytes_cap || count > files_cap {
                return (bytes, count);
            }
        }
    }
    (bytes, count)
}

/// A process of the host, as `/proc/PID/stat` shows it.
#[derive(Debug, Clone, Copy)]
pub struct Process {
    pub pid: i32,
    pub parent: i32,
    pub session: i32,
}

/// Every process with a thread still running. A process whose first thread ended alone
/// (`syscall(SYS_exit)`) shows as a zombie while its other threads run on: it is live, its
/// memory held, its pid the one a signal kills it by. Only a process whose every thread
/// ended is dead (a zombie waiting for its parent).
pub fn processes() -> Vec<Process> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let (state, parent, session) = stat(&format!("/proc/{pid}/stat"))?;
            (!dead(state) || live_thread(pid).is_some()).then_some(Process {
                pid,
                parent,
                session,
            })
        })
        .collect()
}

/// A zombie or a task being reaped.
fn dead(state: char) -> bool {
    matches!(state, 'Z' | 'X' | 'x')
}

/// A `stat` file's state, parent and session, read after the command's name (which may
/// hold spaces and parentheses).
fn stat(path: &str) -> Option<(char, i32, i32)> {
    let text = fs::read_to_string(path).ok()?;
    let mut fields = text.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    let session = fields.nth(1)?.parse().ok()?;
    Some((state, parent, session))
}

/// A thread of process `pid` that is still running, if any: the leader itself while it
/// runs, else another.
fn live_thread(pid: i32) -> Option<i32> {
    fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .find(|tid| {
            stat(&format!("/proc/{pid}/task/{tid}/stat")).is_some_and(|(state, _, _)| !dead(state))
        })
}

/// The `status` file of process `pid` as one of its live threads sees it: a zombie
/// leader's own has no memory, though its other threads hold all of it. None: it is dead.
pub fn status(pid: i32) -> Option<String> {
    let tid = live_thread(pid)?;
    fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()
}

/// The real uid of the live process `pid`.
pub fn uid_of(pid: i32) -> Option<u32> {
    status(pid)?
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Every live process descended from `root` or in its session (the fallback's processes
/// that lost their parent are in it; bubblewrap's stay below it in their PID namespace).
pub fn tree(root: i32) -> Vec<i32> {
    let all = processes();
    let parent: HashMap<i32, i32> = all.iter().map(|p| (p.pid, p.parent)).collect();
    all.iter()
        .filter(|process| {
            if process.session == root {
                return true;
            }
            let mut at = process.pid;
            for _ in 0..4096 {
                if at == root {
                    return true;
                }
                match parent.get(&at) {
                    Some(&p) if p > 0 && p != at => at = p,
                    _ => return false,
                }
            }
            false
        })
        .map(|process| process.pid)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_list_is_read() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list(""), Vec::<usize>::new());
        assert_eq!(parse_cpu_list("5-2,x"), Vec::<usize>::new());
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(4 << 30), "4 GiB");
        assert_eq!(size(1 << 29), "512 MiB");
    }

    #[test]
    fn a_disk_too_full_to_watch_a_limit_is_the_graders_to_say() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let why = room_to_watch(&[dir.path().to_path_buf()], u64::MAX / 4)
            .expect_err("no disk has 4 EiB free");
        assert!(why.starts_with("the grader's disk has "), "{why}");
        assert!(why.contains("free some space"), "{why}");
    }

    #[test]
    fn a_walk_stops_past_its_limits() {
        let dir = tempfile::tempdir().expect("a temp folder");
        for i in 0..50 {
            fs::write(dir.path().join(format!("f{i}")), vec![1u8; 8192]).expect("written");
        }
        let (bytes, count) = usage(&[dir.path().to_path_buf()], u64::MAX, 10);
        assert_eq!(count, 11);
        assert!(bytes >= 10 * 8192, "{bytes}");
        let (_, all) = usage(&[dir.path().to_path_buf()], u64::MAX, u64::MAX);
        assert_eq!(all, 50);
    }

    /// A cgroup v2 tree in a temporary folder: the root, a slice and the grader's group in
    /// it, each with the `cgroup.subtree_control` given.
    fn fake_v2(controls: [&str; 3]) -> (tempfile::TempDir, Vec<PathBuf>) {
        let root = tempfile::tempdir().expect("a temp folder");
        let groups = vec![
            root.path().to_path_buf(),
            root.path().join("system.slice"),
            root.path().join("system.slice/grader.service"),
        ];
        for (group, control) in groups.iter().zip(controls) {
            fs::create_dir_all(group).expect("created");
            fs::write(group.join("cgroup.subtree_control"), control).expect("written");
        }
        (root, groups)
    }

    #[test]
    fn cpuset_is_handed_down_where_it_is_not() {
        let (_root, groups) = fake_v2(["cpuset memory pids", "memory pids", "memory pids"]);
        assert!(enable_cpuset(&groups[0], &groups[2]));
        let control =
            |n: usize| fs::read_to_string(groups[n].join("cgroup.subtree_control")).expect("read");
        // The kernel takes "+cpuset" as enabling it; the root had it already.
        assert_eq!(control(0), "cpuset memory pids");
        assert_eq!(control(1), "+cpuset");
        assert_eq!(control(2), "+cpuset");
    }

    #[test]
    fn no_cpuset_is_claimed_where_a_group_refuses_it() {
        let (_root, groups) = fake_v2(["memory pids", "memory pids", "memory pids"]);
        // The slice's file cannot be written (the kernel offers it no cpuset).
        let control = groups[1].join("cgroup.subtree_control");
        fs::remove_file(&control).expect("removed");
        fs::create_dir(&control).expect("created");
        assert!(!enable_cpuset(&groups[0], &groups[2]));
        assert_eq!(
            fs::read_to_string(groups[2].join("cgroup.subtree_control")).expect("read"),
            "memory pids",
            "nothing is enabled below a group that refused"
        );
    }

    #[test]
    fn a_slots_cores_are_written_to_its_group() {
        let (_root, groups) = fake_v2(["", "", ""]);
        let run = groups[2].join("xtask-1-0");
        fs::create_dir(&run).expect("created");
        assert!(hold_cores(Mechanism::V2, &groups[2], &run, &[2, 3]));
        assert_eq!(
            fs::read_to_string(run.join("cpuset.cpus")).expect("read"),
            "2,3"
        );
        // v2 inherits the memory nodes; v1 copies its parent's before any process joins.
        assert!(!run.join("cpuset.mems").exists());
        fs::write(groups[2].join("cpuset.mems"), "0-1\n").expect("written");
        assert!(hold_cores(Mechanism::V1, &groups[2], &run, &[5]));
        assert_eq!(
            fs::read_to_string(run.join("cpuset.mems")).expect("read"),
            "0-1"
        );
        assert_eq!(
            fs::read_to_string(run.join("cpuset.cpus")).expect("read"),
            "5"
        );
    }

    #[test]
    #[ignore = "needs root and a sandbox (cargo instructor test runs it as root where one starts)"]
    fn a_slots_cores_are_held_by_its_cgroup_where_cpuset_is_offered() {
        use std::os::unix::process::CommandExt;
        assert_ne!(
            mechanism(),
            Mechanism::Measured,
            "no cgroup may be made here"
        );
        let online =
            parse_cpu_list(&fs::read_to_string("/sys/devices/system/cpu/online").expect("read"));
        assert!(online.len() >= 2, "one core: no slot to hold");
        let offered = place().is_some_and(|p| p.cpuset.is_some());
        // Where the machine is known to offer cpuset (a GPU machine's cgroup v2, run as
        // root), a grader that fails to take it fails here.
        if std::env::var_os("XTASK_TEST_EXPECT_CPUSET").is_some() {
            assert!(offered, "{}", describe());
        }
        let group = Group::create(&TreeLimits::DEFAULT, Some(&online[..1])).expect("a group");
        assert_eq!(group.holds_cores, offered, "{}", describe());
        // A process of the group widens its affinity to every core: a cpuset holds it.
        let files = group.procs_files();
        let mut command = std::process::Command::new("sh");
        command.args([
            "-c",
            "taskset -pc 0-1023 $$ >/dev/null 2>&1; grep Cpus_allowed_list /proc/self/status",
        ]);
        // SAFETY: `join` makes only system calls on strings made before the fork.
        unsafe {
            command.pre_exec(move || join(&files));
        }
        let out = command.output().expect("sh runs");
        let allowed = String::from_utf8_lossy(&out.stdout);
        let allowed = parse_cpu_list(allowed.split(':').nth(1).unwrap_or_default());
        if offered {
            assert_eq!(allowed, online[..1], "the cpuset did not hold");
        } else {
            // Only the grader's watch stops it ([`widened`]).
            assert_eq!(allowed, online, "taskset did not widen");
        }
    }

    /// Watch `command`'s tree as the grader does where no cgroup may be made: what it said.
    fn watched(mut command: std::process::Command, watch: &mut Watch) -> Option<String> {
        let mut child = command.spawn().expect("starts");
        let started = Instant::now();
        let said = loop {
            if started.elapsed() > Duration::from_secs(20) {
                break None;
            }
            if let Ok(Some(_)) = child.try_wait() {
                break watch.after();
            }
            std::thread::sleep(TICK);
            if let Some(why) = watch.check(child.id() as i32) {
                break Some(why);
            }
        };
        for pid in tree(child.id() as i32) {
            // SAFETY: kill has no memory effects.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = child.kill();
        let _ = child.wait();
        said
    }

    #[test]
    fn without_a_cgroup_the_memory_of_every_process_is_summed() {
        let mut limits = TreeLimits::DEFAULT;
        limits.memory = 256 << 20;
        let mut watch = Watch::new(limits, None, Vec::new(), None);
        let mut command = std::process::Command::new("sh");
        command.args([
            "-c",
            "for i in 1 2 3; do perl -e '$x = \"a\" x (120 << 20); sleep 30' corpus-attack & done; wait",
        ]);
        let said = watched(command, &mut watch).unwrap_or_default();
        assert!(
            said.starts_with("used more than 256 MiB of memory"),
            "{said}"
        );
    }

    #[test]
    fn without_a_cgroup_a_zombie_leaders_threads_are_measured_and_killed() {
        use crate::sandbox::tests::{hides_built, threads_named};
        let dir = tempfile::tempdir().expect("a temp folder");
        let program = hides_built(dir.path());
        let mut limits = TreeLimits::DEFAULT;
        limits.memory = 96 << 20;
        let mut watch = Watch::new(limits, None, Vec::new(), None);
        // Its first thread exits alone once another holds 160 MiB: /proc shows a zombie.
        let name = format!("hzm{}", std::process::id() % 1_000_000);
        let mut command = std::process::Command::new(&program);
        command
            .args(["zombie-leader", "160", &name])
            .arg(dir.path().join("held"))
            .arg("20");
        let said = watched(command, &mut watch).unwrap_or_default();
        assert!(
            said.starts_with("used more than 96 MiB of memory"),
            "{said}"
        );
        // Killed by `watched`, which does not wait for the kill to land.
        let killed = Instant::now();
        while threads_named(&name) > 0 && killed.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(threads_named(&name), 0, "a thread outlived the run");
    }

    #[test]
    fn a_process_that_widens_its_cores_is_caught() {
        use std::os::unix::process::CommandExt;
        let online = parse_cpu_list(
            &fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default(),
        );
        if online.len() < 2 {
            return;
        }
        let mut watch = Watch::new(TreeLimits::DEFAULT, None, Vec::new(), Some(vec![online[0]]));
        let mut command = std::process::Command::new("sh");
        command.args([
            "-c",
            &format!(
                "sleep 0.3; taskset -c {} sh -c 'sleep 10' corpus-attack",
                online[1]
            ),
        ]);
        let first = online[0];
        // SAFETY: sched_setaffinity in the child before exec, on a set made here.
        unsafe {
            command.pre_exec(move || {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(first, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                Ok(())
            });
        }
        let said = watched(command, &mut watch).unwrap_or_default();
        assert!(said.starts_with("widened its share of the cores"), "{said}");
    }
}
