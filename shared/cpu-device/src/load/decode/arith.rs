//! Decoding arithmetic: integer, floating-point and predicate operations chosen by the type,
//! with their rounding and `.ftz`; `cvt`, `setp`, the carry chains and the dot products.

use super::{need, negated, src_at, FnDecoder};
use crate::ir::*;
use crate::load::parse::Operand;
use crate::load::LoadResult;

fn rounding(word: &str) -> Option<Rnd> {
    Some(match word {
        "rn" => Rnd::N,
        "rz" => Rnd::Z,
        "rm" => Rnd::M,
        "rp" => Rnd::P,
        _ => return None,
    })
}

fn int_rounding(word: &str) -> Option<Rnd> {
    Some(match word {
        "rni" => Rnd::N,
        "rzi" => Rnd::Z,
        "rmi" => Rnd::M,
        "rpi" => Rnd::P,
        _ => return None,
    })
}

fn cmp_of(word: &str) -> Option<Cmp> {
    Some(match word {
        "eq" => Cmp::Eq,
        "ne" => Cmp::Ne,
        "lt" => Cmp::Lt,
        "le" => Cmp::Le,
        "gt" => Cmp::Gt,
        "ge" => Cmp::Ge,
        "lo" => Cmp::Lo,
        "ls" => Cmp::Ls,
        "hi" => Cmp::Hi,
        "hs" => Cmp::Hs,
        "equ" => Cmp::Equ,
        "neu" => Cmp::Neu,
        "ltu" => Cmp::Ltu,
        "leu" => Cmp::Leu,
        "gtu" => Cmp::Gtu,
        "geu" => Cmp::Geu,
        "num" => Cmp::Num,
        "nan" => Cmp::Nan,
        _ => return None,
    })
}

/// The two types an instruction names, the destination's first (`cvt`, `set`, `dp4a`).
fn two_types(d: &FnDecoder, opcode: &str, mods: &[&str]) -> LoadResult<[Ty; 2]> {
    match mods.iter().filter_map(|m| Ty::parse(m)).collect::<Vec<_>>()[..] {
        [a, b] => Ok([a, b]),
        _ => Err(d.unknown(opcode)),
    }
}

/// `cvt`: between types, with rounding and saturation.
pub(super) fn decode_cvt(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
) -> LoadResult<Op> {
    let [dty, sty] = two_types(d, opcode, mods)?;
    if dty.pair() && sty == Ty::F32 {
        return decode_cvt_pair(d, opcode, mods, ops, dty);
    }
    // Halves: one at a time, to and from f32 and the integers, from f64, and rounded to an
    // integer in their own type. A pair from anything but two f32s, one format to the
    // other, and a half to an f64 (the H100's NaN there is not known) are refused.
    let (dh, sh) = (dty.half(), sty.half());
    if dty.pair()
        || sty.pair()
        || (dh.is_some() && sh.is_some() && dty != sty)
        || (sh.is_some() && dty == Ty::F64)
    {
        return Err(d.unknown(opcode));
    }
    need(d, opcode, ops, 2)?;
    let mut rnd = None;
    let mut int_rnd = None;
    for m in mods {
        if let Some(r) = rounding(m) {
            rnd = Some(r);
        } else if let Some(r) = int_rounding(m) {
            int_rnd = Some(r);
        } else if !matches!(*m, "ftz" | "sat") && Ty::parse(m).is_none() {
            return Err(d.unknown(opcode));
        }
    }
    if dty == Ty::Pred || sty == Ty::Pred {
        return Err(d.unknown(opcode));
    }
    let ftz = mods.contains(&"ftz");
    if ftz && dty != Ty::F32 && sty != Ty::F32 {
        // As ptxas: `.ftz` is for f32 sources and results only.
        return Err(d.err(format!(
            "`{opcode}`: .ftz applies only to a conversion from or to .f32"
        )));
    }
    Ok(Op::Cvt {
        dty,
        sty,
        rnd,
        int_rnd,
        ftz,
        sat: mods.contains(&"sat"),
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], sty)?,
    })
}

/// `cvt.rn.f16x2.f32 d, a, b` and `.bf16x2`: two f32s rounded (`.rn` or `.rz`, `.relu`
/// allowed) into a pair, `a` high; `.satfinite` is refused.
fn decode_cvt_pair(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
    dty: Ty,
) -> LoadResult<Op> {
    let legal = mods
        .iter()
        .all(|m| matches!(*m, "rn" | "rz" | "relu") || Ty::parse(m).is_some());
    let rnd = match (legal, mods.contains(&"rn"), mods.contains(&"rz")) {
        (true, true, false) => Rnd::N,
        (true, false, true) => Rnd::Z,
        _ => return Err(d.unknown(opcode)),
    };
    need(d, opcode, ops, 3)?;
    Ok(Op::CvtPair {
        dty,
        rnd,
        relu: mods.contains(&"relu"),
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], Ty::F32)?,
        b: d.src(&ops[2], Ty::F32)?,
    })
}

/// `setp`, with an optional second destination and combining predicate. A pair's
/// comparison (`setp.lt.f16x2 p|q`, one predicate a half) is refused.
pub(super) fn decode_setp(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let ty = ty.filter(|t| !t.pair()).ok_or_else(|| d.unknown(opcode))?;
    comparison(d, opcode, mods, ops, ty, None)
}

/// `set`: `setp`'s comparison written as a value, for true 1.0 in a float destination type
/// (0x3f800000 in `.f32`) or all ones in an integer one, for false 0 (the PTX ISA's `set`);
/// into a single half it is refused (cuda_fp16.h's `__hisnan` is `set.nan.f16.f16`). A pair
/// compares each half on its own and writes each half's: 1.0 in the pair's own type, 0xffff
/// in `.u32` or `.s32` (`__heq2_mask`, whose fallback in cuda_fp16.hpp builds the same).
pub(super) fn decode_set(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
) -> LoadResult<Op> {
    let [dty, sty] = two_types(d, opcode, mods)?;
    let yes = match dty {
        _ if sty.pair() && dty == sty => match sty.half() {
            Some(Half::F16) => 0x3c00,
            _ => 0x3f80,
        },
        Ty::U32 | Ty::S32 if sty.pair() => 0xffff,
        _ if sty.pair() => return Err(d.unknown(opcode)),
        Ty::F32 => 0x3f80_0000,
        // A half alone as the destination: refused. On an H100 its bits are not the PTX
        // ISA's: `set.nan.f16.f16 d, a, a` gave 1 for a NaN, not 1.0 (0x3c00), and another
        // value's bits stood above the half even once widened by `cvt.u32.u16`.
        Ty::F16 | Ty::BF16 => {
            return Err(d.err(format!(
                "`{opcode}` into a half is refused: an H100 does not give the PTX ISA's bits \
                 for it (compare with setp, then choose the value with selp)"
            )))
        }
        Ty::U32 | Ty::S32 => 0xffff_ffff,
        Ty::U16 | Ty::S16 => 0xffff,
        _ => return Err(d.unknown(opcode)),
    };
    comparison(d, opcode, mods, ops, sty, Some(yes))
}

/// The comparison of `setp` and `set` (`set` with the value for true, each half's for a
/// pair).
fn comparison(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Ty,
    set: Option<u64>,
) -> LoadResult<Op> {
    let cmp = mods
        .iter()
        .find_map(|m| cmp_of(m))
        .ok_or_else(|| d.unknown(opcode))?;
    let comb_op = mods.iter().find_map(|m| match *m {
        "and" => Some(BoolOp::And),
        "or" => Some(BoolOp::Or),
        "xor" => Some(BoolOp::Xor),
        _ => None,
    });
    let (dst, d2) = match (&ops[0], set) {
        (Operand::Pair(a, b), None) => (d.reg(a)?, d.maybe_reg(b)?),
        (Operand::Pair(..), Some(_)) => return Err(d.unknown(opcode)),
        (other, _) => (d.reg(other)?, None),
    };
    let comb = match comb_op {
        Some(op) => {
            need(d, opcode, ops, 4)?;
            let (p, neg) = negated(&ops[3]);
            Some((op, d.src(p, Ty::Pred)?, neg))
        }
        None => {
            need(d, opcode, ops, 3)?;
            None
        }
    };
    Ok(Op::Setp {
        cmp,
        ty,
        ftz: ftz_of(d, opcode, mods, ty)?,
        d: dst,
        d2,
        a: d.src(&ops[1], ty)?,
        b: d.src(&ops[2], ty)?,
        comb,
        set,
    })
}

/// The carry chains: `add.cc`, `addc{.cc}`, `sub.cc`, `subc{.cc}`, `mad{.lo,.hi}.cc`,
/// `madc{.lo,.hi}{.cc}`, on 32- and 64-bit integers.
pub(super) fn decode_carry(
    d: &FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let ty = ty
        .filter(|t| matches!(t, Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64))
        .ok_or_else(|| d.unknown(opcode))?;
    let has = |m: &str| mods.contains(&m);
    let op = match base {
        "add" | "addc" => CarryOp::Add,
        "sub" | "subc" => CarryOp::Sub,
        _ if has("lo") => CarryOp::MadLo,
        _ if has("hi") => CarryOp::MadHi,
        _ => return Err(d.unknown(opcode)),
    };
    let arity = if matches!(op, CarryOp::MadLo | CarryOp::MadHi) {
        4
    } else {
        3
    };
    need(d, opcode, ops, arity)?;
    Ok(Op::Carry {
        op,
        ty,
        d: d.reg(&ops[0])?,
        a: src_at(d, ops, 1, ty)?,
        b: src_at(d, ops, 2, ty)?,
        c: src_at(d, ops, 3, ty)?,
        cin: base.ends_with('c'),
        cout: has("cc"),
    })
}

/// `dp4a.atype.btype d, a, b, c` and `dp2a.mode.atype.btype d, a, b, c`.
pub(super) fn decode_dot(
    d: &FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
) -> LoadResult<Op> {
    let [ta @ (Ty::U32 | Ty::S32), tb @ (Ty::U32 | Ty::S32)] = two_types(d, opcode, mods)? else {
        return Err(d.unknown(opcode));
    };
    let (sa, sb) = (ta.signed(), tb.signed());
    let op = if base == "dp4a" {
        IntOp::Dp4a(sa, sb)
    } else if mods.contains(&"lo") || mods.contains(&"hi") {
        IntOp::Dp2a(mods.contains(&"hi"), sa, sb)
    } else {
        return Err(d.unknown(opcode));
    };
    need(d, opcode, ops, 4)?;
    let ty = if sa || sb { Ty::S32 } else { Ty::U32 };
    Ok(Op::Int {
        op,
        ty,
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], ta)?,
        b: d.src(&ops[2], tb)?,
        c: d.src(&ops[3], ty)?,
        sat: false,
    })
}

/// `vabsdiff4.dtype.atype.btype{.add} d, a, b, c` and `vabsdiff2` likewise (CUDA's
/// `__vabsdiffu4`, `__vsadu4` and their kin), with the default byte selectors and mask; the
/// other SIMD video instructions, `.sat`, selectors and masks are refused.
pub(super) fn decode_abs_diff(
    d: &FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
) -> LoadResult<Op> {
    let types: Vec<Ty> = mods.iter().filter_map(|m| Ty::parse(m)).collect();
    let add = mods.contains(&"add");
    let known = mods.len() == 3 + usize::from(add);
    let [Ty::U32 | Ty::S32, ta @ (Ty::U32 | Ty::S32), tb @ (Ty::U32 | Ty::S32)] = types[..] else {
        return Err(d.unknown(opcode));
    };
    if !known {
        return Err(d.unknown(opcode));
    }
    need(d, opcode, ops, 4)?;
    Ok(Op::Int {
        op: IntOp::AbsDiff(base == "vabsdiff4", ta.signed(), tb.signed(), add),
        ty: Ty::U32,
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], ta)?,
        b: d.src(&ops[2], tb)?,
        c: d.src(&ops[3], Ty::U32)?,
        sat: false,
    })
}

/// `lop3.b32 d, a, b, c, immLut`, its table an immediate from 0 to 255 (as ptxas requires).
/// The form that also writes a predicate (`lop3.or.b32 d|p, a, b, c, immLut, q`, PTX 8.2) is
/// refused.
pub(super) fn decode_lop3(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
) -> LoadResult<Op> {
    if mods != ["b32"] {
        return Err(d.unknown(opcode));
    }
    need(d, opcode, ops, 5)?;
    let lut = match d.src(&ops[4], Ty::U32)? {
        Src::I(v) => u8::try_from(v).ok(),
        Src::R(_) => None,
    }
    .ok_or_else(|| {
        d.err(format!(
            "`{opcode}`: the table must be a number from 0 to 255"
        ))
    })?;
    Ok(Op::Int {
        op: IntOp::Lop3(lut),
        ty: Ty::B32,
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], Ty::B32)?,
        b: d.src(&ops[2], Ty::B32)?,
        c: d.src(&ops[3], Ty::B32)?,
        sat: false,
    })
}

/// Everything else: integer, floating-point and predicate arithmetic, chosen by the type.
pub(super) fn arithmetic(
    d: &mut FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    if let Some(half) = halves_type(mods) {
        return halves_arithmetic(d, opcode, base, mods, ops, half);
    }
    let ty = ty.ok_or_else(|| d.unknown(opcode))?;
    if ty == Ty::Pred {
        predicate_logic(d, opcode, base, ops)
    } else if ty.half().is_some() {
        half_arithmetic(d, opcode, base, mods, ops, ty)
    } else if ty.float() {
        float_arithmetic(d, opcode, base, mods, ops, ty)
    } else {
        int_arithmetic(d, opcode, base, mods, ops, ty)
    }
}

/// One half's type of a pair of 16-bit integers (`.u16x2`, `.s16x2`), which `Ty` does not
/// hold: no load, store, `mov` or conversion takes them, only the arithmetic below.
fn halves_type(mods: &[&str]) -> Option<Ty> {
    mods.iter().find_map(|m| match *m {
        "u16x2" => Some(Ty::U16),
        "s16x2" => Some(Ty::S16),
        _ => None,
    })
}

/// Arithmetic on pairs of 16-bit integers, what the PTX ISA (and ptxas 12.9, asked form by
/// form) allows there: `add.u16x2`, `add.s16x2` (no `.sat`, and no `sub` of pairs at all),
/// `min` and `max` of either, `.relu` on the signed pair's `min` and `max` (written before
/// or after the type). Every other instruction or modifier with a pair is refused.
fn halves_arithmetic(
    d: &FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
    half: Ty,
) -> LoadResult<Op> {
    let relu = mods.contains(&"relu");
    let op = match (base, relu) {
        _ if mods.len() != 1 + usize::from(relu) => return Err(d.unknown(opcode)),
        ("add", false) => HalvesOp::Add,
        ("min", false) => HalvesOp::Min,
        ("max", false) => HalvesOp::Max,
        ("min", true) if half == Ty::S16 => HalvesOp::MinRelu,
        ("max", true) if half == Ty::S16 => HalvesOp::MaxRelu,
        _ => return Err(d.unknown(opcode)),
    };
    need(d, opcode, ops, 3)?;
    // The operands are `.b32` words: an immediate keeps its 32 bits, both halves.
    Ok(Op::Int {
        op: IntOp::Halves(op),
        ty: half,
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], Ty::B32)?,
        b: d.src(&ops[2], Ty::B32)?,
        c: Src::I(0),
        sat: false,
    })
}

/// `and`, `or`, `xor` and `not` on predicates, each operand possibly negated (`!p`).
fn predicate_logic(d: &FnDecoder, opcode: &str, base: &str, ops: &[Operand]) -> LoadResult<Op> {
    let op = match base {
        "and" => IntOp::And,
        "or" => IntOp::Or,
        "xor" => IntOp::Xor,
        "not" => IntOp::Not,
        _ => return Err(d.unknown(opcode)),
    };
    let pred = |i: usize| -> LoadResult<(Src, bool)> {
        match ops.get(i) {
            Some(Operand::Not(p)) => Ok((d.src(p, Ty::Pred)?, true)),
            Some(p) => Ok((d.src(p, Ty::Pred)?, false)),
            None => Ok((Src::I(0), false)),
        }
    };
    Ok(Op::PredLogic {
        op,
        d: d.reg(&ops[0])?,
        a: pred(1)?,
        b: pred(2)?,
    })
}

/// Floating-point arithmetic, with its rounding modifier.
fn float_arithmetic(
    d: &FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Ty,
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    let n = ops.len();
    let mut rnd = Rnd::N;
    let mut approx = false;
    for m in mods {
        if let Some(r) = rounding(m) {
            rnd = r;
        } else if *m == "approx" || *m == "full" {
            approx = true;
        } else if !matches!(
            *m,
            "ftz" | "sat" | "f32" | "f64" | "NaN" | "xorsign" | "abs"
        ) {
            return Err(d.unknown(opcode));
        }
    }
    let op = match (base, approx) {
        ("add", false) => FloatOp::Add,
        ("sub", false) => FloatOp::Sub,
        ("mul", false) => FloatOp::Mul,
        ("fma", false) => FloatOp::Fma,
        ("mad", false) if has("rn") || has("rz") || has("rm") || has("rp") => FloatOp::Fma,
        ("div", false) => FloatOp::Div,
        ("abs", _) => FloatOp::Abs,
        ("neg", _) => FloatOp::Neg,
        ("min", _) if !has("NaN") && !has("xorsign") => FloatOp::Min,
        ("max", _) if !has("NaN") && !has("xorsign") => FloatOp::Max,
        ("sqrt", false) => FloatOp::Sqrt,
        ("rcp", false) => FloatOp::Rcp,
        ("copysign", _) => FloatOp::Copysign,
        ("div", true) if ty == Ty::F32 => FloatOp::DivApprox { full: has("full") },
        ("rcp", true) if ty == Ty::F32 || has("ftz") => FloatOp::Approx(Approx::Rcp),
        ("rsqrt", true) if ty == Ty::F32 || has("ftz") => FloatOp::Approx(Approx::Rsqrt),
        ("sqrt", true) if ty == Ty::F32 => FloatOp::Approx(Approx::Sqrt),
        ("ex2", true) if ty == Ty::F32 => FloatOp::Approx(Approx::Ex2),
        ("lg2", true) if ty == Ty::F32 => FloatOp::Approx(Approx::Lg2),
        ("sin", true) if ty == Ty::F32 => FloatOp::Approx(Approx::Sin),
        ("cos", true) if ty == Ty::F32 => FloatOp::Approx(Approx::Cos),
        // The PTX ISA gives `tanh.approx.f32` no `.ftz`.
        ("tanh", true) if ty == Ty::F32 && !has("ftz") => FloatOp::Approx(Approx::Tanh),
        (_, true) => {
            return Err(d.err(format!(
                "`{opcode}` is an approximation whose exact bits the CPU device cannot reproduce; \
                 it runs `rcp`, `rsqrt`, `sqrt`, `ex2`, `lg2`, `sin`, `cos` and `div` \
                 `.approx.f32`, `tanh.approx.f32`, `div.full.f32` and `rcp`, `rsqrt` \
                 `.approx.ftz.f64`, as an H100 computes them"
            )))
        }
        _ => return Err(d.unknown(opcode)),
    };
    let arity = match op {
        FloatOp::Abs | FloatOp::Neg | FloatOp::Sqrt | FloatOp::Rcp | FloatOp::Approx(_) => 2,
        FloatOp::Fma => 4,
        _ => 3,
    };
    if n != arity {
        return Err(d.err(format!("`{opcode}` takes {arity} operands, found {n}")));
    }
    // `.ftz` of the f64 approximations is their tables' own behaviour.
    let ftz = if let (FloatOp::Approx(_), Ty::F64) = (op, ty) {
        false
    } else {
        ftz_of(d, opcode, mods, ty)?
    };
    // A multiply and an add without a rounding modifier may be fused by ptxas;
    // NVRTC writes `.rn` wherever it must not be, so these are exact as written.
    Ok(Op::Float {
        op,
        ty,
        rnd,
        ftz,
        sat: has("sat"),
        d: d.reg(&ops[0])?,
        a: src_at(d, ops, 1, ty)?,
        b: src_at(d, ops, 2, ty)?,
        c: src_at(d, ops, 3, ty)?,
    })
}

/// Whether an f32 or f16 instruction flushes subnormals (`.ftz`); the modifier on any other
/// type is refused, as ptxas refuses it.
fn ftz_of(d: &FnDecoder, opcode: &str, mods: &[&str], ty: Ty) -> LoadResult<bool> {
    let ftz = mods.contains(&"ftz");
    if ftz && !matches!(ty, Ty::F32 | Ty::F16 | Ty::F16x2) {
        return Err(d.err(format!(
            "`{opcode}`: .ftz applies only to .f32 and .f16 instructions"
        )));
    }
    Ok(ftz)
}

/// Half-precision arithmetic (`.f16`, `.bf16` and their pairs): the instructions and
/// modifiers the PTX ISA defines for them (`.rn` alone; `.ftz` and `.sat` on `.f16` alone;
/// `fma.rn` with `.relu` or `.sat`, not both; `min` and `max` with `.NaN`), as
/// [`crate::half`] computes them. `.xorsign.abs`, the approximations (`ex2`, `tanh`) and
/// anything else are refused.
fn half_arithmetic(
    d: &FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Ty,
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    let f16 = ty.half() == Some(Half::F16);
    let rounded = matches!(base, "add" | "sub" | "mul" | "fma");
    let legal = mods.iter().all(|m| match *m {
        "rn" => rounded,
        "ftz" => f16,
        "sat" => f16 && rounded && !has("relu"),
        "relu" => base == "fma",
        "NaN" => matches!(base, "min" | "max"),
        t => Ty::parse(t) == Some(ty),
    });
    let op = match base {
        _ if !legal => return Err(d.unknown(opcode)),
        "add" => FloatOp::Add,
        "sub" => FloatOp::Sub,
        "mul" => FloatOp::Mul,
        "fma" if has("rn") && has("relu") => FloatOp::FmaRelu,
        "fma" if has("rn") => FloatOp::Fma,
        "neg" => FloatOp::Neg,
        "abs" => FloatOp::Abs,
        "min" if has("NaN") => FloatOp::MinNaN,
        "min" => FloatOp::Min,
        "max" if has("NaN") => FloatOp::MaxNaN,
        "max" => FloatOp::Max,
        _ => return Err(d.unknown(opcode)),
    };
    let arity = match op {
        FloatOp::Neg | FloatOp::Abs => 2,
        FloatOp::Fma | FloatOp::FmaRelu => 4,
        _ => 3,
    };
    need(d, opcode, ops, arity)?;
    let a = src_at(d, ops, 1, ty)?;
    let b = src_at(d, ops, 2, ty)?;
    // ptxas folds `min.f16` and `max.f16` of a register and itself to the register, NaN or
    // not: on an H100 `min.f16 d, a, a` of the NaN 0xffff gave 0xffff, where two different
    // NaNs give the canonical 0x7fff. Not `.NaN`'s, nor bfloat16's: `max.NaN.f16`,
    // `min.NaN.bf16` and `max.bf16` of a NaN and itself gave 0x7fff (the differential test,
    // 645 words of 33 kernels). A pair's is not known, so it is computed.
    if matches!(op, FloatOp::Min | FloatOp::Max)
        && ty == Ty::F16
        && matches!(a, Src::R(_))
        && a == b
        && !has("ftz")
    {
        return Ok(Op::Mov {
            d: d.reg(&ops[0])?,
            a,
            mask: mask(ty),
        });
    }
    Ok(Op::Float {
        op,
        ty,
        rnd: Rnd::N,
        ftz: has("ftz"),
        sat: has("sat"),
        d: d.reg(&ops[0])?,
        a,
        b,
        c: src_at(d, ops, 3, ty)?,
    })
}

/// Integer arithmetic.
fn int_arithmetic(
    d: &FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Ty,
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    let n = ops.len();
    let (op, arity) = match base {
        // `.relu` is `min.s32`'s and `max.s32`'s alone among single integers (ptxas refuses
        // it on `.u32`, `.s16`, `.s64` and on `add`): anywhere else it would be dropped.
        _ if has("relu")
            && !(matches!(base, "min" | "max") && ty == Ty::S32 && mods.len() == 2) =>
        {
            return Err(d.unknown(opcode))
        }
        "add" if !has("cc") => (IntOp::Add, 3),
        "sub" if !has("cc") => (IntOp::Sub, 3),
        "mul" if has("lo") => (IntOp::MulLo, 3),
        "mul" if has("hi") => (IntOp::MulHi, 3),
        "mul" if has("wide") => (IntOp::MulWide, 3),
        "mad" if has("lo") && !has("cc") => (IntOp::MadLo, 4),
        "mad" if has("hi") && !has("cc") => (IntOp::MadHi, 4),
        "mad" if has("wide") => (IntOp::MadWide, 4),
        "div" => (IntOp::Div, 3),
        "rem" => (IntOp::Rem, 3),
        "min" if has("relu") => (IntOp::MinRelu, 3),
        "max" if has("relu") => (IntOp::MaxRelu, 3),
        "min" => (IntOp::Min, 3),
        "max" => (IntOp::Max, 3),
        "abs" => (IntOp::Abs, 2),
        "neg" => (IntOp::Neg, 2),
        "and" => (IntOp::And, 3),
        "or" => (IntOp::Or, 3),
        "xor" => (IntOp::Xor, 3),
        "not" => (IntOp::Not, 2),
        "cnot" => (IntOp::CNot, 2),
        "shl" => (IntOp::Shl, 3),
        "shr" => (IntOp::Shr, 3),
        "popc" => (IntOp::Popc, 2),
        "clz" => (IntOp::Clz, 2),
        "brev" => (IntOp::Brev, 2),
        "bfe" => (IntOp::Bfe, 4),
        "bfi" => (IntOp::Bfi, 5),
        "prmt" if mods.len() == 1 => (IntOp::Prmt, 4),
        "prmt" if mods.len() == 2 => {
            let mode = ["f4e", "b4e", "rc8", "ecl", "ecr", "rc16"]
                .iter()
                .position(|m| has(m))
                .ok_or_else(|| d.unknown(opcode))?;
            (IntOp::PrmtMode(mode as u8), 4)
        }
        "sad" => (IntOp::Sad, 4),
        "bfind" => (IntOp::Bfind(has("shiftamt")), 2),
        "fns" => (IntOp::Fns, 4),
        "shf" if has("l") || has("r") => (IntOp::Shf(has("l"), has("clamp")), 4),
        "mul24" if has("lo") || has("hi") => (IntOp::Mul24(has("hi")), 3),
        "mad24" if (has("lo") || has("hi")) && !has("sat") => (IntOp::Mad24(has("hi")), 4),
        "bmsk" if has("clamp") || has("wrap") => (IntOp::Bmsk(has("clamp")), 3),
        "szext" if has("clamp") || has("wrap") => (IntOp::Szext(has("clamp")), 3),
        _ => return Err(d.unknown(opcode)),
    };
    if n != arity {
        return Err(d.err(format!("`{opcode}` takes {arity} operands, found {n}")));
    }
    if op == IntOp::Bfi {
        // bfi d, a, b, pos, len: the position and length ride in `c` (pos | len << 32).
        let (Src::I(pos), Src::I(len)) = (src_at(d, ops, 3, Ty::U32)?, src_at(d, ops, 4, Ty::U32)?)
        else {
            return Err(d.err("bfi with a register position or length is not supported"));
        };
        return Ok(Op::Int {
            op,
            ty,
            d: d.reg(&ops[0])?,
            a: src_at(d, ops, 1, ty)?,
            b: src_at(d, ops, 2, ty)?,
            c: Src::I(pos | len << 32),
            sat: false,
        });
    }
    // Shift amounts, bfe's position and length are 32-bit whatever the type.
    let second = if matches!(op, IntOp::Shl | IntOp::Shr | IntOp::Bfe) {
        Ty::U32
    } else {
        ty
    };
    let third = match op {
        IntOp::Bfe => Ty::U32,
        IntOp::MadWide => wide(ty),
        _ => ty,
    };
    Ok(Op::Int {
        op,
        ty,
        d: d.reg(&ops[0])?,
        a: src_at(d, ops, 1, ty)?,
        b: src_at(d, ops, 2, second)?,
        c: src_at(d, ops, 3, third)?,
        sat: has("sat"),
    })
}

fn wide(ty: Ty) -> Ty {
    match ty {
        Ty::U16 => Ty::U32,
        Ty::S16 => Ty::S32,
        Ty::U32 => Ty::U64,
        Ty::S32 => Ty::S64,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use crate::ir::*;
    use crate::load::decoded;

    /// decode: `.ftz` on an f64 or bfloat16 instruction is refused, as ptxas refuses it; on
    /// f32 and f16 it is kept.
    #[test]
    fn ftz_is_for_f32_and_f16_only() {
        for refused in [
            ".reg .f64 %fd<3>;\nadd.ftz.f64 %fd0, %fd1, %fd2;",
            ".reg .b16 %rs<3>;\nadd.ftz.bf16 %rs0, %rs1, %rs2;",
        ] {
            let err = decoded(refused).expect_err("refused");
            assert!(
                err.contains(".ftz") || err.contains("does not know"),
                "{err}"
            );
        }
        for kept in [
            ".reg .f32 %f<3>;\nadd.ftz.f32 %f0, %f1, %f2;",
            ".reg .b16 %rs<3>;\nadd.ftz.f16 %rs0, %rs1, %rs2;",
        ] {
            let ops = decoded(kept).expect("decodes");
            assert!(
                matches!(ops[0], Op::Float { ftz: true, .. }),
                "{:?}",
                ops[0]
            );
        }
    }

    /// decode: `min.f16` or `max.f16` of a register and itself is the register (ptxas folds
    /// it; an H100 keeps a NaN's own bits there); `.NaN`'s, bfloat16's and two registers'
    /// are computed.
    #[test]
    fn a_halfs_minimum_with_itself_is_itself() {
        let ops = decoded(
            ".reg .b16 %rs<3>;\nmin.f16 %rs0, %rs1, %rs1;\nmax.f16 %rs0, %rs1, %rs1;\n\
             max.NaN.f16 %rs0, %rs1, %rs1;\nmin.bf16 %rs0, %rs1, %rs1;\nmin.f16 %rs2, %rs1, %rs0;",
        )
        .expect("decodes");
        for folded in &ops[..2] {
            assert!(matches!(folded, Op::Mov { mask: 0xFFFF, .. }), "{folded:?}");
        }
        for computed in &ops[2..] {
            assert!(matches!(computed, Op::Float { .. }), "{computed:?}");
        }
    }

    /// decode: half precision takes the modifiers the PTX ISA gives it and refuses the rest
    /// (`.rz`, `.sat` on bfloat16, `.relu` with `.sat`, an immediate operand, a pair's
    /// comparison or conversion, `set` into a single half), each by its instruction.
    #[test]
    fn half_precision_takes_its_own_modifiers() {
        let regs = ".reg .b16 %rs<4>;\n.reg .b32 %r<4>;\n.reg .pred %p<2>;\n.reg .f32 %f<2>;\n";
        for kept in [
            "fma.rn.ftz.relu.f16 %rs0, %rs1, %rs2, %rs3;",
            "fma.rn.sat.f16x2 %r0, %r1, %r2, %r3;",
            "max.NaN.bf16x2 %r0, %r1, %r2;",
            "mul.rn.bf16 %rs0, %rs1, %rs2;",
            "set.lt.u32.bf16 %r0, %rs1, %rs2;",
            "cvt.rn.bf16.s64 %rs0, %r0;",
            "cvt.rni.f16.f16 %rs0, %rs1;",
            "cvt.rz.relu.bf16x2.f32 %r0, %f0, %f1;",
            "set.lt.u32.f16x2 %r0, %r1, %r2;",
            "set.nan.bf16x2.bf16x2 %r0, %r1, %r2;",
        ] {
            let text = format!("{regs}{}", kept.replace("s64", "s32"));
            decoded(&text).unwrap_or_else(|e| panic!("{kept}: {e}"));
        }
        for (refused, why) in [
            ("add.rz.f16 %rs0, %rs1, %rs2;", "add.rz.f16"),
            ("add.sat.bf16 %rs0, %rs1, %rs2;", "add.sat.bf16"),
            (
                "fma.rn.sat.relu.f16 %rs0, %rs1, %rs2, %rs3;",
                "fma.rn.sat.relu.f16",
            ),
            ("fma.f16 %rs0, %rs1, %rs2, %rs3;", "fma.f16"),
            ("ex2.approx.f16 %rs0, %rs1;", "ex2.approx.f16"),
            ("add.f16 %rs0, %rs1, 0x3c00;", "must be a register"),
            ("setp.lt.f16x2 %p0|%p1, %r1, %r2;", "setp.lt.f16x2"),
            ("set.lt.f16x2.bf16x2 %r0, %r1, %r2;", "set.lt.f16x2.bf16x2"),
            (
                "cvt.rn.satfinite.f16x2.f32 %r0, %f0, %f1;",
                "cvt.rn.satfinite.f16x2.f32",
            ),
            ("cvt.f16x2.f32 %r0, %f0, %f1;", "cvt.f16x2.f32"),
            ("cvt.f64.f16 %r0, %rs1;", "cvt.f64.f16"),
            (
                "set.nan.f16.f16 %rs0, %rs1, %rs1;",
                "`set.nan.f16.f16` into a half is refused",
            ),
            (
                "atom.global.max.noftz.f16 %rs0, [%r1], %rs1;",
                "atom.global.max.noftz.f16",
            ),
        ] {
            let err = decoded(&format!("{regs}{refused}")).expect_err(refused);
            assert!(err.contains(why), "{refused}: {err}");
        }
    }

    /// decode and run: `vabsdiff4` of unsigned and of signed bytes, merged and added to
    /// `c`, and `vabsdiff2.add`; `.sat`, a selector-free `vadd4` and a mask are refused.
    #[test]
    fn byte_absolute_differences_are_merged_or_added() {
        let regs = ".reg .b32 %r<4>;\n";
        for (text, signed, add) in [
            ("vabsdiff4.u32.u32.u32 %r0, %r1, %r2, %r3;", false, false),
            ("vabsdiff4.u32.s32.s32 %r0, %r1, %r2, %r3;", true, false),
            ("vabsdiff4.u32.u32.u32.add %r0, %r1, %r2, %r3;", false, true),
        ] {
            let ops = decoded(&format!("{regs}{text}")).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                matches!(ops[0], Op::Int { op: IntOp::AbsDiff(true, s, t, a), .. }
                    if s == signed && t == signed && a == add),
                "{text}: {:?}",
                ops[0]
            );
        }
        let (a, b) = (0x01ff_7f80, 0x0200_0080);
        let run = |signed, add| crate::ops::abs_diff(a, b, 10, true, (signed, signed), add);
        assert_eq!(run(false, false), 0x01ff_7f00);
        assert_eq!(run(true, false), 0x0101_7f00);
        assert_eq!(run(false, true), 10 + 0x7f + 0xff + 1);
        assert_eq!(
            crate::ops::abs_diff(0x0003_fffe, 0x0005_0001, 1, false, (true, true), true),
            1 + 3 + 2
        );
        for refused in [
            "vabsdiff4.u32.u32.u32.sat %r0, %r1, %r2, %r3;",
            "vadd4.u32.u32.u32 %r0, %r1, %r2, %r3;",
            "vabsdiff4.u32.u32 %r0, %r1, %r2, %r3;",
        ] {
            decoded(&format!("{regs}{refused}")).expect_err(refused);
        }
    }

    /// decode: every pair-of-halves form the PTX ISA has, `.relu` before or after the type,
    /// and `min.relu.s32`/`max.relu.s32`, each to its own operation on the halves' type (a
    /// decoder that took `.s16x2` for `.u16x2`, or dropped `.relu`, fails here); an
    /// immediate keeps both halves. What ptxas 12.9 refuses is refused: `sub` of pairs,
    /// `.sat` on them, `.relu` on the unsigned pair, on `.u32`, `.s64` or `add`, a pair's
    /// `.cc`.
    #[test]
    fn pairs_of_halves_take_the_ptx_isas_forms() {
        let regs = ".reg .b32 %r<3>;\n.reg .b64 %rd<2>;\n";
        for (text, want, half) in [
            ("add.u16x2 %r0, %r1, %r2;", HalvesOp::Add, Ty::U16),
            ("add.s16x2 %r0, %r1, %r2;", HalvesOp::Add, Ty::S16),
            ("min.u16x2 %r0, %r1, %r2;", HalvesOp::Min, Ty::U16),
            ("min.s16x2 %r0, %r1, %r2;", HalvesOp::Min, Ty::S16),
            ("max.u16x2 %r0, %r1, %r2;", HalvesOp::Max, Ty::U16),
            ("max.s16x2 %r0, %r1, %r2;", HalvesOp::Max, Ty::S16),
            ("min.s16x2.relu %r0, %r1, %r2;", HalvesOp::MinRelu, Ty::S16),
            ("max.relu.s16x2 %r0, %r1, %r2;", HalvesOp::MaxRelu, Ty::S16),
        ] {
            let ops = decoded(&format!("{regs}{text}")).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(
                matches!(ops[0], Op::Int { op: IntOp::Halves(op), ty, .. } if op == want && ty == half),
                "{text}: {:?}",
                ops[0]
            );
        }
        for (text, want) in [
            ("min.s32.relu %r0, %r1, %r2;", IntOp::MinRelu),
            ("max.relu.s32 %r0, %r1, %r2;", IntOp::MaxRelu),
        ] {
            let ops = decoded(&format!("{regs}{text}")).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(
                matches!(ops[0], Op::Int { op, ty: Ty::S32, .. } if op == want),
                "{text}: {:?}",
                ops[0]
            );
        }
        let ops = decoded(&format!("{regs}add.u16x2 %r0, %r1, 65537;")).expect("decodes");
        assert!(
            matches!(
                ops[0],
                Op::Int {
                    b: Src::I(0x0001_0001),
                    ..
                }
            ),
            "{:?}",
            ops[0]
        );
        for refused in [
            "sub.u16x2 %r0, %r1, %r2;",
            "sub.s16x2 %r0, %r1, %r2;",
            "add.sat.s16x2 %r0, %r1, %r2;",
            "min.relu.u16x2 %r0, %r1, %r2;",
            "min.relu.u32 %r0, %r1, %r2;",
            "max.relu.s64 %rd0, %rd1, %rd1;",
            "add.relu.s32 %r0, %r1, %r2;",
            "add.cc.u16x2 %r0, %r1, %r2;",
            "mul.lo.s16x2 %r0, %r1, %r2;",
            "max.s16x2.s32 %r0, %r1, %r2;",
        ] {
            let err = decoded(&format!("{regs}{refused}")).expect_err(refused);
            assert!(
                err.contains("does not know the instruction"),
                "{refused}: {err}"
            );
        }
    }

    /// decode: `lop3.b32` keeps its table in the operation; a table past 255 or in a
    /// register, and the predicate-writing `lop3.or`, are refused.
    #[test]
    fn lop3_takes_an_immediate_table() {
        let regs = ".reg .b32 %r<4>;\n.reg .pred %p<2>;\n";
        let ops = decoded(&format!("{regs}lop3.b32 %r0, %r1, %r2, %r3, 0x4D;")).expect("decodes");
        assert!(
            matches!(
                ops[0],
                Op::Int {
                    op: IntOp::Lop3(0x4d),
                    ..
                }
            ),
            "{:?}",
            ops[0]
        );
        for (refused, why) in [
            ("lop3.b32 %r0, %r1, %r2, %r3, 256;", "from 0 to 255"),
            ("lop3.b32 %r0, %r1, %r2, %r3, %r3;", "from 0 to 255"),
            (
                "lop3.or.b32 %r0|%p0, %r1, %r2, %r3, 0x3f, %p1;",
                "does not know the instruction",
            ),
        ] {
            let err = decoded(&format!("{regs}{refused}")).expect_err(refused);
            assert!(err.contains(why), "{refused}: {err}");
        }
    }

    /// decode: `mad.wide.s32`'s addend is 64-bit (an immediate -1 keeps all 64 bits) and a
    /// 64-bit shift's amount 32-bit (-1 keeps 32).
    #[test]
    fn wide_addends_and_shift_amounts_take_their_own_widths() {
        let ops = decoded(
            ".reg .b32 %r<2>;\n.reg .b64 %rd<1>;\nmad.wide.s32 %rd0, %r0, %r1, -1;\n\
             shl.b64 %rd0, %rd0, -1;",
        )
        .expect("decodes");
        assert!(
            matches!(
                ops[0],
                Op::Int {
                    op: IntOp::MadWide,
                    c: Src::I(u64::MAX),
                    ..
                }
            ),
            "{:?}",
            ops[0]
        );
        assert!(
            matches!(
                ops[1],
                Op::Int {
                    op: IntOp::Shl,
                    b: Src::I(0xFFFF_FFFF),
                    ..
                }
            ),
            "{:?}",
            ops[1]
        );
    }
}
