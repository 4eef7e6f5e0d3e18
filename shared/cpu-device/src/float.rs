//! Floating point as the H100 computes it: IEEE operations in every rounding mode, flush to
//! zero, the GPU's NaNs and conversions (the approximate instructions are `approx`'s).
//!
//! Directed rounding is exact: the rounding error of a sum or product is itself a double
//! (two_sum, two_prod), so the true result's side of the rounded one is known, and the
//! result moves one step where the mode says.

use crate::ir::Rnd;

/// The NaN an f32 operation returns (the GPU's canonical NaN).
pub const NAN32: u32 = 0x7fff_ffff;
/// The NaN an f64 operation makes from no NaN (inf - inf, sqrt(-1)): the negative quiet NaN,
/// as on the host; a NaN operand comes out itself, quieted (both measured on an H100).
pub const NAN64: u64 = 0xfff8_0000_0000_0000;

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// The sign of the exact sum of `terms` (each a double, the sum possibly not one): the
/// terms are made a non-overlapping expansion, whose largest part carries the sign.
fn exact_sign(terms: &[f64]) -> f64 {
    let mut expansion: Vec<f64> = Vec::with_capacity(terms.len() + 1);
    for &t in terms {
        let mut q = t;
        let mut next = Vec::with_capacity(expansion.len() + 1);
        for &e in &expansion {
            let (s, h) = two_sum(q, e);
            if h != 0.0 {
                next.push(h);
            }
            q = s;
        }
        next.push(q);
        expansion = next;
    }
    expansion
        .iter()
        .rev()
        .find(|v| **v != 0.0)
        .map_or(0.0, |v| v.signum())
}

/// Move `r`, the rounded-to-nearest result, to the directed rounding of the exact value,
/// given `side`: the sign of (exact - r).
fn direct64(r: f64, side: f64, rnd: Rnd) -> f64 {
    if side == 0.0 || r.is_nan() {
        return r;
    }
    match rnd {
        Rnd::N => r,
        Rnd::M if side < 0.0 => r.next_down(),
        Rnd::P if side > 0.0 => r.next_up(),
        Rnd::Z if (side < 0.0) == (r > 0.0) && r != 0.0 => {
            if r > 0.0 {
                r.next_down()
            } else {
                r.next_up()
            }
        }
        _ => r,
    }
}

/// A finite exact result that rounded to an infinity: directed modes may stop at the
/// largest finite value instead.
fn overflow64(r: f64, rnd: Rnd) -> f64 {
    match (rnd, r > 0.0) {
        (Rnd::Z, true) | (Rnd::M, true) => f64::MAX,
        (Rnd::Z, false) | (Rnd::P, false) => f64::MIN,
        _ => r,
    }
}

pub fn add64(a: f64, b: f64, rnd: Rnd) -> f64 {
    let s = a + b;
    if rnd == Rnd::N || s.is_nan() {
        return s;
    }
    if s.is_infinite() {
        return if a.is_finite() && b.is_finite() {
            overflow64(s, rnd)
        } else {
            s
        };
    }
    if s == 0.0 {
        // An exact zero sum is -0 when rounding down, unless both terms are +0.
        let both_positive = a.is_sign_positive() && b.is_sign_positive();
        return if rnd == Rnd::M && !(a == 0.0 && b == 0.0 && both_positive) {
            -0.0
        } else {
            s
        };
    }
    let (_, e) = two_sum(a, b);
    direct64(s, e.signum() * f64::from(u8::from(e != 0.0)), rnd)
}

pub fn mul64(a: f64, b: f64, rnd: Rnd) -> f64 {
    let p = a * b;
    if rnd == Rnd::N || !p.is_finite() || a == 0.0 || b == 0.0 {
        return if p.is_infinite() && a.is_finite() && b.is_finite() {
            overflow64(p, rnd)
        } else {
            p
        };
    }
    direct64(p, product_side(a, b, p), rnd)
}

/// The sign of `a * b - p`, exactly. Where `p` is tiny (subnormal, or zero from a product
/// that underflowed), the product's rounding error is no double: `a` and `b` are scaled to
/// [0.5, 1) first, and `p` by the same power of two, which keeps the sign.
fn product_side(a: f64, b: f64, p: f64) -> f64 {
    let e = if p.abs() < 1e-290 {
        let (ma, ea) = frexp(a);
        let (mb, eb) = frexp(b);
        ma.mul_add(mb, -ldexp(p, -(ea + eb)))
    } else {
        a.mul_add(b, -p)
    };
    if e == 0.0 {
        0.0
    } else {
        e.signum()
    }
}

/// `x` as `m * 2^e` with `|m|` in [0.5, 1) (`x` finite and not zero).
fn frexp(x: f64) -> (f64, i32) {
    let (x, bias) = if x.is_subnormal() {
        (x * ldexp(1.0, 64), 64)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32 - 1022;
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, e - bias)
}

/// `x * 2^n`, in steps that stay inside the exponent range (exact while the result is).
fn ldexp(mut x: f64, mut n: i32) -> f64 {
    let step = |k: i32| f64::from_bits(((k + 1023) as u64) << 52);
    while n > 1000 {
        x *= step(1000);
        n -= 1000;
    }
    while n < -1000 {
        x *= step(-1000);
        n += 1000;
    }
    x * step(n)
}

pub fn fma64(a: f64, b: f64, c: f64, rnd: Rnd) -> f64 {
    let r = a.mul_add(b, c);
    if rnd == Rnd::N || !r.is_finite() {
        return if r.is_infinite() && a.is_finite() && b.is_finite() && c.is_finite() {
            overflow64(r, rnd)
        } else {
            r
        };
    }
    if a == 0.0 || b == 0.0 {
        // The exact result is `c`, or a sum of two zeros: -0 when rounding down unless both
        // are +0 (the hardware's round-to-nearest gave +0 for zeros of opposite signs).
        let product_positive = a.is_sign_positive() == b.is_sign_positive();
        return if r == 0.0 && rnd == Rnd::M && !(product_positive && c.is_sign_positive()) {
            -0.0
        } else {
            r
        };
    }
    // The side of `r` is the sign of a*b + c - r, exactly. The product's rounding error is a
    // double unless the product is tiny; then a*b is taken as (ma * mb) * 2^e with ma, mb in
    // [0.5, 1), and c - r (a two_sum) is scaled up by 2^-e to meet it; where that
    // overflows, c - r outweighs the product and alone has the sign.
    let p = a * b;
    let side = if p.is_finite() && p.abs() >= ldexp(1.0, -900) {
        let pe = a.mul_add(b, -p);
        let (s, se) = two_sum(p, c);
        let (u, ue) = two_sum(s, -r);
        exact_sign(&[pe, se, ue, u])
    } else {
        let (ma, ea) = frexp(a);
        let (mb, eb) = frexp(b);
        let (p, pe) = (ma * mb, ma.mul_add(mb, -(ma * mb)));
        let (u, ue) = two_sum(c, -r);
        let scaled = ldexp(u, -(ea + eb));
        if scaled.is_infinite() {
            u.signum()
        } else {
            exact_sign(&[pe, p, ldexp(ue, -(ea + eb)), scaled])
        }
    };
    if side == 0.0 && r == 0.0 && rnd == Rnd::M {
        // An exact cancellation rounds to -0 when rounding down.
        return -0.0;
    }
    direct64(r, side, rnd)
}

pub fn div64(a: f64, b: f64, rnd: Rnd) -> f64 {
    let q = a / b;
    if rnd == Rnd::N || !q.is_finite() || a == 0.0 || b.is_infinite() {
        return if q.is_infinite() && a.is_finite() && b != 0.0 {
            overflow64(q, rnd)
        } else {
            q
        };
    }
    // a - q*b, whose sign says which side of `a / b` the quotient is, with `a` and `b`
    // scaled to [0.5, 1) first (and `q` by their ratio): unscaled, the residual of a
    // subnormal `a` or `q` is below the smallest double and reads as zero.
    let (ma, ea) = frexp(a);
    let (mb, eb) = frexp(b);
    let residual = (-ldexp(q, eb - ea)).mul_add(mb, ma);
    direct64(
        q,
        residual.signum() * b.signum() * f64::from(u8::from(residual != 0.0)),
        rnd,
    )
}

pub fn sqrt64(a: f64, rnd: Rnd) -> f64 {
    let s = a.sqrt();
    if rnd == Rnd::N || !s.is_finite() || s == 0.0 {
        return s;
    }
    // Below 2^-900 the residual a - s*s is no double (it read as zero for every subnormal
    // input): the root of a * 2^200 is the root of `a` times 2^100, exactly.
    if a < ldexp(1.0, -900) {
        return ldexp(sqrt64(ldexp(a, 200), rnd), -100);
    }
    let residual = (-s).mul_add(s, a);
    direct64(
        s,
        if residual == 0.0 {
            0.0
        } else {
            residual.signum()
        },
        rnd,
    )
}

/// Round the exact value `s + e` (`|e|` at most half an ulp of `s`) to an f32.
pub fn round32(s: f64, e: f64, rnd: Rnd) -> f32 {
    let c = s as f32;
    if s.is_nan() {
        // Converted as the host converts it: quieted, the payload's top bits kept (an H100
        // gives the same, 0x7fc00000 for 0x7ff8000000000001).
        return c;
    }
    if c.is_infinite() && s.is_finite() {
        return match (rnd, s > 0.0) {
            (Rnd::Z, true) | (Rnd::M, true) => f32::MAX,
            (Rnd::Z, false) | (Rnd::P, false) => f32::MIN,
            _ => c,
        };
    }
    if c.is_infinite() {
        return c;
    }
    let cf = f64::from(c);
    let d = s - cf;
    match rnd {
        Rnd::N => {
            // A tie at `s` (half the spacing on its side of `c`: at a binade's edge the two
            // sides differ) that the rest `e` breaks.
            let lo_hi = if cf < s {
                (c, c.next_up())
            } else {
                (c.next_down(), c)
            };
            let half = (f64::from(lo_hi.1) - f64::from(lo_hi.0)) / 2.0;
            if e != 0.0 && d.abs() == half && d != 0.0 {
                if e > 0.0 {
                    lo_hi.1
                } else {
                    lo_hi.0
                }
            } else {
                c
            }
        }
        _ => {
            let side = exact_sign(&[d, e]);
            if side == 0.0 {
                return c;
            }
            match rnd {
                Rnd::M if side < 0.0 => c.next_down(),
                Rnd::P if side > 0.0 => c.next_up(),
                Rnd::Z if c != 0.0 && (side < 0.0) == (c > 0.0) => {
                    if c > 0.0 {
                        c.next_down()
                    } else {
                        c.next_up()
                    }
                }
                _ => c,
            }
        }
    }
}

/// A subnormal f32 as the `.ftz` modifier sees it: zero of the same sign.
pub fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() {
        if x.is_sign_negative() {
            -0.0
        } else {
            0.0
        }
    } else {
        x
    }
}

/// `ftz32` on an f32 register's bits (its low word): a subnormal becomes the zero of its
/// sign, everything else (NaN payloads included) stays as it is.
pub fn ftz_bits32(v: u64) -> u64 {
    let bits = v as u32;
    if bits & 0x7f80_0000 == 0 {
        u64::from(bits & 0x8000_0000)
    } else {
        u64::from(bits)
    }
}

pub fn canonical32(x: f32) -> f32 {
    if x.is_nan() {
        f32::from_bits(NAN32)
    } else {
        x
    }
}

pub fn add32(a: f32, b: f32, rnd: Rnd) -> f32 {
    if rnd == Rnd::N {
        return a + b;
    }
    let (s, e) = two_sum(f64::from(a), f64::from(b));
    let r = round32(s, e, rnd);
    if r == 0.0 && s == 0.0 && e == 0.0 {
        return add64(f64::from(a), f64::from(b), rnd) as f32;
    }
    r
}

pub fn mul32(a: f32, b: f32, rnd: Rnd) -> f32 {
    if rnd == Rnd::N {
        return a * b;
    }
    round32(f64::from(a) * f64::from(b), 0.0, rnd)
}

pub fn fma32(a: f32, b: f32, c: f32, rnd: Rnd) -> f32 {
    if rnd == Rnd::N {
        return a.mul_add(b, c);
    }
    let p = f64::from(a) * f64::from(b);
    let (s, e) = two_sum(p, f64::from(c));
    if s == 0.0 && e == 0.0 {
        return add64(p, f64::from(c), rnd) as f32;
    }
    round32(s, e, rnd)
}

pub fn div32(a: f32, b: f32, rnd: Rnd) -> f32 {
    let q = a / b;
    if rnd == Rnd::N || q.is_nan() || !a.is_finite() || a == 0.0 || b == 0.0 || b.is_infinite() {
        return q;
    }
    // The quotient in f64 (f32 operands: no underflow there), and the side of it the exact
    // one is on, rounded to f32 in the mode: right even where the f32 result is subnormal or
    // rounds to zero.
    let (x, y) = (f64::from(a), f64::from(b));
    let q64 = x / y;
    let residual = (-q64).mul_add(y, x);
    let side = residual.signum() * y.signum() * f64::from(u8::from(residual != 0.0));
    round32(q64, side * q64.abs() * f64::EPSILON * 0.25, rnd)
}

pub fn sqrt32(a: f32, rnd: Rnd) -> f32 {
    let s = a.sqrt();
    if rnd == Rnd::N || !s.is_finite() || s == 0.0 {
        return s;
    }
    let residual = f64::from(-s).mul_add(f64::from(s), f64::from(a));
    let side = if residual == 0.0 {
        0.0
    } else {
        residual.signum()
    };
    round32(f64::from(s), side * f64::from(s) * f64::EPSILON * 0.25, rnd)
}

/// PTX's min and max: a NaN operand gives the other one; -0 is below +0.
pub fn min64(a: f64, b: f64) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        // Both NaN: the second, quieted (an H100's min.f64 and max.f64).
        (true, true) => f64::from_bits(b.to_bits() | (1 << 51)),
        (true, false) => b,
        (false, true) => a,
        _ if a == b => {
            if a.is_sign_negative() {
                a
            } else {
                b
            }
        }
        _ => a.min(b),
    }
}

pub fn max64(a: f64, b: f64) -> f64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => f64::from_bits(b.to_bits() | (1 << 51)),
        (true, false) => b,
        (false, true) => a,
        _ if a == b => {
            if a.is_sign_positive() {
                a
            } else {
                b
            }
        }
        _ => a.max(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directed_rounding_lands_on_the_right_side() {
        let third = 1.0 / 3.0;
        assert!(div64(1.0, 3.0, Rnd::P) > third);
        assert_eq!(div64(1.0, 3.0, Rnd::M), third.min(div64(1.0, 3.0, Rnd::M)));
        assert!(div64(1.0, 3.0, Rnd::M) <= third && div64(1.0, 3.0, Rnd::P) >= third);
        assert_eq!(div64(1.0, 3.0, Rnd::P).next_down(), div64(1.0, 3.0, Rnd::M));
        assert_eq!(add64(1.0, 1e-30, Rnd::P), 1.0f64.next_up());
        assert_eq!(add64(1.0, 1e-30, Rnd::Z), 1.0);
        assert_eq!(add64(-1.0, -1e-30, Rnd::Z), -1.0);
        assert_eq!(add64(-1.0, -1e-30, Rnd::M), (-1.0f64).next_down());
        assert_eq!(mul64(f64::MAX, 2.0, Rnd::Z), f64::MAX);
        // A product that underflows to zero still rounds up to the smallest subnormal (as an
        // H100's __dmul_ru does).
        let tiny = f64::from_bits(0x81a5_6e1f_c2f8_f359);
        assert_eq!(mul64(tiny, tiny, Rnd::P).to_bits(), 1);
        assert_eq!(mul64(tiny, tiny, Rnd::Z).to_bits(), 0);
        assert_eq!(mul64(tiny, -tiny, Rnd::M).to_bits(), 0x8000_0000_0000_0001);
        assert_eq!(div64(tiny, 1e300, Rnd::M).to_bits(), 0x8000_0000_0000_0001);
        assert_eq!(div64(tiny, 1e300, Rnd::Z).to_bits(), 0x8000_0000_0000_0000);
        assert_eq!(fma64(1.0, 1.0, 1e-30, Rnd::P), 1.0f64.next_up());
        assert_eq!(fma64(1.0, 1.0, -1e-30, Rnd::Z), 1.0f64.next_down());
        assert_eq!(sqrt64(2.0, Rnd::P), 2.0f64.sqrt().max(sqrt64(2.0, Rnd::P)));
        assert_eq!(add32(1.0, 1e-20, Rnd::P), 1.0f32.next_up());
        assert_eq!(add32(1.0, 1e-20, Rnd::M), 1.0);
        // 3 x the f32 nearest 1/3 is 1.00000003: above 1, so rounding up moves one step.
        assert_eq!(mul32(3.0, 1.0 / 3.0, Rnd::P), 1.0f32.next_up());
        assert_eq!(mul32(3.0, 1.0 / 3.0, Rnd::N), 1.0);
        assert_eq!(div32(1.0, 3.0, Rnd::P).next_down(), div32(1.0, 3.0, Rnd::M));
        assert_eq!(add64(1.0, -1.0, Rnd::M).to_bits(), (-0.0f64).to_bits());
        assert_eq!(add64(1.0, -1.0, Rnd::N).to_bits(), 0.0f64.to_bits());
        // A tie in f64 that the rest breaks, rounding to f32.
        let s = 1.0 + f64::from(f32::EPSILON) / 2.0;
        assert_eq!(round32(s, 1e-30, Rnd::N), 1.0f32.next_up());
        assert_eq!(round32(s, -1e-30, Rnd::N), 1.0);
        assert_eq!(round32(s, 0.0, Rnd::N), 1.0);
    }

    #[test]
    fn subnormal_operands_round_as_the_h100_rounds_them() {
        // Each from the differential test on an H100 (operands, then its result): the
        // residual of a subnormal's root or quotient is below the smallest double.
        let d = f64::from_bits;
        assert_eq!(
            sqrt64(d(0xf_ffff_ffff_ffff), Rnd::M).to_bits(),
            0x1fff_ffff_ffff_fffe
        );
        assert_eq!(
            sqrt64(d(0xf_ffff_ffff_ffff), Rnd::Z).to_bits(),
            0x1fff_ffff_ffff_fffe
        );
        assert_eq!(sqrt64(d(0x3f), Rnd::M).to_bits(), 0x1e8f_bfbf_7ebc_755e);
        assert_eq!(
            sqrt64(d(0xffff_ffff), Rnd::M).to_bits(),
            0x1f5f_ffff_ffef_ffff
        );
        let (a, b) = (d(0x8000_0000_0000_0001), d(0x380f_ffff_c000_0000));
        assert_eq!(div64(a, b, Rnd::M).to_bits(), 0x84b0_0000_2000_0041);
        let (a, b) = (d(0x10_0000_0000_0000), d(0x800a_0000_0000_0001));
        assert_eq!(div64(a, b, Rnd::M).to_bits(), 0xbff9_9999_9999_9998);
        // An fma whose exact result cancels rounds down to -0; one whose product underflows
        // still lands on the right side.
        assert_eq!(fma64(2.0, 3.0, -6.0, Rnd::M).to_bits(), (-0.0f64).to_bits());
        assert_eq!(fma64(2.0, 3.0, -6.0, Rnd::Z).to_bits(), 0);
        assert_eq!(fma64(1e-200, 1e-200, 1.0, Rnd::P), 1.0f64.next_up());
        assert_eq!(fma64(-1e-200, 1e-200, 1.0, Rnd::Z), 1.0f64.next_down());
        assert_eq!(fma64(1e-200, 1e-200, 0.0, Rnd::P).to_bits(), 1);
        // A large product and a tiny addend: the addend alone moves it down.
        let (a, c) = (
            f64::from_bits(0x43d2_eb0d_a89b_e521),
            f64::from_bits(0x8010 << 48),
        );
        assert_eq!(fma64(a, 2.0, c, Rnd::M).to_bits(), 0x43e2_eb0d_a89b_e520);
    }
}
