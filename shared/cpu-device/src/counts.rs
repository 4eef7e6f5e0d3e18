//! What a launch does, counted as a GPU issues it (`--emulate --profile`): every warp
//! instruction and the lanes it ran for, the global-memory requests and the 32-byte sectors
//! they touch, the shared-memory wavefronts, the atomics by address, and per warp the
//! instructions it issued against the lanes that did work.
//!
//! The interpreter runs every warp instruction of a kernel for the lanes a GPU would run it
//! for (a divergent warp group by group, as the H100 does), so these counts are exact for
//! the PTX it runs. They are PTX's, not SASS's: ptxas expands some instructions (a
//! `div.rn.f64` into a Newton iteration of about ten) and fuses others; [`crate::model`]
//! prices each class as an H100 runs it.
//!
//! Counting costs a few additions an instruction and a sort of at most 64 numbers a memory
//! instruction; a launch that is not profiled pays one untaken branch an instruction.

use std::collections::HashMap;

use crate::ir::{CallTarget, FloatOp, Inst, Op, Reg, Space, Src, Ty};
use crate::memory::Snapshot;

/// One instruction's counts over the launch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtPc {
    /// Warp instructions issued: once per visit of a converged group of lanes.
    pub issued: u64,
    /// Lanes of those warps at the instruction (issued x 32 at full SIMT efficiency).
    pub active: u64,
    /// Lanes whose guard predicate held (the lanes that did the work).
    pub on: u64,
    /// Warp instructions that reached global memory, the 32-byte sectors they touched, and
    /// the 128-byte lines (each line a request of its own to L2, and a cycle of L1's).
    pub global_requests: u64,
    pub sectors: u64,
    pub lines: u64,
    /// Warp instructions that reached shared memory, the wavefronts they took (one per
    /// distinct 4-byte word in the busiest bank), and the fewest they could have taken.
    pub shared_requests: u64,
    pub wavefronts: u64,
    pub ideal_wavefronts: u64,
}

/// One warp of one block: what it issued, and the lanes those instructions ran for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarpCount {
    pub block: u64,
    pub warp: u32,
    pub issued: u64,
    pub active: u64,
}

/// A launch's counts: per instruction, per warp, and per atomic address, and the sectors
/// of global memory it read and wrote.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub pcs: Vec<AtPc>,
    pub warps: Vec<WarpCount>,
    /// Global atomics at each address.
    pub atomics: HashMap<u64, u64>,
    pub read: Footprint,
    pub written: Footprint,
    /// Each time a warp waited for global loads it had issued (an instruction read what a
    /// load wrote), the bytes they had in flight, summed, and their squares summed: what a
    /// warp keeps in flight, which with the warps an SM holds sets how fast memory can
    /// answer ([`Counts::in_flight_bytes`]).
    pub waited_bytes: u64,
    pub waited_bytes_squared: u64,
    /// Warp instructions that called through a register loaded from global memory since
    /// the warp's last call.
    pub loaded_target_calls: u64,
}

impl Counts {
    /// Counts for a module of `instructions` instructions, launched with `memory`.
    pub fn new(instructions: usize, memory: &Snapshot) -> Counts {
        Counts {
            pcs: vec![AtPc::default(); instructions],
            read: Footprint::new(memory),
            written: Footprint::new(memory),
            ..Counts::default()
        }
    }

    /// The bytes a warp's loads have in flight, as a byte loaded sees them: the mean of
    /// each wait's bytes weighted by those bytes (Little's law counts bytes, so a wait for
    /// one pointer weighs less than a wait for 2 KiB of data). `None` where no warp waited.
    pub fn in_flight_bytes(&self) -> Option<f64> {
        (self.waited_bytes > 0).then(|| self.waited_bytes_squared as f64 / self.waited_bytes as f64)
    }

    /// Warp instructions that called a function through a register (PTX's `call` with a
    /// target register: a virtual function, a function pointer), for the module's `code`.
    /// The class counts cannot tell them from branches, and each is a jump the compiler
    /// could not inline, with its arguments passed by the calling convention.
    pub fn indirect_calls(&self, code: &[Inst]) -> u64 {
        self.pcs
            .iter()
            .zip(code)
            .filter(|(_, inst)| {
                matches!(
                    inst.op,
                    Op::Call {
                        target: CallTarget::Indirect(_),
                        ..
                    }
                )
            })
            .map(|(at, _)| at.issued)
            .sum()
    }

    /// Add another worker's counts to these.
    pub fn merge(&mut self, other: Counts) {
        for (mine, theirs) in self.pcs.iter_mut().zip(&other.pcs) {
            mine.issued += theirs.issued;
            mine.active += theirs.active;
            mine.on += theirs.on;
            mine.global_requests += theirs.global_requests;
            mine.sectors += theirs.sectors;
            mine.lines += theirs.lines;
            mine.shared_requests += theirs.shared_requests;
            mine.wavefronts += theirs.wavefronts;
            mine.ideal_wavefronts += theirs.ideal_wavefronts;
        }
        self.warps.extend(other.warps);
        for (address, n) in other.atomics {
            *self.atomics.entry(address).or_default() += n;
        }
        self.read.merge(&other.read);
        self.written.merge(&other.written);
        self.waited_bytes += other.waited_bytes;
        self.waited_bytes_squared += other.waited_bytes_squared;
        self.loaded_target_calls += other.loaded_target_calls;
    }
}

/// The 32-byte sectors of global memory a launch touched, one bit each per allocation: what
/// DRAM must move at least once (the H100's 50 MB L2 holds the rest, for the labs' sizes).
#[derive(Clone, Debug, Default)]
pub struct Footprint {
    /// Each allocation's start and end, and its sectors' bits.
    allocations: Vec<(u64, u64, Vec<u64>)>,
    /// The allocation the last sector fell in.
    last: usize,
}

impl Footprint {
    fn new(memory: &Snapshot) -> Footprint {
        Footprint {
            allocations: (0..memory.len())
                .map(|i| {
                    let (start, end) = memory.range(i);
                    (
                        start,
                        end,
                        vec![0; (end - start).div_ceil(32 * 64) as usize],
                    )
                })
                .collect(),
            last: 0,
        }
    }

    /// Mark the sector at `address` (inside an allocation of the launch: its access was
    /// checked).
    fn mark(&mut self, address: u64) {
        let inside = |a: &(u64, u64, Vec<u64>)| address >= a.0 && address < a.1;
        if !self.allocations.get(self.last).is_some_and(inside) {
            let i = self.allocations.partition_point(|a| a.0 <= address);
            self.last = i.saturating_sub(1);
        }
        if let Some((start, _, bits)) = self.allocations.get_mut(self.last) {
            let sector = (address.saturating_sub(*start) / 32) as usize;
            if let Some(word) = bits.get_mut(sector / 64) {
                *word |= 1 << (sector % 64);
            }
        }
    }

    fn merge(&mut self, other: &Footprint) {
        for (mine, theirs) in self.allocations.iter_mut().zip(&other.allocations) {
            for (a, b) in mine.2.iter_mut().zip(&theirs.2) {
                *a |= b;
            }
        }
    }

    /// The bytes of the sectors marked.
    pub fn bytes(&self) -> u64 {
        let bits: u64 = self
            .allocations
            .iter()
            .flat_map(|a| &a.2)
            .map(|w| u64::from(w.count_ones()))
            .sum();
        bits * 32
    }
}

/// A worker's counting as it runs blocks: the launch's counts so far, the block's warps, and
/// the instruction being run (for the memory helpers, which see lanes, not counters).
#[derive(Debug, Default)]
pub struct Counter {
    pub counts: Counts,
    block_warps: Vec<(u64, u64)>,
    /// Each instruction's registers: those it reads (its guard's among them) and those it
    /// writes; and whether it is a call or a return, across which a frame's registers are
    /// another frame's.
    uses: Vec<Uses>,
    /// Each warp of the block: the loads it has in flight.
    in_flight: Vec<InFlight>,
    pc: usize,
    warp: usize,
}

#[derive(Debug, Default)]
struct Uses {
    reads: Vec<Reg>,
    writes: Vec<Reg>,
    call: bool,
    /// The register a call through a register jumps to.
    target: Option<Reg>,
}

/// A warp's global loads since it last waited for one: the registers they write and the
/// bytes they asked for (their sectors'); and the registers its loads wrote since its last
/// call.
#[derive(Debug, Default)]
struct InFlight {
    registers: Vec<Reg>,
    bytes: u64,
    since_call: Vec<Reg>,
}

impl Counter {
    pub fn new(code: &[Inst], warps: usize, memory: &Snapshot) -> Counter {
        let uses = code
            .iter()
            .map(|inst| Uses {
                reads: inst
                    .op
                    .reads()
                    .into_iter()
                    .chain(inst.guard.map(|(p, _)| p))
                    .collect(),
                writes: inst.op.writes(),
                call: matches!(inst.op, Op::Call { .. } | Op::Ret),
                target: match inst.op {
                    Op::Call {
                        target: CallTarget::Indirect(Src::R(r)),
                        ..
                    } => Some(r),
                    _ => None,
                },
            })
            .collect();
        Counter {
            counts: Counts::new(code.len(), memory),
            block_warps: vec![(0, 0); warps],
            uses,
            in_flight: (0..warps).map(|_| InFlight::default()).collect(),
            pc: 0,
            warp: 0,
        }
    }

    /// A warp instruction issued at `pc` for the lanes of `group`, `exec` of them with
    /// their guard true, by the warp whose lane 0 is thread `first` of the block.
    #[inline]
    pub fn issue(&mut self, pc: u32, group: u32, exec: u32, first: u32) {
        self.pc = pc as usize;
        let at = &mut self.counts.pcs[self.pc];
        let active = u64::from(group.count_ones());
        at.issued += 1;
        at.active += active;
        at.on += u64::from(exec.count_ones());
        self.warp = (first / 32) as usize;
        let warp = &mut self.block_warps[self.warp];
        warp.0 += 1;
        warp.1 += active;
        // A read of what a load in flight writes waits for it (the GPU's scoreboard); so
        // does a call or return, past which the registers are another frame's.
        let uses = &self.uses[self.pc];
        let loads = &mut self.in_flight[self.warp];
        if !loads.registers.is_empty() {
            if uses.call || uses.reads.iter().any(|r| loads.registers.contains(r)) {
                self.counts.waited_bytes += loads.bytes;
                self.counts.waited_bytes_squared += loads.bytes * loads.bytes;
                loads.registers.clear();
                loads.bytes = 0;
            } else {
                loads.registers.retain(|r| !uses.writes.contains(r));
            }
        }
        // A call's target loaded since the warp's last call (a virtual function's, a
        // pointer read in the loop) must arrive before the jump; one held in a register
        // since (a pointer read before the loop) is there already.
        if let Some(target) = uses.target {
            if loads.since_call.contains(&target) {
                self.counts.loaded_target_calls += 1;
            }
        }
        if uses.call {
            loads.since_call.clear();
        } else {
            loads.since_call.retain(|r| !uses.writes.contains(r));
        }
    }

    /// A block ended: its warps' counts join the launch's.
    pub fn end_block(&mut self, block: u64) {
        for (warp, (issued, active)) in self.block_warps.iter_mut().enumerate() {
            self.counts.warps.push(WarpCount {
                block,
                warp: warp as u32,
                issued: *issued,
                active: *active,
            });
            *issued = 0;
            *active = 0;
        }
        for loads in &mut self.in_flight {
            *loads = InFlight::default();
        }
    }

    /// The instruction being run accessed global memory: each lane of `lanes` `bytes` bytes
    /// from its address in `addresses`, writing them if `write`.
    pub fn global(&mut self, addresses: &[u64; 32], lanes: u32, bytes: u32, write: bool) {
        if lanes == 0 {
            return;
        }
        let mut sectors = [0u64; 64];
        let mut n = 0;
        for l in Lanes(lanes) {
            let first = addresses[l] >> 5;
            let last = (addresses[l] + u64::from(bytes.max(1)) - 1) >> 5;
            // An access of at most 16 bytes, aligned to its size, is in one sector; a vector
            // of two 16-byte halves (the widest PTX access is 32 bytes) in at most two.
            for sector in first..=last.min(first + 1) {
                sectors[n] = sector;
                n += 1;
            }
        }
        let touched = distinct(&mut sectors[..n]);
        // The sectors are sorted: a line is a run of them with the same address >> 2.
        let lines = sectors[..touched as usize]
            .iter()
            .enumerate()
            .filter(|&(i, s)| i == 0 || sectors[i - 1] >> 2 != s >> 2)
            .count() as u64;
        let footprint = if write {
            &mut self.counts.written
        } else {
            &mut self.counts.read
        };
        for &sector in &sectors[..touched as usize] {
            footprint.mark(sector << 5);
        }
        let at = &mut self.counts.pcs[self.pc];
        at.global_requests += 1;
        at.sectors += touched;
        at.lines += lines;
        if !write {
            let loads = &mut self.in_flight[self.warp];
            loads.registers.extend(&self.uses[self.pc].writes);
            loads.since_call.extend(&self.uses[self.pc].writes);
            loads.bytes += 32 * touched;
        }
    }

    /// The instruction being run accessed shared memory at these offsets, as [`global`].
    ///
    /// [`global`]: Counter::global
    pub fn shared(&mut self, offsets: &[u64; 32], lanes: u32, bytes: u32) {
        if lanes == 0 {
            return;
        }
        // Each lane's 4-byte words (at most 4 at 16 bytes a lane), then the busiest bank's
        // distinct words: lanes reading one word share it (a broadcast).
        let mut words = [0u64; 128];
        let mut n = 0;
        for l in Lanes(lanes) {
            let first = offsets[l] >> 2;
            let count = u64::from(bytes.div_ceil(4)).min(4);
            for word in first..first + count {
                words[n] = word;
                n += 1;
            }
        }
        let words = &mut words[..n];
        let total = distinct(words);
        let mut per_bank = [0u64; 32];
        for &word in &words[..total as usize] {
            per_bank[(word % 32) as usize] += 1;
        }
        let at = &mut self.counts.pcs[self.pc];
        at.shared_requests += 1;
        at.wavefronts += per_bank.iter().copied().max().unwrap_or(1);
        at.ideal_wavefronts += total.div_ceil(32).max(1);
    }

    /// A global atomic at `address`.
    pub fn atomic(&mut self, address: u64) {
        *self.counts.atomics.entry(address).or_default() += 1;
    }
}

/// Sort `values` and move the distinct ones to the front; how many there are.
fn distinct(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    let mut kept = 0;
    for i in 0..values.len() {
        if i == 0 || values[i] != values[kept - 1] {
            values[kept] = values[i];
            kept += 1;
        }
    }
    kept as u64
}

/// The lanes of a mask, lowest first.
struct Lanes(u32);

impl Iterator for Lanes {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let lane = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(lane)
    }
}

/// What an instruction is, as the profile adds it up: the H100 runs each class on its own
/// pipe, or at a rate of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// f64 add, multiply, fused multiply-add, compare, min and max (the FP64 pipe).
    Fp64,
    /// f64 division, square root and reciprocal (each a sequence of FP64 instructions).
    Fp64Divide,
    /// f32 arithmetic (the FMA pipes).
    Fp32,
    /// Approximate f32 functions (the special-function unit).
    Special,
    /// Integer arithmetic, logic and shifts.
    Integer,
    /// Conversions between types.
    Conversion,
    /// Moves, selects, predicate logic, special registers, address arithmetic.
    Move,
    /// Branches, calls, returns and exits.
    Branch,
    /// Block and warp barriers.
    Barrier,
    /// Shuffles, votes, matches and warp reductions.
    Warp,
    /// Atomics.
    Atomic,
    /// Loads and stores, by state space.
    Load(Space),
    Store(Space),
}

impl Class {
    pub fn of(inst: &Inst) -> Class {
        let f64_or = |ty: Ty, other: Class| if ty == Ty::F64 { Class::Fp64 } else { other };
        match &inst.op {
            Op::Float { op, ty, .. } => match (op, ty) {
                (FloatOp::Div | FloatOp::Sqrt | FloatOp::Rcp, Ty::F64) => Class::Fp64Divide,
                (FloatOp::Approx(_) | FloatOp::DivApprox { .. }, Ty::F32) => Class::Special,
                (FloatOp::Div | FloatOp::Sqrt | FloatOp::Rcp, _) => Class::Special,
                (_, ty) => f64_or(*ty, Class::Fp32),
            },
            Op::Setp { ty, .. } if ty.float() => f64_or(*ty, Class::Fp32),
            Op::Setp { .. } | Op::Int { .. } | Op::Carry { .. } => Class::Integer,
            Op::Cvt { .. } | Op::CvtPair { .. } => Class::Conversion,
            Op::Mov { .. }
            | Op::Selp { .. }
            | Op::PredLogic { .. }
            | Op::Special { .. }
            | Op::LocalAddr { .. }
            | Op::Unpack { .. }
            | Op::Pack { .. }
            | Op::Cvta { .. }
            | Op::Nop => Class::Move,
            Op::Bra { .. }
            | Op::Call { .. }
            | Op::Ret
            | Op::Exit
            | Op::Trap
            | Op::Printf { .. }
            | Op::AssertFail { .. }
            | Op::Malloc { .. }
            | Op::Free { .. } => Class::Branch,
            Op::Bar | Op::BarRed { .. } | Op::WarpSync { .. } => Class::Barrier,
            Op::Shfl { .. } | Op::Vote { .. } | Op::Match { .. } | Op::Activemask { .. } => {
                Class::Warp
            }
            Op::Redux { .. } | Op::Atom { .. } => Class::Atomic,
            Op::Ld { space, .. } => Class::Load(*space),
            Op::St { space, .. } => Class::Store(*space),
        }
    }

    /// Its name in a profile: a word or two, the same in the table and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Class::Fp64 => "fp64",
            Class::Fp64Divide => "fp64 divide",
            Class::Fp32 => "fp32",
            Class::Special => "special function",
            Class::Integer => "integer",
            Class::Conversion => "conversion",
            Class::Move => "move",
            Class::Branch => "branch",
            Class::Barrier => "barrier",
            Class::Warp => "warp",
            Class::Atomic => "atomic",
            Class::Load(Space::Global) => "load global",
            Class::Load(Space::Const) => "load constant",
            Class::Load(Space::Shared) => "load shared",
            Class::Load(Space::Local) => "load local",
            Class::Load(Space::Param) => "load parameter",
            Class::Load(Space::Generic) => "load generic",
            Class::Store(Space::Global) => "store global",
            Class::Store(Space::Shared) => "store shared",
            Class::Store(Space::Local) => "store local",
            Class::Store(Space::Param) => "store parameter",
            Class::Store(Space::Const | Space::Generic) => "store generic",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nops(n: usize) -> Vec<Inst> {
        (0..n)
            .map(|_| Inst {
                guard: None,
                op: Op::Nop,
                line: 0,
            })
            .collect()
    }

    fn addresses(f: impl Fn(u64) -> u64) -> [u64; 32] {
        std::array::from_fn(|l| f(l as u64))
    }

    /// 32 lanes reading consecutive f64s touch 8 sectors in 2 lines; with a stride of 32
    /// doubles, one sector and one line each.
    #[test]
    fn sectors_count_coalescing() {
        let mut c = Counter::new(&nops(1), 1, &Snapshot::default());
        c.global(&addresses(|l| 4096 + 8 * l), u32::MAX, 8, false);
        assert_eq!((c.counts.pcs[0].sectors, c.counts.pcs[0].lines), (8, 2));
        c.global(&addresses(|l| 4096 + 256 * l), u32::MAX, 8, false);
        assert_eq!(
            (c.counts.pcs[0].sectors, c.counts.pcs[0].lines),
            (8 + 32, 2 + 32)
        );
        // Bytes of 8 pixels in each of 4 rows 4096 pixels apart: 4 lines, not 1.
        c.global(
            &addresses(|l| 3 * (l % 8) + 3 * 4096 * (l / 8)),
            u32::MAX,
            1,
            true,
        );
        assert_eq!(c.counts.pcs[0].lines, 2 + 32 + 4);
        // One lane of the warp: one sector. Bytes of a pixel each: 96 bytes, 3 sectors.
        c.global(&addresses(|_| 4096), 1, 4, false);
        c.global(&addresses(|l| 4096 + 3 * l), u32::MAX, 1, false);
        assert_eq!(c.counts.pcs[0].sectors, 8 + 32 + 4 + 1 + 3);
        assert_eq!(c.counts.pcs[0].global_requests, 5);
    }

    /// Consecutive words: one wavefront; a stride of 32 words: all in one bank, 32
    /// wavefronts; every lane one word: a broadcast, one; doubles: two, both ideal.
    #[test]
    fn wavefronts_count_bank_conflicts() {
        let mut c = Counter::new(&nops(1), 1, &Snapshot::default());
        let mut both = |offsets: [u64; 32], bytes| {
            let before = c.counts.pcs[0];
            c.shared(&offsets, u32::MAX, bytes);
            let after = c.counts.pcs[0];
            (
                after.wavefronts - before.wavefronts,
                after.ideal_wavefronts - before.ideal_wavefronts,
            )
        };
        assert_eq!(both(addresses(|l| 4 * l), 4), (1, 1));
        assert_eq!(both(addresses(|l| 128 * l), 4), (32, 1));
        assert_eq!(both(addresses(|_| 64), 4), (1, 1));
        assert_eq!(both(addresses(|l| 8 * l), 8), (2, 2));
        assert_eq!(both(addresses(|l| 8 * l), 4), (2, 1));
    }

    /// A warp's lanes count where they are, per warp of the block, and the workers' counts
    /// add up.
    #[test]
    fn issues_count_per_warp_and_merge() {
        let mut a = Counter::new(&nops(2), 2, &Snapshot::default());
        a.issue(0, u32::MAX, u32::MAX, 0);
        a.issue(1, 0xFF, 0x0F, 32);
        a.end_block(7);
        let mut b = Counter::new(&nops(2), 2, &Snapshot::default());
        b.issue(1, 1, 1, 0);
        b.atomic(64);
        b.end_block(8);
        a.counts.merge(b.counts);
        let c = a.counts;
        assert_eq!(
            c.pcs[0],
            AtPc {
                issued: 1,
                active: 32,
                on: 32,
                ..AtPc::default()
            }
        );
        assert_eq!(
            c.pcs[1],
            AtPc {
                issued: 2,
                active: 9,
                on: 5,
                ..AtPc::default()
            }
        );
        assert_eq!(c.warps.len(), 4);
        assert_eq!(
            c.warps[1],
            WarpCount {
                block: 7,
                warp: 1,
                issued: 1,
                active: 8
            }
        );
        assert_eq!(
            c.warps[2],
            WarpCount {
                block: 8,
                warp: 0,
                issued: 1,
                active: 1
            }
        );
        assert_eq!(c.atomics[&64], 1);
    }

    /// Loads in flight are counted from the first to the instruction that reads one of
    /// them, weighted by their bytes; a call's target loaded since the warp's last call is
    /// counted, one held in a register from before is not.
    #[test]
    fn loads_in_flight_and_loaded_call_targets_are_counted() {
        use crate::ir::{Addr, IntOp, Src};
        let inst = |op| Inst {
            guard: None,
            op,
            line: 0,
        };
        let load = |d| {
            inst(Op::Ld {
                space: Space::Global,
                ty: Ty::U32,
                ds: vec![Some(d)],
                addr: Addr::Reg(9, 0),
            })
        };
        let add = |d, a| {
            inst(Op::Int {
                op: IntOp::Add,
                ty: Ty::U32,
                d,
                a: Src::R(a),
                b: Src::I(1),
                c: Src::I(0),
                sat: false,
            })
        };
        let call = inst(Op::Call {
            target: CallTarget::Indirect(Src::R(1)),
            args: Vec::new(),
            ret: None,
        });
        // 0, 1: two loads; 2: reads the second (a wait for both); 3: a load of the target
        // register; 4: the call through it; 5: the call again, its target not reloaded.
        let code = [load(1), load(2), add(3, 2), load(1), call.clone(), call];
        let mut c = Counter::new(&code, 1, &Snapshot::default());
        let run = |pc: u32, c: &mut Counter| {
            c.issue(pc, u32::MAX, u32::MAX, 0);
            if matches!(code[pc as usize].op, Op::Ld { .. }) {
                // 32 lanes of 4 bytes: 4 sectors, 128 bytes.
                c.global(&addresses(|l| 4096 + 4 * l), u32::MAX, 4, false);
            }
        };
        for pc in 0..6 {
            run(pc, &mut c);
        }
        // Waits: 256 bytes at the add, 128 at the first call; weighted by bytes.
        assert_eq!(c.counts.waited_bytes, 256 + 128);
        let expected = (256.0 * 256.0 + 128.0 * 128.0) / 384.0;
        assert_eq!(c.counts.in_flight_bytes(), Some(expected));
        assert_eq!(c.counts.loaded_target_calls, 1);
    }

    /// Only calls through a register count as indirect: a direct call, a branch or any
    /// other instruction does not, however often it was issued.
    #[test]
    fn indirect_calls_are_the_calls_through_a_register() {
        use crate::ir::Src;
        let inst = |op| Inst {
            guard: None,
            op,
            line: 0,
        };
        let call = |target| Op::Call {
            target,
            args: Vec::new(),
            ret: None,
        };
        let code = [
            inst(call(CallTarget::Indirect(Src::R(3)))),
            inst(call(CallTarget::Direct(0))),
            inst(Op::Nop),
            inst(call(CallTarget::Indirect(Src::R(4)))),
        ];
        let mut counts = Counts::new(code.len(), &Snapshot::default());
        for (at, issued) in counts.pcs.iter_mut().zip([3, 5, 7, 11]) {
            at.issued = issued;
        }
        assert_eq!(counts.indirect_calls(&code), 3 + 11);
    }
}
