//! Decoding the instructions between threads: barriers, `shfl.sync`, `vote.sync`,
//! `redux.sync` and `match.sync`.

use super::{mode, need, negated, FnDecoder};
use crate::ir::*;
use crate::load::parse::Operand;
use crate::load::LoadResult;

/// `bar` and `barrier`: whole-block barriers and `bar.warp.sync`.
pub(super) fn decode_barrier(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    let n = ops.len();
    if has("warp") {
        need(d, opcode, ops, 1)?;
        Ok(Op::WarpSync {
            mask: d.src(&ops[0], Ty::B32)?,
        })
    } else if (has("sync") || mods.is_empty() || has("cta")) && n == 1 {
        Ok(Op::Bar)
    } else if has("red") && n == 3 {
        // bar.red.popc.u32 d, 0, {!}p; bar.red.and.pred d, 0, {!}p.
        let op = mode(
            d,
            opcode,
            mods,
            &[
                ("popc", BarRedOp::Popc),
                ("and", BarRedOp::And),
                ("or", BarRedOp::Or),
            ],
        )?;
        let (p, neg) = negated(&ops[2]);
        Ok(Op::BarRed {
            op,
            d: d.reg(&ops[0])?,
            p: d.src(p, Ty::Pred)?,
            neg,
        })
    } else {
        Err(d.err(format!(
            "`{opcode}` with {n} operands: only whole-block barriers (`bar.sync 0`) are supported"
        )))
    }
}

/// `shfl.sync`.
pub(super) fn decode_shfl(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    if !has("sync") {
        return Err(d.unknown(opcode));
    }
    need(d, opcode, ops, 5)?;
    let mode = mode(
        d,
        opcode,
        mods,
        &[
            ("up", ShflMode::Up),
            ("down", ShflMode::Down),
            ("bfly", ShflMode::Bfly),
            ("idx", ShflMode::Idx),
        ],
    )?;
    let (dst, p) = match &ops[0] {
        Operand::Pair(a, b) => (d.reg(a)?, d.maybe_reg(b)?),
        other => (d.reg(other)?, None),
    };
    Ok(Op::Shfl {
        mode,
        d: dst,
        p,
        a: d.src(&ops[1], Ty::B32)?,
        b: d.src(&ops[2], Ty::B32)?,
        c: d.src(&ops[3], Ty::B32)?,
        mask: d.src(&ops[4], Ty::B32)?,
    })
}

/// `vote.sync`.
pub(super) fn decode_vote(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    if !has("sync") {
        return Err(d.unknown(opcode));
    }
    need(d, opcode, ops, 3)?;
    let mode = mode(
        d,
        opcode,
        mods,
        &[
            ("all", VoteMode::All),
            ("any", VoteMode::Any),
            ("uni", VoteMode::Uni),
            ("ballot", VoteMode::Ballot),
        ],
    )?;
    let (p, neg) = negated(&ops[1]);
    Ok(Op::Vote {
        mode,
        d: d.reg(&ops[0])?,
        a: d.src(p, Ty::Pred)?,
        neg,
        mask: d.src(&ops[2], Ty::B32)?,
    })
}

/// `redux.sync.op.type d, a, membermask` on 32-bit integers.
pub(super) fn decode_redux(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    let ty = ty
        .filter(|t| matches!(t, Ty::U32 | Ty::S32 | Ty::B32))
        .ok_or_else(|| d.unknown(opcode))?;
    let op = mode(
        d,
        opcode,
        mods,
        &[
            ("add", ReduxOp::Add),
            ("min", ReduxOp::Min),
            ("max", ReduxOp::Max),
            ("and", ReduxOp::And),
            ("or", ReduxOp::Or),
            ("xor", ReduxOp::Xor),
        ],
    )?;
    if !has("sync") {
        return Err(d.unknown(opcode));
    }
    need(d, opcode, ops, 3)?;
    Ok(Op::Redux {
        op,
        ty,
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], ty)?,
        mask: d.src(&ops[2], Ty::B32)?,
    })
}

/// `match.any.sync.type d, a, membermask` and `match.all.sync.type d{|p}, a, membermask`.
pub(super) fn decode_match(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    let ty = ty
        .filter(|t| matches!(t, Ty::B32 | Ty::B64))
        .ok_or_else(|| d.unknown(opcode))?;
    if !has("sync") || has("any") == has("all") {
        return Err(d.unknown(opcode));
    }
    need(d, opcode, ops, 3)?;
    let (dst, p) = match &ops[0] {
        Operand::Pair(a, b) if has("all") => (d.reg(a)?, d.maybe_reg(b)?),
        other => (d.reg(other)?, None),
    };
    Ok(Op::Match {
        all: has("all"),
        ty,
        d: dst,
        p,
        a: d.src(&ops[1], ty)?,
        mask: d.src(&ops[2], Ty::B32)?,
    })
}

#[cfg(test)]
mod tests {
    use crate::ir::*;
    use crate::load::decoded;

    /// decode: `vote.sync.ballot.b32` of `!%p0` keeps the negation, and `shfl.sync` into
    /// `%r0|%p0` keeps its predicate destination.
    #[test]
    fn negated_votes_and_shuffle_predicates_are_kept() {
        let ops = decoded(
            ".reg .pred %p<1>;\n.reg .b32 %r<2>;\nvote.sync.ballot.b32 %r0, !%p0, -1;\n\
             shfl.sync.bfly.b32 %r0|%p0, %r1, 1, 31, -1;",
        )
        .expect("decodes");
        assert_eq!(
            ops[0],
            Op::Vote {
                mode: VoteMode::Ballot,
                d: 1,
                a: Src::R(0),
                neg: true,
                mask: Src::I(0xFFFF_FFFF),
            }
        );
        assert_eq!(
            ops[1],
            Op::Shfl {
                mode: ShflMode::Bfly,
                d: 1,
                p: Some(0),
                a: Src::R(2),
                b: Src::I(1),
                c: Src::I(31),
                mask: Src::I(0xFFFF_FFFF),
            }
        );
    }

    /// decode: the first word of a mode's table that the modifiers name decides it
    /// (`redux.sync.min` is a minimum, not a sum), and a mode no table names is refused by
    /// its opcode, not taken as the table's first.
    #[test]
    fn a_mode_is_read_from_its_table_or_refused() {
        let ops = decoded(".reg .b32 %r<2>;\nredux.sync.min.s32 %r0, %r1, -1;").expect("decodes");
        assert!(
            matches!(
                ops[0],
                Op::Redux {
                    op: ReduxOp::Min,
                    ty: Ty::S32,
                    ..
                }
            ),
            "{ops:?}"
        );
        for unknown in [
            "redux.sync.mul.s32 %r0, %r1, -1;",
            "vote.sync.none.pred %p0, %p0, -1;",
            "shfl.sync.rot.b32 %r0, %r1, 1, 31, -1;",
        ] {
            let err = decoded(&format!(".reg .pred %p<1>;\n.reg .b32 %r<2>;\n{unknown}"))
                .expect_err("refused");
            let opcode = unknown.split(' ').next().unwrap_or_default();
            assert!(err.contains(opcode), "{unknown}: {err}");
        }
    }

    /// decode: `bar.sync 0, 64` (a barrier for part of the block) is refused, not run as a
    /// whole-block barrier.
    #[test]
    fn a_partial_barrier_is_refused() {
        let err = decoded("bar.sync 0, 64;").expect_err("refused");
        assert!(err.contains("only whole-block barriers"), "{err}");
    }
}
