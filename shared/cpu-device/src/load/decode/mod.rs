//! Decoding one instruction: its opcode's words and operands to the IR's `Op`, every name
//! resolved in the function's scopes. The dispatch, `mov`, `call` and the helpers every
//! family shares are here; the families are in `memory` (loads, stores, atomics, `cvta`),
//! `arith` (integer, floating-point and predicate arithmetic, `cvt`, `setp`, carries, dot
//! products) and `warp` (barriers, shuffles, votes, reductions, `match`).

mod arith;
mod memory;
mod warp;

use std::collections::HashMap;

use super::layout::symbol_address;
use super::parse::{immediate, parse_int, Operand};
use super::{LoadResult, Module};
use crate::ir::*;

use arith::{
    arithmetic, decode_abs_diff, decode_carry, decode_cvt, decode_dot, decode_lop3, decode_set,
    decode_setp,
};
use memory::{decode_atomic, decode_cvta, decode_load_store};
use warp::{decode_barrier, decode_match, decode_redux, decode_shfl, decode_vote};

/// What a name means inside a function.
#[derive(Clone, Copy, Debug)]
pub(super) enum Name {
    Reg(Reg),
    FrameParam(u32),
    KernelParam(u32),
    Local(u32),
    /// A shared variable declared inside the function: its offset in shared memory.
    Shared(u64),
}

pub(super) struct Scope {
    pub(super) names: HashMap<String, Name>,
    pub(super) next_param: u32,
}

pub(super) struct FnDecoder<'m> {
    pub(super) module: &'m Module,
    pub(super) scopes: Vec<Scope>,
    pub(super) regs: u32,
    pub(super) param_bytes: u32,
    pub(super) local_bytes: u32,
    /// Where the next shared variable declared inside a function goes.
    pub(super) shared_end: u64,
    pub(super) function: String,
    pub(super) line: u32,
    /// The `.cu` file and line of the last `.loc`.
    pub(super) source: Option<(u64, u64)>,
}

impl FnDecoder<'_> {
    pub(super) fn lookup(&self, name: &str) -> Option<Name> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.names.get(name).copied())
    }
    pub(super) fn declare(&mut self, name: &str, what: Name) {
        if let Some(s) = self.scopes.last_mut() {
            s.names.insert(name.to_string(), what);
        }
    }
    pub(super) fn new_reg(&mut self) -> Reg {
        self.regs += 1;
        self.regs - 1
    }
    pub(super) fn param_slot(&mut self, size: u32, align: u32) -> u32 {
        let scope = self
            .scopes
            .last_mut()
            .map_or(&mut self.param_bytes, |s| &mut s.next_param);
        // Saturating: a frame past 2^32 bytes is far past the GPU's limit, which the launch
        // refuses.
        let align = align.max(1);
        let at = scope.div_ceil(align).saturating_mul(align);
        *scope = at.saturating_add(size);
        let end = *scope;
        self.param_bytes = self.param_bytes.max(end);
        at
    }
    /// A `{` inside a body: its names are its own, its `.param`s go after the enclosing
    /// scope's.
    pub(super) fn open_scope(&mut self) {
        let next_param = self.scopes.last().map_or(0, |s| s.next_param);
        self.scopes.push(Scope {
            names: HashMap::new(),
            next_param,
        });
    }
    pub(super) fn err(&self, what: impl std::fmt::Display) -> String {
        match self.source {
            Some((file, line)) => format!(
                "{} ({} line {line}; PTX line {}): {what}",
                self.function,
                self.module
                    .files
                    .get(&file)
                    .map_or("the kernel's file", String::as_str),
                self.line
            ),
            None => format!("{} (PTX line {}): {what}", self.function, self.line),
        }
    }
    fn unknown(&self, opcode: &str) -> String {
        self.err(format!(
            "the CPU device does not know the instruction `{opcode}`, so it refuses to run the kernel rather than guess"
        ))
    }
}

fn special(name: &str) -> Option<Special> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, d)) = name.split_once('.') {
        let d = dim(d)?;
        return Some(match base {
            "%tid" => Special::Tid(d),
            "%ntid" => Special::Ntid(d),
            "%ctaid" => Special::Ctaid(d),
            "%nctaid" => Special::Nctaid(d),
            _ => return None,
        });
    }
    Some(match name {
        "%laneid" => Special::LaneId,
        "%warpid" => Special::WarpId,
        "%nwarpid" => Special::NWarpId,
        "%smid" => Special::SmId,
        "%nsmid" => Special::NSmId,
        "%lanemask_eq" => Special::LaneMaskEq,
        "%lanemask_lt" => Special::LaneMaskLt,
        "%lanemask_le" => Special::LaneMaskLe,
        "%lanemask_gt" => Special::LaneMaskGt,
        "%lanemask_ge" => Special::LaneMaskGe,
        "%clock" => Special::Clock,
        "%clock64" => Special::Clock64,
        "%globaltimer" => Special::GlobalTimer,
        _ => return None,
    })
}

impl FnDecoder<'_> {
    fn reg(&self, o: &Operand) -> LoadResult<Reg> {
        match o {
            Operand::Name(n) => match self.lookup(n) {
                Some(Name::Reg(r)) => Ok(r),
                _ => Err(self.err(format!("`{n}` is not a register"))),
            },
            _ => Err(self.err(format!("expected a register, found {o:?}"))),
        }
    }

    fn maybe_reg(&self, o: &Operand) -> LoadResult<Option<Reg>> {
        match o {
            Operand::Sink => Ok(None),
            _ => self.reg(o).map(Some),
        }
    }

    /// A source operand of type `ty`: a register, an immediate, or the address of a
    /// module variable or function.
    fn src(&self, o: &Operand, ty: Ty) -> LoadResult<Src> {
        match o {
            // PTX writes no half-precision immediate (NVRTC moves one into a .b16 register
            // first); a number here would be read in some other type's bits.
            Operand::Num(n, _) if ty.half().is_some() => Err(self.err(format!(
                "`{n}`: a half-precision operand must be a register"
            ))),
            Operand::Num(n, negative) => {
                let mut v = immediate(n).ok_or_else(|| self.err(format!("bad number `{n}`")))?;
                let decimal_float = n.contains('.') && !n.starts_with("0d") && !n.starts_with("0f");
                if ty == Ty::F32 && (decimal_float || n.starts_with("0d")) {
                    v = u64::from((f64::from_bits(v) as f32).to_bits());
                } else if ty == Ty::F64 && n.starts_with("0f") {
                    v = f64::from(f32::from_bits(v as u32)).to_bits();
                } else if ty.float()
                    && !decimal_float
                    && !n.starts_with("0d")
                    && !n.starts_with("0f")
                {
                    let int = parse_int(n).unwrap_or(0) as f64;
                    v = if ty == Ty::F32 {
                        u64::from((int as f32).to_bits())
                    } else {
                        int.to_bits()
                    };
                }
                if *negative {
                    v = match ty {
                        Ty::F32 => u64::from((-f32::from_bits(v as u32)).to_bits()),
                        Ty::F64 => (-f64::from_bits(v)).to_bits(),
                        _ => v.wrapping_neg(),
                    };
                }
                Ok(Src::I(v & mask(ty)))
            }
            Operand::Name(n) => match self.lookup(n) {
                Some(Name::Reg(r)) => Ok(Src::R(r)),
                Some(Name::Shared(at)) => Ok(Src::I(at)),
                Some(_) => Err(self.err(format!(
                    "`{n}` is a parameter or local variable used as a value"
                ))),
                // PTX's one predefined constant (`warpSize` in CUDA C++).
                None if n == "WARP_SZ" => Ok(Src::I(32)),
                None => symbol_address(self.module, n)
                    .map(Src::I)
                    .ok_or_else(|| self.err(format!("`{n}` is not defined"))),
            },
            _ => Err(self.err(format!("expected a value, found {o:?}"))),
        }
    }

    fn address(&self, o: &Operand, space: Space) -> LoadResult<Addr> {
        let Operand::Address(base, offset) = o else {
            return Err(self.err("expected an address in brackets"));
        };
        match &**base {
            Operand::Name(n) => match self.lookup(n) {
                Some(Name::Reg(r)) => Ok(Addr::Reg(r, *offset)),
                Some(Name::KernelParam(at)) => Ok(Addr::KernelParam(add(at, *offset))),
                Some(Name::FrameParam(at)) => Ok(Addr::FrameParam(add(at, *offset))),
                Some(Name::Local(at)) => Ok(Addr::FrameLocal(add(at, *offset))),
                Some(Name::Shared(at)) => Ok(Addr::Abs(at.wrapping_add(*offset as u64))),
                None => {
                    let at = symbol_address(self.module, n)
                        .ok_or_else(|| self.err(format!("`{n}` is not defined")))?;
                    if space == Space::Generic {
                        let v = self.module.variables.iter().find(|v| v.name == *n);
                        if v.is_some_and(|v| v.space == Space::Shared) {
                            return Err(self.err(format!(
                                "`{n}` is shared: a generic access needs its generic address (cvta.shared)"
                            )));
                        }
                    }
                    Ok(Addr::Abs(at.wrapping_add(*offset as u64)))
                }
            },
            Operand::Num(n, negative) => {
                let v = immediate(n).ok_or_else(|| self.err(format!("bad number `{n}`")))?;
                let v = if *negative { v.wrapping_neg() } else { v };
                Ok(Addr::Abs(v.wrapping_add(*offset as u64)))
            }
            other => Err(self.err(format!("unsupported address {other:?}"))),
        }
    }
}

/// A parameter's or local's offset plus an address's: one outside 0 to 2^32 - 1 (a negative
/// or huge offset) is u32::MAX, which every access there finds outside its memory, rather
/// than a number wrapped back inside.
fn add(at: u32, offset: i64) -> u32 {
    i64::from(at)
        .checked_add(offset)
        .and_then(|v| u32::try_from(v).ok())
        .unwrap_or(u32::MAX)
}

fn space_of(word: &str) -> Option<Space> {
    Some(match word {
        "global" => Space::Global,
        "const" => Space::Const,
        "shared" => Space::Shared,
        "local" => Space::Local,
        "param" => Space::Param,
        _ => return None,
    })
}

/// Decode one instruction. `label` records a branch target to resolve once every label of
/// the function is known.
pub(super) fn decode(
    d: &mut FnDecoder,
    opcode: &str,
    ops: &[Operand],
    mut label: impl FnMut(&str),
) -> LoadResult<Op> {
    let parts: Vec<&str> = opcode.split('.').collect();
    let base = parts[0];
    let mods = &parts[1..];
    let ty = mods.iter().rev().find_map(|m| Ty::parse(m));
    let op = match base {
        "mov" => decode_mov(d, opcode, ops, ty)?,
        "ld" | "ldu" | "st" => decode_load_store(d, opcode, base == "st", mods, ops, ty)?,
        "cvta" => decode_cvta(d, opcode, mods, ops)?,
        "cvt" => decode_cvt(d, opcode, mods, ops)?,
        "setp" => decode_setp(d, opcode, mods, ops, ty)?,
        "set" => decode_set(d, opcode, mods, ops)?,
        "selp" => {
            need(d, opcode, ops, 4)?;
            let ty = ty.ok_or_else(|| d.unknown(opcode))?;
            Op::Selp {
                d: d.reg(&ops[0])?,
                a: d.src(&ops[1], ty)?,
                b: d.src(&ops[2], ty)?,
                p: d.src(&ops[3], Ty::Pred)?,
                mask: mask(ty),
            }
        }
        "bra" | "brx" => {
            if base == "brx" {
                return Err(d.unknown(opcode));
            }
            need(d, opcode, ops, 1)?;
            let Operand::Name(target) = &ops[0] else {
                return Err(d.err("a branch needs a label"));
            };
            label(target);
            Op::Bra { target: u32::MAX }
        }
        "ret" => Op::Ret,
        "exit" => Op::Exit,
        "trap" => Op::Trap,
        "membar" | "fence" | "prefetch" | "prefetchu" | "discard" | "nanosleep" => Op::Nop,
        "bar" | "barrier" => decode_barrier(d, opcode, mods, ops)?,
        "shfl" => decode_shfl(d, opcode, mods, ops)?,
        "vote" => decode_vote(d, opcode, mods, ops)?,
        "activemask" => {
            need(d, opcode, ops, 1)?;
            Op::Activemask { d: d.reg(&ops[0])? }
        }
        "atom" | "red" => decode_atomic(d, opcode, base == "atom", mods, ops, ty)?,
        "call" => decode_call(d, ops)?,
        "addc" | "subc" | "madc" => decode_carry(d, opcode, base, mods, ops, ty)?,
        "add" | "sub" | "mad" if mods.contains(&"cc") => {
            decode_carry(d, opcode, base, mods, ops, ty)?
        }
        "redux" => decode_redux(d, opcode, mods, ops, ty)?,
        "match" => decode_match(d, opcode, mods, ops, ty)?,
        "dp4a" | "dp2a" => decode_dot(d, opcode, base, mods, ops)?,
        "vabsdiff4" | "vabsdiff2" => decode_abs_diff(d, opcode, base, mods, ops)?,
        "lop3" => decode_lop3(d, opcode, mods, ops)?,
        _ => arithmetic(d, opcode, base, mods, ops, ty)?,
    };
    Ok(op)
}

/// `mov`: a register or immediate copy, a vector packed or unpacked, a special register, a
/// local variable's address.
fn decode_mov(d: &FnDecoder, opcode: &str, ops: &[Operand], ty: Option<Ty>) -> LoadResult<Op> {
    need(d, opcode, ops, 2)?;
    let ty = ty.ok_or_else(|| d.unknown(opcode))?;
    Ok(match (&ops[0], &ops[1]) {
        (Operand::Vector(parts), src) => Op::Unpack {
            ds: parts
                .iter()
                .map(|p| d.maybe_reg(p))
                .collect::<LoadResult<_>>()?,
            a: d.src(src, ty)?,
            bits: ty.bits() / parts.len() as u32,
        },
        (dst, Operand::Vector(parts)) => Op::Pack {
            d: d.reg(dst)?,
            parts: parts
                .iter()
                .map(|p| d.src(p, Ty::B64))
                .collect::<LoadResult<_>>()?,
            bits: ty.bits() / parts.len() as u32,
        },
        (dst, Operand::Name(n)) if n.starts_with('%') && d.lookup(n).is_none() => {
            let s = special(n).ok_or_else(|| {
                d.err(format!(
                    "the special register `{n}` is not known to the CPU device"
                ))
            })?;
            Op::Special { d: d.reg(dst)?, s }
        }
        (dst, Operand::Name(n)) if matches!(d.lookup(n), Some(Name::Local(_))) => {
            let Some(Name::Local(off)) = d.lookup(n) else {
                unreachable!("matched above")
            };
            Op::LocalAddr {
                d: d.reg(dst)?,
                off,
            }
        }
        (dst, src) => Op::Mov {
            d: d.reg(dst)?,
            a: d.src(src, ty)?,
            mask: mask(ty),
        },
    })
}

/// The mode the first of `modes`' words found among `mods` names (checked in the table's
/// order), or `opcode` refused as unknown: one table for each instruction's modifiers.
fn mode<T: Copy>(d: &FnDecoder, opcode: &str, mods: &[&str], modes: &[(&str, T)]) -> LoadResult<T> {
    modes
        .iter()
        .find(|(word, _)| mods.contains(word))
        .map(|&(_, mode)| mode)
        .ok_or_else(|| d.unknown(opcode))
}

/// Check that `opcode` has `k` operands.
fn need(d: &FnDecoder, opcode: &str, ops: &[Operand], k: usize) -> LoadResult<()> {
    let n = ops.len();
    if n == k {
        Ok(())
    } else {
        Err(d.err(format!("`{opcode}` takes {k} operands, found {n}")))
    }
}

fn decode_call(d: &mut FnDecoder, ops: &[Operand]) -> LoadResult<Op> {
    // call (ret), target, (args), proto;   call target, (args);   call (ret), target;
    let mut i = 0;
    let mut ret = None;
    let param = |d: &FnDecoder, o: &Operand| -> LoadResult<u32> {
        match o {
            Operand::Name(n) => match d.lookup(n) {
                Some(Name::FrameParam(at)) => Ok(at),
                _ => Err(d.err(format!("`{n}` is not a .param variable of the call"))),
            },
            other => Err(d.err(format!("unexpected call operand {other:?}"))),
        }
    };
    if let Some(Operand::Vector(items)) = ops.first() {
        if items.len() == 1 {
            ret = Some(param(d, &items[0])?);
            i = 1;
        } else if !items.is_empty() {
            return Err(d.err("a call returns one value at most"));
        } else {
            i = 1;
        }
    }
    let target = match ops.get(i) {
        Some(Operand::Name(n)) => match d.lookup(n) {
            Some(Name::Reg(r)) => CallTarget::Indirect(Src::R(r)),
            _ => CallTarget::Direct(
                *d.module
                    .by_name
                    .get(n)
                    .ok_or_else(|| d.err(format!("`{n}` is not a function")))?,
            ),
        },
        other => return Err(d.err(format!("a call needs a target, found {other:?}"))),
    };
    let mut args = Vec::new();
    if let Some(Operand::Vector(items)) = ops.get(i + 1) {
        for item in items {
            args.push(param(d, item)?);
        }
    }
    // Sizes come from the callee at run time (an indirect target is known only then); the
    // decoder keeps offsets, with a size of 0 meaning "the callee's".
    Ok(Op::Call {
        target,
        args: args.into_iter().map(|a| (a, 0)).collect(),
        ret: ret.map(|r| (r, 0)),
    })
}

/// Operand `i` as a source of type `ty`, 0 where there is none (the unused operands of a
/// shorter instruction).
fn src_at(d: &FnDecoder, ops: &[Operand], i: usize, ty: Ty) -> LoadResult<Src> {
    ops.get(i).map(|o| d.src(o, ty)).unwrap_or(Ok(Src::I(0)))
}

/// A predicate operand and whether it is negated (`!p`), as `setp`'s combining predicate,
/// `bar.red` and `vote` take it.
fn negated(operand: &Operand) -> (&Operand, bool) {
    match operand {
        Operand::Not(p) => (p, true),
        p => (p, false),
    }
}

#[cfg(test)]
mod tests {
    use crate::ir::*;
    use crate::load::decoded;

    /// decode: a `0d` immediate in an f32 instruction is rounded to f32 bits, a `0f` one in
    /// an f64 instruction widened, and `-0.5` negated as a float, not as an integer.
    #[test]
    fn float_immediates_take_their_instructions_type() {
        let ops = decoded(
            ".reg .f32 %f<2>;\n.reg .f64 %fd<1>;\nmov.f32 %f0, 0d3FF0000000000000;\n\
             mov.f64 %fd0, 0f3F800000;\nmov.f32 %f1, -0.5;",
        )
        .expect("decodes");
        let mov = |d, a: u64, mask| Op::Mov {
            d,
            a: Src::I(a),
            mask,
        };
        assert_eq!(ops[0], mov(0, 0x3F80_0000, 0xFFFF_FFFF));
        assert_eq!(ops[1], mov(2, 1f64.to_bits(), u64::MAX));
        assert_eq!(ops[2], mov(1, u64::from((-0.5f32).to_bits()), 0xFFFF_FFFF));
    }

    /// decode: `%tid.y` is the thread index's dimension 1, and `%tid.w` is refused by name.
    #[test]
    fn special_registers_are_read_or_refused_by_name() {
        let ops = decoded(".reg .b32 %r<1>;\nmov.u32 %r0, %tid.y;").expect("decodes");
        assert_eq!(
            ops[0],
            Op::Special {
                d: 0,
                s: Special::Tid(1)
            }
        );
        let err = decoded(".reg .b32 %r<1>;\nmov.u32 %r0, %tid.w;").expect_err("no such");
        assert!(err.contains("`%tid.w` is not known"), "{err}");
    }
}
