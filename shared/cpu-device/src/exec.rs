//! Running a kernel: blocks in parallel on every core, the warps of a block in turn, the 32
//! lanes of a warp in lock-step.
//!
//! A warp runs the instruction at the lowest program counter among its live lanes, for
//! every lane there ("min-PC"): lanes that branch away wait while the others catch up, so
//! lanes meet again where their paths join, as on the GPU, and a shuffle or vote sees every
//! lane that the GPU would. While all live lanes share one counter (the common case), the
//! warp keeps just that one. A block whose code has `bar.sync` runs each warp until all its
//! lanes wait at the barrier, then the next warp; when all have arrived they go on.
//!
//! Every memory access is checked against what it may touch: its allocation (global and
//! constant memory), the block's shared memory, the lane's local and parameter memory. A
//! fault stops the launch with one message naming the kernel, block, thread and address.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::float::*;
use crate::ir::*;
use crate::load::{mask as type_mask, Module};
use crate::memory::Snapshot;

/// A launch: what to run, on which grid, with which arguments.
pub struct Launch<'a> {
    pub module: &'a Module,
    pub function: &'a Function,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared: u32,
    /// The arguments, laid out as the function's parameters say.
    pub params: &'a [u8],
    pub memory: &'a Snapshot,
}

/// What went wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub message: String,
}

const RUNNING: u8 = 0;
const EXITED: u8 = 1;
const WAITING: u8 = 2;

/// Frames deeper than this are a runaway recursion.
const MAX_DEPTH: usize = 64;

#[derive(Clone, Copy, Default)]
struct Frame {
    return_pc: u32,
    regs: u32,
    params: u32,
    locals: u32,
    function: u32,
    ret: Option<(u32, u32)>,
}

struct Warp {
    /// Lanes in this warp (the last warp of a block may be partial).
    lanes: usize,
    /// The block-linear index of lane 0.
    first: u32,
    status: [u8; 32],
    /// Live lanes that are running (not exited, not waiting).
    running: u32,
    /// When `uniform`, every running lane is at `pc`; otherwise `pcs` holds each lane's.
    uniform: bool,
    pc: u32,
    pcs: [u32; 32],
    /// Registers, slot-major: `regs[slot * 32 + lane]`.
    regs: Vec<u64>,
    /// Each lane's frame: register, parameter and local bases, and its call stack.
    reg_base: [u32; 32],
    param_base: [u32; 32],
    local_base: [u32; 32],
    function: [u32; 32],
    stack: Vec<Vec<Frame>>,
    /// Each lane's parameter and local memory, `param_size` and `local_size` bytes a lane.
    params: Vec<u8>,
    locals: Vec<u8>,
}

enum Stop {
    Done,
    Barrier,
}

struct Sizes {
    regs: usize,
    param: usize,
    local: usize,
}

/// Run the launch on `threads` host threads.
pub fn run(launch: &Launch, threads: usize) -> Result<(), Fault> {
    let blocks = u64::from(launch.grid[0]) * u64::from(launch.grid[1]) * u64::from(launch.grid[2]);
    let next = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let first_fault: Mutex<Option<(u64, Fault)>> = Mutex::new(None);
    // Frame sizes: the largest function's, times the depth calls may reach.
    let calls = launch.module.code.iter().any(|i| matches!(i.op, Op::Call { .. }));
    let depth = if calls { MAX_DEPTH } else { 1 };
    let widest = |f: fn(&Function) -> u32| {
        launch.module.functions.iter().map(f).max().unwrap_or(0) as usize
    };
    let sizes = Sizes {
        regs: widest(|f| f.regs) * if calls { 4 } else { 1 },
        param: widest(|f| f.param_bytes).div_ceil(8) * 8 * depth,
        local: widest(|f| f.local_bytes).div_ceil(16) * 16 * depth,
    };
    let threads = threads.clamp(1, blocks.max(1) as usize);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut worker = Worker::new(launch, &sizes);
                loop {
                    if failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let b = next.fetch_add(1, Ordering::Relaxed);
                    if b >= blocks {
                        break;
                    }
                    if let Err(fault) = worker.block(b) {
                        failed.store(true, Ordering::Relaxed);
                        if let Ok(mut first) = first_fault.lock() {
                            if first.as_ref().is_none_or(|(at, _)| b < *at) {
                                *first = Some((b, fault));
                            }
                        }
                        break;
                    }
                }
            });
        }
    });
    match first_fault.into_inner() {
        Ok(Some((_, fault))) => Err(fault),
        Ok(None) => Ok(()),
        Err(_) => Err(Fault {
            block: [0; 3],
            thread: [0; 3],
            message: "a worker thread failed".to_string(),
        }),
    }
}

struct Worker<'a> {
    l: &'a Launch<'a>,
    code: &'a [Inst],
    sizes: &'a Sizes,
    warps: Vec<Warp>,
    shared: Vec<u8>,
    ctaid: [u32; 3],
    cache: (u64, u64),
}

impl<'a> Worker<'a> {
    fn new(l: &'a Launch<'a>, sizes: &'a Sizes) -> Worker<'a> {
        let threads = (l.block[0] * l.block[1] * l.block[2]) as usize;
        let warps = threads.div_ceil(32);
        Worker {
            l,
            code: &l.module.code,
            sizes,
            warps: (0..warps)
                .map(|w| {
                    let lanes = (threads - w * 32).min(32);
                    Warp {
                        lanes,
                        first: (w * 32) as u32,
                        status: [EXITED; 32],
                        running: 0,
                        uniform: true,
                        pc: 0,
                        pcs: [0; 32],
                        regs: vec![0; sizes.regs.max(1) * 32],
                        reg_base: [0; 32],
                        param_base: [0; 32],
                        local_base: [0; 32],
                        function: [0; 32],
                        stack: vec![Vec::new(); 32],
                        params: vec![0; sizes.param * 32],
                        locals: vec![0; sizes.local * 32],
                    }
                })
                .collect(),
            shared: vec![0; (l.module.shared_bytes + l.dynamic_shared) as usize],
            ctaid: [0; 3],
            cache: (1, 0),
        }
    }

    fn block(&mut self, linear: u64) -> Result<(), Fault> {
        let g = self.l.grid;
        self.ctaid = [
            (linear % u64::from(g[0])) as u32,
            (linear / u64::from(g[0]) % u64::from(g[1])) as u32,
            (linear / (u64::from(g[0]) * u64::from(g[1]))) as u32,
        ];
        self.shared.fill(0);
        let f = self.l.function;
        let function_index = self.l.module.by_name.get(&f.name).copied().unwrap_or(0);
        for w in &mut self.warps {
            let all = if w.lanes == 32 { u32::MAX } else { (1u32 << w.lanes) - 1 };
            w.status = [EXITED; 32];
            w.status[..w.lanes].fill(RUNNING);
            w.running = all;
            w.uniform = true;
            w.pc = f.start;
            w.reg_base = [0; 32];
            w.param_base = [0; 32];
            w.local_base = [0; 32];
            w.function = [function_index; 32];
            for s in &mut w.stack {
                s.clear();
            }
        }
        let mut warps = std::mem::take(&mut self.warps);
        let result = self.schedule(&mut warps);
        self.warps = warps;
        result
    }

    fn schedule(&mut self, warps: &mut [Warp]) -> Result<(), Fault> {
        loop {
            let mut waiting = false;
            for w in warps.iter_mut() {
                if w.running == 0 {
                    continue;
                }
                match self.run_warp(w)? {
                    Stop::Done => {}
                    Stop::Barrier => waiting = true,
                }
            }
            if !waiting {
                return Ok(());
            }
            // Every live thread of the block waits at a barrier: check they wait at the
            // same one and none has left, then let them all go on.
            let mut barrier_pc = None;
            for w in warps.iter() {
                for lane in 0..w.lanes {
                    let pc = w.pcs[lane];
                    match w.status[lane] {
                        EXITED => {
                            return Err(self.fault(
                                w,
                                lane,
                                format!(
                                    "a barrier (bar.sync, line {}) that not every thread of the block reaches: this thread has exited while others wait there",
                                    self.waiting_line(warps)
                                ),
                            ))
                        }
                        WAITING => match barrier_pc {
                            None => barrier_pc = Some(pc),
                            Some(p) if p != pc => {
                                return Err(self.fault(
                                    w,
                                    lane,
                                    format!(
                                        "threads of one block wait at different barriers (lines {} and {})",
                                        self.code[p as usize].line, self.code[pc as usize].line
                                    ),
                                ))
                            }
                            _ => {}
                        },
                        _ => {}
                    }
                }
            }
            for w in warps.iter_mut() {
                w.uniform = false;
                for lane in 0..w.lanes {
                    if w.status[lane] == WAITING {
                        w.status[lane] = RUNNING;
                        w.running |= 1 << lane;
                        w.pcs[lane] += 1;
                    }
                }
            }
        }
    }

    fn waiting_line(&self, warps: &[Warp]) -> u32 {
        for w in warps {
            for lane in 0..w.lanes {
                if w.status[lane] == WAITING {
                    return self.code[w.pcs[lane] as usize].line;
                }
            }
        }
        0
    }

    fn thread_index(&self, w: &Warp, lane: usize) -> [u32; 3] {
        let t = w.first + lane as u32;
        let b = self.l.block;
        [t % b[0], t / b[0] % b[1], t / (b[0] * b[1])]
    }

    fn fault(&self, w: &Warp, lane: usize, message: String) -> Fault {
        Fault {
            block: self.ctaid,
            thread: self.thread_index(w, lane),
            message,
        }
    }

    fn name_of(&self, w: &Warp, lane: usize) -> &str {
        &self.l.module.functions[w.function[lane] as usize].name
    }

    fn run_warp(&mut self, w: &mut Warp) -> Result<Stop, Fault> {
        loop {
            let (pc, mask) = if w.uniform {
                (w.pc, w.running)
            } else {
                let mut pc = u32::MAX;
                let mut mask = 0u32;
                let mut m = w.running;
                while m != 0 {
                    let lane = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let p = w.pcs[lane];
                    if p < pc {
                        pc = p;
                        mask = 1 << lane;
                    } else if p == pc {
                        mask |= 1 << lane;
                    }
                }
                if mask == w.running && mask != 0 {
                    w.uniform = true;
                    w.pc = pc;
                }
                (pc, mask)
            };
            if mask == 0 {
                let waiting = w.status[..w.lanes].contains(&WAITING);
                return Ok(if waiting { Stop::Barrier } else { Stop::Done });
            }
            let inst = &self.code[pc as usize];
            let exec = match inst.guard {
                None => mask,
                Some((p, negate)) => {
                    let mut on = 0u32;
                    let mut m = mask;
                    while m != 0 {
                        let lane = m.trailing_zeros() as usize;
                        m &= m - 1;
                        let v = w.regs[w.slot(p, lane)] != 0;
                        if v != negate {
                            on |= 1 << lane;
                        }
                    }
                    on
                }
            };
            self.step(w, inst, pc, mask, exec)?;
        }
    }

    /// Run `inst` (at `pc`) for the lanes in `exec`; the lanes in `mask` but not `exec`
    /// (guard false) just move on.
    fn step(&mut self, w: &mut Warp, inst: &Inst, pc: u32, mask: u32, exec: u32) -> Result<(), Fault> {
        macro_rules! each {
            (|$lane:ident| $body:block) => {{
                let mut m = exec;
                while m != 0 {
                    let $lane = m.trailing_zeros() as usize;
                    m &= m - 1;
                    $body
                }
            }};
        }
        match &inst.op {
            Op::Mov { d, a, mask: bits } => each!(|l| {
                let v = w.get(*a, l) & bits;
                w.set(*d, l, v);
            }),
            Op::Special { d, s } => each!(|l| {
                let v = self.special(w, l, *s);
                w.set(*d, l, v);
            }),
            Op::LocalAddr { d, off } => each!(|l| {
                let v = u64::from(w.local_base[l] + off);
                w.set(*d, l, v);
            }),
            Op::Unpack { ds, a, bits } => each!(|l| {
                let v = w.get(*a, l);
                for (i, d) in ds.iter().enumerate() {
                    if let Some(d) = d {
                        let part = (v >> (i as u32 * bits)) & mask_bits(*bits);
                        w.set(*d, l, part);
                    }
                }
            }),
            Op::Pack { d, parts, bits } => each!(|l| {
                let mut v = 0u64;
                for (i, p) in parts.iter().enumerate() {
                    v |= (w.get(*p, l) & mask_bits(*bits)) << (i as u32 * bits);
                }
                w.set(*d, l, v);
            }),
            Op::Int { op, ty, d, a, b, c, sat } => each!(|l| {
                let v = int_op(*op, *ty, w.get(*a, l), w.get(*b, l), w.get(*c, l), *sat);
                w.set(*d, l, v);
            }),
            Op::Float { op, ty, rnd, ftz, sat, d, a, b, c } => each!(|l| {
                let v = float_op(*op, *ty, *rnd, *ftz, *sat, w.get(*a, l), w.get(*b, l), w.get(*c, l));
                w.set(*d, l, v);
            }),
            Op::Setp { cmp, ty, ftz, d, d2, a, b, comb } => each!(|l| {
                let mut t = compare(*cmp, *ty, *ftz, w.get(*a, l), w.get(*b, l));
                let mut f = !t;
                if let Some((op, p, neg)) = comb {
                    let q = (w.get(*p, l) != 0) != *neg;
                    let apply = |x: bool| match op {
                        BoolOp::And => x && q,
                        BoolOp::Or => x || q,
                        BoolOp::Xor => x != q,
                    };
                    t = apply(t);
                    f = apply(f);
                }
                w.set(*d, l, u64::from(t));
                if let Some(d2) = d2 {
                    w.set(*d2, l, u64::from(f));
                }
            }),
            Op::Selp { d, a, b, p, mask: bits } => each!(|l| {
                let v = if w.get(*p, l) != 0 { w.get(*a, l) } else { w.get(*b, l) };
                w.set(*d, l, v & bits);
            }),
            Op::PredLogic { op, d, a, b } => each!(|l| {
                let x = (w.get(a.0, l) != 0) != a.1;
                let y = (w.get(b.0, l) != 0) != b.1;
                let v = match op {
                    IntOp::And => x && y,
                    IntOp::Or => x || y,
                    IntOp::Xor => x != y,
                    _ => !x,
                };
                w.set(*d, l, u64::from(v));
            }),
            Op::Cvt { dty, sty, rnd, int_rnd, ftz, sat, d, a } => each!(|l| {
                let v = convert(*dty, *sty, *rnd, *int_rnd, *ftz, *sat, w.get(*a, l));
                w.set(*d, l, v);
            }),
            Op::Cvta { to, space, d, a } => each!(|l| {
                let v = w.get(*a, l);
                let base = match space {
                    Space::Shared => self.shared.as_ptr() as u64,
                    Space::Local => w.locals.as_ptr() as u64 + (l * self.sizes.local) as u64,
                    _ => 0,
                };
                let out = if *to { v.wrapping_sub(base) } else { v.wrapping_add(base) };
                w.set(*d, l, out);
            }),
            Op::Ld { space, ty, ds, addr } => {
                let size = ty.bytes();
                let total = size * ds.len() as u32;
                let mut m = exec;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let p = self.resolve(w, l, *space, *addr, total, false)?;
                    for (i, d) in ds.iter().enumerate() {
                        // SAFETY: `resolve` checked `total` bytes at `p` lie in memory this
                        // access may read.
                        let raw = unsafe { read(p.add(i * size as usize), size) };
                        if let Some(d) = d {
                            w.set(*d, l, extend(*ty, raw));
                        }
                    }
                }
            }
            Op::St { space, ty, srcs, addr } => {
                let size = ty.bytes();
                let total = size * srcs.len() as u32;
                let mut m = exec;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let p = self.resolve(w, l, *space, *addr, total, true)?;
                    for (i, s) in srcs.iter().enumerate() {
                        let v = w.get(*s, l);
                        // SAFETY: as for loads, checked writable.
                        unsafe { write(p.add(i * size as usize), size, v) };
                    }
                }
            }
            Op::Atom { space, op, ty, d, addr, b, c } => {
                let mut m = exec;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let p = self.resolve(w, l, *space, *addr, ty.bytes(), true)?;
                    // SAFETY: checked, aligned to its size, inside memory this access may
                    // write; other host threads touch it only through atomics too.
                    let old = unsafe { atomic(p, *op, *ty, w.get(*b, l), w.get(*c, l)) };
                    if let Some(d) = d {
                        w.set(*d, l, old);
                    }
                }
            }
            Op::Bar => {
                // Waiting lanes keep their counter in `pcs` (the release steps it past the
                // barrier); lanes whose guard is false step over it now.
                let skip = mask & !exec;
                if skip != 0 {
                    w.diverge();
                }
                each!(|l| {
                    w.pcs[l] = pc;
                    w.status[l] = WAITING;
                    w.running &= !(1 << l);
                });
                self.advance(w, pc, skip);
                return Ok(());
            }
            Op::WarpSync { mask: members } => {
                let lane = exec.trailing_zeros() as usize;
                if exec != 0 {
                    let want = w.get(*members, lane) as u32 & w.live();
                    if want & !exec != 0 {
                        let missing = (want & !exec).trailing_zeros() as usize;
                        return Err(self.fault(w, lane, format!(
                            "__syncwarp (line {}) names lane {missing}, which does not reach it",
                            inst.line
                        )));
                    }
                }
            }
            Op::Shfl { mode, d, p, a, b, c, mask: members } => {
                let mut values = [0u64; 32];
                let mut m = exec;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    values[l] = w.get(*a, l);
                }
                let mut m = exec;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let member = w.get(*members, l) as u32;
                    if member & !exec != 0 || member & (1 << l) == 0 {
                        let missing = (member & !exec).trailing_zeros();
                        return Err(self.fault(w, l, format!(
                            "shfl.sync (line {}) with lanes that are not active: its mask 0x{member:08x} names lane {missing}, which is not here",
                            inst.line
                        )));
                    }
                    let bval = w.get(*b, l) as u32 & 31;
                    let cval = w.get(*c, l) as u32;
                    let seg = (cval >> 8) & 31;
                    let clamp = cval & 31;
                    let lane = l as u32;
                    let max_lane = (lane & seg) | (clamp & !seg);
                    let min_lane = lane & seg;
                    let (j, ok) = match mode {
                        ShflMode::Up => {
                            let j = lane as i32 - bval as i32;
                            (j, j >= max_lane as i32)
                        }
                        ShflMode::Down => {
                            let j = lane + bval;
                            (j as i32, j <= max_lane)
                        }
                        ShflMode::Bfly => {
                            let j = lane ^ bval;
                            (j as i32, j <= max_lane)
                        }
                        ShflMode::Idx => {
                            let j = min_lane | (bval & !seg);
                            (j as i32, j <= max_lane)
                        }
                    };
                    let j = if ok { j as usize } else { l };
                    if exec & (1 << j) == 0 {
                        return Err(self.fault(w, l, format!(
                            "shfl.sync (line {}) reads lane {j}, which is not active",
                            inst.line
                        )));
                    }
                    w.set(*d, l, values[j] & 0xffff_ffff);
                    if let Some(p) = p {
                        w.set(*p, l, u64::from(ok));
                    }
                }
            }
            Op::Vote { mode, d, a, neg, mask: members } => {
                let mut ballot = 0u32;
                let mut m = exec;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    if (w.get(*a, l) != 0) != *neg {
                        ballot |= 1 << l;
                    }
                }
                let mut m = exec;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let member = w.get(*members, l) as u32;
                    if member & !exec != 0 {
                        return Err(self.fault(w, l, format!(
                            "vote.sync (line {}) with lanes that are not active: mask 0x{member:08x}, active 0x{exec:08x}",
                            inst.line
                        )));
                    }
                    let mine = ballot & member;
                    let v = match mode {
                        VoteMode::All => u64::from(mine == member),
                        VoteMode::Any => u64::from(mine != 0),
                        VoteMode::Uni => u64::from(mine == 0 || mine == member),
                        VoteMode::Ballot => u64::from(mine),
                    };
                    w.set(*d, l, v);
                }
            }
            Op::Activemask { d } => each!(|l| {
                w.set(*d, l, u64::from(exec));
            }),
            Op::Bra { target } => {
                let taken = exec;
                let stay = mask & !exec;
                if w.uniform && (stay == 0 || taken == 0) {
                    w.pc = if taken != 0 { *target } else { pc + 1 };
                    return Ok(());
                }
                w.diverge();
                let mut m = taken;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    w.pcs[l] = *target;
                }
                self.advance(w, pc, stay);
                return Ok(());
            }
            Op::Call { target, args, ret } => {
                w.diverge();
                let mut m = exec;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    self.call(w, l, pc, target, args, *ret)?;
                }
                self.advance(w, pc, mask & !exec);
                return Ok(());
            }
            Op::Ret | Op::Exit => {
                w.diverge();
                let mut m = exec;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let frame = if matches!(inst.op, Op::Ret) { w.stack[l].pop() } else { None };
                    match frame {
                        None => {
                            w.status[l] = EXITED;
                            w.running &= !(1 << l);
                        }
                        Some(f) => self.ret(w, l, f),
                    }
                }
                self.advance(w, pc, mask & !exec);
                return Ok(());
            }
            Op::Trap => {
                if exec != 0 {
                    let l = exec.trailing_zeros() as usize;
                    return Err(self.fault(w, l, format!("the kernel trapped (trap, line {})", inst.line)));
                }
            }
            Op::Nop => {}
        }
        // Everything else falls through to the next instruction.
        if w.uniform {
            w.pc = pc + 1;
        } else {
            self.advance(w, pc, mask);
        }
        Ok(())
    }

    fn advance(&self, w: &mut Warp, pc: u32, lanes: u32) {
        if lanes == 0 {
            return;
        }
        if w.uniform {
            w.diverge();
        }
        let mut m = lanes;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            w.pcs[l] = pc + 1;
        }
    }

    fn call(
        &self,
        w: &mut Warp,
        l: usize,
        pc: u32,
        target: &CallTarget,
        args: &[(u32, u32)],
        ret: Option<(u32, u32)>,
    ) -> Result<(), Fault> {
        let index = match target {
            CallTarget::Direct(i) => *i,
            CallTarget::Indirect(src) => {
                let address = w.get(*src, l);
                let offset = address.wrapping_sub(FUNCTION_ADDRESS_BASE);
                let index = offset / 16;
                if offset % 16 != 0 || index >= self.l.module.functions.len() as u64 {
                    return Err(self.fault(w, l, format!(
                        "an indirect call in {} (line {}) to 0x{address:x}, which is not a function",
                        self.name_of(w, l),
                        self.code[pc as usize].line
                    )));
                }
                index as u32
            }
        };
        let callee = &self.l.module.functions[index as usize];
        if callee.start == callee.end || callee.entry {
            return Err(self.fault(w, l, format!("a call to `{}`, which has no body here", callee.name)));
        }
        if callee.params.len() != args.len() || callee.retval.is_some() != ret.is_some() {
            return Err(self.fault(w, l, format!(
                "a call to `{}` (line {}) with {} arguments, where it takes {}",
                callee.name,
                self.code[pc as usize].line,
                args.len(),
                callee.params.len()
            )));
        }
        let caller = &self.l.module.functions[w.function[l] as usize];
        if w.stack[l].len() + 1 >= MAX_DEPTH {
            return Err(self.fault(w, l, format!("calls nested deeper than {MAX_DEPTH} (runaway recursion?)")));
        }
        let frame = Frame {
            return_pc: pc + 1,
            regs: w.reg_base[l],
            params: w.param_base[l],
            locals: w.local_base[l],
            function: w.function[l],
            ret,
        };
        let regs = w.reg_base[l] + caller.regs;
        let params = w.param_base[l] + caller.param_bytes.div_ceil(8) * 8;
        let locals = w.local_base[l] + caller.local_bytes.div_ceil(16) * 16;
        if params as usize + callee.param_bytes as usize > self.sizes.param
            || locals as usize + callee.local_bytes as usize > self.sizes.local
        {
            return Err(self.fault(w, l, format!("calls nested too deep for their parameters and locals, calling `{}`", callee.name)));
        }
        let need = (regs + callee.regs) as usize * 32;
        if need > w.regs.len() {
            w.regs.resize(need, 0);
        }
        let base = l * self.sizes.param;
        for (&(from, _), &(to, size, _)) in args.iter().zip(&callee.params) {
            let from = base + (w.param_base[l] + from) as usize;
            let to = base + (params + to) as usize;
            w.params.copy_within(from..from + size as usize, to);
        }
        w.stack[l].push(frame);
        w.reg_base[l] = regs;
        w.param_base[l] = params;
        w.local_base[l] = locals;
        w.function[l] = index;
        w.pcs[l] = callee.start;
        Ok(())
    }

    fn ret(&self, w: &mut Warp, l: usize, f: Frame) {
        let callee = &self.l.module.functions[w.function[l] as usize];
        if let (Some((to, _)), Some((from, size))) = (f.ret, callee.retval) {
            let base = l * self.sizes.param;
            let from = base + (w.param_base[l] + from) as usize;
            let to = base + (f.params + to) as usize;
            w.params.copy_within(from..from + size as usize, to);
        }
        w.reg_base[l] = f.regs;
        w.param_base[l] = f.params;
        w.local_base[l] = f.locals;
        w.function[l] = f.function;
        w.pcs[l] = f.return_pc;
    }

    fn special(&self, w: &Warp, l: usize, s: Special) -> u64 {
        let t = self.thread_index(w, l);
        let warp = u64::from(w.first / 32);
        let lane = l as u32;
        let m = |x: u64| x & 0xffff_ffff;
        match s {
            Special::Tid(d) => u64::from(t[d as usize]),
            Special::Ntid(d) => u64::from(self.l.block[d as usize]),
            Special::Ctaid(d) => u64::from(self.ctaid[d as usize]),
            Special::Nctaid(d) => u64::from(self.l.grid[d as usize]),
            Special::LaneId => u64::from(lane),
            Special::WarpId => warp,
            Special::NWarpId => self.warps_len() as u64,
            Special::SmId => 0,
            Special::LaneMaskEq => 1 << lane,
            Special::LaneMaskLt => m((1u64 << lane) - 1),
            Special::LaneMaskLe => m((1u64 << (lane + 1)) - 1),
            Special::LaneMaskGt => m(!((1u64 << (lane + 1)) - 1)),
            Special::LaneMaskGe => m(!((1u64 << lane) - 1)),
            Special::Clock | Special::Clock64 | Special::GlobalTimer => {
                static TICKS: AtomicU32 = AtomicU32::new(0);
                u64::from(TICKS.fetch_add(1, Ordering::Relaxed))
            }
        }
    }

    fn warps_len(&self) -> usize {
        let threads = (self.l.block[0] * self.l.block[1] * self.l.block[2]) as usize;
        threads.div_ceil(32)
    }

    /// The host pointer for `size` bytes at `addr` in `space`, for lane `l`, once checked.
    fn resolve(&mut self, w: &mut Warp, l: usize, space: Space, addr: Addr, size: u32, write: bool) -> Result<*mut u8, Fault> {
        let size64 = u64::from(size);
        let (space, value) = match addr {
            Addr::Reg(r, off) => (space, w.get(Src::R(r), l).wrapping_add(off as u64)),
            Addr::Abs(v) => (space, v),
            Addr::KernelParam(off) => {
                let end = off as usize + size as usize;
                if write || end > self.l.params.len() {
                    return Err(self.access_fault(w, l, "kernel parameter", u64::from(off), size, write, "outside the parameters"));
                }
                // Read only: `write` was refused above.
                return Ok(self.l.params[off as usize..].as_ptr().cast_mut());
            }
            Addr::FrameParam(off) => {
                let at = l * self.sizes.param + (w.param_base[l] + off) as usize;
                if at + size as usize > w.params.len() {
                    return Err(self.access_fault(w, l, "parameter", u64::from(off), size, write, "outside the frame's parameters"));
                }
                // SAFETY: in bounds, just checked.
                return Ok(unsafe { w.params.as_mut_ptr().add(at) });
            }
            Addr::FrameLocal(off) => (Space::Local, u64::from(w.local_base[l] + off)),
        };
        if size > 1 && value % size64 != 0 {
            return Err(self.access_fault(w, l, space_name(space), value, size, write, &format!("misaligned: a {size}-byte access needs an address that is a multiple of {size}")));
        }
        match space {
            Space::Shared => self.shared_ptr(w, l, value, size, write),
            Space::Local => self.local_ptr(w, l, value, size, write),
            Space::Global | Space::Const => self.global_ptr(w, l, space, value, size, write),
            Space::Generic => {
                let shared = self.shared.as_ptr() as u64;
                let local = w.locals.as_ptr() as u64 + (l * self.sizes.local) as u64;
                if value >= shared && value < shared + self.shared.len() as u64 {
                    self.shared_ptr(w, l, value - shared, size, write)
                } else if self.sizes.local > 0 && value >= local && value < local + self.sizes.local as u64 {
                    self.local_ptr(w, l, value - local, size, write)
                } else {
                    self.global_ptr(w, l, Space::Generic, value, size, write)
                }
            }
            Space::Param => Err(self.access_fault(w, l, "parameter", value, size, write, "parameter memory through a register is not supported")),
        }
    }

    fn shared_ptr(&mut self, w: &Warp, l: usize, offset: u64, size: u32, write: bool) -> Result<*mut u8, Fault> {
        if offset + u64::from(size) > self.shared.len() as u64 {
            let what = format!("outside the block's {} bytes of shared memory", self.shared.len());
            return Err(self.access_fault(w, l, "shared", offset, size, write, &what));
        }
        Ok(self.shared[offset as usize..].as_mut_ptr())
    }

    fn local_ptr(&self, w: &mut Warp, l: usize, offset: u64, size: u32, write: bool) -> Result<*mut u8, Fault> {
        if offset + u64::from(size) > self.sizes.local as u64 {
            let what = format!("outside the thread's {} bytes of local memory", self.sizes.local);
            return Err(self.access_fault(w, l, "local", offset, size, write, &what));
        }
        // SAFETY: inside the lane's local memory, just checked.
        Ok(unsafe { w.locals.as_mut_ptr().add(l * self.sizes.local + offset as usize) })
    }

    fn global_ptr(&mut self, w: &Warp, l: usize, space: Space, address: u64, size: u32, write: bool) -> Result<*mut u8, Fault> {
        let end = address.wrapping_add(u64::from(size));
        if address >= self.cache.0 && end <= self.cache.1 && end > address {
            return Ok(address as *mut u8);
        }
        match self.l.memory.find(address, u64::from(size)) {
            Some(i) => {
                self.cache = self.l.memory.range(i);
                Ok(address as *mut u8)
            }
            None => {
                let said = self.l.memory.describe(address, u64::from(size));
                Err(self.access_fault(w, l, space_name(space), address, size, write, &format!("out of bounds: {said}")))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn access_fault(&self, w: &Warp, l: usize, space: &str, address: u64, size: u32, write: bool, why: &str) -> Fault {
        let pc = if w.uniform { w.pc } else { w.pcs[l] };
        let line = self.code.get(pc as usize).map_or(0, |i| i.line);
        self.fault(w, l, format!(
            "{} {} of {size} bytes at 0x{address:x} in {} (line {line}), {why}",
            space,
            if write { "store" } else { "load" },
            self.name_of(w, l),
        ))
    }
}

fn space_name(space: Space) -> &'static str {
    match space {
        Space::Global => "global",
        Space::Const => "constant",
        Space::Shared => "shared",
        Space::Local => "local",
        Space::Param => "parameter",
        Space::Generic => "generic",
    }
}

impl Warp {
    #[inline(always)]
    fn slot(&self, r: Reg, lane: usize) -> usize {
        ((self.reg_base[lane] + r) as usize) << 5 | lane
    }
    #[inline(always)]
    fn get(&self, s: Src, lane: usize) -> u64 {
        match s {
            Src::R(r) => self.regs[self.slot(r, lane)],
            Src::I(v) => v,
        }
    }
    #[inline(always)]
    fn set(&mut self, r: Reg, lane: usize, v: u64) {
        let i = self.slot(r, lane);
        self.regs[i] = v;
    }
    /// Leave the one-counter state: every running lane gets its own copy of the counter.
    fn diverge(&mut self) {
        if self.uniform {
            self.uniform = false;
            let mut m = self.running;
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                self.pcs[l] = self.pc;
            }
        }
    }
    /// Lanes not exited.
    fn live(&self) -> u32 {
        let mut m = 0;
        for l in 0..self.lanes {
            if self.status[l] != EXITED {
                m |= 1 << l;
            }
        }
        m
    }
}

fn mask_bits(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// # Safety
/// `p` must be valid for `size` bytes.
unsafe fn read(p: *const u8, size: u32) -> u64 {
    // SAFETY: the caller's promise.
    unsafe {
        match size {
            1 => u64::from(*p),
            2 => u64::from(p.cast::<u16>().read_unaligned()),
            4 => u64::from(p.cast::<u32>().read_unaligned()),
            _ => p.cast::<u64>().read_unaligned(),
        }
    }
}

/// # Safety
/// `p` must be valid for `size` bytes of writes.
unsafe fn write(p: *mut u8, size: u32, v: u64) {
    // SAFETY: the caller's promise.
    unsafe {
        match size {
            1 => *p = v as u8,
            2 => p.cast::<u16>().write_unaligned(v as u16),
            4 => p.cast::<u32>().write_unaligned(v as u32),
            _ => p.cast::<u64>().write_unaligned(v),
        }
    }
}

/// A loaded value as its register holds it: signed types sign-extended.
fn extend(ty: Ty, raw: u64) -> u64 {
    match ty {
        Ty::S8 => raw as u8 as i8 as i64 as u64,
        Ty::S16 => raw as u16 as i16 as i64 as u64,
        Ty::S32 => raw as u32 as i32 as i64 as u64,
        _ => raw,
    }
}

/// # Safety
/// `p` must be valid, aligned to `ty`'s size, and touched by other threads only atomically.
unsafe fn atomic(p: *mut u8, op: AtomOp, ty: Ty, b: u64, c: u64) -> u64 {
    use std::sync::atomic::AtomicU64 as A64;
    if ty.bytes() == 4 {
        // SAFETY: the caller's promise.
        let cell = unsafe { AtomicU32::from_ptr(p.cast::<u32>()) };
        let mut old = cell.load(Ordering::Relaxed);
        loop {
            let new = atom_value(op, ty, u64::from(old), b, c) as u32;
            match cell.compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return u64::from(old),
                Err(now) => old = now,
            }
        }
    } else {
        // SAFETY: the caller's promise.
        let cell = unsafe { A64::from_ptr(p.cast::<u64>()) };
        let mut old = cell.load(Ordering::Relaxed);
        loop {
            let new = atom_value(op, ty, old, b, c);
            match cell.compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return old,
                Err(now) => old = now,
            }
        }
    }
}

fn atom_value(op: AtomOp, ty: Ty, old: u64, b: u64, c: u64) -> u64 {
    let bits = type_mask(ty);
    match (op, ty) {
        (AtomOp::Add, Ty::F32) => {
            // atom.add.f32 rounds to nearest and flushes subnormals to zero.
            let r = ftz32(ftz32(f32::from_bits(old as u32)) + ftz32(f32::from_bits(b as u32)));
            u64::from(canonical32(r).to_bits())
        }
        (AtomOp::Add, Ty::F64) => canonical64(f64::from_bits(old) + f64::from_bits(b)).to_bits(),
        (AtomOp::Add, _) => old.wrapping_add(b) & bits,
        (AtomOp::Min, _) if ty.signed() => {
            if sext(old, ty) <= sext(b, ty) {
                old
            } else {
                b & bits
            }
        }
        (AtomOp::Max, _) if ty.signed() => {
            if sext(old, ty) >= sext(b, ty) {
                old
            } else {
                b & bits
            }
        }
        (AtomOp::Min, _) => old.min(b & bits),
        (AtomOp::Max, _) => old.max(b & bits),
        (AtomOp::Inc, _) => {
            if old >= b & bits {
                0
            } else {
                old + 1
            }
        }
        (AtomOp::Dec, _) => {
            if old == 0 || old > b & bits {
                b & bits
            } else {
                old - 1
            }
        }
        (AtomOp::And, _) => old & b,
        (AtomOp::Or, _) => old | b,
        (AtomOp::Xor, _) => old ^ b,
        (AtomOp::Exch, _) => b & bits,
        (AtomOp::Cas, _) => {
            if old == b & bits {
                c & bits
            } else {
                old
            }
        }
    }
}

fn sext(v: u64, ty: Ty) -> i64 {
    match ty.bits() {
        8 => v as u8 as i8 as i64,
        16 => v as u16 as i16 as i64,
        32 => v as u32 as i32 as i64,
        _ => v as i64,
    }
}

fn int_op(op: IntOp, ty: Ty, a: u64, b: u64, c: u64, sat: bool) -> u64 {
    let bits = ty.bits();
    let m = type_mask(ty);
    let signed = ty.signed();
    let sa = sext(a, ty);
    let sb = sext(b, ty);
    match op {
        IntOp::Add if sat => (sa as i128 + sb as i128).clamp(i32::MIN as i128, i32::MAX as i128) as i64 as u64 & m,
        IntOp::Sub if sat => (sa as i128 - sb as i128).clamp(i32::MIN as i128, i32::MAX as i128) as i64 as u64 & m,
        IntOp::Add => a.wrapping_add(b) & m,
        IntOp::Sub => a.wrapping_sub(b) & m,
        IntOp::MulLo => a.wrapping_mul(b) & m,
        IntOp::MulHi => {
            let p = if signed {
                (sa as i128 * sb as i128) as u128
            } else {
                (a & m) as u128 * (b & m) as u128
            };
            (p >> bits) as u64 & m
        }
        IntOp::MulWide => {
            let wide = if bits == 32 { u64::MAX } else { (1u64 << (2 * bits)) - 1 };
            if signed {
                (sa.wrapping_mul(sb)) as u64 & wide
            } else {
                (a & m).wrapping_mul(b & m) & wide
            }
        }
        IntOp::MadLo => a.wrapping_mul(b).wrapping_add(c) & m,
        IntOp::MadHi => {
            let p = if signed {
                (sa as i128 * sb as i128) as u128
            } else {
                (a & m) as u128 * (b & m) as u128
            };
            ((p >> bits) as u64).wrapping_add(c) & m
        }
        IntOp::MadWide => {
            let wide = if bits == 32 { u64::MAX } else { (1u64 << (2 * bits)) - 1 };
            let p = if signed { sa.wrapping_mul(sb) as u64 } else { (a & m).wrapping_mul(b & m) };
            p.wrapping_add(c) & wide
        }
        IntOp::Div => {
            if b & m == 0 {
                // What the GPU gives: all ones.
                m
            } else if signed {
                sa.wrapping_div(sb) as u64 & m
            } else {
                (a & m) / (b & m)
            }
        }
        IntOp::Rem => {
            if b & m == 0 {
                a & m
            } else if signed {
                sa.wrapping_rem(sb) as u64 & m
            } else {
                (a & m) % (b & m)
            }
        }
        IntOp::Min => {
            if signed {
                sa.min(sb) as u64 & m
            } else {
                (a & m).min(b & m)
            }
        }
        IntOp::Max => {
            if signed {
                sa.max(sb) as u64 & m
            } else {
                (a & m).max(b & m)
            }
        }
        IntOp::Abs => sa.wrapping_abs() as u64 & m,
        IntOp::Neg => sa.wrapping_neg() as u64 & m,
        IntOp::And => a & b & m,
        IntOp::Or => (a | b) & m,
        IntOp::Xor => (a ^ b) & m,
        IntOp::Not => !a & m,
        IntOp::CNot => u64::from(a & m == 0),
        IntOp::Shl => {
            let s = b as u32;
            if s >= bits {
                0
            } else {
                (a << s) & m
            }
        }
        IntOp::Shr => {
            let s = (b as u32).min(bits);
            if signed {
                if s >= bits {
                    (if sa < 0 { -1i64 } else { 0 }) as u64 & m
                } else {
                    (sa >> s) as u64 & m
                }
            } else if s >= bits {
                0
            } else {
                (a & m) >> s
            }
        }
        IntOp::Popc => u64::from((a & m).count_ones()),
        IntOp::Clz => u64::from((a & m).leading_zeros() - (64 - bits)),
        IntOp::Brev => ((a & m).reverse_bits() >> (64 - bits)) & m,
        IntOp::Bfe => {
            let pos = (b & 0xff) as u32;
            let len = (c & 0xff) as u32;
            let msb = bits - 1;
            let sign_bit = if len == 0 || !signed {
                false
            } else {
                let at = (pos + len - 1).min(msb);
                (a >> at) & 1 == 1
            };
            let mut out = 0u64;
            for i in 0..bits {
                let bit = if i < len && pos + i <= msb {
                    (a >> (pos + i)) & 1 == 1
                } else {
                    sign_bit
                };
                if bit {
                    out |= 1 << i;
                }
            }
            out & m
        }
        IntOp::Bfi => {
            let pos = (c & 0xff) as u32;
            let len = ((c >> 32) & 0xff) as u32;
            let mut out = b & m;
            for i in 0..len {
                if pos + i >= bits {
                    break;
                }
                out &= !(1 << (pos + i));
                out |= ((a >> i) & 1) << (pos + i);
            }
            out & m
        }
        IntOp::Prmt => {
            let bytes = [a as u32, b as u32];
            let all = u64::from(bytes[0]) | u64::from(bytes[1]) << 32;
            let mut out = 0u32;
            for i in 0..4 {
                let sel = (c >> (4 * i)) as u32 & 0xf;
                let byte = (all >> ((sel & 7) * 8)) as u8;
                let byte = if sel & 8 != 0 {
                    if byte & 0x80 != 0 {
                        0xff
                    } else {
                        0
                    }
                } else {
                    byte
                };
                out |= u32::from(byte) << (8 * i);
            }
            u64::from(out)
        }
        IntOp::Sad => {
            let d = if signed { (sa - sb).unsigned_abs() } else { (a & m).abs_diff(b & m) };
            d.wrapping_add(c) & m
        }
    }
}

fn f32_in(v: u64, ftz: bool) -> f32 {
    let x = f32::from_bits(v as u32);
    if ftz {
        ftz32(x)
    } else {
        x
    }
}

#[allow(clippy::too_many_arguments)]
fn float_op(op: FloatOp, ty: Ty, rnd: Rnd, ftz: bool, sat: bool, a: u64, b: u64, c: u64) -> u64 {
    if ty == Ty::F64 {
        let (x, y, z) = (f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
        let r = match op {
            FloatOp::Add => add64(x, y, rnd),
            FloatOp::Sub => add64(x, -y, rnd),
            FloatOp::Mul => mul64(x, y, rnd),
            FloatOp::Fma => fma64(x, y, z, rnd),
            FloatOp::Div => div64(x, y, rnd),
            FloatOp::Sqrt => sqrt64(x, rnd),
            FloatOp::Rcp => div64(1.0, x, rnd),
            FloatOp::Abs => return a & !(1 << 63),
            FloatOp::Neg => return a ^ (1 << 63),
            FloatOp::Min => return min64(x, y).to_bits(),
            FloatOp::Max => return max64(x, y).to_bits(),
            FloatOp::Copysign => return (b & !(1 << 63)) | (a & (1 << 63)),
            FloatOp::RcpApprox => return rcp_approx(x).to_bits(),
            FloatOp::RsqrtApprox => return rsqrt_approx(x).to_bits(),
        };
        let r = if sat { saturate64(r) } else { r };
        return canonical64(r).to_bits();
    }
    let (x, y, z) = (f32_in(a, ftz), f32_in(b, ftz), f32_in(c, ftz));
    let r = match op {
        FloatOp::Add => add32(x, y, rnd),
        FloatOp::Sub => add32(x, -y, rnd),
        FloatOp::Mul => mul32(x, y, rnd),
        FloatOp::Fma => fma32(x, y, z, rnd),
        FloatOp::Div => div32(x, y, rnd),
        FloatOp::Sqrt => sqrt32(x, rnd),
        FloatOp::Rcp => div32(1.0, x, rnd),
        FloatOp::Abs => return u64::from(x.to_bits() & 0x7fff_ffff),
        FloatOp::Neg => return u64::from(x.to_bits() ^ 0x8000_0000),
        FloatOp::Min => min64(f64::from(x), f64::from(y)) as f32,
        FloatOp::Max => max64(f64::from(x), f64::from(y)) as f32,
        FloatOp::Copysign => return u64::from((b as u32 & 0x7fff_ffff) | (a as u32 & 0x8000_0000)),
        FloatOp::RcpApprox | FloatOp::RsqrtApprox => f32::NAN,
    };
    let r = if ftz { ftz32(r) } else { r };
    let r = if sat { saturate64(f64::from(r)) as f32 } else { r };
    u64::from(canonical32(r).to_bits())
}

/// `.sat`: clamp to [0, 1], NaN to 0.
fn saturate64(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

fn compare(cmp: Cmp, ty: Ty, ftz: bool, a: u64, b: u64) -> bool {
    if ty.float() {
        let (x, y) = if ty == Ty::F64 {
            (f64::from_bits(a), f64::from_bits(b))
        } else {
            (f64::from(f32_in(a, ftz)), f64::from(f32_in(b, ftz)))
        };
        let unordered = x.is_nan() || y.is_nan();
        return match cmp {
            Cmp::Eq => !unordered && x == y,
            Cmp::Ne => !unordered && x != y,
            Cmp::Lt | Cmp::Lo => !unordered && x < y,
            Cmp::Le | Cmp::Ls => !unordered && x <= y,
            Cmp::Gt | Cmp::Hi => !unordered && x > y,
            Cmp::Ge | Cmp::Hs => !unordered && x >= y,
            Cmp::Equ => unordered || x == y,
            Cmp::Neu => unordered || x != y,
            Cmp::Ltu => unordered || x < y,
            Cmp::Leu => unordered || x <= y,
            Cmp::Gtu => unordered || x > y,
            Cmp::Geu => unordered || x >= y,
            Cmp::Num => !unordered,
            Cmp::Nan => unordered,
        };
    }
    let m = type_mask(ty);
    let (ua, ub) = (a & m, b & m);
    let (sa, sb) = (sext(a, ty), sext(b, ty));
    let signed = ty.signed();
    match cmp {
        Cmp::Eq | Cmp::Equ => ua == ub,
        Cmp::Ne | Cmp::Neu => ua != ub,
        Cmp::Lt | Cmp::Ltu => if signed { sa < sb } else { ua < ub },
        Cmp::Le | Cmp::Leu => if signed { sa <= sb } else { ua <= ub },
        Cmp::Gt | Cmp::Gtu => if signed { sa > sb } else { ua > ub },
        Cmp::Ge | Cmp::Geu => if signed { sa >= sb } else { ua >= ub },
        Cmp::Lo => ua < ub,
        Cmp::Ls => ua <= ub,
        Cmp::Hi => ua > ub,
        Cmp::Hs => ua >= ub,
        Cmp::Num | Cmp::Nan => false,
    }
}

fn round_integral(x: f64, r: Rnd) -> f64 {
    match r {
        Rnd::N => x.round_ties_even(),
        Rnd::Z => x.trunc(),
        Rnd::M => x.floor(),
        Rnd::P => x.ceil(),
    }
}

fn int_range(ty: Ty) -> (i128, i128) {
    let bits = ty.bits();
    if ty.signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// `cvt`, every combination the interpreter accepts.
#[allow(clippy::too_many_arguments)]
fn convert(dty: Ty, sty: Ty, rnd: Option<Rnd>, int_rnd: Option<Rnd>, ftz: bool, sat: bool, v: u64) -> u64 {
    let dm = type_mask(dty);
    match (sty.float(), dty.float()) {
        (false, false) => {
            let x: i128 = if sty.signed() { i128::from(sext(v, sty)) } else { i128::from(v & type_mask(sty)) };
            if sat {
                let (lo, hi) = int_range(dty);
                (x.clamp(lo, hi) as u64) & dm
            } else {
                (x as u64) & dm
            }
        }
        (true, false) => {
            let x = if sty == Ty::F64 { f64::from_bits(v) } else { f64::from(f32_in(v, ftz)) };
            if x.is_nan() {
                return 0;
            }
            let r = round_integral(x, int_rnd.unwrap_or(Rnd::Z));
            let (lo, hi) = int_range(dty);
            let clamped = if r <= lo as f64 { lo } else if r >= hi as f64 { hi } else { r as i128 };
            (clamped as u64) & dm
        }
        (false, true) => {
            let x: i128 = if sty.signed() { i128::from(sext(v, sty)) } else { i128::from(v & type_mask(sty)) };
            let rnd = rnd.unwrap_or(Rnd::N);
            if dty == Ty::F64 {
                let r = x as f64;
                let side = (x - r as i128).signum() as f64;
                let r = direct_int64(r, side, rnd);
                r.to_bits()
            } else {
                let r = x as f64;
                let e = (x - r as i128) as f64;
                let out = round32(r, e, rnd);
                u64::from((if ftz { ftz32(out) } else { out }).to_bits())
            }
        }
        (true, true) => {
            let out = match (sty, dty) {
                (Ty::F32, Ty::F64) => {
                    let x = f64::from(f32_in(v, ftz));
                    let x = match int_rnd {
                        Some(r) => round_integral(x, r),
                        None => x,
                    };
                    let x = if sat { saturate64(x) } else { x };
                    canonical64(x).to_bits()
                }
                (Ty::F64, Ty::F32) => {
                    let x = f64::from_bits(v);
                    let r = round32(x, 0.0, rnd.unwrap_or(Rnd::N));
                    let r = if ftz { ftz32(r) } else { r };
                    let r = if sat { saturate64(f64::from(r)) as f32 } else { r };
                    u64::from(canonical32(r).to_bits())
                }
                (Ty::F64, _) => {
                    let x = f64::from_bits(v);
                    let x = match int_rnd {
                        Some(r) => round_integral(x, r),
                        None => x,
                    };
                    let x = if sat { saturate64(x) } else { x };
                    canonical64(x).to_bits()
                }
                _ => {
                    let x = f32_in(v, ftz);
                    let x = match int_rnd {
                        Some(r) => round_integral(f64::from(x), r) as f32,
                        None => x,
                    };
                    let x = if ftz { ftz32(x) } else { x };
                    let x = if sat { saturate64(f64::from(x)) as f32 } else { x };
                    u64::from(canonical32(x).to_bits())
                }
            };
            out & dm
        }
    }
}

fn direct_int64(r: f64, side: f64, rnd: Rnd) -> f64 {
    if side == 0.0 {
        return r;
    }
    match rnd {
        Rnd::N => r,
        Rnd::M if side < 0.0 => r.next_down(),
        Rnd::P if side > 0.0 => r.next_up(),
        Rnd::Z if (side < 0.0) == (r > 0.0) => {
            if r > 0.0 {
                r.next_down()
            } else {
                r.next_up()
            }
        }
        _ => r,
    }
}
