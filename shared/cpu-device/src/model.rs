//! A model of the H100 (SXM5, 80 GB HBM3): a launch's counts ([`crate::counts`]) to a
//! predicted kernel time and the limit that sets it. A prediction, never a measurement.
//!
//! Why a model of our own: the published simulators of NVIDIA GPUs (GPGPU-Sim, Accel-Sim)
//! replay SASS traces taken on a GPU, which a student without one cannot take; the CPU
//! device already runs every warp instruction and counts it, and what remains is arithmetic
//! on the H100's published rates.
//!
//! How it works:
//! 1. Each class of instruction costs cycles on the pipe that runs it, at the H100's rates
//!    per SM (an SM issues 4 warp instructions a cycle, one per scheduler; its FP64 pipes
//!    take 2 a cycle, FP32 4, integer 2, the special-function units 0.5, the load/store
//!    units a 128-byte line of global memory or a wavefront of shared memory). The busiest
//!    pipe, over the launch's mix, sets the cycles an instruction costs an SM that has
//!    warps enough to keep it busy.
//! 2. A warp alone waits for each result: with few warps an SM issues no faster than one
//!    instruction per warp per dependent latency (the mix's average).
//! 3. Blocks go to the 132 SMs as the hardware hands them out, in order, as many at once
//!    on each as registers, shared memory and threads allow; each warp progresses at its
//!    share of its SM's rate, which falls as warps finish. The last block to finish ends
//!    the kernel: a slow warp or an uneven grid shows as a tail.
//! 4. Memory: the sectors the launch touched cross DRAM once (the H100's 50 MB L2 keeps
//!    them meanwhile). Stores and atomics go to L2 through the crossbar, which is what
//!    fills first: each 128-byte line a store or an atomic touches is a request of its
//!    own, and their sectors follow (loads of the labs' few inputs stay in L1); L2's units
//!    then do each atomic lane's operation.
//! 5. Starting a warp costs its SM some cycles: a grid of many threads that each do little
//!    is bound by them.
//! 6. Memory answers no faster than the bytes in flight over its latency (Little's law): a
//!    warp keeps in flight the loads it issues before it needs one of them, and an SM
//!    holds so many warps; few warps with little in flight leave DRAM idle.
//! 7. A call through a register (a virtual function, a function pointer) costs its warp
//!    cycles the SM's other warps must fill, more where the target is loaded first.
//!
//! The kernel's time is the slowest of the compute, warp-start, DRAM, memory-latency,
//! indirect-call and L2 times (L2's: its crossbar's and its atomics' together), plus the
//! launch's own overhead. The constants below come from NVIDIA's H100 whitepaper, from the
//! labs' own measurements on an H100 (`docs/profile-h100.csv`: the SM clock Nsight Compute
//! reported, lab06's streaming read for DRAM), and seven of them are fitted, each saying to
//! what; the rule that the slowest limit alone sets the time was chosen over the same runs.
//! How close it comes, run by run, measured on an H100: `docs/model-h100.csv` (`cargo
//! xtask model`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::counts::{Class, WarpCount};
use crate::ir::Space;

/// The H100 SXM5's figures the model uses.
pub mod h100 {
    pub const SMS: usize = 132;
    /// The SM clock Nsight Compute reported for the labs' kernels (1.963 to 1.979 GHz).
    pub const CLOCK_GHZ: f64 = 1.97;
    /// Per SM: 2048 threads (64 warps), 32 blocks, 65536 registers, 228 KiB of shared
    /// memory (1 KiB of it reserved per block).
    pub const MAX_WARPS: usize = 64;
    pub const MAX_BLOCKS: usize = 32;
    pub const REGISTERS: usize = 65536;
    pub const SHARED_BYTES: u64 = 233_472;
    pub const SHARED_RESERVED: u64 = 1024;
    /// lab06's streaming read (`read_peak`, 2892 GB/s of the 3352 Nsight Compute gives as
    /// the peak).
    pub const DRAM_GBPS: f64 = 2892.0;
    /// DRAM's latency as a loaded warp sees it, in SM cycles: a warp with B bytes of loads
    /// in flight gets B bytes per this many cycles. Fitted to lab06's plain sum at 128
    /// threads x 1 block per SM on an H100 (4 warps an SM, 2 KiB each in flight): 1.61x the
    /// time of the same sum at 256 x 8 measured, 1.60x predicted.
    pub const DRAM_LATENCY_CYCLES: f64 = 1180.0;
    /// What a call through a register costs the warp that makes it, in SM cycles, beyond
    /// its instructions: the jump, the return, the callee's frame; and where the target was
    /// loaded since the warp's last call, its wait for that load first. Fitted to lab06's
    /// three kernels that call through a register, timed on an H100 against its plain
    /// sum: each predicted within 4% of its measured ratio (one price for every call put
    /// the kernel whose pointer is read before the loop 51% over).
    pub const INDIRECT_CALL_CYCLES: f64 = 400.0;
    pub const LOADED_TARGET_CYCLES: f64 = 280.0;
    /// What the crossbar into L2 takes a second: requests (a store's 128-byte line, an
    /// atomic's lane) and 32-byte sectors of data. Fitted to Nsight Compute's
    /// `lts__xbar2lts_cycles_active` for lab04 at 4096x4096 on an H100: with 32x8 blocks
    /// 1.35 million requests and 4.28 million sectors kept it busy 25.6 us; with 8x8
    /// blocks, 5.40 and 8.55 million, 90 us.
    pub const L2_REQUESTS_PER_S: f64 = 6.9e10;
    pub const L2_SECTORS_PER_S: f64 = 6.9e11;
    /// The share of the crossbar's time a kernel keeps it busy at most: stores come in
    /// bursts, as warps finish (63% for lab04 with 8x8 blocks, when it set the time).
    /// Fitted to `docs/model-h100.csv`'s lab04 block shapes: 8x32 blocks measured 1.37x
    /// the default's time; predicted 1.45x at 0.85, and 1.72x at 0.7 (worked out from the
    /// same run's counts).
    pub const L2_BUSY: f64 = 0.85;
    /// Global atomics L2's units complete a second, to distinct addresses.
    pub const ATOMICS_PER_S: f64 = 2.0e11;
    /// A launch's own time, as the labs' events around it measure it: lab04 at 64x64, whose
    /// work the model puts at 3 us, measured 24 us on an H100.
    pub const LAUNCH_US: f64 = 20.0;
    /// Cycles an SM takes to start each warp of the grid: a grid of many threads that do
    /// little costs their starts. Fitted to lab05 at 2 million samples (67,584 blocks of
    /// 256 threads, most of them with no sample to take): 110 us measured on an H100, of
    /// which the model's instructions explain 23.
    pub const WARP_START_CYCLES: f64 = 44.0;
}

/// Cycles one warp instruction of a class takes of an SM's issue slots and of each of its
/// pipes (`Pipe`), at full throughput; and its dependent latency, in cycles.
struct Cost {
    pipe: Pipe,
    cycles: f64,
    latency: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pipe {
    Issue,
    Fp64,
    Fp32,
    Integer,
    Special,
    Memory,
}

impl Pipe {
    const ALL: [Pipe; 6] = [
        Pipe::Issue,
        Pipe::Fp64,
        Pipe::Fp32,
        Pipe::Integer,
        Pipe::Special,
        Pipe::Memory,
    ];

    fn name(self) -> &'static str {
        match self {
            Pipe::Issue => "instruction issue",
            Pipe::Fp64 => "the FP64 pipe",
            Pipe::Fp32 => "the FP32 pipe",
            Pipe::Integer => "the integer pipe",
            Pipe::Special => "the special-function units",
            Pipe::Memory => "the load/store units",
        }
    }
}

fn cost(class: Class) -> Cost {
    let c = |pipe, cycles, latency| Cost {
        pipe,
        cycles,
        latency,
    };
    match class {
        Class::Fp64 => c(Pipe::Fp64, 0.5, 8.0),
        // ptxas's Newton iteration: about eight FP64 instructions and a reciprocal seed.
        Class::Fp64Divide => c(Pipe::Fp64, 4.0, 60.0),
        Class::Fp32 => c(Pipe::Fp32, 0.25, 4.0),
        Class::Integer => c(Pipe::Integer, 0.5, 4.0),
        Class::Conversion | Class::Special => c(Pipe::Special, 2.0, 12.0),
        Class::Move | Class::Branch | Class::Barrier => c(Pipe::Issue, 0.25, 4.0),
        Class::Warp => c(Pipe::Memory, 1.0, 24.0),
        Class::Atomic => c(Pipe::Memory, 1.0, 400.0),
        // ptxas reads a kernel's parameters from the constant bank as operands: no
        // instruction of their own (lab05's SASS has 21.5 million where its PTX has 32.3
        // million, 9.7 million of them `ld.param`).
        Class::Load(Space::Param) => c(Pipe::Issue, 0.0, 0.0),
        Class::Load(Space::Const) => c(Pipe::Issue, 0.25, 8.0),
        Class::Load(Space::Shared) => c(Pipe::Memory, 1.0, 30.0),
        // A global load waits for memory (about 400 cycles from L2 or DRAM, less from L1),
        // but loads issued together wait once: lab04's four inputs come in one wait.
        Class::Load(_) => c(Pipe::Memory, 1.0, 100.0),
        Class::Store(_) => c(Pipe::Memory, 1.0, 4.0),
    }
}

/// What the model is given: the launch's counts, summed.
pub struct Work<'a> {
    /// Warp instructions issued, by class.
    pub classes: &'a [(Class, u64)],
    /// Extra cycles on the load/store units beyond one a request: sectors past four a
    /// request, wavefronts past one.
    pub memory_cycles: f64,
    /// Each warp's instructions, in block order.
    pub warps: &'a [WarpCount],
    pub threads_per_block: u32,
    /// Registers a thread (as ptxas allocates them for sm_90), when known.
    pub registers: Option<u32>,
    pub shared_bytes: u64,
    /// Bytes DRAM moves (the sectors read and written); the requests and the sectors the
    /// crossbar carries to L2 (stores' lines and sectors, atomics' lanes, reads' first
    /// touch).
    pub dram_bytes: u64,
    /// The bytes DRAM reads, and what a warp's loads have in flight when it waits for one
    /// (`None`: no warp waited).
    pub dram_read_bytes: u64,
    pub in_flight_bytes: Option<f64>,
    /// Warp instructions that called through a register, and of those, through one loaded
    /// since the warp's last call.
    pub indirect_calls: u64,
    pub loaded_target_calls: u64,
    pub l2_requests: u64,
    pub l2_sectors: u64,
    pub atomics: u64,
    /// The most atomics at one address (they serialise).
    pub hottest_atomic: u64,
}

/// The model's answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Prediction {
    pub ms: f64,
    /// What sets the time, in words.
    pub bound: String,
    pub blocks_per_sm: usize,
    pub warps_per_sm: usize,
    /// The registers a thread the occupancy assumed, and whether they were measured.
    pub registers: u32,
    pub registers_known: bool,
    pub compute_ms: f64,
    /// The compute time with the work spread evenly at full throughput (no tail).
    pub balanced_ms: f64,
    pub dram_ms: f64,
    /// The time DRAM's latency takes with the loads the warps keep in flight.
    #[serde(default)]
    pub latency_ms: f64,
    /// The time the warps wait out their indirect calls.
    #[serde(default)]
    pub calls_ms: f64,
    pub l2_ms: f64,
    pub atomics_ms: f64,
    pub starts_ms: f64,
    /// The launch's own time, in `ms`: what events around one launch measure beside its
    /// work, hidden where launches run back to back.
    #[serde(default)]
    pub launch_ms: f64,
}

/// Registers a thread assumed when ptxas's count is not known.
const ASSUMED_REGISTERS: u32 = 32;

pub fn predict(work: &Work) -> Prediction {
    let issued: u64 = work.classes.iter().map(|(_, n)| n).sum();
    let mut pipes = [0.0f64; 6];
    let mut latency = 0.0;
    for &(class, n) in work.classes {
        let c = cost(class);
        let n = n as f64;
        if c.cycles > 0.0 {
            pipes[Pipe::Issue as usize] += 0.25 * n;
        }
        pipes[c.pipe as usize] += c.cycles * n;
        latency += c.latency * n;
    }
    pipes[Pipe::Memory as usize] += work.memory_cycles;
    let (busiest, pipe_cycles) = Pipe::ALL
        .iter()
        .map(|&p| (p, pipes[p as usize]))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((Pipe::Issue, 0.0));
    let per_instruction = if issued > 0 {
        pipe_cycles / issued as f64
    } else {
        0.25
    };
    let latency = if issued > 0 {
        latency / issued as f64
    } else {
        4.0
    };

    let registers = work.registers.unwrap_or(ASSUMED_REGISTERS).max(1);
    let warps_per_block = (work.threads_per_block as usize).div_ceil(32).max(1);
    let blocks_per_sm = occupancy(warps_per_block, registers, work.shared_bytes);

    let cycles = schedule(
        work.warps,
        warps_per_block,
        blocks_per_sm,
        per_instruction,
        latency,
    );
    let ms_of = |cycles: f64| cycles / (h100::CLOCK_GHZ * 1e6);
    let compute_ms = ms_of(cycles);
    let balanced_ms = ms_of(issued as f64 * per_instruction / h100::SMS as f64);
    let dram_ms = work.dram_bytes as f64 / (h100::DRAM_GBPS * 1e6);
    // Little's law: DRAM answers no faster than the bytes in flight over its latency. A
    // warp keeps `in_flight` bytes of loads outstanding before it needs one (one float a
    // lane behind an opaque call; four wide loads where the compiler unrolled), and an SM
    // holds at most `blocks_per_sm` blocks' warps at once.
    let resident = (blocks_per_sm * warps_per_block).min(work.warps.len().div_ceil(h100::SMS));
    let latency_ms = match work.in_flight_bytes {
        Some(bytes) if bytes > 0.0 && resident > 0 => {
            let per_cycle = (h100::SMS * resident) as f64 * bytes / h100::DRAM_LATENCY_CYCLES;
            ms_of(work.dram_read_bytes as f64 / per_cycle)
        }
        _ => 0.0,
    };
    // A warp waits out each of its calls through a register; the SM's other warps fill
    // the wait, as many as it holds.
    let calls_ms = if resident > 0 {
        let cycles = work.indirect_calls as f64 * h100::INDIRECT_CALL_CYCLES
            + work.loaded_target_calls as f64 * h100::LOADED_TARGET_CYCLES;
        ms_of(cycles / (h100::SMS * resident) as f64)
    } else {
        0.0
    };
    let l2_ms = (work.l2_requests as f64 / h100::L2_REQUESTS_PER_S
        + work.l2_sectors as f64 / h100::L2_SECTORS_PER_S)
        * 1e3
        / h100::L2_BUSY;
    let atomics_ms = (work.atomics as f64 / h100::ATOMICS_PER_S * 1e3)
        .max(ms_of(work.hottest_atomic as f64 * 2.0));
    let starts_ms = ms_of(work.warps.len() as f64 / h100::SMS as f64 * h100::WARP_START_CYCLES);
    // Atomics and the crossbar's requests are served by the same L2 slices: their times
    // add. Taken apart, lab05 at 8M samples (19.8 million atomic lanes) was predicted 1.60x
    // its 2M samples' time, measured 2.06x on an H100, where Nsight Compute found the
    // crossbar into L2 busy 82% of the kernel's time with 12.4 million reduction requests.
    let l2_and_atomics = (
        l2_ms + atomics_ms,
        if atomics_ms > l2_ms {
            "atomics"
        } else {
            "L2 bandwidth"
        },
    );
    // The slowest limit sets the time: the H100 overlaps the others with it. Softened
    // where limits were near (their cube-root of the sum of cubes), lab04's zoomed-out
    // view, where the instructions, the warps' starts and L2 each take about 47 us, was
    // predicted 0.82x the default view's time, measured 0.65x; by the slowest alone, 0.69x
    // against 0.68x (`docs/model-h100.csv`).
    let (slowest, what) = [
        (compute_ms, "compute"),
        (starts_ms, "starting warps"),
        (dram_ms, "DRAM bandwidth"),
        (latency_ms, "memory latency"),
        (calls_ms, "indirect calls"),
        l2_and_atomics,
    ]
    .into_iter()
    .max_by(|a, b| a.0.total_cmp(&b.0))
    .unwrap_or((0.0, "compute"));
    let bound = match what {
        "compute" if compute_ms > 1.25 * balanced_ms => format!(
            "latency: too few warps at once, or the last ones alone (an even spread at full \
             throughput would take {:.0}% of the time)",
            100.0 * balanced_ms / compute_ms.max(f64::MIN_POSITIVE)
        ),
        "compute" => busiest.name().to_string(),
        "starting warps" => {
            "starting warps: a grid of many threads that each do little".to_string()
        }
        "indirect calls" => format!(
            "indirect calls: each costs its warp {:.0} cycles ({:.0} where it waits for its \
             target to load), which {resident} warps an SM do not hide",
            h100::INDIRECT_CALL_CYCLES,
            h100::INDIRECT_CALL_CYCLES + h100::LOADED_TARGET_CYCLES
        ),
        "memory latency" => format!(
            "memory latency: {:.0} bytes of loads in flight a warp, {} warps an SM, too few \
             to keep DRAM busy",
            work.in_flight_bytes.unwrap_or(0.0),
            resident
        ),
        other => other.to_string(),
    };
    Prediction {
        ms: slowest + h100::LAUNCH_US / 1e3,
        bound,
        blocks_per_sm,
        warps_per_sm: blocks_per_sm * warps_per_block,
        registers,
        registers_known: work.registers.is_some(),
        compute_ms,
        balanced_ms,
        dram_ms,
        latency_ms,
        calls_ms,
        l2_ms,
        atomics_ms,
        starts_ms,
        launch_ms: h100::LAUNCH_US / 1e3,
    }
}

/// Blocks an SM holds at once: as threads, blocks, registers and shared memory allow.
pub fn occupancy(warps_per_block: usize, registers: u32, shared_bytes: u64) -> usize {
    // Registers are allocated 256 to a warp at a time.
    let per_warp = (registers as usize * 32).div_ceil(256) * 256;
    let by_registers = h100::REGISTERS / (per_warp * warps_per_block).max(1);
    let by_shared = (h100::SHARED_BYTES / (shared_bytes + h100::SHARED_RESERVED)) as usize;
    (h100::MAX_WARPS / warps_per_block)
        .min(h100::MAX_BLOCKS)
        .min(by_registers)
        .min(by_shared)
        .max(1)
}

/// The cycles the grid takes: blocks handed to SMs in order as slots free, each SM issuing
/// at `1 / per_instruction` warp instructions a cycle, or `warps / latency` with few warps,
/// shared evenly by its running warps.
fn schedule(
    warps: &[WarpCount],
    warps_per_block: usize,
    blocks_per_sm: usize,
    per_instruction: f64,
    latency: f64,
) -> f64 {
    let blocks: Vec<&[WarpCount]> = warps.chunks(warps_per_block).collect();
    let mut sms: Vec<Sm> = (0..h100::SMS).map(|_| Sm::default()).collect();
    let mut next_block = 0;
    let mut now = 0.0f64;
    // Fill every SM's slots, round-robin, as the hardware spreads the first blocks.
    for _ in 0..blocks_per_sm {
        for sm in sms.iter_mut() {
            if let Some(block) = blocks.get(next_block) {
                sm.start(block, next_block);
                next_block += 1;
            }
        }
    }
    loop {
        // The next warp to finish, over every SM.
        let mut soonest: Option<(f64, usize)> = None;
        for (i, sm) in sms.iter().enumerate() {
            if let Some(t) = sm.time_to_next(per_instruction, latency) {
                if soonest.is_none_or(|(best, _)| t < best) {
                    soonest = Some((t, i));
                }
            }
        }
        let Some((dt, finishing)) = soonest else {
            return now;
        };
        now += dt;
        for sm in sms.iter_mut() {
            sm.advance(dt, per_instruction, latency);
        }
        let freed = sms[finishing].retire();
        for _ in 0..freed {
            if let Some(block) = blocks.get(next_block) {
                sms[finishing].start(block, next_block);
                next_block += 1;
            }
        }
    }
}

/// One SM: its running warps, by the progress (instructions each running warp has issued
/// since the SM started) at which each will finish.
#[derive(Default)]
struct Sm {
    progress: f64,
    finishing: BinaryHeap<Finish>,
    /// Warps still running of each block on the SM.
    blocks: Vec<(usize, usize)>,
}

struct Finish {
    at: f64,
    block: usize,
}

impl PartialEq for Finish {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}
impl Eq for Finish {}
impl PartialOrd for Finish {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Finish {
    /// The soonest first, in a max-heap.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.total_cmp(&self.at)
    }
}

impl Sm {
    fn start(&mut self, block: &[WarpCount], index: usize) {
        let running = block.iter().filter(|w| w.issued > 0).count();
        for w in block.iter().filter(|w| w.issued > 0) {
            self.finishing.push(Finish {
                at: self.progress + w.issued as f64,
                block: index,
            });
        }
        // A block of warps that issue nothing still takes its slot until the next event.
        self.blocks.push((index, running));
    }

    /// Each running warp's instructions a cycle.
    fn rate(&self, per_instruction: f64, latency: f64) -> f64 {
        let warps = self.finishing.len() as f64;
        if warps == 0.0 {
            return 0.0;
        }
        (1.0 / per_instruction).min(warps / latency) / warps
    }

    fn time_to_next(&self, per_instruction: f64, latency: f64) -> Option<f64> {
        if self.finishing.is_empty() {
            // Blocks of warps that issued nothing retire at once.
            return self.blocks.iter().any(|b| b.1 == 0).then_some(0.0);
        }
        let next = self.finishing.peek()?.at;
        Some((next - self.progress).max(0.0) / self.rate(per_instruction, latency))
    }

    fn advance(&mut self, cycles: f64, per_instruction: f64, latency: f64) {
        self.progress += cycles * self.rate(per_instruction, latency);
    }

    /// Finish the warps due now; how many blocks that ends.
    fn retire(&mut self) -> usize {
        while let Some(f) = self.finishing.peek() {
            if f.at > self.progress * (1.0 + 1e-12) + 1e-9 {
                break;
            }
            let block = f.block;
            self.finishing.pop();
            if let Some(b) = self.blocks.iter_mut().find(|b| b.0 == block) {
                b.1 -= 1;
            }
        }
        let before = self.blocks.len();
        self.blocks.retain(|b| b.1 > 0);
        before - self.blocks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warps(blocks: u64, per_block: u32, issued: impl Fn(u64, u32) -> u64) -> Vec<WarpCount> {
        (0..blocks)
            .flat_map(|block| {
                let issued = &issued;
                (0..per_block).map(move |warp| WarpCount {
                    block,
                    warp,
                    issued: issued(block, warp),
                    active: 32 * issued(block, warp),
                })
            })
            .collect()
    }

    fn fp64_work(warps: &[WarpCount], threads_per_block: u32) -> Prediction {
        let issued: u64 = warps.iter().map(|w| w.issued).sum();
        predict(&Work {
            classes: &[(Class::Fp64, issued)],
            memory_cycles: 0.0,
            warps,
            threads_per_block,
            registers: Some(32),
            shared_bytes: 0,
            dram_bytes: 0,
            dram_read_bytes: 0,
            in_flight_bytes: None,
            indirect_calls: 0,
            loaded_target_calls: 0,
            l2_requests: 0,
            l2_sectors: 0,
            atomics: 0,
            hottest_atomic: 0,
        })
    }

    /// The H100's occupancy calculator's answers: 256 threads of 32 registers, 8 blocks;
    /// of 64 registers, 4; of 255, 1; 48 KiB of shared memory a block, 4.
    #[test]
    fn occupancy_is_the_calculators() {
        assert_eq!(occupancy(8, 32, 0), 8);
        assert_eq!(occupancy(8, 64, 0), 4);
        assert_eq!(occupancy(8, 255, 0), 1);
        assert_eq!(occupancy(8, 32, 48 * 1024), 4);
        assert_eq!(occupancy(1, 16, 0), 32);
    }

    /// Even FP64 work at full occupancy runs at the FP64 pipes' rate: 2 warp instructions
    /// a cycle an SM.
    #[test]
    fn even_fp64_work_runs_at_the_pipes_rate() {
        let w = warps(132 * 8 * 10, 8, |_, _| 1000);
        let p = fp64_work(&w, 256);
        let cycles = 132.0 * 8.0 * 10.0 * 8.0 * 1000.0 * 0.5 / 132.0;
        let expected = cycles / (h100::CLOCK_GHZ * 1e6);
        assert!(
            (p.compute_ms / expected - 1.0).abs() < 0.01,
            "{p:?} {expected}"
        );
        assert_eq!(p.bound, "the FP64 pipe");
    }

    /// 128 MiB streamed by 4 warps an SM with 2 KiB each in flight is bound by DRAM's
    /// latency (Little's law), by 64 warps an SM by its bandwidth; a call through a register
    /// in every warp's loop costs its cycles, more where its target is loaded first.
    #[test]
    fn few_loads_in_flight_and_indirect_calls_cost_their_latency() {
        let stream = |warps_per_block: u32, in_flight: f64, calls: u64, loaded: u64| {
            let w = warps(132, warps_per_block, |_, _| 1000);
            predict(&Work {
                classes: &[(Class::Fp32, 1000)],
                memory_cycles: 0.0,
                warps: &w,
                threads_per_block: 32 * warps_per_block,
                registers: Some(32),
                shared_bytes: 0,
                dram_bytes: 128 << 20,
                dram_read_bytes: 128 << 20,
                in_flight_bytes: Some(in_flight),
                indirect_calls: calls,
                loaded_target_calls: loaded,
                l2_requests: 0,
                l2_sectors: 0,
                atomics: 0,
                hottest_atomic: 0,
            })
        };
        let few = stream(4, 2048.0, 0, 0);
        let cycles = (128u64 << 20) as f64 / (132.0 * 4.0 * 2048.0 / h100::DRAM_LATENCY_CYCLES);
        assert!((few.latency_ms / (cycles / (h100::CLOCK_GHZ * 1e6)) - 1.0).abs() < 1e-9);
        assert!(few.bound.starts_with("memory latency"), "{}", few.bound);
        let many = stream(32, 2048.0, 0, 0);
        assert_eq!(many.bound, "DRAM bandwidth");
        let calls = 1 << 20;
        let held = stream(32, 2048.0, calls, 0);
        let loaded = stream(32, 2048.0, calls, calls);
        assert!(
            held.calls_ms > 0.0 && loaded.calls_ms > held.calls_ms,
            "{held:?} {loaded:?}"
        );
        assert!(
            loaded.bound.starts_with("indirect calls"),
            "{}",
            loaded.bound
        );
    }

    /// Limits apart overlap (DRAM and L2 each at 0.1 ms take 0.1 ms); L2's crossbar and its
    /// atomics are one limit (0.1 ms each take 0.2).
    #[test]
    fn the_slowest_limit_sets_the_time_and_l2s_two_add() {
        let limits = |dram_bytes: u64, l2_requests: u64, atomics: u64| {
            let w = warps(132, 1, |_, _| 1);
            let p = predict(&Work {
                classes: &[(Class::Fp32, 132)],
                memory_cycles: 0.0,
                warps: &w,
                threads_per_block: 32,
                registers: Some(32),
                shared_bytes: 0,
                dram_bytes,
                dram_read_bytes: 0,
                in_flight_bytes: None,
                indirect_calls: 0,
                loaded_target_calls: 0,
                l2_requests,
                l2_sectors: 0,
                atomics,
                hottest_atomic: 1,
            });
            (p.ms - p.launch_ms, p.bound)
        };
        let dram = (h100::DRAM_GBPS * 1e5) as u64;
        let l2 = (h100::L2_REQUESTS_PER_S * h100::L2_BUSY * 1e-4) as u64;
        let atomics = (h100::ATOMICS_PER_S * 1e-4) as u64;
        let (ms, bound) = limits(dram, l2, 0);
        assert!((ms - 0.1).abs() < 1e-5, "{ms} {bound}");
        let (ms, bound) = limits(0, l2, atomics);
        assert!((ms - 0.2).abs() < 1e-5, "{ms} {bound}");
        assert_eq!(bound, "L2 bandwidth");
        let (_, bound) = limits(0, l2, 2 * atomics);
        assert_eq!(bound, "atomics");
    }

    /// One slow warp makes a tail: the kernel lasts as long as that warp alone takes, and
    /// the prediction says latency sets it.
    #[test]
    fn one_slow_warp_is_a_tail() {
        let w = warps(
            132 * 8,
            8,
            |b, w| if b == 5 && w == 3 { 100_000 } else { 100 },
        );
        let p = fp64_work(&w, 256);
        let alone = 100_000.0 * 8.0 / (h100::CLOCK_GHZ * 1e6);
        assert!(p.compute_ms >= alone * 0.99, "{p:?}");
        assert!(p.bound.starts_with("latency"), "{}", p.bound);
    }
}
