//! A launch's profile (`--emulate --profile`): its counts ([`crate::counts`]) summed the
//! way a student reads them, with the H100 model's prediction ([`crate::model`]), as a
//! table and as JSON.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::counts::{Class, Counts};
use crate::load::Module;
use crate::model::{self, Prediction, Work};

/// One launch, counted.
#[derive(Clone, Debug, Serialize)]
pub struct Profile {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Warp instructions issued, and the lanes they ran for, by class.
    pub classes: Vec<ClassCount>,
    pub issued: u64,
    /// Active lanes per issued instruction, out of 32.
    pub simt_efficiency: f64,
    pub global: Global,
    pub shared: Shared,
    pub atomics: Atomics,
    pub warps: Warps,
    /// The `.cu` lines that issued the most, with their share of the launch's instructions.
    pub lines: Vec<Line>,
    pub prediction: Prediction,
}

#[derive(Clone, Debug, Serialize)]
pub struct ClassCount {
    pub class: &'static str,
    pub issued: u64,
    pub active_lanes: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Global {
    pub requests: u64,
    pub sectors: u64,
    /// 32-byte sectors per request: 4 for 32 lanes reading consecutive words, 32 at worst.
    pub sectors_per_request: f64,
    /// The bytes of the distinct sectors read and written (DRAM's traffic, at least).
    pub bytes_read: u64,
    pub bytes_written: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Shared {
    pub requests: u64,
    pub wavefronts: u64,
    /// Wavefronts past the fewest the requests needed: bank conflicts.
    pub bank_conflicts: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Atomics {
    pub operations: u64,
    pub addresses: u64,
    /// The most operations at one address.
    pub hottest: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Warps {
    pub count: u64,
    /// Instructions the busiest warp issued, and the mean.
    pub most_issued: u64,
    pub mean_issued: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Line {
    pub file: String,
    pub line: u64,
    pub issued: u64,
    pub share: f64,
}

/// The profile of a launch of `kernel` (`grid` of `block`) in `module`, from its counts;
/// `registers` a thread as ptxas allocates them for the H100, when known, and the block's
/// shared memory.
pub fn profile(
    module: &Module,
    kernel: &str,
    (grid, block): ([u32; 3], [u32; 3]),
    shared_bytes: u64,
    registers: Option<u32>,
    counts: &Counts,
) -> Profile {
    let mut classes: BTreeMap<Class, (u64, u64)> = BTreeMap::new();
    let mut lines: BTreeMap<(String, u64), u64> = BTreeMap::new();
    let (mut global, mut sectors, mut shared, mut wavefronts, mut ideal) = (0, 0, 0, 0, 0);
    let mut memory_cycles = 0.0;
    for (pc, (at, inst)) in counts.pcs.iter().zip(&module.code).enumerate() {
        if at.issued == 0 {
            continue;
        }
        let class = classes.entry(Class::of(inst)).or_default();
        class.0 += at.issued;
        class.1 += at.active;
        // The `.cu` line where NVRTC's line information gives it, else the PTX line.
        let line = match module.sources.get(pc).copied().flatten() {
            Some((file, line)) => (module.files.get(&file).cloned().unwrap_or_default(), line),
            None => ("PTX".to_string(), u64::from(inst.line)),
        };
        *lines.entry(line).or_default() += at.issued;
        global += at.global_requests;
        sectors += at.sectors;
        shared += at.shared_requests;
        wavefronts += at.wavefronts;
        ideal += at.ideal_wavefronts;
        // The load/store units take a request a cycle, 4 sectors a cycle, a wavefront a
        // cycle: what a request needs past its one cycle.
        memory_cycles += (at.sectors as f64 / 4.0 - at.global_requests as f64).max(0.0)
            + (at.wavefronts - at.shared_requests.min(at.wavefronts)) as f64;
    }
    let issued: u64 = classes.values().map(|c| c.0).sum();
    let active: u64 = classes.values().map(|c| c.1).sum();
    let by_class: Vec<(Class, u64)> = classes.iter().map(|(&c, n)| (c, n.0)).collect();
    let atomics = Atomics {
        operations: counts.atomics.values().sum(),
        addresses: counts.atomics.len() as u64,
        hottest: counts.atomics.values().copied().max().unwrap_or(0),
    };
    let (read, written) = (counts.read.bytes(), counts.written.bytes());
    let threads_per_block = block.iter().product();
    let prediction = model::predict(&Work {
        classes: &by_class,
        memory_cycles,
        warps: &counts.warps,
        threads_per_block,
        registers,
        shared_bytes,
        dram_bytes: read + written,
        l2_bytes: sectors * 32,
        atomics: atomics.operations,
        hottest_atomic: atomics.hottest,
    });
    let most_issued = counts.warps.iter().map(|w| w.issued).max().unwrap_or(0);
    let warp_count = counts.warps.len() as u64;
    let mut lines: Vec<Line> = lines
        .into_iter()
        .map(|((file, line), n)| Line {
            file,
            line,
            issued: n,
            share: n as f64 / issued.max(1) as f64,
        })
        .collect();
    lines.sort_by_key(|l| std::cmp::Reverse(l.issued));
    lines.truncate(5);
    Profile {
        kernel: kernel.to_string(),
        grid,
        block,
        classes: classes
            .into_iter()
            .map(|(class, (issued, active))| ClassCount {
                class: class.name(),
                issued,
                active_lanes: active,
            })
            .collect(),
        issued,
        simt_efficiency: active as f64 / issued.max(1) as f64,
        global: Global {
            requests: global,
            sectors,
            sectors_per_request: sectors as f64 / global.max(1) as f64,
            bytes_read: read,
            bytes_written: written,
        },
        shared: Shared {
            requests: shared,
            wavefronts,
            bank_conflicts: wavefronts - ideal.min(wavefronts),
        },
        atomics,
        warps: Warps {
            count: warp_count,
            most_issued,
            mean_issued: issued as f64 / warp_count.max(1) as f64,
        },
        lines,
        prediction,
    }
}

impl Profile {
    /// The profile as a student reads it: a few lines, the prediction last.
    pub fn table(&self) -> String {
        let p = &self.prediction;
        let mut out = format!(
            "{} <<<{}, {}>>>: {} warp instructions, {:.1} of 32 lanes active on average ({:.0}% SIMT efficiency)\n",
            self.kernel,
            dims(self.grid),
            dims(self.block),
            self.issued,
            self.simt_efficiency,
            100.0 * self.simt_efficiency / 32.0
        );
        out += "  by class:";
        for c in &self.classes {
            out += &format!(
                " {} {} ({:.0}%);",
                c.class,
                c.issued,
                100.0 * c.issued as f64 / self.issued.max(1) as f64
            );
        }
        out.pop();
        out += "\n";
        if self.global.requests > 0 {
            out += &format!(
                "  global memory: {} requests, {:.1} sectors each (4 is a warp of consecutive words), {} read, {} written\n",
                self.global.requests,
                self.global.sectors_per_request,
                bytes(self.global.bytes_read),
                bytes(self.global.bytes_written)
            );
        }
        if self.shared.requests > 0 {
            out += &format!(
                "  shared memory: {} requests, {} wavefronts, {} of them bank conflicts\n",
                self.shared.requests, self.shared.wavefronts, self.shared.bank_conflicts
            );
        }
        if self.atomics.operations > 0 {
            out += &format!(
                "  atomics: {} at {} addresses, at most {} at one\n",
                self.atomics.operations, self.atomics.addresses, self.atomics.hottest
            );
        }
        out += &format!(
            "  warps: {}, the busiest issued {} instructions, the mean {:.0}\n",
            self.warps.count, self.warps.most_issued, self.warps.mean_issued
        );
        if !self.lines.is_empty() {
            out += "  hottest lines:";
            for l in self.lines.iter().take(3) {
                out += &format!(" {} line {} {:.0}%;", l.file, l.line, 100.0 * l.share);
            }
            out.pop();
            out += "\n";
        }
        out += &format!(
            "  occupancy: {} blocks ({} warps) an SM, at {} registers a thread{}\n",
            p.blocks_per_sm,
            p.warps_per_sm,
            p.registers,
            if p.registers_known {
                " (ptxas, sm_90)"
            } else {
                " (assumed: not known)"
            }
        );
        out += &format!(
            "  predicted on an H100 (a model, not a measurement): {} ms, set by {}",
            millis(p.ms),
            p.bound
        );
        out
    }
}

fn dims(d: [u32; 3]) -> String {
    match d {
        [x, 1, 1] => format!("{x}"),
        [x, y, 1] => format!("{x}x{y}"),
        [x, y, z] => format!("{x}x{y}x{z}"),
    }
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.2} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// Milliseconds to three significant figures.
fn millis(ms: f64) -> String {
    match ms {
        ms if ms >= 100.0 => format!("{ms:.0}"),
        ms if ms >= 10.0 => format!("{ms:.1}"),
        ms if ms >= 1.0 => format!("{ms:.2}"),
        ms => format!("{ms:.3}"),
    }
}
