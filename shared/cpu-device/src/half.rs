//! Half precision as the H100 computes it: IEEE binary16 (`.f16`, cuda_fp16.h's `__half`)
//! and bfloat16 (`.bf16`, cuda_bf16.h's `__nv_bfloat16`), one in a 16-bit register or two
//! packed in 32 bits (`.f16x2`, `.bf16x2`, the low half first).
//!
//! Every result is the exact result rounded once. Each operation is done in f64 rounded to
//! odd: the f64 nearest the exact value, moved one step towards it where it is inexact and
//! its last bit even. A value rounded to odd at 53 bits and then to any narrower precision p
//! (p + 2 <= 53: 11 for binary16, 8 for bfloat16) in any mode gives what rounding the exact
//! value would (Boldo and Melquiond's round-to-odd theorem): the odd f64 lies strictly
//! between the same two p-bit neighbours as the exact value and is never on one of them or
//! on their midpoint unless the exact value is. The sum of two f64s is exactly `s + e`
//! (two_sum), and a product of two halves is exact in f64 (at most 22 significant bits,
//! exponents within f64's normal range), so the rounding to odd knows the exact value.
//!
//! The rules of the PTX ISA's half-precision instructions (its sections on `add`, `sub`,
//! `mul`, `fma`, `neg`, `abs`, `min`, `max` for `.f16`/`.bf16`): only `.rn`; subnormals kept
//! unless `.ftz` (`.f16` alone), which flushes subnormal operands and results to zeros of
//! their sign; `.sat` clamps to [0, 1] with a NaN to +0; `.relu` makes a negative result
//! +0; a NaN result is the canonical NaN, 0x7fff in either format; `min` and `max` give the
//! other operand for one NaN, the canonical NaN for two, and with `.NaN` for any.

use crate::float::NAN32;
use crate::ir::{FloatOp, Half, Rnd, Ty};
use crate::ops::round_integral;

/// The canonical NaN of both formats.
pub const NAN16: u16 = 0x7fff;

impl Half {
    /// Fraction bits.
    fn fraction(self) -> u32 {
        match self {
            Half::F16 => 10,
            Half::BF16 => 7,
        }
    }

    fn bias(self) -> i32 {
        match self {
            Half::F16 => 15,
            Half::BF16 => 127,
        }
    }

    /// The quiet bit of a NaN: the fraction's top bit.
    fn quiet(self) -> u16 {
        1 << (self.fraction() - 1)
    }

    /// An f64's NaN narrowed: its sign and its payload's top bits, quieted, as the H100's
    /// narrowing to an f32 keeps them (its `cvt.rn.f16.f64` of 0x7ff8000000000000 gave 0x7e00
    /// at run time, where an f32's NaN gives the canonical NaN; NVRTC folds a constant's to
    /// the canonical NaN).
    pub fn narrow_nan(self, bits: u64) -> u16 {
        let sign = (bits >> 48) as u16 & 0x8000;
        let payload = (bits >> (52 - self.fraction())) as u16 & ((1 << self.fraction()) - 1);
        sign | self.infinity() | payload | self.quiet()
    }

    /// The bits of +infinity.
    fn infinity(self) -> u16 {
        match self {
            Half::F16 => 0x7c00,
            Half::BF16 => 0x7f80,
        }
    }

    pub fn is_nan(self, h: u16) -> bool {
        h & 0x7fff > self.infinity()
    }

    fn is_subnormal(self, h: u16) -> bool {
        h & self.infinity() == 0 && h & 0x7fff != 0
    }

    /// `h` as an f64, exactly (a NaN comes out some f64 NaN).
    pub fn to_f64(self, h: u16) -> f64 {
        let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
        let m = self.fraction();
        let exp = i32::from((h & 0x7fff) >> m);
        let frac = f64::from(h & ((1 << m) - 1));
        let max_exp = (1 << (15 - m)) - 1;
        if exp == max_exp {
            return if frac == 0.0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            };
        }
        // A subnormal is frac * 2^(1 - bias - m); a normal has the hidden bit.
        let (significand, e) = if exp == 0 {
            (frac, 1 - self.bias() - m as i32)
        } else {
            (frac + f64::from(1u32 << m), exp - self.bias() - m as i32)
        };
        sign * significand * pow2(e)
    }

    /// `x`, exact or rounded to odd at 53 bits, rounded to the format in `rnd`: subnormal
    /// results kept, overflow to infinity or the largest finite value as the mode says,
    /// a NaN the canonical NaN.
    pub fn round(self, x: f64, rnd: Rnd) -> u16 {
        if x.is_nan() {
            return NAN16;
        }
        let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
        let negative = sign != 0;
        if x.is_infinite() {
            return sign | self.infinity();
        }
        if x == 0.0 {
            return sign;
        }
        let m = self.fraction();
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        // |x| = significand * 2^(exp - 52); an f64 subnormal is far below every half and
        // rounds as any nonzero value that small does.
        let (significand, exp) = if biased == 0 {
            (0u64, i32::MIN / 2)
        } else {
            ((bits & ((1 << 52) - 1)) | (1 << 52), biased - 1023)
        };
        let min_exp = 1 - self.bias();
        // The result's quantum: 2^q, its last place.
        let q = exp.max(min_exp) - m as i32;
        // A shift of at least 52 - m > 0; past 63 every bit is below the quantum's half.
        let shift = q - (exp - 52);
        let (mut n, rest, half) = if biased == 0 || shift > 63 {
            (0u64, 1u64, 2u64)
        } else {
            let shift = shift as u32;
            (
                significand >> shift,
                significand & ((1 << shift) - 1),
                1u64 << (shift - 1),
            )
        };
        let up = match rnd {
            Rnd::N => rest > half || (rest == half && n & 1 == 1),
            Rnd::Z => false,
            Rnd::M => negative && rest != 0,
            Rnd::P => !negative && rest != 0,
        };
        n += u64::from(up);
        // n * 2^q with n's hidden bit at 2^m, or a subnormal's fraction (q at its least):
        // the exponent field below n's own bits, and a carry out of the fraction moves it up.
        let field = (q + m as i32 + self.bias() - 1) as u64;
        let magnitude = (field << m) + n;
        if magnitude >= u64::from(self.infinity()) {
            let largest = self.infinity() - 1;
            return sign
                | match (rnd, negative) {
                    (Rnd::N, _) | (Rnd::P, false) | (Rnd::M, true) => self.infinity(),
                    _ => largest,
                };
        }
        sign | magnitude as u16
    }

    /// `.ftz` on an operand or result: a subnormal becomes the zero of its sign.
    fn flush(self, h: u16) -> u16 {
        if self.is_subnormal(h) {
            h & 0x8000
        } else {
            h
        }
    }

    fn flush_if(self, ftz: bool, h: u16) -> u16 {
        if ftz {
            self.flush(h)
        } else {
            h
        }
    }
}

/// 2^`e`, exactly, for `e` in f64's normal range (every exponent a half needs), built from
/// its bits: the same on every host.
fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `s + e` (an exact sum, `e` below half an ulp of `s`) rounded to odd at 53 bits.
fn odd(s: f64, e: f64) -> f64 {
    if e == 0.0 || s.to_bits() & 1 == 1 {
        s
    } else if e > 0.0 {
        s.next_up()
    } else {
        s.next_down()
    }
}

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `x * y + z` rounded to odd: the product is exact (halves' significands have at most 11
/// bits), the sum exact as two_sum's pair. Every operand is a half, so nothing overflows.
fn fma_odd(x: f64, y: f64, z: f64) -> f64 {
    let (s, e) = two_sum(x * y, z);
    odd(s, e)
}

/// One half-precision arithmetic instruction on 16 bits.
fn op16(fmt: Half, op: FloatOp, ftz: bool, sat: bool, a: u16, b: u16, c: u16) -> u16 {
    let (a, b, c) = if ftz {
        (fmt.flush(a), fmt.flush(b), fmt.flush(c))
    } else {
        (a, b, c)
    };
    let (x, y, z) = (fmt.to_f64(a), fmt.to_f64(b), fmt.to_f64(c));
    let nan = |h: u16| fmt.is_nan(h);
    let exact = match op {
        FloatOp::Add => fma_odd(x, 1.0, y),
        FloatOp::Sub => fma_odd(x, 1.0, -y),
        FloatOp::Mul => x * y,
        FloatOp::Fma | FloatOp::FmaRelu => fma_odd(x, y, z),
        // A multiply fused into the add or subtract that reads it (`crate::load`'s
        // contraction): `a * b - c` and `c - a * b`.
        FloatOp::FmaSub => fma_odd(x, y, -z),
        FloatOp::FmaRev => fma_odd(-x, y, z),
        // The sign bit alone (`a` is flushed already under `.ftz`); a NaN canonical, as
        // f32's `neg` and `abs` give theirs on an H100 (`ops::float_op`).
        FloatOp::Neg if !nan(a) => return a ^ 0x8000,
        FloatOp::Abs if !nan(a) => return a & 0x7fff,
        FloatOp::Neg | FloatOp::Abs => return NAN16,
        FloatOp::Min | FloatOp::Max | FloatOp::MinNaN | FloatOp::MaxNaN => {
            return min_max(fmt, op, a, b)
        }
        _ => unreachable!("the loader takes no other half-precision instruction"),
    };
    let r = fmt.round(exact, Rnd::N);
    let r = if ftz && (fmt.is_subnormal(r) || tiny(fmt, exact, r)) {
        r & 0x8000
    } else {
        r
    };
    if sat {
        saturate(fmt, r)
    } else if op == FloatOp::FmaRelu {
        relu(r)
    } else {
        r
    }
}

/// `.relu` on a rounded half: a negative one, -0 among them (max with +0, -0 below +0), is
/// +0. Every NaN out of rounding is the canonical one, sign clear, so it stays.
pub fn relu(h: u16) -> u16 {
    if h & 0x8000 != 0 {
        0
    } else {
        h
    }
}

/// Whether `.ftz` flushes a result that rounded to the smallest normal: as Hopper's f32
/// `.ftz` (`ops::float_op`), a result is tiny when its exact value, rounded with no bound on
/// the exponent, is below the smallest normal. Scaling by 2^(m + 2) moves it clear of the
/// subnormals exactly.
fn tiny(fmt: Half, exact: f64, r: u16) -> bool {
    let smallest_normal = 1u16 << fmt.fraction();
    if r & 0x7fff != smallest_normal {
        return false;
    }
    let scale = pow2(fmt.fraction() as i32 + 2);
    let scaled = fmt.to_f64(fmt.round(exact * scale, Rnd::N)).abs();
    scaled < fmt.to_f64(smallest_normal) * scale
}

/// `.sat`: clamped to [0, 1], a NaN and -0 to +0 (an H100's `mul.rn.sat.f16` of a negative
/// product that rounds to -0 gives +0).
fn saturate(fmt: Half, h: u16) -> u16 {
    let x = fmt.to_f64(h);
    if fmt.is_nan(h) || x < 0.0 || h == 0x8000 {
        0
    } else if x > 1.0 {
        fmt.round(1.0, Rnd::N)
    } else {
        h
    }
}

/// `min` and `max`: -0 below +0; one NaN gives the other operand, two the canonical NaN (an
/// H100's `max.f16` and `min.f16` of 0x7e01 and 0x7d00), and with `.NaN` any does.
fn min_max(fmt: Half, op: FloatOp, a: u16, b: u16) -> u16 {
    let (na, nb) = (fmt.is_nan(a), fmt.is_nan(b));
    let nan_wins = matches!(op, FloatOp::MinNaN | FloatOp::MaxNaN);
    if (na && nb) || (nan_wins && (na || nb)) {
        return NAN16;
    }
    if na {
        return b;
    }
    if nb {
        return a;
    }
    let (x, y) = (fmt.to_f64(a), fmt.to_f64(b));
    let a_first = if x == y {
        // Equal: the zeros differ by their sign alone.
        (a & 0x8000 != 0) == matches!(op, FloatOp::Min | FloatOp::MinNaN)
    } else {
        (x < y) == matches!(op, FloatOp::Min | FloatOp::MinNaN)
    };
    if a_first {
        a
    } else {
        b
    }
}

/// A half-precision arithmetic instruction of type `ty` (a pair: each half on its own).
pub fn op(op: FloatOp, ty: Ty, ftz: bool, sat: bool, a: u64, b: u64, c: u64) -> u64 {
    let Some(fmt) = ty.half() else {
        unreachable!("`ops::float_op` sends half types alone")
    };
    let lane = |shift: u32| {
        let part = |v: u64| (v >> shift) as u16;
        u64::from(op16(fmt, op, ftz, sat, part(a), part(b), part(c))) << shift
    };
    if ty.pair() {
        lane(0) | lane(16)
    } else {
        lane(0)
    }
}

/// A half as `setp` compares it: exactly, a subnormal as a zero under `.ftz`.
pub fn compared(ty: Ty, ftz: bool, v: u64) -> f64 {
    let Some(fmt) = ty.half() else {
        unreachable!("`ops::compare` sends half types alone")
    };
    fmt.to_f64(fmt.flush_if(ftz, v as u16))
}

/// `cvt` from or to a half. `x` is the source's value, exact or rounded to odd at 53 bits
/// (an f32 already flushed under `.ftz`); an integer source or destination is the caller's.
/// A NaN from an f32 or a half gives the canonical NaN (an f64's is `narrow_nan`'s, the
/// caller's); to an f32, binary16's NaN is
/// the f32 canonical NaN (the H100 widens it on its half-precision unit, which makes every
/// NaN canonical) and bfloat16's keeps its bits, shifted (bfloat16 is an f32's top half: the
/// widening is a shift, which no NaN rule touches).
pub fn to_half(dty: Ty, rnd: Rnd, int_rnd: Option<Rnd>, sat: bool, x: f64) -> u16 {
    let Some(fmt) = dty.half() else {
        unreachable!("`ops::convert` sends half destinations alone")
    };
    let x = match int_rnd {
        Some(r) => round_integral(x, r),
        None => x,
    };
    let r = fmt.round(x, rnd);
    if sat {
        saturate(fmt, r)
    } else {
        r
    }
}

/// A half source's value, exactly, for `cvt` to an f32 or an integer: the f32's bits.
pub fn widen(sty: Ty, v: u64) -> u32 {
    let Some(fmt) = sty.half() else {
        unreachable!("`ops::convert` sends half sources alone")
    };
    let h = v as u16;
    match fmt {
        Half::BF16 => u32::from(h) << 16,
        Half::F16 if fmt.is_nan(h) => NAN32,
        Half::F16 => (fmt.to_f64(h) as f32).to_bits(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODES: [Rnd; 4] = [Rnd::N, Rnd::Z, Rnd::M, Rnd::P];

    /// A reference rounding, by integers alone: `s * 2^-scale` (exact) to `p` significant
    /// bits with the quantum at least 2^`min_quantum` (subnormals), to nearest even; the
    /// result's value, infinite past `largest`.
    fn reference(s: i128, scale: i32, p: u32, min_quantum: i32, largest: f64) -> f64 {
        let sign = if s < 0 { -1.0 } else { 1.0 };
        let m = s.unsigned_abs();
        if m == 0 {
            return 0.0;
        }
        let bits = 128 - m.leading_zeros() as i32;
        // The quantum's exponent in units of 2^-scale.
        let shift = (bits - p as i32).max(min_quantum + scale).max(0);
        let (mut q, rest) = (m >> shift, m & ((1u128 << shift) - 1));
        let half = if shift == 0 { 0 } else { 1u128 << (shift - 1) };
        if shift > 0 && (rest > half || (rest == half && q & 1 == 1)) {
            q += 1;
        }
        let value = q as f64 * 2f64.powi(shift - scale);
        if value > largest {
            sign * f64::INFINITY
        } else {
            sign * value
        }
    }

    /// A binary16's value by its definition, independent of `to_f64`.
    fn binary16(h: u16) -> f32 {
        let (e, f) = (i32::from(h >> 10 & 31), f32::from(h & 1023));
        let magnitude = if e == 0 {
            f * 2f32.powi(-24)
        } else {
            (f + 1024.0) * 2f32.powi(e - 25)
        };
        if h & 0x8000 != 0 {
            -magnitude
        } else {
            magnitude
        }
    }

    /// Every finite binary16 by its definition, every bfloat16 as the top half of an f32.
    #[test]
    fn halves_widen_exactly() {
        for h in 0..=u16::MAX {
            let (f16, bf16) = (Half::F16.to_f64(h), Half::BF16.to_f64(h));
            if h & 0x7c00 != 0x7c00 {
                assert_eq!(f16, f64::from(binary16(h)), "{h:04x}");
            }
            let f32 = f32::from_bits(u32::from(h) << 16);
            assert!(
                bf16 == f64::from(f32) || (bf16.is_nan() && f32.is_nan()),
                "{h:04x}"
            );
        }
        assert_eq!(Half::F16.to_f64(0x7bff), 65504.0);
        assert_eq!(Half::F16.to_f64(0x0001), 2f64.powi(-24));
        assert_eq!(Half::F16.to_f64(0xfc00), f64::NEG_INFINITY);
        assert!(Half::F16.to_f64(0x7c01).is_nan());
    }

    /// Every half, widened and rounded back in each mode, is itself (-0 and the
    /// subnormals included); every NaN becomes the canonical one.
    #[test]
    fn every_half_rounds_back_to_itself() {
        for fmt in [Half::F16, Half::BF16] {
            for h in 0..=u16::MAX {
                for rnd in MODES {
                    let want = if fmt.is_nan(h) { NAN16 } else { h };
                    assert_eq!(
                        fmt.round(fmt.to_f64(h), rnd),
                        want,
                        "{fmt:?} {h:04x} {rnd:?}"
                    );
                }
            }
        }
    }

    /// f32 to bfloat16 against the integer rounding of an f32's bits (the low 16 bits are
    /// what is rounded off).
    fn check_f32_to_bf16(w: u32) {
        let x = f32::from_bits(w);
        if x.is_nan() {
            assert_eq!(Half::BF16.round(f64::from(x), Rnd::N), NAN16);
            return;
        }
        let negative = w >> 31 == 1;
        let inexact = w & 0xffff != 0;
        for rnd in MODES {
            let want = match rnd {
                Rnd::N => (w + 0x7fff + (w >> 16 & 1)) >> 16,
                Rnd::Z => w >> 16,
                Rnd::M => (w >> 16) + u32::from(inexact && negative),
                Rnd::P => (w >> 16) + u32::from(inexact && !negative),
            };
            let got = Half::BF16.round(f64::from(x), rnd);
            assert_eq!(u32::from(got), want, "{w:08x} {rnd:?}");
        }
    }

    /// Every finite binary16 magnitude's value, in order, by its definition.
    fn binary16_table() -> Vec<f64> {
        (0..0x7c00).map(|h| f64::from(binary16(h))).collect()
    }

    /// f32 to binary16 against a search of `table` for the binary16s either side: ties to
    /// even, 65520 and up to infinity, the directed modes to the side they name.
    fn check_f32_to_f16(table: &[f64], w: u32) {
        let x = f32::from_bits(w);
        if x.is_nan() {
            assert_eq!(Half::F16.round(f64::from(x), Rnd::Z), NAN16);
            return;
        }
        let a = f64::from(x.abs());
        let sign = (w >> 16) as u16 & 0x8000;
        // The largest binary16 magnitude at or below |x|, and the next (inf past 65504,
        // whose value for the midpoint is 2^16).
        let below = table.partition_point(|v| *v <= a) as u16 - 1;
        let above = below + 1;
        let (lo, hi) = (
            table[usize::from(below)],
            table.get(usize::from(above)).copied().unwrap_or(65536.0),
        );
        for rnd in MODES {
            let up = if a == lo {
                false
            } else {
                match rnd {
                    Rnd::N => a > (lo + hi) / 2.0 || (a == (lo + hi) / 2.0 && below & 1 == 1),
                    Rnd::Z => false,
                    Rnd::M => sign != 0,
                    Rnd::P => sign == 0,
                }
            };
            let want = if x.is_infinite() {
                0x7c00
            } else if up {
                above
            } else {
                below
            };
            let got = Half::F16.round(f64::from(x), rnd);
            assert_eq!(got, sign | want, "{w:08x} {rnd:?}");
        }
    }

    /// f32 words to check in a debug build: a stride over all 2^32, and every word whose
    /// low bits sit at a rounding boundary of either format (ties, one either side).
    fn sample() -> impl Iterator<Item = u32> {
        let stride = (0..u32::MAX).step_by(65_521);
        let boundaries = (0..=u32::from(u16::MAX)).flat_map(|top| {
            let base = top << 16;
            [0, 1, 0x7fff, 0x8000, 0x8001, 0xffff, 0x0fff, 0x1000, 0x1001]
                .into_iter()
                .map(move |low| base | low)
        });
        stride.chain(boundaries)
    }

    #[test]
    fn f32_rounds_to_bfloat16_as_its_bits_say() {
        sample().for_each(check_f32_to_bf16);
    }

    #[test]
    fn f32_rounds_to_binary16_as_the_search_says() {
        let table = binary16_table();
        // f32s within binary16's reach and past it, every low pattern at binary16's ties
        // (13 bits rounded off in the normals, more in the subnormals).
        let ties = (0x3300u32..0x4800).flat_map(|top| {
            [
                0u32, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x7fff, 0x8000, 0x8001,
            ]
            .into_iter()
            .flat_map(move |low| [top << 16 | low, 0x8000_0000 | top << 16 | low])
        });
        sample()
            .chain(ties)
            .chain([
                0x7f80_0000,
                0xff80_0000,
                0x7fa0_0000,
                0x477f_f000,
                0x477f_efff,
            ])
            .for_each(|w| check_f32_to_f16(&table, w));
    }

    /// A deterministic stream of 16-bit patterns (xorshift), finite ones of `fmt`.
    fn halves(fmt: Half, seed: u64, keep: impl Fn(u16) -> bool) -> impl Iterator<Item = u16> {
        let mut s = seed;
        std::iter::from_fn(move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            Some(s as u16)
        })
        .filter(move |h| !fmt.is_nan(*h) && h & 0x7fff != fmt.infinity() && keep(*h))
    }

    /// binary16 add, sub, mul and fma against exact integer arithmetic: every binary16 is
    /// a multiple of 2^-24, so a product is one of 2^-48 and the fma's exact result an
    /// integer in units of 2^-48, rounded by `reference`. Catches a double rounding (an fma
    /// through f32: 0.75 * 683/512 + 2^-24), a wrong tie, a lost subnormal.
    #[test]
    fn binary16_arithmetic_rounds_the_exact_result_once() {
        let scaled = |h: u16| {
            let units = (f64::from(binary16(h & 0x7fff)) * 2f64.powi(24)) as i128;
            if h & 0x8000 != 0 {
                -units
            } else {
                units
            }
        };
        let round = |s: i128| reference(s, 48, 11, -24, 65504.0);
        let xs: Vec<u16> = halves(Half::F16, 0x9e37_79b9, |_| true).take(300).collect();
        let edges = [
            0x0001u16, 0x03ff, 0x0400, 0x3bff, 0x3c00, 0x3c01, 0x7bff, 0x8001, 0xbc00,
        ];
        let mut checked = 0;
        for &a in xs.iter().chain(&edges) {
            for &b in xs.iter().step_by(7).chain(&edges) {
                let c = b.rotate_left(5) & 0xbfff;
                let (sa, sb, sc) = (scaled(a), scaled(b), scaled(c));
                let cases = [
                    (FloatOp::Add, round((sa + sb) << 24)),
                    (FloatOp::Sub, round((sa - sb) << 24)),
                    (FloatOp::Mul, round(sa * sb)),
                    (FloatOp::Fma, round(sa * sb + (sc << 24))),
                ];
                for (op, want) in cases {
                    let got = op16(Half::F16, op, false, false, a, b, c);
                    let value = Half::F16.to_f64(got);
                    assert!(
                        value == want && (want != 0.0 || got & 0x7fff == 0),
                        "{op:?} {a:04x} {b:04x} {c:04x}: {got:04x}, want {want}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000);
        // The double rounding an fma through f32 makes: 1 + 2^-11 + 2^-24 is 1 + 2^-10.
        assert_eq!(
            op16(Half::F16, FloatOp::Fma, false, false, 0x3a00, 0x3d56, 1),
            0x3c01
        );
    }

    /// bfloat16 fma against exact integer arithmetic, operands between 2^-20 and 2^20 (in
    /// units of 2^-54 every product and sum is an integer below 2^100); and the case that
    /// rounding the exact result to the nearest double before bfloat16 gets wrong.
    #[test]
    fn bfloat16_fma_rounds_the_exact_result_once() {
        let moderate = |h: u16| (107..=147).contains(&(h >> 7 & 0xff));
        let scaled = |h: u16| {
            let units = (Half::BF16.to_f64(h & 0x7fff) * 2f64.powi(27)) as i128;
            if h & 0x8000 != 0 {
                -units
            } else {
                units
            }
        };
        let xs: Vec<u16> = halves(Half::BF16, 0x2545_f491, moderate)
            .take(200)
            .collect();
        for &a in &xs {
            for &b in xs.iter().step_by(3) {
                let c = xs[usize::from(a ^ b) % xs.len()];
                let want = reference(
                    scaled(a) * scaled(b) + (scaled(c) << 27),
                    54,
                    8,
                    -133,
                    Half::BF16.to_f64(0x7f7f),
                );
                let got = op16(Half::BF16, FloatOp::Fma, false, false, a, b, c);
                assert_eq!(Half::BF16.to_f64(got), want, "{a:04x} {b:04x} {c:04x}");
            }
        }
        // 7 * 37/256 - 2^-100: just below the tie 1 + 3 * 2^-8, so 1 + 2^-7; through the
        // nearest double, the tie itself, which goes to even (1 + 2^-6).
        assert_eq!(
            op16(
                Half::BF16,
                FloatOp::Fma,
                false,
                false,
                0x40e0,
                0x3e14,
                0x8d80
            ),
            0x3f81
        );
        assert_eq!(
            op16(Half::BF16, FloatOp::Fma, false, false, 0x40e0, 0x3e14, 0),
            0x3f82
        );
    }

    /// NaNs, infinities, zeros' signs, `.ftz`, `.sat`, `.relu`, `min`/`max` as the PTX ISA
    /// has them.
    #[test]
    fn an_f64_nan_narrows_to_its_sign_and_payload_quieted() {
        assert_eq!(Half::F16.narrow_nan(0x7ff8_0000_0000_0000), 0x7e00);
        assert_eq!(Half::F16.narrow_nan(0xfff4_0000_0000_0001), 0xff00);
        assert_eq!(Half::BF16.narrow_nan(0xfff4_0000_0000_0001), 0xffe0);
        assert_eq!(Half::BF16.narrow_nan(0x7ff0_0000_0000_0001), 0x7fc0);
    }

    #[test]
    fn special_operands_follow_the_ptx_isa() {
        let f16 = |op, a, b, c| op16(Half::F16, op, false, false, a, b, c);
        // Any NaN result is the canonical one: a NaN operand, inf - inf, 0 * inf.
        assert_eq!(f16(FloatOp::Add, 0x7e01, 0x3c00, 0), NAN16);
        assert_eq!(f16(FloatOp::Add, 0x7c00, 0xfc00, 0), NAN16);
        assert_eq!(f16(FloatOp::Fma, 0, 0x7c00, 0x3c00), NAN16);
        assert_eq!(
            op16(Half::BF16, FloatOp::Mul, false, false, 0xffc1, 0x3f80, 0),
            NAN16
        );
        // Zeros: x - x is +0, -0 + -0 is -0, a product's sign is its operands'.
        assert_eq!(f16(FloatOp::Sub, 0x3c00, 0x3c00, 0), 0x0000);
        assert_eq!(f16(FloatOp::Add, 0x8000, 0x8000, 0), 0x8000);
        assert_eq!(f16(FloatOp::Mul, 0x8001, 0x3800, 0), 0x8000);
        // Overflow to inf, subnormal results kept.
        assert_eq!(f16(FloatOp::Add, 0x7bff, 0x7bff, 0), 0x7c00);
        assert_eq!(f16(FloatOp::Add, 0x03ff, 0x0001, 0), 0x0400);
        // .ftz flushes operands and results; a result that reaches the smallest normal only
        // at the subnormals' spacing is flushed (2^-14 * (1 - 2^-11)).
        assert_eq!(
            op16(Half::F16, FloatOp::Add, true, false, 0x03ff, 0x0001, 0),
            0
        );
        assert_eq!(
            op16(Half::F16, FloatOp::Mul, true, false, 0x0400, 0x3bff, 0),
            0
        );
        assert_eq!(
            op16(Half::F16, FloatOp::Mul, false, false, 0x0400, 0x3bff, 0),
            0x0400
        );
        assert_eq!(
            op16(Half::F16, FloatOp::Mul, true, false, 0x0400, 0x3c00, 0),
            0x0400
        );
        // .sat: [0, 1], a NaN to +0; .relu: a negative to +0, a NaN canonical.
        assert_eq!(op16(Half::F16, FloatOp::Add, false, true, 0x7e01, 0, 0), 0);
        assert_eq!(
            op16(Half::F16, FloatOp::Add, false, true, 0x3c00, 0x3c00, 0),
            0x3c00
        );
        assert_eq!(op16(Half::F16, FloatOp::Add, false, true, 0xbc00, 0, 0), 0);
        assert_eq!(f16(FloatOp::FmaRelu, 0xbc00, 0x3c00, 0), 0);
        assert_eq!(f16(FloatOp::FmaRelu, 0x7e01, 0x3c00, 0), NAN16);
        assert_eq!(f16(FloatOp::FmaRelu, 0x3c00, 0x3c00, 0), 0x3c00);
        // min and max: -0 below +0, one NaN gives the other, two or .NaN the canonical one.
        assert_eq!(f16(FloatOp::Min, 0x0000, 0x8000, 0), 0x8000);
        assert_eq!(f16(FloatOp::Max, 0x8000, 0x0000, 0), 0x0000);
        assert_eq!(f16(FloatOp::Min, 0x7e01, 0xbc00, 0), 0xbc00);
        assert_eq!(f16(FloatOp::Max, 0x7e01, 0x7d00, 0), NAN16);
        assert_eq!(f16(FloatOp::Min, 0x7d00, 0xfe01, 0), NAN16);
        assert_eq!(f16(FloatOp::MinNaN, 0x3c00, 0x7e01, 0), NAN16);
        assert_eq!(f16(FloatOp::Max, 0xfc00, 0x0001, 0), 0x0001);
        // neg and abs: the sign bit alone, a NaN canonical, .ftz flushing.
        assert_eq!(f16(FloatOp::Neg, 0x0001, 0, 0), 0x8001);
        assert_eq!(f16(FloatOp::Abs, 0xfc00, 0, 0), 0x7c00);
        assert_eq!(f16(FloatOp::Neg, 0xfe01, 0, 0), NAN16);
        assert_eq!(op16(Half::F16, FloatOp::Abs, true, false, 0x83ff, 0, 0), 0);
        // A pair: each half on its own (inf + 1 high, 1 + 2^-24 low).
        assert_eq!(
            op(
                FloatOp::Add,
                Ty::F16x2,
                false,
                false,
                0x7c00_3c00,
                0x3c00_0001,
                0
            ),
            0x7c00_3c00
        );
    }
}
