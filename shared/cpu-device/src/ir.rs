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
            "pred" => Ty::Pred,
            _ => return None,
        })
    }

    pub fn bits(self) -> u32 {
        match self {
            Ty::B8 | Ty::U8 | Ty::S8 => 8,
            Ty::B16 | Ty::U16 | Ty::S16 => 16,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 => 32,
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

    pub fn float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    Sqrt,
    Rcp,
    /// `rcp.approx.ftz.f64` and `rsqrt.approx.ftz.f64`: the H100's tables.
    RcpApprox,
    RsqrtApprox,
    Copysign,
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
        sat: bool,
        d: Reg,
        a: Src,
        b: Src,
        c: Src,
    },
    Setp {
        cmp: Cmp,
        ty: Ty,
        d: Reg,
        d2: Option<Reg>,
        a: Src,
        b: Src,
        comb: Option<(BoolOp, Src, bool)>,
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
        sat: bool,
        d: Reg,
        a: Src,
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
