//! The fused multiply-add contraction: which loose multiplies and adds ptxas fuses, and so
//! which results are rounded once rather than twice, from the registers each instruction
//! reads and writes.

use std::collections::HashMap;

use crate::ir::*;

/// Whether `opcode` is a floating-point multiply, add or subtract that names no rounding:
/// PTX leaves ptxas free to fuse such a multiply into the add that uses it. The half types
/// are taken as f32's rule has it (cuda_fp16.h's `__hmul` and `__hadd` are loose `mul.f16`
/// and `add.f16`), which the differential test's half templates hold to the H100.
pub(super) fn loose_rounding(opcode: &str) -> bool {
    let parts: Vec<&str> = opcode.split('.').collect();
    matches!(parts[0], "mul" | "add" | "sub")
        && parts
            .iter()
            .any(|p| matches!(*p, "f32" | "f64" | "f16" | "bf16" | "f16x2" | "bf16x2"))
        && !parts
            .iter()
            .any(|p| matches!(*p, "rn" | "rz" | "rm" | "rp"))
}

/// Whether ptxas leaves a loose multiply before `op` and an add after it apart: seen in the
/// SASS it makes for sm_90 (an H200's toolkit, CUDA 13), a multiply and the add reading it
/// stay apart across an IEEE-rounded division, root or reciprocal (f32 and f64), an
/// `rsqrt.approx.f64`, and an integer division or remainder but a 32-bit unsigned one; they
/// fuse across the other approximations, `rcp.approx.ftz.f64`, `mul.hi` and conversions.
/// (BlackScholes, of NVIDIA's samples, subtracts a product computed before a `div.rn.f32`:
/// fused, 737 of its 4000 call prices were off by a few units in the last place.)
fn ends_fusion(op: &Op) -> bool {
    match op {
        Op::Float {
            op: FloatOp::Div | FloatOp::Sqrt | FloatOp::Rcp,
            ty: Ty::F32 | Ty::F64,
            ..
        }
        | Op::Float {
            op: FloatOp::Approx(Approx::Rsqrt),
            ty: Ty::F64,
            ..
        } => true,
        Op::Int {
            op: IntOp::Div | IntOp::Rem,
            ty,
            ..
        } => *ty != Ty::U32,
        _ => false,
    }
}

/// Fuse as ptxas does (seen on an H100 by the differential test): a loose multiply whose
/// result is read once, by a loose add or subtract of the same type later in its block, with
/// its operands unchanged in between and nothing between that ends ptxas's window
/// ([`ends_fusion`]), becomes one fused multiply-add there. lab03's loop keeps its
/// multiplies: their results are read twice.
pub(super) fn contract(
    code: &mut [Inst],
    loose: &[bool],
    labels: &HashMap<String, u32>,
    start: u32,
) {
    let targets: std::collections::HashSet<usize> =
        labels.values().map(|&t| (t - start) as usize).collect();
    let mut reads: HashMap<Reg, usize> = HashMap::new();
    for inst in code.iter() {
        for r in inst.op.reads() {
            *reads.entry(r).or_insert(0) += 1;
        }
        if let Some((p, _)) = inst.guard {
            *reads.entry(p).or_insert(0) += 1;
        }
    }
    for i in 0..code.len() {
        // A saturated product is not what the fused one would add.
        let Op::Float {
            op: FloatOp::Mul,
            ty,
            ftz,
            sat: false,
            d: m,
            a: x,
            b: y,
            ..
        } = code[i].op.clone()
        else {
            continue;
        };
        if !loose[i] || code[i].guard.is_some() || reads.get(&m) != Some(&1) {
            continue;
        }
        for j in i + 1..code.len() {
            if targets.contains(&j)
                || ends_fusion(&code[j].op)
                || matches!(
                    code[j].op,
                    Op::Bra { .. } | Op::Call { .. } | Op::Ret | Op::Exit
                )
            {
                break;
            }
            if !code[j].op.reads().contains(&m) {
                if code[j]
                    .op
                    .writes()
                    .iter()
                    .any(|w| Src::R(*w) == x || Src::R(*w) == y || *w == m)
                {
                    break;
                }
                continue;
            }
            if let Op::Float {
                op: add @ (FloatOp::Add | FloatOp::Sub),
                ty: t2,
                ftz: ftz2,
                rnd,
                sat,
                d,
                a,
                b,
                ..
            } = code[j].op.clone()
            {
                if loose[j]
                    && t2 == ty
                    && ftz2 == ftz
                    && code[j].guard.is_none()
                    && (a == Src::R(m)) != (b == Src::R(m))
                {
                    let (fused, c) = match (add, a == Src::R(m)) {
                        (FloatOp::Add, true) => (FloatOp::Fma, b),
                        (FloatOp::Add, false) => (FloatOp::Fma, a),
                        (_, true) => (FloatOp::FmaSub, b),
                        (_, false) => (FloatOp::FmaRev, a),
                    };
                    code[j].op = Op::Float {
                        op: fused,
                        ty,
                        rnd,
                        ftz,
                        sat,
                        d,
                        a: x,
                        b: y,
                        c,
                    };
                }
            }
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ir::*;
    use crate::load::decoded;

    /// The `Op` of a loose f32 `op` of `%f0` and `%f1` with `c`, into `d`.
    fn fused(op: FloatOp, d: Reg, c: Reg) -> Op {
        Op::Float {
            op,
            ty: Ty::F32,
            rnd: Rnd::N,
            ftz: false,
            sat: false,
            d,
            a: Src::R(0),
            b: Src::R(1),
            c: Src::R(c),
        }
    }

    /// contract: a loose `mul` read only by a loose `add` becomes an `fma` there, and one
    /// subtracted from a value a reversed one (`c - a * b`), across an unrelated instruction.
    #[test]
    fn a_loose_multiply_read_once_by_an_add_is_fused() {
        let ops = decoded(
            ".reg .f32 %f<8>;\nmul.f32 %f2, %f0, %f1;\nmov.f32 %f7, %f4;\n\
             add.f32 %f3, %f2, %f4;\nmul.f32 %f5, %f0, %f1;\nsub.f32 %f6, %f4, %f5;",
        )
        .expect("decodes");
        assert_eq!(ops[2], fused(FloatOp::Fma, 3, 4));
        assert_eq!(ops[4], fused(FloatOp::FmaRev, 6, 4));
    }

    /// contract: with contraction off nothing is fused, a half's loose pair included (the
    /// differential test's `hadd(hmul(a, b), c)` on an H100); by default it is.
    #[test]
    fn nothing_is_fused_where_ptxas_is_told_not_to() {
        let body = ".reg .b16 %h<4>;\nmul.f16 %h2, %h0, %h1;\nadd.f16 %h3, %h2, %h1;";
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n{body}\n}}\n"
        );
        let add = |contract| {
            let module = crate::load::load_with(&ptx, &crate::memory::Memory::default(), contract)
                .expect("loads");
            module.code[1].op.clone()
        };
        assert!(
            matches!(
                add(false),
                Op::Float {
                    op: FloatOp::Add,
                    ..
                }
            ),
            "{:?}",
            add(false)
        );
        assert!(
            matches!(
                add(true),
                Op::Float {
                    op: FloatOp::Fma,
                    ..
                }
            ),
            "{:?}",
            add(true)
        );
    }

    /// contract: a `div.rn.f32`, a `sqrt.rn.f64` or a `div.s32` between a `mul` and its `add`
    /// keeps them apart, as ptxas does; a `div.u32` or an `ex2.approx.f32` does not.
    #[test]
    fn a_multiply_and_its_add_stay_apart_across_a_division() {
        for (between, apart) in [
            ("div.rn.f32 %f5, %f0, %f1;", true),
            ("sqrt.rn.f64 %fd1, %fd0;", true),
            ("div.s32 %r2, %r0, %r1;", true),
            ("rem.u64 %rd2, %rd0, %rd1;", true),
            ("div.u32 %r2, %r0, %r1;", false),
            ("ex2.approx.f32 %f5, %f0;", false),
        ] {
            let ops = decoded(&format!(
                ".reg .f32 %f<8>;\n.reg .f64 %fd<4>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n\
                 mul.f32 %f2, %f0, %f1;\n{between}\nadd.f32 %f3, %f2, %f4;"
            ))
            .expect("decodes");
            let fused = matches!(
                ops[2],
                Op::Float {
                    op: FloatOp::Fma,
                    ..
                }
            );
            assert_eq!(fused, !apart, "{between}: {:?}", ops[2]);
        }
    }

    /// contract: a `mul` whose result another instruction also reads is not fused, nor one
    /// into an `add.rn`, nor one whose operand is written before the `add`.
    #[test]
    fn a_multiply_read_twice_or_into_a_rounded_add_is_not_fused() {
        let ops = decoded(
            ".reg .f32 %f<10>;\nmul.f32 %f2, %f0, %f1;\nadd.f32 %f3, %f2, %f4;\n\
             mov.f32 %f5, %f2;\nmul.f32 %f6, %f0, %f1;\nadd.rn.f32 %f7, %f6, %f4;\n\
             mul.f32 %f8, %f0, %f1;\nmov.f32 %f1, %f4;\nadd.f32 %f9, %f8, %f4;",
        )
        .expect("decodes");
        for i in [1, 4, 7] {
            assert!(
                matches!(
                    ops[i],
                    Op::Float {
                        op: FloatOp::Add,
                        ..
                    }
                ),
                "{i}: {:?}",
                ops[i]
            );
        }
    }
}
