//! Decoding the memory instructions: `ld`, `ldu`, `st`, `atom`, `red` and `cvta`, with their
//! state spaces and the modifiers the interpreter may ignore.

use super::{need, space_of, FnDecoder};
use crate::ir::*;
use crate::load::parse::Operand;
use crate::load::LoadResult;

/// `ld`, `ldu` and `st` (`store`), scalar or vector.
pub(super) fn decode_load_store(
    d: &FnDecoder,
    opcode: &str,
    store: bool,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let ty = ty.ok_or_else(|| d.unknown(opcode))?;
    let mut space = Space::Generic;
    let mut width = 1;
    for m in mods {
        if let Some(s) = space_of(m) {
            space = s;
        } else if *m == "v2" {
            width = 2;
        } else if *m == "v4" {
            width = 4;
        } else if Ty::parse(m).is_none() && !ignorable(m) {
            return Err(d.unknown(opcode));
        }
    }
    need(d, opcode, ops, 2)?;
    let (value, at) = if store {
        (&ops[1], &ops[0])
    } else {
        (&ops[0], &ops[1])
    };
    let addr = d.address(at, space)?;
    let items: Vec<Operand> = match value {
        Operand::Vector(v) => v.clone(),
        other => vec![other.clone()],
    };
    if items.len() != width {
        return Err(d.err(format!(
            "`{opcode}` moves {width} values, found {}",
            items.len()
        )));
    }
    Ok(if store {
        Op::St {
            space,
            ty,
            srcs: items
                .iter()
                .map(|o| d.src(o, ty))
                .collect::<LoadResult<_>>()?,
            addr,
        }
    } else {
        Op::Ld {
            space,
            ty,
            ds: items
                .iter()
                .map(|o| d.maybe_reg(o))
                .collect::<LoadResult<_>>()?,
            addr,
        }
    })
}

/// `cvta` and `cvta.to`: between a space's addresses and generic ones.
pub(super) fn decode_cvta(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
) -> LoadResult<Op> {
    need(d, opcode, ops, 2)?;
    let to = mods.contains(&"to");
    let space = mods
        .iter()
        .find_map(|m| space_of(m))
        .ok_or_else(|| d.unknown(opcode))?;
    if space == Space::Param {
        return Err(d.unknown(opcode));
    }
    Ok(Op::Cvta {
        to,
        space,
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], Ty::U64)?,
    })
}

/// `atom`, and `red` (`atom` without a destination).
pub(super) fn decode_atomic(
    d: &FnDecoder,
    opcode: &str,
    returns: bool,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let ty = ty.ok_or_else(|| d.unknown(opcode))?;
    let space = mods
        .iter()
        .find_map(|m| space_of(m))
        .unwrap_or(Space::Generic);
    let op = mods
        .iter()
        .find_map(|m| {
            Some(match *m {
                "add" => AtomOp::Add,
                "min" => AtomOp::Min,
                "max" => AtomOp::Max,
                "inc" => AtomOp::Inc,
                "dec" => AtomOp::Dec,
                "and" => AtomOp::And,
                "or" => AtomOp::Or,
                "xor" => AtomOp::Xor,
                "exch" => AtomOp::Exch,
                "cas" => AtomOp::Cas,
                _ => return None,
            })
        })
        .ok_or_else(|| d.unknown(opcode))?;
    // Halves and pairs of halves are added atomically, each half rounded to nearest
    // (`atom.add.noftz.f16x2`: `atomicAdd` of a `__half2`); nothing else of theirs is.
    let half_add = ty.half().is_some() && op == AtomOp::Add && mods.contains(&"noftz");
    if mods.iter().any(|m| m.starts_with('v'))
        || (ty.half().is_some() && !half_add)
        || (ty.float() && op != AtomOp::Add && op != AtomOp::Exch)
    {
        return Err(d.unknown(opcode));
    }
    let (dst, rest) = if returns {
        (Some(d.reg(&ops[0])?), &ops[1..])
    } else {
        (None, ops)
    };
    let want = if op == AtomOp::Cas { 3 } else { 2 };
    if rest.len() != want {
        return Err(d.err(format!(
            "`{opcode}` takes {} operands",
            want + usize::from(dst.is_some())
        )));
    }
    Ok(Op::Atom {
        space,
        op,
        ty,
        d: dst,
        addr: d.address(&rest[0], space)?,
        b: d.src(&rest[1], ty)?,
        c: if op == AtomOp::Cas {
            d.src(&rest[2], ty)?
        } else {
            Src::I(0)
        },
    })
}

/// Modifiers that change nothing the interpreter models: caching hints, memory order
/// and scope (blocks run one at a time per host thread, accesses in program order).
fn ignorable(m: &str) -> bool {
    matches!(
        m,
        "nc" | "ca"
            | "cg"
            | "cs"
            | "lu"
            | "cv"
            | "wb"
            | "wt"
            | "weak"
            | "volatile"
            | "relaxed"
            | "acquire"
            | "release"
            | "acq_rel"
            | "sc"
            | "cta"
            | "gpu"
            | "sys"
            | "uni"
            | "aligned"
            | "L1::evict_last"
            | "L2::64B"
            | "L2::128B"
            | "L2::256B"
    )
}

#[cfg(test)]
mod tests {
    use crate::ir::*;
    use crate::load::decoded;

    /// decode: `ld.global.nc.v2.f32 {%f0, _}, [%rd0+-8]` loads two values (the second
    /// discarded) from 8 bytes below the register, its `.nc` hint ignored.
    #[test]
    fn a_vector_load_keeps_its_width_sink_and_negative_offset() {
        let ops = decoded(
            ".reg .f32 %f<1>;\n.reg .b64 %rd<1>;\nld.global.nc.v2.f32 {%f0, _}, [%rd0+-8];",
        )
        .expect("decodes");
        assert_eq!(
            ops[0],
            Op::Ld {
                space: Space::Global,
                ty: Ty::F32,
                ds: vec![Some(0), None],
                addr: Addr::Reg(1, -8),
            }
        );
    }

    /// decode: `atom.global.add.noftz.f16x2` and `.bf16` are atomic adds of halves; without
    /// `.noftz`, or another operation of halves, they are refused.
    #[test]
    fn halves_are_added_atomically_and_nothing_else() {
        let ops = decoded(
            ".reg .b32 %r<3>;\n.reg .b16 %rs<3>;\n.reg .b64 %rd<1>;\n\
             atom.global.add.noftz.f16x2 %r0, [%rd0], %r1;\n\
             atom.global.add.noftz.bf16 %rs0, [%rd0], %rs1;",
        )
        .expect("decodes");
        assert!(matches!(
            ops[0],
            Op::Atom {
                op: AtomOp::Add,
                ty: Ty::F16x2,
                ..
            }
        ));
        assert!(matches!(
            ops[1],
            Op::Atom {
                op: AtomOp::Add,
                ty: Ty::BF16,
                ..
            }
        ));
        for refused in [
            "atom.global.add.f16x2 %r0, [%rd0], %r1;",
            "atom.global.max.noftz.f16x2 %r0, [%rd0], %r1;",
        ] {
            let err = decoded(&format!(".reg .b32 %r<3>;\n.reg .b64 %rd<1>;\n{refused}"))
                .expect_err(refused);
            assert!(err.contains("atom.global"), "{err}");
        }
    }

    /// decode: `atom.global.min.f32` is refused (floats have atomic add and exchange only),
    /// and a `.v2` load into three registers is refused.
    #[test]
    fn a_float_atomic_min_and_a_mismatched_vector_are_refused() {
        let err =
            decoded(".reg .f32 %f<3>;\n.reg .b64 %rd<1>;\natom.global.min.f32 %f0, [%rd0], %f1;")
                .expect_err("refused");
        assert!(err.contains("`atom.global.min.f32`"), "{err}");
        let err = decoded(
            ".reg .f32 %f<3>;\n.reg .b64 %rd<1>;\nld.global.v2.f32 {%f0, %f1, %f2}, [%rd0];",
        )
        .expect_err("refused");
        assert!(err.contains("moves 2 values, found 3"), "{err}");
    }
}
