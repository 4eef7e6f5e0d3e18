//! Where a class's submissions are graded at once: one slot per GPU (`--gpus N|all`), each
//! grade seeing its own GPU alone through `CUDA_VISIBLE_DEVICES`, so that no two speed
//! checks ever share a GPU. With several slots the CPU cores are shared out too (each grade
//! pinned to its own cores), so that a CPU speed check is not slowed by its neighbour's
//! build. Without a GPU, one submission at a time: its build takes every core.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::str::FromStr;

use anyhow::{bail, Result};

use crate::sandbox;

/// How many GPUs to grade on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gpus {
    All,
    Count(usize),
}

impl FromStr for Gpus {
    type Err = String;

    fn from_str(text: &str) -> Result<Gpus, String> {
        if text == "all" {
            return Ok(Gpus::All);
        }
        let n = xtask::values::at_least_one("the number of GPUs (or all)", 1024)(text)?;
        Ok(Gpus::Count(n as usize))
    }
}

/// One place a grade runs: a GPU (or none), the cores it may use (empty: all) and the user
/// its sandboxes run as (two grades at once never share a user's process limit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub gpu: Option<String>,
    pub cores: Vec<usize>,
    pub user: u32,
}

impl Slot {
    /// The `n`th place of a machine's or a cluster's, with no GPU or cores of its own.
    pub fn numbered(n: usize) -> Slot {
        Slot {
            gpu: None,
            cores: Vec::new(),
            user: sandbox::class_user(n),
        }
    }

    /// Make `command` (a grade) run on this slot.
    pub fn apply(&self, command: &mut Command) {
        command.arg("--sandbox-user").arg(self.user.to_string());
        if let Some(gpu) = &self.gpu {
            command.env("CUDA_VISIBLE_DEVICES", gpu);
        }
        if self.cores.is_empty() {
            return;
        }
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes inside it for every
        // core below CPU_SETSIZE, which `cores` only holds.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &core in &self.cores {
            unsafe { libc::CPU_SET(core, &mut set) };
        }
        // SAFETY: runs in the forked child before exec; sched_setaffinity is a plain system
        // call on a set copied into the closure.
        unsafe {
            command.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    /// How the slot is shown: `GPU 1`; nothing without a GPU.
    pub fn describe(&self) -> Option<String> {
        self.gpu.as_ref().map(|gpu| format!("GPU {gpu}"))
    }
}

/// The slots for `choice` on this machine, and one line that says what they are.
pub fn slots(choice: Gpus) -> Result<(Vec<Slot>, String)> {
    let gpus = match visible_gpus() {
        Ok(gpus) => gpus,
        Err(why) => {
            if let Gpus::Count(n) = choice {
                bail!(
                    "--gpus {n}: no GPU opens here ({why}); leave --gpus out to grade without one"
                );
            }
            return Ok((
                vec![Slot::numbered(0)],
                format!(
                    "no GPU opens here ({why}): one submission at a time, the GPU checks \
                     listed, not graded"
                ),
            ));
        }
    };
    let n = match choice {
        Gpus::All => gpus.len(),
        Gpus::Count(n) if n <= gpus.len() => n,
        Gpus::Count(n) => bail!(
            "--gpus {n}: only {} GPU{} here ({})",
            gpus.len(),
            if gpus.len() == 1 { "" } else { "s" },
            gpus.join(", ")
        ),
    };
    let shares = share_cores(&cores(), n, physical_core);
    let slots: Vec<Slot> = gpus
        .into_iter()
        .take(n)
        .zip(shares)
        .enumerate()
        .map(|(n, (gpu, cores))| Slot {
            gpu: Some(gpu),
            cores,
            user: sandbox::class_user(n),
        })
        .collect();
    let line = format!(
        "{n} GPU{} ({}): one submission on each at once",
        if n == 1 { "" } else { "s" },
        slots
            .iter()
            .map(|s| s.gpu.clone().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok((slots, line))
}

/// The GPUs this process may use, as `CUDA_VISIBLE_DEVICES` names them for a child (its
/// entries where it is set, else the device numbers); or why none opens.
fn visible_gpus() -> Result<Vec<String>, String> {
    // The labs' own probe: every library and function the labs call, and device 0 opened.
    // Its first clause is the reason; the rest is advice for running a lab.
    xtask::gpu::probe().map_err(|why| why.split(';').next().unwrap_or_default().to_string())?;
    let count = xtask::gpu::count();
    let gpus = match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(list) => names_from(&list, count),
        Err(_) => (0..count).map(|i| i.to_string()).collect(),
    };
    if gpus.is_empty() {
        return Err("no GPU is visible".to_string());
    }
    Ok(gpus)
}

/// The first `count` entries of a `CUDA_VISIBLE_DEVICES` list (numbers, UUIDs or MIG names).
fn names_from(list: &str, count: usize) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .take(count)
        .map(String::from)
        .collect()
}

/// The cores this process may run on.
fn cores() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it for this process.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `core` is below CPU_SETSIZE.
        .filter(|&core| unsafe { libc::CPU_ISSET(core, &set) })
        .collect()
}

/// `cores` in `n` even shares, one per slot, each of whole physical cores (`sibling_of` names
/// the physical core a logical one belongs to): the two hardware threads of a core share its
/// execution units, so two slots on one core would time their CPU speed checks against each
/// other's work; where Linux numbers siblings `n` and `n + cores / 2`, even runs of logical
/// cores would put every slot on every core. (The two-GPU hosts lent here have one thread a
/// core, where this changes nothing.) With one slot, or fewer physical cores than slots, no
/// pinning at all (empty shares).
fn share_cores(cores: &[usize], n: usize, sibling_of: impl Fn(usize) -> usize) -> Vec<Vec<usize>> {
    let mut physical: Vec<(usize, Vec<usize>)> = Vec::new();
    for &core in cores {
        let id = sibling_of(core);
        match physical.iter_mut().find(|(p, _)| *p == id) {
            Some((_, threads)) => threads.push(core),
            None => physical.push((id, vec![core])),
        }
    }
    if n <= 1 || physical.len() < n {
        return vec![Vec::new(); n];
    }
    (0..n)
        .map(|i| {
            let mut share: Vec<usize> = physical
                [i * physical.len() / n..(i + 1) * physical.len() / n]
                .iter()
                .flat_map(|(_, threads)| threads.iter().copied())
                .collect();
            share.sort_unstable();
            share
        })
        .collect()
}

/// The physical core a logical one runs on, as Linux numbers it: the lowest logical core
/// of its siblings (`thread_siblings_list`), or the core itself where that cannot be read.
fn physical_core(core: usize) -> usize {
    let path = format!("/sys/devices/system/cpu/cpu{core}/topology/thread_siblings_list");
    std::fs::read_to_string(path)
        .ok()
        .and_then(|list| {
            list.trim()
                .split([',', '-'])
                .filter_map(|n| n.parse::<usize>().ok())
                .min()
        })
        .unwrap_or(core)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_are_all_or_a_count() {
        assert_eq!("all".parse(), Ok(Gpus::All));
        assert_eq!("2".parse(), Ok(Gpus::Count(2)));
        for bad in ["0", "-1", "two", ""] {
            assert!(bad.parse::<Gpus>().is_err(), "{bad}");
        }
    }

    #[test]
    fn visible_devices_are_passed_on_by_their_own_names() {
        assert_eq!(names_from("2,3", 2), ["2", "3"]);
        assert_eq!(
            names_from("GPU-a1b2, GPU-c3d4,", 8),
            ["GPU-a1b2", "GPU-c3d4"]
        );
        assert_eq!(names_from("4,5,6", 1), ["4"]);
        assert!(names_from("", 4).is_empty());
    }

    #[test]
    fn cores_are_shared_out_evenly() {
        let cores: Vec<usize> = (0..16).collect();
        let alone = |core| core;
        let shares = share_cores(&cores, 2, alone);
        assert_eq!(shares[0], (0..8).collect::<Vec<_>>());
        assert_eq!(shares[1], (8..16).collect::<Vec<_>>());
        assert_eq!(
            share_cores(&cores, 3, alone)
                .iter()
                .map(Vec::len)
                .sum::<usize>(),
            16
        );
        assert_eq!(share_cores(&cores, 1, alone), vec![Vec::<usize>::new()]);
        assert_eq!(share_cores(&[0], 2, alone), vec![Vec::<usize>::new(); 2]);
        assert!(!super::cores().is_empty(), "this process runs somewhere");
    }

    /// Two slots never share a physical core: where core `n`'s sibling is `n + 8` (the
    /// numbering that put both slots on every core of a 32-thread host), each slot takes
    /// both threads of its own cores; where siblings are neighbours, pairs stay whole.
    #[test]
    fn a_physical_core_is_never_split_between_slots() {
        let cores: Vec<usize> = (0..16).collect();
        let shares = share_cores(&cores, 2, |core| core % 8);
        assert_eq!(shares[0], [0, 1, 2, 3, 8, 9, 10, 11]);
        assert_eq!(shares[1], [4, 5, 6, 7, 12, 13, 14, 15]);
        let shares = share_cores(&cores, 3, |core| core / 2);
        for share in &shares {
            assert!(
                share.chunks(2).all(|pair| pair[0] / 2 == pair[1] / 2),
                "{shares:?}"
            );
        }
        // Two hardware threads of one core are one core: no share for a second slot.
        assert_eq!(share_cores(&[0, 1], 2, |_| 0), vec![Vec::<usize>::new(); 2]);
        assert_eq!(physical_core(0), 0, "core 0 is its own lowest sibling");
    }

    #[test]
    fn a_slot_pins_its_child_to_its_gpu_and_cores() {
        let here = cores();
        let slot = Slot {
            gpu: Some("3".into()),
            cores: vec![here[0]],
            user: 1234,
        };
        let mut command = Command::new("sh");
        command.args([
            "-c",
            "echo \"$CUDA_VISIBLE_DEVICES $1 $2\"; grep Cpus_allowed_list /proc/self/status",
            "sh",
        ]);
        slot.apply(&mut command);
        let output = command.output().expect("sh runs");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.starts_with("3 --sandbox-user 1234\n"), "{text}");
        assert!(
            text.trim_end().ends_with(&format!("\t{}", here[0])),
            "pinned to one core: {text}"
        );
    }

    #[test]
    fn a_count_needs_that_many_gpus_and_all_takes_what_there_is() {
        // CI and this kind of machine have no GPU; on a GPU machine the probe opens one.
        match xtask::gpu::probe() {
            Ok(_) => {
                let (slots, line) = slots(Gpus::Count(1)).expect("one GPU");
                assert_eq!(slots.len(), 1, "{line}");
                assert!(slots[0].gpu.is_some(), "{line}");
            }
            Err(_) => {
                let error = slots(Gpus::Count(1)).expect_err("no GPU").to_string();
                assert!(error.starts_with("--gpus 1: no GPU opens here"), "{error}");
                let (slots, line) = slots(Gpus::All).expect("one slot");
                assert_eq!(slots, vec![Slot::numbered(0)]);
                assert!(line.starts_with("no GPU opens here"), "{line}");
            }
        }
    }
}
