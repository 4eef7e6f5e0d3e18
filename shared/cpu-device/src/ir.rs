//! The decoded program the interpreter runs: every instruction of every function in one
//! array, operands resolved to register slots, immediates and addresses, so that running an
//! instruction never looks at text again.

/// A register slot of the current function's frame.
pub type Reg = u32;

/// A source operand: a register slot, or an immediate (its bits, as the type reads them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    R(Reg),
    I(u64),
}

/// PTX's fundamental types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F32,
    F64,
    /// IEEE binary16 and bfloat16, one in a 16-bit register or two packed in 32 bits (the
    /// low half first), as cuda_fp16.h's `__half` and cuda_bf16.h's `__nv_bfloat16` hold them.
    F16,
    BF16,
    F16x2,
    BF16x2,
    Pred,
}

impl Ty {
    pub fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "b8" => Ty::B8,
            "b16" => Ty::B16,
            "b32" => Ty::B32,
            "b64" => Ty::B64,
            "u8" => Ty::U8,
            "u16" => Ty::U16,
            "u32" => Ty::U32,
            "u64" => Ty::U64,
            "s8" => Ty::S8,
            "s16" => Ty::S16,
            "s32" => Ty::S32,
            "s64" => Ty::S64,
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            "f16" => Ty::F16,
            "bf16" => Ty::BF16,
            "f16x2" => Ty::F16x2,
            "bf16x2" => Ty::BF16x2,
            "pred" => Ty::Pred,
            _ => return None,
        })
    }

    pub fn bits(self) -> u32 {
        match self {
            Ty::B8 | Ty::U8 | Ty::S8 => 8,
            Ty::B16 | Ty::U16 | Ty::S16 | Ty::F16 | Ty::BF16 => 16,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 | Ty::F16x2 | Ty::BF16x2 => 32,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 64,
            Ty::Pred => 1,
        }
    }

    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    pub fn signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    /// A floating-point type, half precision included.
    pub fn float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64) || self.half().is_some()
    }

    /// The half-precision format of `.f16`, `.bf16` and their pairs (`crate::half`).
    pub fn half(self) -> Option<Half> {
        match self {
            Ty::F16 | Ty::F16x2 => Some(Half::F16),
            Ty::BF16 | Ty::BF16x2 => Some(Half::BF16),
            _ => None,
        }
    }

    /// Whether the type is a pair of halves (`.f16x2`, `.bf16x2`).
    pub fn pair(self) -> bool {
        matches!(self, Ty::F16x2 | Ty::BF16x2)
    }
}

/// The two 16-bit float formats: binary16 (5 exponent bits, 10 fraction bits) and bfloat16
/// (8 and 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    F16,
    BF16,
}

/// The bits a value of `ty` keeps in its register.
pub fn mask(ty: Ty) -> u64 {
    match ty.bits() {
        64 => u64::MAX,
        bits => (1u64 << bits) - 1,
    }
}

/// IEEE rounding: to nearest even, towards zero, down, up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rnd {
    N,
    Z,
    M,
    P,
}

/// State spaces an access names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Space {
    Global,
    Const,
    Shared,
    Local,
    Param,
    Generic,
}

/// Where an access goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addr {
    /// A register plus an offset, in the instruction's state space.
    Reg(Reg, i64),
    /// A fixed address: a global or constant variable's real address, a shared offset.
    Abs(u64),
    /// The launch's parameter buffer, at this offset (an entry's own parameters).
    KernelParam(u32),
    /// The current frame's parameter area, at this offset (a function's parameters and the
    /// `.param` variables of its call sites).
    FrameParam(u32),
    /// The current frame's local area, at this offset (`__local_depot` and friends).
    FrameLocal(u32),
}

/// The multiprocessors the CPU device reports (an H100 SXM's), for `%nsmid`.
pub const SMS: u32 = 132;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
    SmId,
    NSmId,
    LaneMaskEq,
    LaneMaskLt,
    LaneMaskLe,
    LaneMaskGt,
    LaneMaskGe,
    Clock,
    Clock64,
    GlobalTimer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOp {
    Add,
    Sub,
    MulLo,
    MulHi,
    MulWide,
    MadLo,
    MadHi,
    MadWide,
    Div,
    Rem,
    Min,
    Max,
    Abs,
    Neg,
    And,
    Or,
    Xor,
    Not,
    CNot,
    Shl,
    Shr,
    Popc,
    Clz,
    Brev,
    Bfe,
    Bfi,
    Prmt,
    Sad,
    /// `bfind`: the most significant non-sign bit's position, or with `.shiftamt` (true) the
    /// left shift that brings it to the top.
    Bfind(bool),
    /// `shf.l` (true) or `shf.r`, `.clamp` (true) or `.wrap`.
    Shf(bool, bool),
    /// `mul24.hi` (true) or `.lo`; `mad24` likewise.
    Mul24(bool),
    Mad24(bool),
    /// `bmsk`, `.clamp` (true) or `.wrap`.
    Bmsk(bool),
    /// `szext`, `.clamp` (true) or `.wrap`.
    Szext(bool),
    /// `dp4a` with `a` and `b` signed (true) or not.
    Dp4a(bool, bool),
    /// `dp2a.hi` (true) or `.lo`, with `a` and `b` signed or not.
    Dp2a(bool, bool, bool),
    /// `fns`: the position of the `c`-th set bit of `a` from bit `b`.
    Fns,
    /// `vabsdiff4` (true: four bytes) or `vabsdiff2` (two halves) with their default
    /// selectors and mask, `a` and `b` signed or not, `.add` (true) or the merge.
    AbsDiff(bool, bool, bool, bool),
    /// `prmt` in one of its modes (`.f4e` and the rest, [`crate::ops::permute_mode`]).
    PrmtMode(u8),
    /// `lop3.b32` with its look-up table (`immLut`): each bit of the result the table's bit
    /// at the index `a`'s, `b`'s and `c`'s bits there make (`a` the high bit).
    Lop3(u8),
    /// `min.relu` and `max.relu` of `.s32`: the minimum or maximum, 0 where it is negative.
    MinRelu,
    MaxRelu,
    /// `add`, `min` and `max` of `.u16x2` and `.s16x2`, `.relu` on the signed pair's `min`
    /// and `max`: the operation on each 16-bit half of `a` with the same half of `b`, nothing
    /// carried from the low half into the high. `ty` is one half's type, `.u16` or `.s16`.
    Halves(HalvesOp),
}

/// What [`IntOp::Halves`] does to each half: the [`IntOp`] of the same name on a `.u16` or
/// `.s16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HalvesOp {
    Add,
    Min,
    Max,
    MinRelu,
    MaxRelu,
}

/// The carry-chain instructions: `add.cc`, `addc`, `sub.cc`, `subc`, `mad.lo.cc`,
/// `madc.lo`, `mad.hi.cc`, `madc.hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CarryOp {
    Add,
    Sub,
    MadLo,
    MadHi,
}

/// `redux.sync`'s operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// `bar.red`'s operations: `.popc` counts, `.and` and `.or` combine predicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarRedOp {
    Popc,
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatOp {
    Add,
    Sub,
    Mul,
    Fma,
    /// `a * b - c` and `c - a * b`, rounded once: a multiply and a subtraction that ptxas
    /// fuses where PTX leaves it free to ([`crate::load`]'s contraction).
    FmaSub,
    FmaRev,
    Div,
    Abs,
    Neg,
    Min,
    Max,
    /// `min.NaN` and `max.NaN` (half precision only): a NaN operand gives the canonical NaN.
    MinNaN,
    MaxNaN,
    /// `fma.rn.relu` (half precision only): a negative result is +0.
    FmaRelu,
    Sqrt,
    Rcp,
    /// The `.approx` instructions, as the H100's special-function unit computes them.
    Approx(Approx),
    /// `div.approx.f32` and `div.full.f32`: `a` times the unit's reciprocal of `b`.
    DivApprox {
        full: bool,
    },
    /// A `div.approx.f32` or `div.full.f32` whose last multiply ptxas fuses into the loose
    /// add or subtract reading the quotient ([`crate::load`]'s contraction): `a` and `b`
    /// scaled as [`FloatOp::DivApprox`] scales them, then `a` times the unit's reciprocal of
    /// `b` added to `c` (or subtracted, as `form` says), rounded once.
    DivApproxFused {
        full: bool,
        form: Fused,
    },
    Copysign,
}

/// Which sum a product fused into an add or subtract makes of it (`p`) and the other
/// operand (`c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fused {
    /// `p + c`, from either operand order of the add.
    Add,
    /// `p - c`.
    Sub,
    /// `c - p`.
    Rev,
}

/// The approximate instructions the CPU device runs (`crate::approx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approx {
    Rcp,
    Rsqrt,
    Sqrt,
    Ex2,
    Lg2,
    Sin,
    Cos,
    Tanh,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomOp {
    Add,
    Min,
    Max,
    Inc,
    Dec,
    And,
    Or,
    Xor,
    Exch,
    Cas,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CallTarget {
    Direct(u32),
    Indirect(Src),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Mov {
        d: Reg,
        a: Src,
        mask: u64,
    },
    Special {
        d: Reg,
        s: Special,
    },
    LocalAddr {
        d: Reg,
        off: u32,
    },
    /// `mov.b64 {lo, hi}, a`: split into parts of `bits` each (None: `_`, a sink).
    Unpack {
        ds: Vec<Option<Reg>>,
        a: Src,
        bits: u32,
    },
    Pack {
        d: Reg,
        parts: Vec<Src>,
        bits: u32,
    },
    Int {
        op: IntOp,
        ty: Ty,
        d: Reg,
        a: Src,
        b: Src,
        c: Src,
        sat: bool,
    },
    Float {
        op: FloatOp,
        ty: Ty,
        rnd: Rnd,
        /// `.ftz`: f32 (and f16) subnormal operands and results are zeros of their sign.
        ftz: bool,
        sat: bool,
        d: Reg,
        a: Src,
        b: Src,
        c: Src,
    },
    Setp {
        cmp: Cmp,
        ty: Ty,
        /// `.ftz`: f32 subnormal operands compare as zeros of their sign.
        ftz: bool,
        d: Reg,
        d2: Option<Reg>,
        a: Src,
        b: Src,
        comb: Option<(BoolOp, Src, bool)>,
        /// `set` rather than `setp`: the value `d` gets for true (1.0 in a float type, all
        /// ones in an integer one), 0 for false.
        set: Option<u64>,
    },
    Selp {
        d: Reg,
        a: Src,
        b: Src,
        p: Src,
        mask: u64,
    },
    /// Predicate logic: and/or/xor/not on `.pred`.
    PredLogic {
        op: IntOp,
        d: Reg,
        a: (Src, bool),
        b: (Src, bool),
    },
    Cvt {
        dty: Ty,
        sty: Ty,
        rnd: Option<Rnd>,
        int_rnd: Option<Rnd>,
        /// `.ftz`: an f32 subnormal source or result is a zero of its sign.
        ftz: bool,
        sat: bool,
        d: Reg,
        a: Src,
    },
    /// `cvt.rn.f16x2.f32 d, a, b` (`.rz`, `.relu`, `.bf16x2` likewise): `a` rounded into the
    /// high half of `d`, `b` into the low.
    CvtPair {
        dty: Ty,
        rnd: Rnd,
        relu: bool,
        d: Reg,
        a: Src,
        b: Src,
    },
    Cvta {
        to: bool,
        space: Space,
        d: Reg,
        a: Src,
    },
    Ld {
        space: Space,
        ty: Ty,
        ds: Vec<Option<Reg>>,
        addr: Addr,
    },
    St {
        space: Space,
        ty: Ty,
        srcs: Vec<Src>,
        addr: Addr,
    },
    Atom {
        space: Space,
        op: AtomOp,
        ty: Ty,
        d: Option<Reg>,
        addr: Addr,
        b: Src,
        c: Src,
    },
    Bar,
    /// `bar.red`: a whole-block barrier that also reduces a predicate over the block.
    BarRed {
        op: BarRedOp,
        d: Reg,
        p: Src,
        neg: bool,
    },
    /// A carry-chain instruction: `cin` reads the lane's carry flag, `cout` writes it.
    Carry {
        op: CarryOp,
        ty: Ty,
        d: Reg,
        a: Src,
        b: Src,
        c: Src,
        cin: bool,
        cout: bool,
    },
    /// `redux.sync`: `a` reduced over the lanes of `mask`.
    Redux {
        op: ReduxOp,
        ty: Ty,
        d: Reg,
        a: Src,
        mask: Src,
    },
    /// `match.any.sync` (`all` false) and `match.all.sync` with its predicate `p`.
    Match {
        all: bool,
        ty: Ty,
        d: Reg,
        p: Option<Reg>,
        a: Src,
        mask: Src,
    },
    WarpSync {
        mask: Src,
    },
    Shfl {
        mode: ShflMode,
        d: Reg,
        p: Option<Reg>,
        a: Src,
        b: Src,
        c: Src,
        mask: Src,
    },
    Vote {
        mode: VoteMode,
        d: Reg,
        a: Src,
        neg: bool,
        mask: Src,
    },
    Activemask {
        d: Reg,
    },
    Bra {
        target: u32,
    },
    Call {
        target: CallTarget,
        args: Vec<(u32, u32)>,
        ret: Option<(u32, u32)>,
    },
    Ret,
    Exit,
    Trap,
    Nop,
    /// A call of `vprintf` (`printf` in a kernel), run by the interpreter itself
    /// ([`crate::printf`]): the frame-parameter offsets of its format and argument
    /// pointers, and of its return value.
    Printf {
        format: u32,
        args: u32,
        ret: Option<u32>,
    },
    /// A call of `__assertfail` (a failed `assert` in a kernel), run by the interpreter
    /// itself: the frame-parameter offsets of the condition's text, the file, the line and
    /// the function.
    AssertFail {
        params: [u32; 4],
    },
    /// Calls of `malloc` and `free`, run by the interpreter on the module's heap
    /// ([`crate::heap`]): the frame-parameter offsets of the size and of the pointer
    /// returned, and of the pointer given back.
    Malloc {
        size: u32,
        ret: u32,
    },
    Free {
        ptr: u32,
    },
}

impl Op {
    /// The registers the instruction reads.
    pub fn reads(&self) -> Vec<Reg> {
        let op = self;
        let mut out = Vec::new();
        let mut src = |s: &Src| {
            if let Src::R(r) = s {
                out.push(*r);
            }
        };
        match op {
            Op::Mov { a, .. } | Op::Unpack { a, .. } | Op::Cvt { a, .. } | Op::Cvta { a, .. } => {
                src(a)
            }
            Op::Pack { parts, .. } => parts.iter().for_each(&mut src),
            Op::Int { a, b, c, .. } | Op::Float { a, b, c, .. } => {
                [a, b, c].into_iter().for_each(&mut src)
            }
            Op::Setp { a, b, comb, .. } => {
                src(a);
                src(b);
                if let Some((_, p, _)) = comb {
                    src(p);
                }
            }
            Op::Selp { a, b, p, .. } => [a, b, p].into_iter().for_each(&mut src),
            Op::CvtPair { a, b, .. } => [a, b].into_iter().for_each(&mut src),
            Op::PredLogic { a, b, .. } => [&a.0, &b.0].into_iter().for_each(&mut src),
            Op::Ld {
                addr: Addr::Reg(r, _),
                ..
            } => out.push(*r),
            Op::St { srcs, addr, .. } => {
                srcs.iter().for_each(&mut src);
                if let Addr::Reg(r, _) = addr {
                    out.push(*r);
                }
            }
            Op::Atom { addr, b, c, .. } => {
                src(b);
                src(c);
                if let Addr::Reg(r, _) = addr {
                    out.push(*r);
                }
            }
            Op::WarpSync { mask } => src(mask),
            Op::Shfl { a, b, c, mask, .. } => [a, b, c, mask].into_iter().for_each(&mut src),
            Op::Vote { a, mask, .. } => [a, mask].into_iter().for_each(&mut src),
            Op::Carry { a, b, c, .. } => [a, b, c].into_iter().for_each(&mut src),
            Op::Redux { a, mask, .. } | Op::Match { a, mask, .. } => {
                [a, mask].into_iter().for_each(&mut src)
            }
            Op::BarRed { p, .. } => src(p),
            Op::Call {
                target: CallTarget::Indirect(s),
                ..
            } => src(s),
            _ => {}
        }
        out
    }

    /// The registers the instruction writes.
    pub fn writes(&self) -> Vec<Reg> {
        match self {
            Op::Mov { d, .. }
            | Op::Special { d, .. }
            | Op::LocalAddr { d, .. }
            | Op::Pack { d, .. }
            | Op::Int { d, .. }
            | Op::Float { d, .. }
            | Op::Selp { d, .. }
            | Op::PredLogic { d, .. }
            | Op::Cvt { d, .. }
            | Op::CvtPair { d, .. }
            | Op::Cvta { d, .. }
            | Op::Vote { d, .. }
            | Op::Carry { d, .. }
            | Op::Redux { d, .. }
            | Op::BarRed { d, .. }
            | Op::Activemask { d } => vec![*d],
            Op::Match { d, p, .. } => std::iter::once(*d).chain(*p).collect(),
            Op::Setp { d, d2, .. } => std::iter::once(*d).chain(*d2).collect(),
            Op::Shfl { d, p, .. } => std::iter::once(*d).chain(*p).collect(),
            Op::Unpack { ds, .. } | Op::Ld { ds, .. } => ds.iter().flatten().copied().collect(),
            Op::Atom { d, .. } => d.iter().copied().collect(),
            _ => Vec::new(),
        }
    }
}

/// One instruction, its guard predicate (slot, negated), and its source line.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub guard: Option<(Reg, bool)>,
    pub op: Op,
    pub line: u32,
}

/// A function or kernel of the module.
#[derive(Clone, Debug, Default)]
pub struct Function {
    pub name: String,
    pub entry: bool,
    pub start: u32,
    pub end: u32,
    /// Register slots a frame of it holds.
    pub regs: u32,
    /// Bytes of its frame's parameter area (own parameters, return value, call sites).
    pub param_bytes: u32,
    /// Its formal parameters: (offset, size, alignment). For an entry, offsets are into the
    /// launch's parameter buffer.
    pub params: Vec<(u32, u32, u32)>,
    /// Its return value in its parameter area: (offset, size).
    pub retval: Option<(u32, u32)>,
    /// Bytes of its frame's local area.
    pub local_bytes: u32,
    /// Bytes of static shared memory declared inside it (NVRTC's "demoted" `__shared__`
    /// variables), padding included; the module's own come on top.
    pub shared_bytes: u32,
    /// Whether it holds a `bar.sync` (then its block's warps take turns at barriers).
    pub barriers: bool,
}

/// The address a function pointer holds: far above every real host address, so that a
/// load through it is an out-of-bounds access, not a read of something else.
pub const FUNCTION_ADDRESS_BASE: u64 = 0xFFFF_F000_0000_0000;
