//! The sandbox where bubblewrap cannot make namespaces: a Docker container with the default
//! capabilities and seccomp profile (Gradescope), or a kernel that refuses unprivileged user
//! namespaces (Ubuntu 24.04's AppArmor). It is built from what such places allow:
//!
//! - every student process runs in a session of its own, as a uid of its own when the grader
//!   is root (its capabilities and bounding set dropped), with `no_new_privs`;
//! - under Landlock: it may read only the system's programs and libraries, a few files of
//!   `/etc`, the toolchain and what its check mounts, and write only its check's writable
//!   folders and a private scratch folder; it may not connect or bind TCP, reach an abstract
//!   unix socket or signal a process outside its own Landlock domain (kernels with Landlock
//!   ABI 6, Linux 6.12);
//! - under a seccomp filter that refuses every socket (network and unix alike), ptrace and
//!   reading other processes' memory, new namespaces, mount, keyrings, bpf, perf, io_uring,
//!   System V and POSIX message queues, kernel modules, device files, and `setsid`, so that
//!   no process can leave the session by which the grader finds it (bubblewrap runs the same
//!   filter);
//! - after each check every process of its session is killed, found by any thread still
//!   running ([`super::tree::processes`]), and the check fails if one survives: there is no
//!   PID namespace to do it.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, ABI,
};
use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

/// The Landlock ABI this kernel offers (1 is Linux 5.13's; 6, Linux 6.12, adds the scopes of
/// signals and abstract unix sockets), or None without Landlock.
pub fn landlock_abi() -> Option<i32> {
    // SAFETY: landlock_create_ruleset with a null attribute and the VERSION flag only asks
    // for the ABI version; it creates nothing.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    (abi >= 1).then_some(abi as i32)
}

/// The files and folders a sandboxed process may reach.
pub struct Reach {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
}

impl Reach {
    /// What every process needs: the system's programs and libraries, the few files of /etc
    /// that the dynamic loader, the C library and the linker read, and the harmless devices.
    pub fn base(toolchain: Option<&Path>) -> Reach {
        let mut read: Vec<PathBuf> = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"]
            .iter()
            .map(PathBuf::from)
            .collect();
        read.extend(
            [
                "ld.so.cache",
                "ld.so.conf",
                "ld.so.conf.d",
                "passwd",
                "group",
                "nsswitch.conf",
                "localtime",
                "alternatives",
            ]
            .iter()
            .map(|name| Path::new("/etc").join(name)),
        );
        read.extend(toolchain.map(Path::to_path_buf));
        let write = ["null", "zero", "full", "random", "urandom"]
            .iter()
            .map(|name| Path::new("/dev").join(name))
            .collect();
        Reach { read, write }
    }
}

/// The Landlock ruleset that confines a process to `reach`, ready to be enforced in the
/// child (its descriptor is closed on exec).
pub fn ruleset(reach: &Reach) -> Result<OwnedFd> {
    // The rights of the newest ABI this crate knows; an older kernel enforces those it has.
    let abi = ABI::V6;
    let existing = |paths: &[PathBuf]| -> Vec<PathBuf> {
        paths.iter().filter(|p| p.exists()).cloned().collect()
    };
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))?
        .handle_access(AccessNet::from_all(abi))?
        .scope(Scope::from_all(abi))?
        .create()?
        .add_rules(path_beneath_rules(
            existing(&reach.read),
            AccessFs::from_read(abi),
        ))?
        .add_rules(path_beneath_rules(
            existing(&reach.write),
            AccessFs::from_all(abi),
        ))?;
    Option::<OwnedFd>::from(created).ok_or_else(|| anyhow!("this kernel offers no Landlock"))
}

/// The seccomp filter every student process runs under, in either sandbox (bubblewrap
/// takes it as bytes, [`filter_bytes`]), compiled once: it answers clone3 with ENOSYS, so
/// the C library falls back to clone, whose flags it can read; on x86_64 it refuses x32's
/// system calls (ENOSYS); and it refuses (EPERM) what a sandbox must not do.
pub fn filter() -> Result<&'static BpfProgram> {
    static FILTER: OnceLock<std::result::Result<BpfProgram, String>> = OnceLock::new();
    FILTER
        .get_or_init(|| compile_filter(false).map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow!("cannot compile the seccomp filter: {e}"))
}

/// bubblewrap's filter as the kernel reads it (`struct sock_filter`s in the machine's byte
/// order), what its `--seccomp` takes from a descriptor: the fallback's, but for unix
/// sockets. The NVIDIA driver opens two (`AF_UNIX`, `SOCK_SEQPACKET`) in `cuInit` and fails
/// without them ("OS call failed or operation not supported on this OS": measured on the
/// H100 machine, where every GPU check of the solution failed under the fallback's filter).
/// In bubblewrap they reach nothing outside: its network namespace holds the abstract ones
/// apart, and a path names only what the sandbox mounts.
pub fn filter_bytes() -> Result<Vec<u8>> {
    static FILTER: OnceLock<std::result::Result<BpfProgram, String>> = OnceLock::new();
    let filter = FILTER
        .get_or_init(|| compile_filter(true).map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow!("cannot compile the seccomp filter: {e}"))?;
    Ok(filter
        .iter()
        .flat_map(|i| {
            let mut bytes = [0u8; 8];
            bytes[..2].copy_from_slice(&i.code.to_ne_bytes());
            bytes[2] = i.jt;
            bytes[3] = i.jf;
            bytes[4..].copy_from_slice(&i.k.to_ne_bytes());
            bytes
        })
        .collect())
}

/// The refusals, with unix sockets allowed where `unix_sockets` ([`filter_bytes`]).
fn compile_filter(unix_sockets: bool) -> Result<BpfProgram> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| anyhow!("no seccomp filter for {}: {e:?}", std::env::consts::ARCH))?;
    let refused: &[libc::c_long] = &[
        libc::SYS_socket,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_kcmp,
        libc::SYS_pidfd_getfd,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsmount,
        libc::SYS_fsconfig,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_keyctl,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_fanotify_init,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_syslog,
        libc::SYS_personality,
        libc::SYS_setsid,
        libc::SYS_shmget,
        libc::SYS_msgget,
        libc::SYS_semget,
        libc::SYS_mq_open,
    ];
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        refused.iter().map(|&call| (call, Vec::new())).collect();
    let namespaces = [
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWCGROUP,
    ];
    let clone_rules = namespaces
        .iter()
        .map(|&flag| {
            let flag = flag as u64;
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )
            .and_then(|c| SeccompRule::new(vec![c]))
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    if unix_sockets {
        let other_domain = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .and_then(|c| SeccompRule::new(vec![c]))?;
        rules.insert(libc::SYS_socket, vec![other_domain]);
    }
    // A device file (which root's mount namespace would honour); a FIFO or a plain file
    // stays allowed. The mode is mknod's second argument, mknodat's third.
    for (call, mode) in [(libc::SYS_mknod, 1), (libc::SYS_mknodat, 2)] {
        let device = [libc::S_IFCHR, libc::S_IFBLK]
            .iter()
            .map(|&kind| {
                SeccompCondition::new(
                    mode,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(libc::S_IFMT as u64),
                    kind as u64,
                )
                .and_then(|c| SeccompRule::new(vec![c]))
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        rules.insert(call, device);
    }
    let refuse = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    let refuse: BpfProgram = refuse.try_into()?;
    Ok(answered_first(arch).into_iter().chain(refuse).collect())
}

/// The instructions before the refusals, which answer ENOSYS: to clone3, and on x86_64 to
/// x32's system calls, numbered from 0x4000_0000 (they pass the refusals' check of the
/// architecture and match none of their numbers). They only answer, never allow: what they
/// let pass meets the refusals, whose first check is of the architecture.
fn answered_first(arch: TargetArch) -> BpfProgram {
    let instruction = |code: u16, jt: u8, jf: u8, k: u32| sock_filter { code, jt, jf, k };
    let enosys = || instruction(0x06, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32);
    // BPF_LD | BPF_W | BPF_ABS: the system call's number, at offset 0 of seccomp_data.
    let mut program = vec![instruction(0x20, 0, 0, 0)];
    if arch == TargetArch::x86_64 {
        // BPF_JMP | BPF_JGE | BPF_K: x32's numbers, next (ENOSYS); any other, skip it.
        program.extend([instruction(0x35, 0, 1, 0x4000_0000), enosys()]);
    }
    // BPF_JMP | BPF_JEQ | BPF_K
    program.extend([instruction(0x15, 0, 1, libc::SYS_clone3 as u32), enosys()]);
    program
}

/// Confine the process `command` starts, in the child before exec: a session of its own,
/// the user `user` without capabilities (run by root), `no_new_privs`, the Landlock
/// `ruleset`, then the seccomp filter (last: it refuses setsid).
pub fn confine(command: &mut Command, user: Option<u32>, ruleset: Option<&OwnedFd>) -> Result<()> {
    let filter = filter()?;
    // Without Landlock (None) the caller has made the grader's files unreadable to `user`.
    let ruleset = ruleset.map(|r| r.as_raw_fd());
    // SAFETY: the closure runs in the forked child before exec and makes only system calls
    // (setsid, prctl, setgroups, setresgid, setresuid, landlock_restrict_self, seccomp); it
    // allocates nothing and reads only memory that outlives the spawn (`filter` is static,
    // `ruleset` a descriptor the caller keeps open until the spawn returns).
    unsafe {
        command.pre_exec(move || {
            let check = |rc: libc::c_long| {
                if rc < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok(())
                }
            };
            check(libc::setsid() as libc::c_long)?;
            if let Some(user) = user {
                // The bounding set, so that no program regains a capability; EINVAL past
                // the last capability this kernel knows.
                for capability in 0..64 {
                    if libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) != 0
                        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
                    {
                        break;
                    }
                }
                check(libc::setgroups(0, std::ptr::null()) as libc::c_long)?;
                check(libc::setresgid(user, user, user) as libc::c_long)?;
                // From root to a uid that is not: permitted, effective and ambient
                // capabilities are cleared.
                check(libc::setresuid(user, user, user) as libc::c_long)?;
            }
            // The check's main process dies with the grader (set after the change of user,
            // which clears it); the rest of the session by [`end_all`] or [`end_user`].
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) as libc::c_long)?;
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) as libc::c_long)?;
            if let Some(ruleset) = ruleset {
                check(libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    ruleset,
                    0u32,
                ))?;
            }
            seccompiler::apply_filter(filter)
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
            Ok(())
        });
    }
    Ok(())
}

/// The live processes of `session` (a zombie leader's running threads included).
fn members(session: i32) -> Vec<i32> {
    super::tree::processes()
        .into_iter()
        .filter(|p| p.session == session)
        .map(|p| p.pid)
        .collect()
}

/// Kill every process of `user` (a grade's own uid: a class grade that was stopped leaves
/// no process of its sandbox behind, though no grader is left to end its sessions).
pub fn end_user(user: u32) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        let left: Vec<i32> = super::tree::processes()
            .into_iter()
            .map(|p| p.pid)
            .filter(|&pid| super::tree::uid_of(pid) == Some(user))
            .collect();
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

/// Kill every process of the sandbox's session until none is left: no process of it can
/// leave the session (the filter refuses setsid), so none escapes. Err: how many survived
/// 5 s of it (a process that cannot be killed: stuck in the kernel).
pub fn end_all(session: i32) -> std::result::Result<(), usize> {
    let started = Instant::now();
    loop {
        let left = members(session);
        if left.is_empty() {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(5) {
            return Err(left.len());
        }
        for pid in left {
            // SAFETY: kill has no memory effects; a pid that ended meanwhile gives ESRCH.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
