//! One lane's arithmetic: what each instruction computes from its operands' bits, in
//! PTX's words (integer widths and signs, IEEE rounding, the GPU's NaNs, saturation).

use crate::float::*;
use crate::ir::mask as type_mask;
use crate::ir::*;

pub fn mask_bits(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// A loaded value as its register holds it: signed types sign-extended.
pub fn extend(ty: Ty, raw: u64) -> u64 {
    match ty {
        Ty::S8 => raw as u8 as i8 as i64 as u64,
        Ty::S16 => raw as u16 as i16 as i64 as u64,
        Ty::S32 => raw as u32 as i32 as i64 as u64,
        _ => raw,
    }
}

pub fn atom_value(op: AtomOp, ty: Ty, old: u64, b: u64, c: u64) -> u64 {
    let bits = type_mask(ty);
    match (op, ty) {
        (AtomOp::Add, Ty::F32) => {
            // atom.add.f32 rounds to nearest and flushes subnormals to zero.
            let r = ftz32(ftz32(f32::from_bits(old as u32)) + ftz32(f32::from_bits(b as u32)));
            u64::from(canonical32(r).to_bits())
        }
        (AtomOp::Add, Ty::F64) => (f64::from_bits(old) + f64::from_bits(b)).to_bits(),
        // `atom.add.noftz` of halves: each half as `add.rn` adds it, subnormals kept.
        (AtomOp::Add, Ty::F16 | Ty::F16x2 | Ty::BF16 | Ty::BF16x2) => {
            crate::half::op(FloatOp::Add, ty, false, false, old, b, 0)
        }
        (AtomOp::Add, _) => old.wrapping_add(b) & bits,
        (AtomOp::Min, _) if ty.signed() => {
            if sext(old, ty) <= sext(b, ty) {
                old
            } else {
                b & bits
            }
        }
        (AtomOp::Max, _) if ty.signed() => {
            if sext(old, ty) >= sext(b, ty) {
                old
            } else {
                b & bits
            }
        }
        (AtomOp::Min, _) => old.min(b & bits),
        (AtomOp::Max, _) => old.max(b & bits),
        (AtomOp::Inc, _) => {
            if old >= b & bits {
                0
            } else {
                old + 1
            }
        }
        (AtomOp::Dec, _) => {
            if old == 0 || old > b & bits {
                b & bits
            } else {
                old - 1
            }
        }
        (AtomOp::And, _) => old & b,
        (AtomOp::Or, _) => old | b,
        (AtomOp::Xor, _) => old ^ b,
        (AtomOp::Exch, _) => b & bits,
        (AtomOp::Cas, _) => {
            if old == b & bits {
                c & bits
            } else {
                old
            }
        }
    }
}

pub fn sext(v: u64, ty: Ty) -> i64 {
    match ty.bits() {
        8 => v as u8 as i8 as i64,
        16 => v as u16 as i16 as i64,
        32 => v as u32 as i32 as i64,
        _ => v as i64,
    }
}

pub fn int_op(op: IntOp, ty: Ty, a: u64, b: u64, c: u64, sat: bool) -> u64 {
    let bits = ty.bits();
    let m = type_mask(ty);
    let signed = ty.signed();
    let sa = sext(a, ty);
    let sb = sext(b, ty);
    match op {
        IntOp::Add if sat => {
            (sa as i128 + sb as i128).clamp(i32::MIN as i128, i32::MAX as i128) as i64 as u64 & m
        }
        IntOp::Sub if sat => {
            (sa as i128 - sb as i128).clamp(i32::MIN as i128, i32::MAX as i128) as i64 as u64 & m
        }
        IntOp::Add => a.wrapping_add(b) & m,
        IntOp::Sub => a.wrapping_sub(b) & m,
        IntOp::MulLo => a.wrapping_mul(b) & m,
        IntOp::MulHi => (full_product(a, b, ty) >> bits) as u64 & m,
        IntOp::MulWide => wide_product(a, b, ty) & wide_mask(bits),
        IntOp::MadLo => a.wrapping_mul(b).wrapping_add(c) & m,
        IntOp::MadHi => ((full_product(a, b, ty) >> bits) as u64).wrapping_add(c) & m,
        IntOp::MadWide => wide_product(a, b, ty).wrapping_add(c) & wide_mask(bits),
        IntOp::Div => {
            if b & m == 0 {
                // What the GPU gives: all ones.
                m
            } else if signed {
                sa.wrapping_div(sb) as u64 & m
            } else {
                (a & m) / (b & m)
            }
        }
        IntOp::Rem => {
            if b & m == 0 {
                // What an H100 gives: all ones, as for a quotient.
                m
            } else if signed {
                sa.wrapping_rem(sb) as u64 & m
            } else {
                (a & m) % (b & m)
            }
        }
        IntOp::Min => {
            if signed {
                sa.min(sb) as u64 & m
            } else {
                (a & m).min(b & m)
            }
        }
        IntOp::Max => {
            if signed {
                sa.max(sb) as u64 & m
            } else {
                (a & m).max(b & m)
            }
        }
        IntOp::Abs => sa.wrapping_abs() as u64 & m,
        IntOp::Neg => sa.wrapping_neg() as u64 & m,
        IntOp::And => a & b & m,
        IntOp::Or => (a | b) & m,
        IntOp::Xor => (a ^ b) & m,
        IntOp::Not => !a & m,
        IntOp::CNot => u64::from(a & m == 0),
        IntOp::Shl => {
            let s = b as u32;
            if s >= bits {
                0
            } else {
                (a << s) & m
            }
        }
        IntOp::Shr => shift_right(a, b, ty),
        IntOp::Popc => u64::from((a & m).count_ones()),
        IntOp::Clz => u64::from((a & m).leading_zeros() - (64 - bits)),
        IntOp::Brev => ((a & m).reverse_bits() >> (64 - bits)) & m,
        IntOp::Bfe => bit_field_extract(a, b, c, ty),
        IntOp::Bfi => bit_field_insert(a, b, c, ty),
        IntOp::Prmt => permute(a, b, c),
        IntOp::Bfind(shiftamt) => bit_find(a, ty, shiftamt),
        IntOp::Shf(left, clamp) => funnel_shift(a, b, c, left, clamp),
        IntOp::Mul24(hi) => mul24(a, b, signed, hi),
        IntOp::Mad24(hi) => mul24(a, b, signed, hi).wrapping_add(c) & 0xffff_ffff,
        IntOp::Bmsk(clamp) => bit_mask(a, b, clamp),
        IntOp::Szext(clamp) => sign_zero_extend(a, b, signed, clamp),
        IntOp::Dp4a(sa, sb) => dot4(a, b, c, sa, sb),
        IntOp::AbsDiff(bytes, sa, sb, add) => abs_diff(a, b, c, bytes, (sa, sb), add),
        IntOp::Dp2a(hi, sa, sb) => dot2(a, b, c, hi, sa, sb),
        IntOp::PrmtMode(mode) => permute_mode(a, b, c, mode),
        IntOp::Lop3(lut) => lop3(a, b, c, lut),
        IntOp::MinRelu => relu(int_op(IntOp::Min, ty, a, b, c, false), ty),
        IntOp::MaxRelu => relu(int_op(IntOp::Max, ty, a, b, c, false), ty),
        IntOp::Halves(op) => halves(op, ty, a, b),
        IntOp::Fns => find_nth_set(a as u32, b as u32, c as u32 as i32),
        IntOp::Sad => {
            let d = if signed {
                (sa - sb).unsigned_abs()
            } else {
                (a & m).abs_diff(b & m)
            };
            d.wrapping_add(c) & m
        }
    }
}

/// The exact product of `a` and `b` as `ty`'s integers, for the high half.
#[inline]
fn full_product(a: u64, b: u64, ty: Ty) -> u128 {
    if ty.signed() {
        (sext(a, ty) as i128 * sext(b, ty) as i128) as u128
    } else {
        let m = type_mask(ty);
        (a & m) as u128 * (b & m) as u128
    }
}

/// The product of `a` and `b` as `ty`'s integers, in 64 bits (enough for `.wide`, which
/// keeps twice `ty`'s bits: see `wide_mask`).
#[inline]
fn wide_product(a: u64, b: u64, ty: Ty) -> u64 {
    if ty.signed() {
        sext(a, ty).wrapping_mul(sext(b, ty)) as u64
    } else {
        let m = type_mask(ty);
        (a & m).wrapping_mul(b & m)
    }
}

/// The bits of a `.wide` result from `bits`-bit operands.
#[inline]
fn wide_mask(bits: u32) -> u64 {
    if bits == 32 {
        u64::MAX
    } else {
        (1u64 << (2 * bits)) - 1
    }
}

/// `shr`: arithmetic for signed types, logical otherwise; shifts past the width fill.
#[inline]
fn shift_right(a: u64, b: u64, ty: Ty) -> u64 {
    let bits = ty.bits();
    let m = type_mask(ty);
    let sa = sext(a, ty);
    let s = (b as u32).min(bits);
    if ty.signed() {
        if s >= bits {
            (if sa < 0 { -1i64 } else { 0 }) as u64 & m
        } else {
            (sa >> s) as u64 & m
        }
    } else if s >= bits {
        0
    } else {
        (a & m) >> s
    }
}

/// `bfe`: the `c`-bit field of `a` at bit `b`, sign-extended for signed types.
#[inline]
fn bit_field_extract(a: u64, b: u64, c: u64, ty: Ty) -> u64 {
    let bits = ty.bits();
    let m = type_mask(ty);
    let signed = ty.signed();
    let pos = (b & 0xff) as u32;
    let len = (c & 0xff) as u32;
    let msb = bits - 1;
    let sign_bit = if len == 0 || !signed {
        false
    } else {
        let at = (pos + len - 1).min(msb);
        (a >> at) & 1 == 1
    };
    let mut out = 0u64;
    for i in 0..bits {
        let bit = if i < len && pos + i <= msb {
            (a >> (pos + i)) & 1 == 1
        } else {
            sign_bit
        };
        if bit {
            out |= 1 << i;
        }
    }
    out & m
}

/// `bfi`: `a`'s low bits into `b` at the position and length packed in `c`
/// (`pos | len << 32`, as the decoder writes it).
#[inline]
fn bit_field_insert(a: u64, b: u64, c: u64, ty: Ty) -> u64 {
    let bits = ty.bits();
    let m = type_mask(ty);
    let pos = (c & 0xff) as u32;
    let len = ((c >> 32) & 0xff) as u32;
    let mut out = b & m;
    for i in 0..len {
        if pos + i >= bits {
            break;
        }
        out &= !(1 << (pos + i));
        out |= ((a >> i) & 1) << (pos + i);
    }
    out & m
}

/// `prmt` (the default mode): four bytes picked from `a` and `b` by the selectors in `c`,
/// each either the byte or its sign replicated.
#[inline]
fn permute(a: u64, b: u64, c: u64) -> u64 {
    let bytes = [a as u32, b as u32];
    let all = u64::from(bytes[0]) | u64::from(bytes[1]) << 32;
    let mut out = 0u32;
    for i in 0..4 {
        let sel = (c >> (4 * i)) as u32 & 0xf;
        let byte = (all >> ((sel & 7) * 8)) as u8;
        let byte = if sel & 8 != 0 {
            if byte & 0x80 != 0 {
                0xff
            } else {
                0
            }
        } else {
            byte
        };
        out |= u32::from(byte) << (8 * i);
    }
    u64::from(out)
}

/// `bfind`: the position of the most significant bit that differs from the sign (for
/// unsigned types, the most significant 1), or with `shiftamt` the left shift that brings
/// it to the top; 0xffffffff where there is none.
pub fn bit_find(a: u64, ty: Ty, shiftamt: bool) -> u64 {
    let bits = ty.bits();
    let m = type_mask(ty);
    let v = if ty.signed() && sext(a, ty) < 0 {
        !a & m
    } else {
        a & m
    };
    if v == 0 {
        return 0xffff_ffff;
    }
    let pos = 63 - v.leading_zeros();
    u64::from(if shiftamt { bits - 1 - pos } else { pos })
}

/// `fns`: the bit position of the `offset`-th set bit of `mask` counting from bit `base`
/// up (`offset` > 0) or down (< 0), or of bit `base` itself where `offset` is 0 and it is
/// set; 0xffffffff where there is none.
pub fn find_nth_set(mask: u32, base: u32, offset: i32) -> u64 {
    let set = |pos: i64| (0..32).contains(&pos) && mask >> pos & 1 == 1;
    if offset == 0 {
        return if set(i64::from(base)) {
            u64::from(base)
        } else {
            0xffff_ffff
        };
    }
    let step = if offset > 0 { 1 } else { -1 };
    let mut count = offset.unsigned_abs() - 1;
    let mut pos = i64::from(base);
    while (0..32).contains(&pos) {
        if set(pos) {
            if count == 0 {
                return pos as u64;
            }
            count -= 1;
        }
        pos += step;
    }
    0xffff_ffff
}

/// `shf`: the 64-bit `b:a` shifted left (its high word kept) or right (its low word), by
/// `c` taken modulo 32 (`.wrap`) or clamped to 32 (`.clamp`).
pub fn funnel_shift(a: u64, b: u64, c: u64, left: bool, clamp: bool) -> u64 {
    let n = if clamp {
        (c as u32).min(32)
    } else {
        c as u32 & 31
    };
    let both = (b & 0xffff_ffff) << 32 | (a & 0xffff_ffff);
    if left {
        ((both << n) >> 32) & 0xffff_ffff
    } else {
        (both >> n) & 0xffff_ffff
    }
}

/// `mul24`: the 48-bit product of the low 24 bits of `a` and `b` (sign-extended when
/// `signed`), its low 32 bits or (`hi`) its bits 16 to 47.
pub fn mul24(a: u64, b: u64, signed: bool, hi: bool) -> u64 {
    let operand = |x: u64| {
        if signed {
            i64::from((x as u32) << 8) as i32 as i64 >> 8
        } else {
            (x & 0xff_ffff) as i64
        }
    };
    let p = operand(a).wrapping_mul(operand(b)) as u64;
    if hi {
        (p >> 16) & 0xffff_ffff
    } else {
        p & 0xffff_ffff
    }
}

/// `bmsk`: `b` one-bits from bit `a`, as the PTX ISA's pseudocode gives them.
pub fn bit_mask(a: u64, b: u64, clamp: bool) -> u64 {
    let (a, b) = (a as u32, b as u32);
    let a1 = a & 31;
    let b1 = b & 31;
    let mut mask0 = u32::MAX << a1;
    let sum = a1 + b1;
    let mut overflow = sum >= 32;
    if clamp {
        if a >= 32 {
            mask0 = 0;
            overflow = true;
        }
        overflow |= b >= 32;
    }
    let mask1 = if overflow {
        0
    } else if b1 == 0 {
        u32::MAX
    } else {
        u32::MAX << sum
    };
    u64::from(mask0 & !mask1)
}

/// `szext`: the low `b` bits of `a`, sign- or zero-extended to 32, as the PTX ISA's
/// pseudocode gives them (`b` modulo 32 with `.wrap`; 32 or more keeps `a` with `.clamp`).
pub fn sign_zero_extend(a: u64, b: u64, signed: bool, clamp: bool) -> u64 {
    let (a, b) = (a as u32, b as u32);
    let b1 = b & 31;
    let too_large = clamp && b >= 32;
    let mask = if too_large { 0 } else { u32::MAX << b1 };
    let sign = signed && b1 != 0 && !too_large && (a >> ((b1 - 1) & 31)) & 1 == 1;
    u64::from((a & !mask) | if sign { mask } else { 0 })
}

/// The byte `i` of `x`, as a signed or unsigned number.
fn byte_of(x: u64, i: u32, signed: bool) -> i64 {
    let v = (x >> (8 * i)) as u8;
    if signed {
        i64::from(v as i8)
    } else {
        i64::from(v)
    }
}

/// `dp4a`: `c` plus the four products of `a`'s and `b`'s bytes, in 32 bits.
pub fn dot4(a: u64, b: u64, c: u64, sa: bool, sb: bool) -> u64 {
    let sum = (0..4).fold(0i64, |acc, i| acc + byte_of(a, i, sa) * byte_of(b, i, sb));
    (c as i64).wrapping_add(sum) as u64 & 0xffff_ffff
}

/// `vabsdiff4` (`bytes`) and `vabsdiff2`: the absolute difference of each byte (or half) of
/// `a` and `b`, each read signed or not (`signed`); with `.add`, `c` plus their sum in 32
/// bits, else each in its own lane (every lane selected: the merge keeps nothing of `c`).
pub fn abs_diff(a: u64, b: u64, c: u64, bytes: bool, signed: (bool, bool), add: bool) -> u64 {
    let (lanes, width) = if bytes { (4, 8) } else { (2, 16) };
    let lane = |v: u64, i: u32, signed: bool| {
        let raw = (v >> (width * i)) & ((1 << width) - 1);
        if signed && raw >> (width - 1) != 0 {
            raw as i64 - (1i64 << width)
        } else {
            raw as i64
        }
    };
    let diff = |i: u32| (lane(a, i, signed.0) - lane(b, i, signed.1)).unsigned_abs();
    if add {
        (0..lanes).fold(c, |sum, i| sum.wrapping_add(diff(i))) & 0xffff_ffff
    } else {
        (0..lanes).fold(0, |d, i| d | (diff(i) & ((1 << width) - 1)) << (width * i))
    }
}

/// `lop3.b32`: bit `i` of the result is bit `4a + 2b + c` of `lut`, where `a`, `b` and `c`
/// are bit `i` of each operand: the union of the minterms (`a & !b & c` for index 5) whose
/// bit `lut` sets, so that the low byte of `lop3(0xf0, 0xcc, 0xaa, lut)` is `lut` itself
/// (the PTX ISA's definition of the table).
pub fn lop3(a: u64, b: u64, c: u64, lut: u8) -> u64 {
    let either = |v: u64, set: bool| if set { v } else { !v };
    (0..8).filter(|i| lut >> i & 1 == 1).fold(0, |d, i| {
        d | either(a, i & 4 != 0) & either(b, i & 2 != 0) & either(c, i & 1 != 0)
    }) & 0xffff_ffff
}

/// `.relu`: a result negative as `ty` reads it is 0.
fn relu(v: u64, ty: Ty) -> u64 {
    if sext(v, ty) < 0 {
        0
    } else {
        v
    }
}

/// `add`, `min` and `max` of `.u16x2` and `.s16x2` ([`IntOp::Halves`]): each 16-bit half of
/// `a` and of `b` taken as a `half` (`.u16` or `.s16`), the operation done on them as on that
/// type (an add wraps in 16 bits, so no carry reaches the high half), the two results packed
/// back, the low half's low.
pub fn halves(op: HalvesOp, half: Ty, a: u64, b: u64) -> u64 {
    let whole = match op {
        HalvesOp::Add => IntOp::Add,
        HalvesOp::Min => IntOp::Min,
        HalvesOp::Max => IntOp::Max,
        HalvesOp::MinRelu => IntOp::MinRelu,
        HalvesOp::MaxRelu => IntOp::MaxRelu,
    };
    let lane = |i: u32| {
        let (x, y) = ((a >> (16 * i)) & 0xffff, (b >> (16 * i)) & 0xffff);
        int_op(whole, half, x, y, 0, false) << (16 * i)
    };
    lane(0) | lane(1)
}

/// `dp2a`: `c` plus the products of `a`'s two halves with two of `b`'s bytes (bytes 0 and
/// 1, or 2 and 3 with `.hi`), in 32 bits.
pub fn dot2(a: u64, b: u64, c: u64, hi: bool, sa: bool, sb: bool) -> u64 {
    let half = |i: u32| {
        let v = (a >> (16 * i)) as u16;
        if sa {
            i64::from(v as i16)
        } else {
            i64::from(v)
        }
    };
    let first = if hi { 2 } else { 0 };
    let sum = half(0) * byte_of(b, first, sb) + half(1) * byte_of(b, first + 1, sb);
    (c as i64).wrapping_add(sum) as u64 & 0xffff_ffff
}

/// `prmt` in a mode, the selector's two low bits choosing: 0 `.f4e` (four bytes of `b:a`
/// from the selected one up), 1 `.b4e` (from it down), 2 `.rc8` (it, four times), 3
/// `.ecl` (bytes up to it replaced by it), 4 `.ecr` (bytes above it replaced by it), 5
/// `.rc16` (its half, twice).
pub fn permute_mode(a: u64, b: u64, c: u64, mode: u8) -> u64 {
    let all = (b & 0xffff_ffff) << 32 | (a & 0xffff_ffff);
    let sel = (c & 3) as u32;
    let pick = |i: u32| (all >> (8 * (i & 7))) & 0xff;
    let mut out = 0u64;
    for i in 0..4u32 {
        let from = match mode {
            0 => sel + i,
            1 => sel.wrapping_sub(i),
            2 => sel,
            3 => i.max(sel),
            4 => i.min(sel),
            _ => (sel & 1) * 2 + (i & 1),
        };
        out |= pick(from) << (8 * i);
    }
    out
}

/// A carry-chain instruction's result and carry out: `cf` is the carry in (for `subc`, the
/// borrow in), used where `cin`.
pub fn carry_op(op: CarryOp, ty: Ty, a: u64, b: u64, c: u64, cin: bool, cf: bool) -> (u64, bool) {
    let bits = ty.bits();
    let m = type_mask(ty);
    let carry = u128::from(cin && cf);
    let sum = |x: u64, y: u64| {
        let t = u128::from(x & m) + u128::from(y & m) + carry;
        ((t as u64) & m, t >> bits != 0)
    };
    match op {
        CarryOp::Add => sum(a, b),
        CarryOp::Sub => {
            // a - (b + CF): the borrow out is whether that went below zero.
            let t = i128::from(a & m) - i128::from(b & m) - carry as i128;
            ((t as u64) & m, t < 0)
        }
        CarryOp::MadLo => sum(a.wrapping_mul(b), c),
        CarryOp::MadHi => sum((full_product(a, b, ty) >> bits) as u64, c),
    }
}

/// An f32 register's value.
pub fn f32_of(v: u64) -> f32 {
    f32::from_bits(v as u32)
}

/// A floating-point instruction. `ftz` flushes f32 subnormal operands and results to zeros
/// of their sign, as the PTX ISA says of `.ftz` (an H100's `mul.ftz.f32` of 0x80400000 by
/// 0.5 gives 0x80000000); no f64 instruction the decoder accepts has it but the
/// approximations, which flush by their tables.
#[allow(clippy::too_many_arguments)]
pub fn float_op(
    op: FloatOp,
    ty: Ty,
    rnd: Rnd,
    ftz: bool,
    sat: bool,
    a: u64,
    b: u64,
    c: u64,
) -> u64 {
    if ty.half().is_some() {
        return crate::half::op(op, ty, ftz, sat, a, b, c);
    }
    if ty == Ty::F64 {
        let (x, y, z) = (f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
        // NaNs, as an H100 gives them (measured on single PTX instructions there): an
        // operand NaN comes out quieted and unnegated. With several, the H100 takes one SASS
        // operand position's, and which operand ptxas puts there varies from kernel to
        // kernel; these are the positions of the single-instruction measurement: `b`'s before
        // `a`'s, an fma's `b`, `c`, then `a` (a division, a software sequence, takes `a`'s).
        let nan = match op {
            FloatOp::Div => [a, b, b],
            FloatOp::Fma | FloatOp::FmaSub | FloatOp::FmaRev => [b, c, a],
            _ if arity(op) == 2 => [b, a, a],
            _ => [a, a, a],
        };
        let nan = nan
            .iter()
            .any(|v| f64::from_bits(*v).is_nan())
            .then(|| nan64(&nan));
        let r = match op {
            FloatOp::Abs | FloatOp::Neg if x.is_nan() => return quiet64(a),
            FloatOp::Add
            | FloatOp::Sub
            | FloatOp::Mul
            | FloatOp::Fma
            | FloatOp::FmaSub
            | FloatOp::FmaRev
            | FloatOp::Div
            | FloatOp::Sqrt
            | FloatOp::Rcp
                if nan.is_some() =>
            {
                return nan.unwrap_or(NAN64)
            }
            FloatOp::Add => add64(x, y, rnd),
            FloatOp::Sub => add64(x, -y, rnd),
            FloatOp::Mul => mul64(x, y, rnd),
            FloatOp::Fma => fma64(x, y, z, rnd),
            FloatOp::FmaSub => fma64(x, y, -z, rnd),
            FloatOp::FmaRev => fma64(-x, y, z, rnd),
            // `div.approx` and `div.full` are f32 alone: the loader takes no f64 form.
            FloatOp::Div | FloatOp::DivApprox { .. } => div64(x, y, rnd),
            FloatOp::DivApproxFused { .. } => {
                unreachable!("the loader fuses div.approx and div.full, f32 alone")
            }
            FloatOp::Sqrt => sqrt64(x, rnd),
            FloatOp::Rcp => div64(1.0, x, rnd),
            FloatOp::Abs => return a & !(1 << 63),
            FloatOp::Neg => return a ^ (1 << 63),
            FloatOp::Min => return min64(x, y).to_bits(),
            FloatOp::Max => return max64(x, y).to_bits(),
            FloatOp::Copysign => return (b & !(1 << 63)) | (a & (1 << 63)),
            FloatOp::Approx(approx) => return crate::approx::f64(approx, x).to_bits(),
            FloatOp::MinNaN | FloatOp::MaxNaN | FloatOp::FmaRelu => {
                unreachable!("the loader takes `.NaN` and `.relu` on half types alone")
            }
        };
        let r = if sat { saturate64(r) } else { r };
        // An invalid operation (0 x inf, inf - inf, the root of a negative) gives the
        // H100's default NaN, not the host's: x86's is the same, Arm's has the sign clear.
        return if r.is_nan() { NAN64 } else { r.to_bits() };
    }
    match op {
        FloatOp::Approx(approx) => return u64::from(crate::approx::f32(approx, a as u32, ftz)),
        FloatOp::DivApprox { full } => return div_approx(a, b, ftz, full, None),
        FloatOp::DivApproxFused { full, form } => {
            return div_approx(a, b, ftz, full, Some((form, c, sat)))
        }
        _ => {}
    }
    if ftz {
        let (a, b, c) = (ftz_bits32(a), ftz_bits32(b), ftz_bits32(c));
        let r = float_op(op, ty, rnd, false, false, a, b, c);
        let r = if f32_of(r).abs() == f32::MIN_POSITIVE && tiny_unbounded(op, rnd, a, b, c) {
            u64::from(r as u32 & 0x8000_0000)
        } else {
            ftz_bits32(r)
        };
        return if sat {
            u64::from((saturate64(f64::from(f32_of(r))) as f32).to_bits())
        } else {
            r
        };
    }
    let (x, y, z) = (f32_of(a), f32_of(b), f32_of(c));
    let r = match op {
        FloatOp::Add => add32(x, y, rnd),
        FloatOp::Sub => add32(x, -y, rnd),
        FloatOp::Mul => mul32(x, y, rnd),
        FloatOp::Fma => fma32(x, y, z, rnd),
        FloatOp::FmaSub => fma32(x, y, -z, rnd),
        FloatOp::FmaRev => fma32(-x, y, z, rnd),
        FloatOp::Div => div32(x, y, rnd),
        FloatOp::Sqrt => sqrt32(x, rnd),
        FloatOp::Rcp => div32(1.0, x, rnd),
        FloatOp::Abs if !x.is_nan() => return u64::from(x.to_bits() & 0x7fff_ffff),
        FloatOp::Neg if !x.is_nan() => return u64::from(x.to_bits() ^ 0x8000_0000),
        FloatOp::Abs | FloatOp::Neg => f32::NAN,
        FloatOp::Min => min64(f64::from(x), f64::from(y)) as f32,
        FloatOp::Max => max64(f64::from(x), f64::from(y)) as f32,
        FloatOp::Copysign => return u64::from((b as u32 & 0x7fff_ffff) | (a as u32 & 0x8000_0000)),
        // Answered above, `.ftz` or not.
        FloatOp::Approx(_) | FloatOp::DivApprox { .. } | FloatOp::DivApproxFused { .. } => f32::NAN,
        FloatOp::MinNaN | FloatOp::MaxNaN | FloatOp::FmaRelu => {
            unreachable!("the loader takes `.NaN` and `.relu` on half types alone")
        }
    };
    let r = if sat {
        saturate64(f64::from(r)) as f32
    } else {
        r
    };
    u64::from(canonical32(r).to_bits())
}

/// `div.approx.f32` and `div.full.f32` as ptxas makes them for the H100 (read in its SASS):
/// `a` times the special-function unit's reciprocal of `b`, both first scaled by 1/4 where
/// that reciprocal would fall below the normals (`div.full`), and by 2^24 where `b` is below
/// them itself (without `.ftz`); every multiply `.ftz` as the instruction is. With `fused`,
/// the last multiply is fused into the add or subtract of `c` that read the quotient, as
/// ptxas fuses it (an H200's SASS: `MUFU.RCP R6, R6; FFMA.FTZ R7, R0, R6, R7` for
/// `div.approx.ftz.f32` then `add.ftz.f32`, and after the scalings alike), `.sat` if the add
/// was.
fn div_approx(a: u64, b: u64, ftz: bool, full: bool, fused: Option<(Fused, u64, bool)>) -> u64 {
    let mul = |p: u64, q: f32| {
        float_op(
            FloatOp::Mul,
            Ty::F32,
            Rnd::N,
            ftz,
            false,
            p,
            u64::from(q.to_bits()),
            0,
        )
    };
    let divisor = f32_of(b).abs();
    let scale = if full && divisor > 8.507_059e37 {
        Some(0.25)
    } else if !ftz && divisor < f32::MIN_POSITIVE {
        Some(16_777_216.0)
    } else {
        None
    };
    let (a, b) = match scale {
        Some(s) => (mul(a, s), mul(b, s)),
        None => (a, b),
    };
    let reciprocal = crate::approx::f32(Approx::Rcp, b as u32, true);
    let Some((form, c, sat)) = fused else {
        return mul(a, f32_of(u64::from(reciprocal)));
    };
    let op = match form {
        Fused::Add => FloatOp::Fma,
        Fused::Sub => FloatOp::FmaSub,
        Fused::Rev => FloatOp::FmaRev,
    };
    float_op(op, Ty::F32, Rnd::N, ftz, sat, a, u64::from(reciprocal), c)
}

/// Whether `op`'s exact result, rounded to 24 bits with no bound on its exponent, is below
/// the smallest normal float: what `.ftz` flushes, measured on Hopper (an H200's
/// `mul.rn.ftz.f32` of 0x00ffffff by 0.5, exactly 2^-126 (1 - 2^-24), gives 0, where rounding
/// at the subnormals' spacing gives 0x00800000; 2^-126 (1 - 2^-25) rounds up to 0x00800000 in
/// both). Asked only where the rounded result is the smallest normal, the one result the
/// two roundings disagree on: the operation again with operands scaled by 2^24, which moves
/// its exact result out of the subnormals exactly.
fn tiny_unbounded(op: FloatOp, rnd: Rnd, a: u64, b: u64, c: u64) -> bool {
    const SCALE: f32 = 16_777_216.0;
    let (x, y, z) = (f32_of(a), f32_of(b), f32_of(c));
    // The smaller factor of a product is scaled: the other may be near the largest float.
    let (small, large) = if x.abs() <= y.abs() { (x, y) } else { (y, x) };
    let scaled = match op {
        FloatOp::Mul => mul32(small * SCALE, large, rnd),
        FloatOp::Fma => fma32(small * SCALE, large, z * SCALE, rnd),
        FloatOp::FmaSub => fma32(small * SCALE, large, -z * SCALE, rnd),
        FloatOp::FmaRev => fma32(-small * SCALE, large, z * SCALE, rnd),
        FloatOp::Div => div32(x * SCALE, y, rnd),
        FloatOp::Rcp => div32(SCALE, x, rnd),
        // Sums of floats near 2^-126 are exact at either spacing; roots are never near it.
        _ => return false,
    };
    scaled.is_finite() && scaled.abs() < f32::MIN_POSITIVE * SCALE
}

/// How many operands `op` reads.
fn arity(op: FloatOp) -> usize {
    match op {
        FloatOp::Fma | FloatOp::FmaSub | FloatOp::FmaRev | FloatOp::DivApproxFused { .. } => 3,
        FloatOp::Abs | FloatOp::Neg | FloatOp::Sqrt | FloatOp::Rcp | FloatOp::Approx(_) => 1,
        _ => 2,
    }
}

/// The NaN of an f64 operation: the first NaN of `operands`, in the order the H100 takes
/// them, quieted; with none, the NaN it makes (inf - inf, 0 * inf).
#[inline]
pub fn nan64(operands: &[u64]) -> u64 {
    operands
        .iter()
        .find(|v| f64::from_bits(**v).is_nan())
        .map_or(NAN64, |v| quiet64(*v))
}

/// `bits`, a NaN made quiet (its payload kept), or any other value as it is.
pub fn quiet64(bits: u64) -> u64 {
    if f64::from_bits(bits).is_nan() {
        bits | (1 << 51)
    } else {
        bits
    }
}

/// `.sat`: clamp to [0, 1], NaN to 0.
pub fn saturate64(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

/// `setp`'s comparison; `ftz` compares f32 subnormals as zeros of their sign.
pub fn compare(cmp: Cmp, ty: Ty, ftz: bool, a: u64, b: u64) -> bool {
    if ty.float() {
        let (x, y) = if ty.half().is_some() {
            (
                crate::half::compared(ty, ftz, a),
                crate::half::compared(ty, ftz, b),
            )
        } else if ty == Ty::F64 {
            (f64::from_bits(a), f64::from_bits(b))
        } else if ftz {
            (
                f64::from(f32_of(ftz_bits32(a))),
                f64::from(f32_of(ftz_bits32(b))),
            )
        } else {
            (f64::from(f32_of(a)), f64::from(f32_of(b)))
        };
        let unordered = x.is_nan() || y.is_nan();
        return match cmp {
            Cmp::Eq => !unordered && x == y,
            Cmp::Ne => !unordered && x != y,
            Cmp::Lt | Cmp::Lo => !unordered && x < y,
            Cmp::Le | Cmp::Ls => !unordered && x <= y,
            Cmp::Gt | Cmp::Hi => !unordered && x > y,
            Cmp::Ge | Cmp::Hs => !unordered && x >= y,
            Cmp::Equ => unordered || x == y,
            Cmp::Neu => unordered || x != y,
            Cmp::Ltu => unordered || x < y,
            Cmp::Leu => unordered || x <= y,
            Cmp::Gtu => unordered || x > y,
            Cmp::Geu => unordered || x >= y,
            Cmp::Num => !unordered,
            Cmp::Nan => unordered,
        };
    }
    let m = type_mask(ty);
    let (ua, ub) = (a & m, b & m);
    let (sa, sb) = (sext(a, ty), sext(b, ty));
    let signed = ty.signed();
    match cmp {
        Cmp::Eq | Cmp::Equ => ua == ub,
        Cmp::Ne | Cmp::Neu => ua != ub,
        Cmp::Lt | Cmp::Ltu => {
            if signed {
                sa < sb
            } else {
                ua < ub
            }
        }
        Cmp::Le | Cmp::Leu => {
            if signed {
                sa <= sb
            } else {
                ua <= ub
            }
        }
        Cmp::Gt | Cmp::Gtu => {
            if signed {
                sa > sb
            } else {
                ua > ub
            }
        }
        Cmp::Ge | Cmp::Geu => {
            if signed {
                sa >= sb
            } else {
                ua >= ub
            }
        }
        Cmp::Lo => ua < ub,
        Cmp::Ls => ua <= ub,
        Cmp::Hi => ua > ub,
        Cmp::Hs => ua >= ub,
        Cmp::Num | Cmp::Nan => false,
    }
}

pub fn round_integral(x: f64, r: Rnd) -> f64 {
    match r {
        Rnd::N => x.round_ties_even(),
        Rnd::Z => x.trunc(),
        Rnd::M => x.floor(),
        Rnd::P => x.ceil(),
    }
}

pub fn int_range(ty: Ty) -> (i128, i128) {
    let bits = ty.bits();
    if ty.signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// `cvt`, every combination the interpreter accepts, as its destination register holds the
/// result: a signed integer sign-extended to the register's width (all 64 bits here, of
/// which an instruction reads its type's), anything else zero-extended (the PTX ISA's
/// rule for a destination wider than the type: `cvt.s16.s8` of -62 into a 32-bit register
/// is 0xffffffc2). `ftz` flushes an f32 subnormal source, and an f32 subnormal result of a
/// conversion from a float, to the zero of its sign.
#[allow(clippy::too_many_arguments)]
pub fn convert(
    dty: Ty,
    sty: Ty,
    rnd: Option<Rnd>,
    int_rnd: Option<Rnd>,
    ftz: bool,
    sat: bool,
    v: u64,
) -> u64 {
    let v = if ftz && sty == Ty::F32 {
        // Widened under `.ftz`, a NaN loses its payload as well: an H100's
        // `cvt.ftz.f64.f32` of 0x7fc00000 is 0x7fffffffe0000000 (0x7ff8000000000000 without).
        if dty == Ty::F64 && f32::from_bits(v as u32).is_nan() {
            u64::from(NAN32)
        } else {
            ftz_bits32(v)
        }
    } else {
        v
    };
    if dty.half().is_some() || sty.half().is_some() {
        return half_convert(dty, sty, rnd, int_rnd, ftz, sat, v);
    }
    let out = match (sty.float(), dty.float()) {
        (false, false) => int_to_int(dty, sty, sat, v),
        (true, false) => float_to_int(dty, sty, int_rnd, v),
        (false, true) => int_to_float(dty, sty, rnd, v),
        (true, true) => float_to_float(dty, sty, rnd, int_rnd, sat, v),
    };
    if ftz && dty == Ty::F32 && sty == Ty::F64 && f32_of(out).abs() == f32::MIN_POSITIVE {
        // As `float_op`'s `.ftz` (`tiny_unbounded`): a double that rounds to the smallest
        // normal only at the subnormals' spacing is flushed.
        let scaled = f32_of(float_to_float(
            dty,
            sty,
            rnd,
            int_rnd,
            sat,
            (f64::from_bits(v) * 16_777_216.0).to_bits(),
        ));
        if scaled.abs() < f32::MIN_POSITIVE * 16_777_216.0 {
            out & 0x8000_0000
        } else {
            out
        }
    } else if ftz && dty == Ty::F32 && sty.float() {
        ftz_bits32(out)
    } else if dty.signed() {
        sext(out, dty) as u64
    } else {
        out
    }
}

/// `cvt` of two f32s into a pair of halves: `a` into the high half, `b` into the low (the
/// PTX ISA's `cvt` with an `.f16x2` or `.bf16x2` destination); `.relu` takes a negative
/// result to +0.
pub fn convert_pair(dty: Ty, rnd: Rnd, relu: bool, a: u64, b: u64) -> u64 {
    let one = |v: u64| {
        let h = crate::half::to_half(dty, rnd, None, false, f64::from(f32_of(v)));
        u64::from(if relu { crate::half::relu(h) } else { h })
    };
    one(b) | one(a) << 16
}

/// `cvt` from or to a half (`crate::half`): a half source is widened to an f32 exactly and
/// converted on as one; a source to a half is taken exactly (an integer rounded to odd).
#[allow(clippy::too_many_arguments)]
fn half_convert(
    dty: Ty,
    sty: Ty,
    rnd: Option<Rnd>,
    int_rnd: Option<Rnd>,
    ftz: bool,
    sat: bool,
    v: u64,
) -> u64 {
    if dty.half().is_none() {
        let wide = u64::from(crate::half::widen(sty, v));
        if dty == Ty::F32 && int_rnd.is_none() && !sat {
            // A plain widening, NaNs as `widen` leaves them (f32's canonical NaN would
            // replace a bfloat16's payload).
            return if ftz { ftz_bits32(wide) } else { wide };
        }
        return convert(dty, Ty::F32, rnd, int_rnd, ftz, sat, wide);
    }
    let x = match sty {
        Ty::F64 => f64::from_bits(v),
        Ty::F32 => f64::from(f32_of(v)),
        _ if sty.half().is_some() => f64::from(f32_of(u64::from(crate::half::widen(sty, v)))),
        _ => {
            // An integer of up to 64 bits: the nearest double, and where that is inexact and
            // even, its neighbour on the exact value's side (rounded to odd).
            let x = int_value(v, sty);
            let r = x as f64;
            let err = x - r as i128;
            if err == 0 || r.to_bits() & 1 == 1 {
                r
            } else if err > 0 {
                r.next_up()
            } else {
                r.next_down()
            }
        }
    };
    if let (Ty::F64, Some(fmt), false) = (sty, dty.half(), sat) {
        if x.is_nan() {
            return u64::from(fmt.narrow_nan(v));
        }
    }
    u64::from(crate::half::to_half(
        dty,
        rnd.unwrap_or(Rnd::N),
        int_rnd,
        sat,
        x,
    ))
}

/// The integer that `v` holds as `ty`, sign- or zero-extended.
#[inline]
fn int_value(v: u64, ty: Ty) -> i128 {
    if ty.signed() {
        i128::from(sext(v, ty))
    } else {
        i128::from(v & type_mask(ty))
    }
}

/// `cvt` between integer types: truncated, or clamped to `dty`'s range with `.sat`.
#[inline]
fn int_to_int(dty: Ty, sty: Ty, sat: bool, v: u64) -> u64 {
    let dm = type_mask(dty);
    let x = int_value(v, sty);
    if sat {
        let (lo, hi) = int_range(dty);
        (x.clamp(lo, hi) as u64) & dm
    } else {
        (x as u64) & dm
    }
}

/// `cvt` from a float to an integer: rounded to an integer (towards zero unless told),
/// then clamped to `dty`'s range.
#[inline]
fn float_to_int(dty: Ty, sty: Ty, int_rnd: Option<Rnd>, v: u64) -> u64 {
    let dm = type_mask(dty);
    let x = if sty == Ty::F64 {
        f64::from_bits(v)
    } else {
        f64::from(f32::from_bits(v as u32))
    };
    if x.is_nan() {
        // What an H100 gives for a NaN, signed or unsigned: the top bit alone, but
        // zero from an f32 to 32 bits (the PTX ISA: zero from anything but an f64 to
        // anything narrower than 64 bits).
        return if sty != Ty::F64 && dty.bits() < 64 {
            0
        } else {
            (1u64 << (dty.bits() - 1)) & dm
        };
    }
    let r = round_integral(x, int_rnd.unwrap_or(Rnd::Z));
    let (lo, hi) = int_range(dty);
    let clamped = if r <= lo as f64 {
        lo
    } else if r >= hi as f64 {
        hi
    } else {
        r as i128
    };
    (clamped as u64) & dm
}

/// `cvt` from an integer to a float, rounded as told (to nearest unless told).
#[inline]
fn int_to_float(dty: Ty, sty: Ty, rnd: Option<Rnd>, v: u64) -> u64 {
    let x = int_value(v, sty);
    let rnd = rnd.unwrap_or(Rnd::N);
    if dty == Ty::F64 {
        let r = x as f64;
        let side = (x - r as i128).signum() as f64;
        let r = direct_int64(r, side, rnd);
        r.to_bits()
    } else {
        let r = x as f64;
        let e = (x - r as i128) as f64;
        let out = round32(r, e, rnd);
        u64::from(out.to_bits())
    }
}

/// `cvt` between float types, or within one to round to an integer (`int_rnd`).
#[inline]
fn float_to_float(
    dty: Ty,
    sty: Ty,
    rnd: Option<Rnd>,
    int_rnd: Option<Rnd>,
    sat: bool,
    v: u64,
) -> u64 {
    let out = match (sty, dty) {
        (Ty::F32, Ty::F64) => {
            // A subnormal is kept (`convert` flushes it first under `.ftz`).
            let x = f64::from(f32::from_bits(v as u32));
            let x = match int_rnd {
                Some(r) => round_integral(x, r),
                None => x,
            };
            let x = if sat { saturate64(x) } else { x };
            x.to_bits()
        }
        (Ty::F64, Ty::F32) => {
            // A subnormal result is kept (`convert` flushes it under `.ftz`): the
            // smallest normal double rounded up is 0x00000001.
            let x = f64::from_bits(v);
            let r = round32(x, 0.0, rnd.unwrap_or(Rnd::N));
            let r = if sat {
                saturate64(f64::from(r)) as f32
            } else {
                r
            };
            u64::from(r.to_bits())
        }
        (Ty::F64, _) => {
            let x = f64::from_bits(v);
            let x = match int_rnd {
                Some(r) => round_integral(x, r),
                None => x,
            };
            let x = if sat { saturate64(x) } else { x };
            quiet64(x.to_bits())
        }
        _ => {
            let x = f32_of(v);
            let x = match int_rnd {
                Some(r) => round_integral(f64::from(x), r) as f32,
                None => x,
            };
            let x = if sat {
                saturate64(f64::from(x)) as f32
            } else {
                x
            };
            u64::from(canonical32(x).to_bits())
        }
    };
    out & type_mask(dty)
}

pub fn direct_int64(r: f64, side: f64, rnd: Rnd) -> f64 {
    if side == 0.0 {
        return r;
    }
    match rnd {
        Rnd::N => r,
        Rnd::M if side < 0.0 => r.next_down(),
        Rnd::P if side > 0.0 => r.next_up(),
        Rnd::Z if (side < 0.0) == (r > 0.0) => {
            if r > 0.0 {
                r.next_down()
            } else {
                r.next_up()
            }
        }
        _ => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q1: u64 = 0x7ff8_0000_0000_0001;
    const Q2: u64 = 0xfff8_dead_beef_0000;
    const S1: u64 = 0x7ff0_0000_0000_0001;
    const S2: u64 = 0xfff0_0000_0000_0002;
    const ONE: u64 = 0x3ff0_0000_0000_0000;

    fn f64_op(op: FloatOp, rnd: Rnd, a: u64, b: u64, c: u64) -> u64 {
        float_op(op, Ty::F64, rnd, false, false, a, b, c)
    }

    /// A division fused into the add of `c`, rounded once, against the division then the
    /// add, on the words an H200 gave (tests/conformance/quotients.cu): (1 + 2^-12) / 3 less
    /// its rounding a unit low, 0x3eaab555, is the product's rounding error fused, the unit
    /// apart; a and b scaled by 2^126 through div.full's scaling, by 2^-130 through the
    /// subnormal divisor's: a fused division without either scaling gives -c or +inf.
    #[test]
    fn a_fused_division_rounds_once() {
        let m = 0xbeaa_b555;
        for (a, b, full, ftz) in [
            (0x3f80_0800, 0x4040_0000, false, true),
            (0x3f80_0800, 0x4040_0000, true, true),
            (0x3f80_0800, 0x4040_0000, false, false),
            (0x7e80_0800, 0x7f40_0000, true, true),
            (0x7e80_0800, 0x7f40_0000, true, false),
            (0x0008_0080, 0x0018_0000, false, false),
            (0x0008_0080, 0x0018_0000, true, false),
        ] {
            let f32_op = |op, a, b, c| float_op(op, Ty::F32, Rnd::N, ftz, false, a, b, c);
            let fused = FloatOp::DivApproxFused {
                full,
                form: Fused::Add,
            };
            assert_eq!(
                f32_op(fused, a, b, m),
                0x32aa_b000,
                "{a:#x} / {b:#x} {full}"
            );
            let q = f32_op(FloatOp::DivApprox { full }, a, b, 0);
            assert_eq!(f32_op(FloatOp::Add, q, m, 0), 0x3300_0000);
        }
        let rev = FloatOp::DivApproxFused {
            full: false,
            form: Fused::Rev,
        };
        let c = 0x3eaa_b555;
        let words = float_op(
            rev,
            Ty::F32,
            Rnd::N,
            true,
            false,
            0x3f80_0800,
            0x4040_0000,
            c,
        );
        assert_eq!(words, 0xb2aa_b000);
    }

    #[test]
    fn nans_come_out_as_on_the_h100() {
        // Measured on an H100, one PTX instruction at a time, every pair of these NaNs.
        for rnd in [Rnd::N, Rnd::Z, Rnd::M] {
            for op in [FloatOp::Add, FloatOp::Sub, FloatOp::Mul] {
                assert_eq!(f64_op(op, rnd, Q1, Q2, 0), Q2, "{op:?} takes b's NaN");
                assert_eq!(
                    f64_op(op, rnd, S1, Q2, 0),
                    Q2,
                    "{op:?}: no signalling first"
                );
                assert_eq!(f64_op(op, rnd, Q2, S2, 0), quiet64(S2), "{op:?} quiets");
                assert_eq!(f64_op(op, rnd, S2, ONE, 0), quiet64(S2), "{op:?}, one NaN");
            }
            let fma = |a, b, c| f64_op(FloatOp::Fma, rnd, a, b, c);
            assert_eq!(fma(Q1, Q2, S2), Q2, "an fma takes b's NaN first");
            assert_eq!(fma(Q1, ONE, S2), quiet64(S2), "then c's");
            assert_eq!(fma(Q2, ONE, ONE), Q2, "then a's");
            assert_eq!(
                f64_op(FloatOp::Div, rnd, Q1, Q2, 0),
                Q1,
                "a division takes a's"
            );
            assert_eq!(f64_op(FloatOp::Div, rnd, ONE, S2, 0), quiet64(S2));
        }
        assert_eq!(f64_op(FloatOp::Min, Rnd::N, Q1, S2, 0), quiet64(S2));
        assert_eq!(f64_op(FloatOp::Max, Rnd::N, S1, Q2, 0), Q2);
        assert_eq!(f64_op(FloatOp::Max, Rnd::N, Q1, ONE, 0), ONE);
        assert_eq!(
            f64_op(FloatOp::Neg, Rnd::N, Q2, 0, 0),
            Q2,
            "negation keeps the sign"
        );
        assert_eq!(f64_op(FloatOp::Abs, Rnd::N, S2, 0, 0), quiet64(S2));
        assert_eq!(f64_op(FloatOp::Sqrt, Rnd::Z, S1, 0, 0), quiet64(S1));
    }

    #[test]
    fn bfind_finds_the_top_non_sign_bit() {
        assert_eq!(bit_find(0, Ty::U32, false), 0xffff_ffff);
        assert_eq!(
            bit_find(0, Ty::U32, true),
            0xffff_ffff,
            "none: no shift either"
        );
        assert_eq!(bit_find(1, Ty::U32, false), 0);
        assert_eq!(bit_find(1, Ty::U32, true), 31);
        assert_eq!(bit_find(0xffff_ffff, Ty::U32, false), 31);
        assert_eq!(
            bit_find(0xffff_ffff, Ty::S32, false),
            0xffff_ffff,
            "-1 has no non-sign bit"
        );
        assert_eq!(
            bit_find(0x8000_0000, Ty::S32, false),
            30,
            "INT_MIN: its top 0"
        );
        assert_eq!(bit_find(0x7fff_ffff, Ty::S32, true), 1);
        assert_eq!(bit_find(1 << 63, Ty::U64, false), 63);
        assert_eq!(bit_find(1 << 40, Ty::U64, true), 23);
        assert_eq!(
            bit_find(u64::MAX - 1, Ty::S64, false),
            0,
            "-2: bit 0 is its top 0"
        );
    }

    #[test]
    fn funnel_shifts_wrap_or_clamp_their_amount() {
        let (a, b) = (0x89ab_cdef, 0x0123_4567);
        assert_eq!(funnel_shift(a, b, 0, true, false), b);
        assert_eq!(funnel_shift(a, b, 0, false, false), a);
        assert_eq!(funnel_shift(a, b, 8, true, false), 0x2345_6789);
        assert_eq!(funnel_shift(a, b, 8, false, true), 0x6789_abcd);
        assert_eq!(funnel_shift(a, b, 32, true, false), b, ".wrap: 32 is 0");
        assert_eq!(
            funnel_shift(a, b, 32, true, true),
            a,
            ".clamp: 32 shifts a word in"
        );
        assert_eq!(
            funnel_shift(a, b, 40, false, true),
            b,
            ".clamp: past 32 is 32"
        );
        assert_eq!(
            funnel_shift(a, b, 40, false, false),
            0x6789_abcd,
            ".wrap: 40 is 8"
        );
        assert_eq!(funnel_shift(a, a, 4, true, false), 0x9abc_def8, "a rotate");
    }

    #[test]
    fn mul24_keeps_24_bits_of_each_operand() {
        assert_eq!(
            mul24(0xff00_0002, 3, false, false),
            6,
            "the top byte is ignored"
        );
        assert_eq!(
            mul24(0x00ff_ffff, 2, true, false),
            0xffff_fffe,
            "-1 times 2"
        );
        assert_eq!(mul24(0x00ff_ffff, 0x00ff_ffff, false, true), 0xffff_fe00);
        assert_eq!(
            mul24(0x0080_0000, 0x0080_0000, true, true),
            0x4000_0000,
            "(-2^23)^2 >> 16"
        );
        assert_eq!(
            int_op(IntOp::Mad24(false), Ty::U32, 2, 3, 0xffff_ffff, false),
            5
        );
    }

    #[test]
    fn bmsk_and_szext_follow_the_ptx_isa() {
        assert_eq!(bit_mask(1, 2, false), 6, "the PTX ISA's example");
        assert_eq!(bit_mask(0, 32, true), 0xffff_ffff);
        assert_eq!(bit_mask(0, 32, false), 0, ".wrap: width 32 is 0");
        assert_eq!(bit_mask(32, 4, true), 0, ".clamp: a start past 31");
        assert_eq!(bit_mask(32, 4, false), 0xf, ".wrap: start 32 is 0");
        assert_eq!(bit_mask(28, 8, false), 0xf000_0000, "cut at bit 31");
        assert_eq!(bit_mask(5, 0, true), 0);
        assert_eq!(
            sign_zero_extend(0xffff_ffff, 0, true, false),
            0,
            "the PTX ISA's example"
        );
        assert_eq!(sign_zero_extend(0x80, 8, true, true), 0xffff_ff80);
        assert_eq!(sign_zero_extend(0x180, 8, false, true), 0x80);
        assert_eq!(
            sign_zero_extend(0x8000_0000, 32, true, true),
            0x8000_0000,
            ".clamp: all"
        );
        assert_eq!(
            sign_zero_extend(0x8000_0000, 32, true, false),
            0,
            ".wrap: 32 is 0"
        );
        assert_eq!(
            sign_zero_extend(0x1f, 36, true, false),
            0xffff_ffff,
            ".wrap: 36 is 4"
        );
    }

    #[test]
    fn dot_products_sign_each_operand_as_told() {
        assert_eq!(
            dot4(0xffff_ffff, 0x0101_0101, 0, true, true),
            0xffff_fffc,
            "4 x -1"
        );
        assert_eq!(dot4(0xffff_ffff, 0x0101_0101, 0, false, true), 4 * 255);
        assert_eq!(dot4(0x8080_8080, 0x8080_8080, 1, true, true), 4 * 16384 + 1);
        assert_eq!(
            dot4(0xffff_ffff, 0xffff_ffff, 0xffff_ffff, false, false),
            4 * 65025 - 1
        );
        assert_eq!(
            dot2(0xffff_0001, 0x0403_0201, 10, false, false, false),
            10 + 1 + 0xffff * 2
        );
        assert_eq!(
            dot2(0xffff_0001, 0x0403_0201, 10, true, true, false),
            10 + 3 - 4
        );
        assert_eq!(
            dot2(0x0001_0001, 0xff80_0000, 0, true, false, true),
            0xffff_ff7f
        );
    }

    #[test]
    fn prmt_modes_follow_the_ptx_isa_tables() {
        let (a, b) = (0x3322_1100, 0x7766_5544);
        // Selector 1 (and 5: only its two low bits count) in each mode.
        for c in [1, 5] {
            assert_eq!(permute_mode(a, b, c, 0), 0x4433_2211, "f4e");
            assert_eq!(permute_mode(a, b, c, 1), 0x6677_0011, "b4e");
            assert_eq!(permute_mode(a, b, c, 2), 0x1111_1111, "rc8");
            assert_eq!(permute_mode(a, b, c, 3), 0x3322_1111, "ecl");
            assert_eq!(permute_mode(a, b, c, 4), 0x1111_1100, "ecr");
            assert_eq!(permute_mode(a, b, c, 5), 0x3322_3322, "rc16");
        }
        assert_eq!(permute_mode(a, b, 3, 1), 0x0011_2233, "b4e 3");
        assert_eq!(
            permute(0x0000_8000, 0, 0x9999),
            0xffff_ffff,
            "sign of byte 1"
        );
    }

    /// `lop3`: the table read at `4a + 2b + c` (a model reading `a` as the low bit, or
    /// leaving bits above 32, fails), so the ISA's three words give the table back and its
    /// examples their formulas.
    #[test]
    fn lop3_reads_its_table_at_each_bits_index() {
        for lut in 0..=255u8 {
            assert_eq!(
                lop3(0xf0, 0xcc, 0xaa, lut) & 0xff,
                u64::from(lut),
                "{lut:#x}"
            );
        }
        let (a, b, c) = (0x0123_4567, 0x3c3c_5a5a, 0xdead_beef);
        assert_eq!(lop3(a, b, c, 0x80), a & b & c);
        assert_eq!(lop3(a, b, c, 0xfe), a | b | c);
        assert_eq!(lop3(a, b, c, 0x40), a & b & !c);
        assert_eq!(lop3(a, b, c, 0x1a), (a & b | c) ^ a);
        assert_eq!(lop3(a, b, c, 0xff), 0xffff_ffff);
        assert_eq!(lop3(a, b, c, 0), 0);
    }

    /// Each half on its own: a wrong model that adds or compares the 32-bit words whole
    /// carries 0xffff + 1 into the high half, reads the low half's sign bit as a magnitude
    /// or clamps the word, not the half, under `.relu`.
    #[test]
    fn halves_wrap_compare_and_clamp_apart() {
        // 0xffff + 1 and 0x7fff + 1 wrap in their own half (no carry, no saturation).
        assert_eq!(
            halves(HalvesOp::Add, Ty::U16, 0x7fff_ffff, 0x0001_0001),
            0x8000_0000
        );
        assert_eq!(
            halves(HalvesOp::Add, Ty::S16, 0x7fff_ffff, 0x0001_0001),
            0x8000_0000
        );
        assert_eq!(halves(HalvesOp::Add, Ty::U16, 0x8000_8000, 0x8000_8000), 0);
        // 0x8000 against 0x7fff: the smaller unsigned, the larger signed, in either half.
        let (a, b) = (0x8000_7fff, 0x7fff_8000);
        assert_eq!(halves(HalvesOp::Min, Ty::U16, a, b), 0x7fff_7fff);
        assert_eq!(halves(HalvesOp::Max, Ty::U16, a, b), 0x8000_8000);
        assert_eq!(halves(HalvesOp::Min, Ty::S16, a, b), 0x8000_8000);
        assert_eq!(halves(HalvesOp::Max, Ty::S16, a, b), 0x7fff_7fff);
        // `.relu` per half: -1 (0xffff) against 5 and 3 against -7 (0xfff9).
        let (a, b) = (0xffff_0003, 0x0005_fff9);
        assert_eq!(halves(HalvesOp::Min, Ty::S16, a, b), 0xffff_fff9);
        assert_eq!(halves(HalvesOp::MinRelu, Ty::S16, a, b), 0);
        assert_eq!(halves(HalvesOp::MaxRelu, Ty::S16, a, b), 0x0005_0003);
        assert_eq!(
            halves(HalvesOp::MaxRelu, Ty::S16, 0x8000_ffff, 0x8001_fffe),
            0
        );
        assert_eq!(
            halves(HalvesOp::MinRelu, Ty::S16, 0x0001_8000, 0x7fff_7fff),
            0x0001_0000
        );
    }

    /// `.relu` of `.s32`: a negative minimum or maximum is 0, a positive one kept (a model
    /// that drops `.relu`, or reads the sign of a narrower type, fails here).
    #[test]
    fn relu_clamps_a_negative_s32_to_zero() {
        let s32 = |op, a, b| int_op(op, Ty::S32, a, b, 0, false);
        assert_eq!(s32(IntOp::MinRelu, 0xffff_fffb, 7), 0);
        assert_eq!(s32(IntOp::MinRelu, 0x8000_0000, 0x7fff_ffff), 0);
        assert_eq!(s32(IntOp::MinRelu, 9, 7), 7);
        assert_eq!(s32(IntOp::MaxRelu, 0xffff_fffb, 0xffff_fff0), 0);
        assert_eq!(s32(IntOp::MaxRelu, 0xffff_fffb, 7), 7);
        assert_eq!(s32(IntOp::MaxRelu, 0x8000_0000, 0x7fff_ffff), 0x7fff_ffff);
    }

    #[test]
    fn fns_counts_set_bits_up_and_down_from_its_base() {
        // The PTX ISA's examples.
        assert_eq!(find_nth_set(0xaaaa_aaaa, 3, 1), 3);
        assert_eq!(find_nth_set(0xaaaa_aaaa, 3, -1), 3);
        assert_eq!(find_nth_set(0xaaaa_aaaa, 2, 1), 3);
        assert_eq!(find_nth_set(0xaaaa_aaaa, 2, -1), 1);
        assert_eq!(find_nth_set(0xaaaa_aaaa, 2, 0), 0xffff_ffff);
        assert_eq!(find_nth_set(0x8000_0001, 0, 2), 31);
        assert_eq!(find_nth_set(0x8000_0001, 0, 3), 0xffff_ffff);
        assert_eq!(find_nth_set(0, 31, -1), 0xffff_ffff);
    }

    #[test]
    fn carry_chains_carry_and_borrow() {
        let add = |a, b, cf| carry_op(CarryOp::Add, Ty::U32, a, b, 0, true, cf);
        assert_eq!(add(0xffff_ffff, 1, false), (0, true));
        assert_eq!(add(0xffff_ffff, 0, true), (0, true), "the carry in carries");
        assert_eq!(
            add(0x7fff_ffff, 1, false),
            (0x8000_0000, false),
            "signed overflow: no carry"
        );
        assert_eq!(
            carry_op(CarryOp::Add, Ty::U32, 5, 6, 0, false, true),
            (11, false),
            "add.cc reads no carry"
        );
        let sub = |a, b, cf| carry_op(CarryOp::Sub, Ty::S32, a, b, 0, true, cf);
        assert_eq!(sub(0, 1, false), (0xffff_ffff, true), "a borrow");
        assert_eq!(sub(1, 1, true), (0xffff_ffff, true), "a borrow in");
        assert_eq!(sub(5, 3, true), (1, false));
        let u64 = |op, a, b, c, cf| carry_op(op, Ty::U64, a, b, c, true, cf);
        assert_eq!(
            u64(CarryOp::Add, u64::MAX, u64::MAX, 0, true),
            (u64::MAX, true)
        );
        assert_eq!(u64(CarryOp::MadLo, 1 << 63, 2, 1, true), (2, false));
        assert_eq!(u64(CarryOp::MadHi, u64::MAX, u64::MAX, 2, false), (0, true));
        let mad_hi_s32 = carry_op(CarryOp::MadHi, Ty::S32, 0xffff_ffff, 1, 1, false, false);
        assert_eq!(
            mad_hi_s32,
            (0, true),
            "-1's high word, all ones, plus 1 carries"
        );
    }
}
