//! A launch's profile (`--emulate --profile`): its counts ([`crate::counts`]) summed the
//! way a student reads them, with the H100 model's prediction ([`crate::model`]), as a
//! table and as JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::counts::{Class, Counts, WarpCount};
use crate::load::Module;
use crate::model::{self, Prediction, Work};

/// One launch, counted.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Profile {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Warp instructions issued, and the lanes they ran for, by class.
    pub classes: Vec<ClassCount>,
    pub issued: u64,
    /// Warp instructions that called through a register ([`Counts::indirect_calls`]);
    /// absent from profiles recorded before it was counted.
    #[serde(default)]
    pub indirect_calls: u64,
    /// Active lanes per issued instruction, out of 32.
    pub simt_efficiency: f64,
    pub global: Global,
    pub shared: Shared,
    pub atomics: Atomics,
    pub warps: Warps,
    /// The `.cu` lines that issued the most, with their share of the launch's instructions.
    pub lines: Vec<Line>,
    pub prediction: Prediction,
    /// Set against the reference solution's launch at the same arguments, where one is
    /// recorded ([`Profile::compare`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against_reference: Option<Comparison>,
    /// Each warp's counts, in block order, for its picture ([`crate::picture`]).
    #[serde(skip)]
    pub per_warp: Vec<WarpCount>,
}

/// A launch against the reference solution's: the predicted times' ratio, the class of
/// instruction whose count differs most (none where every class's count is the
/// reference's), and both SIMT efficiencies.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Comparison {
    pub time_ratio: f64,
    pub reference_ms: f64,
    pub class: Option<String>,
    pub class_ratio: f64,
    pub simt_efficiency: f64,
    pub reference_simt_efficiency: f64,
    /// Why the model cannot speak for this launch, if it cannot: it was validated on
    /// kernels doing the reference's kinds of work, from a quarter to eight times its time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside: Option<String>,
}

impl Comparison {
    /// The instructions that differ most, in words: "1.50x the fp64 instructions".
    pub fn differs(&self) -> String {
        match &self.class {
            Some(class) => format!("{:.2}x the {class} instructions", self.class_ratio),
            None => "as many instructions of each class as the reference".to_string(),
        }
    }
}

/// The predicted ratios to the reference's time the model was validated over
/// (`docs/model-h100.csv`: 0.38x to 5.9x), with a margin.
const VALIDATED_RATIOS: (f64, f64) = (0.25, 8.0);

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClassCount {
    pub class: String,
    pub issued: u64,
    pub active_lanes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Global {
    pub requests: u64,
    pub sectors: u64,
    /// 128-byte lines: what L2 sees as requests.
    pub lines: u64,
    /// 32-byte sectors per request: 4 for 32 lanes reading consecutive words, 32 at worst.
    pub sectors_per_request: f64,
    /// The bytes of the distinct sectors read and written (DRAM's traffic, at least).
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// The bytes a warp's global loads had in flight, on average, when it waited for one
    /// ([`Counts::in_flight_bytes`]); absent where no warp waited, and from profiles
    /// recorded before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight_bytes: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Shared {
    pub requests: u64,
    pub wavefronts: u64,
    /// Wavefronts past the fewest the requests needed: bank conflicts.
    pub bank_conflicts: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Atomics {
    pub operations: u64,
    pub addresses: u64,
    /// The most operations at one address.
    pub hottest: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Warps {
    pub count: u64,
    /// Instructions the busiest warp issued, and the mean.
    pub most_issued: u64,
    pub mean_issued: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
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
    let (mut global, mut sectors, mut lines_touched) = (0, 0, 0);
    // What goes to L2: stores' and atomics' lines and sectors (loads of the few inputs
    // stay in L1).
    let (mut l2_requests, mut l2_sectors) = (0, 0);
    let (mut shared, mut wavefronts, mut ideal) = (0, 0, 0);
    let mut memory_cycles = 0.0;
    for (pc, (at, inst)) in counts.pcs.iter().zip(&module.code).enumerate() {
        if at.issued == 0 {
            continue;
        }
        let kind = Class::of(inst);
        if matches!(kind, Class::Store(_) | Class::Atomic) {
            l2_requests += at.lines;
            l2_sectors += at.sectors;
        }
        let class = classes.entry(kind).or_default();
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
        lines_touched += at.lines;
        shared += at.shared_requests;
        wavefronts += at.wavefronts;
        ideal += at.ideal_wavefronts;
        // The load/store units take a 128-byte line of global memory a cycle, and a
        // wavefront of shared memory: what a request needs past its one cycle.
        memory_cycles += (at.lines - at.global_requests.min(at.lines)) as f64
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
        dram_read_bytes: read,
        in_flight_bytes: counts.in_flight_bytes(),
        indirect_calls: counts.indirect_calls(&module.code),
        loaded_target_calls: counts.loaded_target_calls,
        l2_requests: l2_requests + read / 128,
        l2_sectors: l2_sectors + read / 32,
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
                class: class.name().to_string(),
                issued,
                active_lanes: active,
            })
            .collect(),
        issued,
        indirect_calls: counts.indirect_calls(&module.code),
        simt_efficiency: active as f64 / issued.max(1) as f64,
        global: Global {
            requests: global,
            sectors,
            lines: lines_touched,
            sectors_per_request: sectors as f64 / global.max(1) as f64,
            bytes_read: read,
            bytes_written: written,
            in_flight_bytes: counts.in_flight_bytes(),
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
        against_reference: None,
        per_warp: counts.warps.clone(),
    }
}

impl Profile {
    /// Set this launch against `reference`'s (the reference solution's, at the same
    /// arguments): the class compared is the one whose count differs most.
    pub fn compare(&mut self, reference: &Profile) {
        let share = |p: &Profile, class: &str| {
            p.classes
                .iter()
                .find(|c| c.class == class)
                .map_or(0, |c| c.issued)
        };
        let names: Vec<&str> = self
            .classes
            .iter()
            .chain(&reference.classes)
            .map(|c| c.class.as_str())
            .collect();
        let ratio = |class: &str| {
            (share(self, class).max(1) as f64) / (share(reference, class).max(1) as f64)
        };
        // Kernel parameters cost no instruction of their own once ptxas has them (see the
        // model): not a difference worth naming.
        let costs = |class: &&str| *class != Class::Load(crate::ir::Space::Param).name();
        let difference = |class: &str| share(self, class).abs_diff(share(reference, class));
        let class = names
            .into_iter()
            .filter(costs)
            .filter(|class| difference(class) > 0)
            .max_by_key(|class| difference(class));
        let time_ratio = self.prediction.ms / reference.prediction.ms.max(f64::MIN_POSITIVE);
        // Work of a kind the reference does not do (shared memory, atomics, special
        // functions where it has none), or a time far from its.
        let new_work = self.classes.iter().find(|c| {
            c.issued * 20 >= self.issued && share(reference, &c.class) * 100 < reference.issued
        });
        let outside = match new_work {
            Some(c) => Some(format!(
                "{}% of its instructions are {}, which the reference's kernel hardly has",
                100 * c.issued / self.issued.max(1),
                c.class
            )),
            None if time_ratio < VALIDATED_RATIOS.0 || time_ratio > VALIDATED_RATIOS.1 => {
                Some(format!(
                    "its predicted time is {time_ratio:.2}x the reference's, outside the {}x to {}x the model was checked over",
                    VALIDATED_RATIOS.0, VALIDATED_RATIOS.1
                ))
            }
            None => None,
        };
        self.against_reference = Some(Comparison {
            time_ratio,
            reference_ms: reference.prediction.ms,
            class: class.map(str::to_string),
            class_ratio: class.map_or(1.0, ratio),
            simt_efficiency: self.simt_efficiency / 32.0,
            reference_simt_efficiency: reference.simt_efficiency / 32.0,
            outside,
        });
    }

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
        if self.indirect_calls > 0 {
            out += &format!(
                "  indirect calls: {} (warp instructions calling through a register: a virtual function, a function pointer)\n",
                self.indirect_calls
            );
        }
        if self.global.requests > 0 {
            out += &format!(
                "  global memory: {} requests, {:.1} sectors and {:.1} lines each (4 and 1 for a warp of consecutive words), {} read, {} written\n",
                self.global.requests,
                self.global.sectors_per_request,
                self.global.lines as f64 / self.global.requests.max(1) as f64,
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
        if let Some(Comparison {
            outside: Some(why), ..
        }) = &self.against_reference
        {
            out += &format!(
                "\n  against the reference solution at these arguments: the model cannot say ({why})"
            );
        } else if let Some(c) = &self.against_reference {
            out += &format!(
                "\n  against the reference solution at these arguments (recorded): predicted {:.2}x its {} ms; it issues {}, at {:.0}% SIMT efficiency against {:.0}%",
                c.time_ratio,
                millis(c.reference_ms),
                c.differs(),
                100.0 * c.simt_efficiency,
                100.0 * c.reference_simt_efficiency
            );
        }
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
