//! The fused multiply-add contraction: which loose multiplies and adds ptxas fuses, and so
//! which results are rounded once rather than twice, from the registers each instruction
//! reads and writes.

use std::collections::{HashMap, HashSet};

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

/// A product ptxas may fuse into the add or subtract that reads it, `x * y`: a loose `mul`
/// (a saturated one is not what the fused product would add), or the multiply by the
/// unit's reciprocal that ends a `div.approx.f32` or `div.full.f32` (`div`, whether `full`).
/// ptxas fuses the division's as a `mul`'s, by the same rules: read in an H200's SASS,
/// `div.approx.ftz.f32` then `add.ftz.f32` is `MUFU.RCP R6, R6; FFMA.FTZ R7, R0, R6, R7`,
/// each of the four divisions fused into an add or subtract of either operand order (after
/// `div.full`'s and the non-`.ftz` scalings), apart where the quotient is read twice, the add
/// is `.rn` or their `.ftz` differs, or an IEEE division or root lies between.
struct Product {
    ty: Ty,
    ftz: bool,
    x: Src,
    y: Src,
    div: Option<bool>,
}

impl Product {
    fn of(inst: &Inst, loose: bool) -> Option<Product> {
        if inst.guard.is_some() {
            return None;
        }
        match inst.op {
            Op::Float {
                op: FloatOp::Mul,
                ty,
                ftz,
                sat: false,
                a,
                b,
                ..
            } if loose => Some(Product {
                ty,
                ftz,
                x: a,
                y: b,
                div: None,
            }),
            Op::Float {
                op: FloatOp::DivApprox { full },
                ty,
                ftz,
                a,
                b,
                ..
            } => Some(Product {
                ty,
                ftz,
                x: a,
                y: b,
                div: Some(full),
            }),
            _ => None,
        }
    }
}

/// The instruction that last writes `m` before `j` in `j`'s block: none past a label, since
/// a branch may arrive there with another value (and ptxas fuses within a block alone).
fn producer(code: &[Inst], targets: &HashSet<usize>, j: usize, m: Reg) -> Option<usize> {
    let mut k = j;
    while k > 0 && !targets.contains(&k) {
        k -= 1;
        if code[k].op.writes().contains(&m) {
            return Some(k);
        }
    }
    None
}

/// Whether nothing between the product at `i` and the add at `j` keeps them apart: nothing
/// that ends ptxas's window ([`ends_fusion`]), no branch, call or return, and no write of
/// the product's operands (the add would read them again).
fn window_open(code: &[Inst], i: usize, j: usize, p: &Product) -> bool {
    code[i + 1..j].iter().all(|inst| {
        !ends_fusion(&inst.op)
            && !matches!(
                inst.op,
                Op::Bra { .. } | Op::Call { .. } | Op::Ret | Op::Exit
            )
            && !inst
                .op
                .writes()
                .iter()
                .any(|w| Src::R(*w) == p.x || Src::R(*w) == p.y)
    })
}

/// Fuse as ptxas does (seen on an H100 by the differential test, and in an H200's SASS): a
/// product ([`Product`]) whose result is read once, by a loose add or subtract of the same
/// type and `.ftz` later in its block, with its operands unchanged in between and nothing
/// between that ends ptxas's window ([`ends_fusion`]), becomes one fused multiply-add there.
/// Where both of an add's operands are such products, ptxas fuses its first operand's,
/// whichever was computed first (an H200's SASS of `mul`s and of `div.full` and
/// `div.approx`, in both orders, as HeCBench's langevin adds `coshf(x) / sinhf(x)` to
/// `-1.f / x` under fast math). lab03's loop keeps its multiplies: their results are read
/// twice. A product that overwrites its own operand (`mul %f1, %f1, %f2`) is left apart,
/// since the fused add would read the operand again: ptxas fuses it; PTX from NVRTC writes
/// each register once.
pub(super) fn contract(
    code: &mut [Inst],
    loose: &[bool],
    labels: &HashMap<String, u32>,
    start: u32,
) {
    let targets: HashSet<usize> = labels.values().map(|&t| (t - start) as usize).collect();
    let mut reads: HashMap<Reg, usize> = HashMap::new();
    for inst in code.iter() {
        for r in inst.op.reads() {
            *reads.entry(r).or_insert(0) += 1;
        }
        if let Some((p, _)) = inst.guard {
            *reads.entry(p).or_insert(0) += 1;
        }
    }
    for j in 0..code.len() {
        let Op::Float {
            op: add @ (FloatOp::Add | FloatOp::Sub),
            ty,
            ftz,
            rnd,
            sat,
            d,
            a,
            b,
            ..
        } = code[j].op.clone()
        else {
            continue;
        };
        if !loose[j] || code[j].guard.is_some() {
            continue;
        }
        for (m, first) in [(a, true), (b, false)] {
            let Src::R(m) = m else {
                continue;
            };
            let Some(i) = producer(code, &targets, j, m).filter(|_| reads.get(&m) == Some(&1))
            else {
                continue;
            };
            let Some(p) = Product::of(&code[i], loose[i]) else {
                continue;
            };
            if p.ty != ty
                || p.ftz != ftz
                || p.x == Src::R(m)
                || p.y == Src::R(m)
                || !window_open(code, i, j, &p)
            {
                continue;
            }
            let c = if first { b } else { a };
            let form = match (add, first) {
                (FloatOp::Add, _) => Fused::Add,
                (_, true) => Fused::Sub,
                (_, false) => Fused::Rev,
            };
            let op = match (p.div, form) {
                (Some(full), form) => FloatOp::DivApproxFused { full, form },
                (None, Fused::Add) => FloatOp::Fma,
                (None, Fused::Sub) => FloatOp::FmaSub,
                (None, Fused::Rev) => FloatOp::FmaRev,
            };
            code[j].op = Op::Float {
                op,
                ty,
                rnd,
                ftz,
                sat,
                d,
                a: p.x,
                b: p.y,
                c,
            };
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ir::*;
    use crate::load::decoded;

    /// An add left apart: no multiply fused into it.
    fn is_plain_add(op: &Op) -> bool {
        matches!(
            op,
            Op::Float {
                op: FloatOp::Add,
                ..
            }
        )
    }

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
        assert!(is_plain_add(&add(false)), "{:?}", add(false));
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
            assert!(is_plain_add(&ops[i]), "{i}: {:?}", ops[i]);
        }
    }

    /// contract: a quotient of each division ptxas ends with a multiply, read once by a loose
    /// add or subtract of its `.ftz`, becomes the division fused there, in either operand
    /// order (an H200's SASS: `FFMA.FTZ R7, -R0, R6, R7` for `c - a / b`).
    #[test]
    fn a_quotient_read_once_by_an_add_is_fused() {
        for (div, add, form) in [
            (
                "div.approx.ftz.f32",
                "add.ftz.f32 %f3, %f2, %f4;",
                Fused::Add,
            ),
            ("div.full.ftz.f32", "add.ftz.f32 %f3, %f4, %f2;", Fused::Add),
            ("div.approx.f32", "sub.f32 %f3, %f2, %f4;", Fused::Sub),
            ("div.full.f32", "sub.f32 %f3, %f4, %f2;", Fused::Rev),
        ] {
            let ops = decoded(&format!(
                ".reg .f32 %f<8>;\n{div} %f2, %f0, %f1;\nabs.f32 %f5, %f6;\n{add}"
            ))
            .expect("decodes");
            let Op::Float {
                op: FloatOp::DivApprox { full },
                ftz,
                ..
            } = ops[0]
            else {
                panic!("{div}: {:?}", ops[0]);
            };
            assert_eq!(
                ops[2],
                Op::Float {
                    op: FloatOp::DivApproxFused { full, form },
                    ty: Ty::F32,
                    rnd: Rnd::N,
                    ftz,
                    sat: false,
                    d: 3,
                    a: Src::R(0),
                    b: Src::R(1),
                    c: Src::R(4),
                },
                "{div} {add}"
            );
        }
    }

    /// contract: a quotient stays apart from its add where ptxas keeps them apart (an H200's
    /// SASS: `FMUL.FTZ` then `FADD`): read twice, into an `add.rn`, into an add of another
    /// `.ftz`, across a `div.rn.f32`.
    #[test]
    fn a_quotient_stays_apart_where_a_product_would() {
        for body in [
            "div.approx.ftz.f32 %f2, %f0, %f1;\nadd.ftz.f32 %f3, %f2, %f4;\nmov.f32 %f5, %f2;",
            "div.approx.ftz.f32 %f2, %f0, %f1;\nadd.rn.ftz.f32 %f3, %f2, %f4;",
            "div.approx.ftz.f32 %f2, %f0, %f1;\nadd.f32 %f3, %f2, %f4;",
            "div.approx.f32 %f2, %f0, %f1;\nadd.ftz.f32 %f3, %f2, %f4;",
            "div.full.ftz.f32 %f2, %f0, %f1;\ndiv.rn.f32 %f5, %f6, %f4;\nadd.ftz.f32 %f3, %f2, %f4;",
        ] {
            let ops = decoded(&format!(".reg .f32 %f<8>;\n{body}")).expect("decodes");
            let add = ops
                .iter()
                .find(|op| matches!(op, Op::Float { d: 3, .. }))
                .expect("the add");
            assert!(is_plain_add(add), "{body}: {add:?}");
        }
    }

    /// contract: where both of an add's operands are products it could fuse, ptxas fuses the
    /// first operand's, whichever was computed first (an H200's SASS: `FMUL.FTZ R11, R7, R6;
    /// FFMA.FTZ R11, R0, R7, R11` for `mul p; mul q; add q, p`); fusing the earlier product
    /// gives langevin's sum a unit off in 927 of 2048 elements.
    #[test]
    fn the_first_operands_product_is_fused() {
        let ops = decoded(
            ".reg .f32 %f<12>;\nmul.f32 %f2, %f4, %f1;\nmul.f32 %f3, %f0, %f1;\n\
             add.f32 %f5, %f3, %f2;\nmul.f32 %f6, %f4, %f1;\nmul.f32 %f7, %f0, %f1;\n\
             sub.f32 %f8, %f6, %f7;\ndiv.full.ftz.f32 %f9, %f4, %f1;\n\
             div.approx.ftz.f32 %f10, %f0, %f1;\nadd.ftz.f32 %f11, %f10, %f9;",
        )
        .expect("decodes");
        assert_eq!(ops[2], fused(FloatOp::Fma, 5, 2));
        let Op::Float { op, a, c, .. } = &ops[5] else {
            panic!("{:?}", ops[5]);
        };
        assert_eq!((op, a, c), (&FloatOp::FmaSub, &Src::R(4), &Src::R(7)));
        let Op::Float { op, a, c, .. } = &ops[8] else {
            panic!("{:?}", ops[8]);
        };
        assert_eq!(
            (op, a, c),
            (
                &FloatOp::DivApproxFused {
                    full: false,
                    form: Fused::Add
                },
                &Src::R(0),
                &Src::R(9)
            )
        );
    }

    /// contract: a product that overwrites its own operand is left apart: fused, the add
    /// would read the product where the operand was (`(a * b) * b + c`).
    #[test]
    fn a_product_over_its_own_operand_is_left_apart() {
        let ops = decoded(
            ".reg .f32 %f<8>;\nmul.f32 %f0, %f0, %f1;\nadd.f32 %f3, %f0, %f4;\n\
             div.approx.f32 %f1, %f5, %f1;\nadd.f32 %f6, %f1, %f4;",
        )
        .expect("decodes");
        for i in [1, 3] {
            assert!(is_plain_add(&ops[i]), "{i}: {:?}", ops[i]);
        }
    }
}
