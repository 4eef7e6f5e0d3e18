//! The approximate instructions as the H100 computes them: `rcp`, `rsqrt`, `sqrt`, `ex2`,
//! `lg2`, `sin` and `cos` `.approx.f32` (with and without `.ftz`), `tanh.approx.f32`, and
//! `rcp` and `rsqrt` `.approx.ftz.f64`.
//!
//! NVIDIA documents these instructions' error bounds, not their bits, and no library
//! reproduces them, so they are written here from the hardware: the results of the H100's
//! special-function unit for every mantissa (or fraction) it tells apart, read on an H100
//! (or an H200, the same chip) and stored beside this file (`approx/*.deflate`), and the few
//! rules that place them for every other input, found by reading the unit's result for all
//! 2^32 inputs there:
//! - `rcp`, `rsqrt`, `sqrt`: the result depends on the mantissa alone (for the roots, also on
//!   the exponent's parity); the input's exponent moves the result's. The f64 forms read the
//!   input's high word alone and return a high word (the low word zero).
//! - `ex2`: |x| is cut to 23 fraction bits; a negative x's fraction is complemented bit by bit
//!   (one unit short of its exact complement, unless it is zero); the result is 2^n times the
//!   table's 2^fraction.
//! - `lg2`: the exponent plus the table's log2 of the mantissa, a fixed point of 36 fraction
//!   bits; a negative sum made positive bit by bit (one unit short), cut to 24 bits.
//! - `sin`, `cos`: ptxas multiplies x by 1/(2 pi) rounded toward zero (`FMUL.RZ`), and the
//!   unit reads that product's |t| in periods as a fraction of 25 bits, floor(|t| 2^25) mod
//!   2^25 (0 below 2^-25 of a period, and from 2^23 periods on). Its top bit is the half
//!   period (the result's sign), the next the quarter, whose second half reads the first's
//!   fraction complemented bit by bit; the other 23 bits index the table of the first
//!   quarter's sines. `cos` is `sin` a quarter period later; `sin` takes t's sign, `cos` not.
//! - `tanh`: x itself below 2^-8, +-1 from 8 on; between, the table's result for |x|'s binade
//!   and the top 17 to 21 mantissa bits, as many as the unit reads in that binade; x's sign.
//!
//! Every other result below the normals is zero and the unit reads a subnormal input as zero
//! (`tanh` returns it as it is): the `.ftz` forms are the unit itself. The forms without
//! `.ftz` are the short sequences ptxas makes around it (read in the H100's SASS): a
//! subnormal input scaled by 2^24 and the result scaled back, `ex2` of x below -126 as the
//! square of `ex2(x / 2)`; `sin` and `cos` are the same two instructions with and without
//! `.ftz` (their product keeps a subnormal, whose fraction of a period is 0 all the same),
//! and `tanh` has no `.ftz`. `tests/approx.rs` holds every form to a GPU over all 2^32
//! inputs (and rewrites the tables from one); the `.f32` forms were proved so, 0 inputs
//! differing: `sin`, `cos` and `tanh` on an H200, the others on an H100.

use std::io::Read;
use std::sync::OnceLock;

use crate::float::{canonical32, mul32, NAN32};
use crate::ir::{Approx, Rnd};

/// One instruction's results for a range of inputs (their bits, or an f64's high word),
/// stored as the differences between neighbours (zigzag LEB128), deflated: the tables vary
/// slowly, so 8 million results take about 100 KB. Inflated when a kernel first needs it.
pub struct Table {
    /// The file's name beside this one (for the test that rewrites it).
    pub name: &'static str,
    deflated: &'static [u8],
    /// How many results, and the input of the i-th (an f32's bits, or an f64's high word).
    pub len: usize,
    pub input: fn(u32) -> u32,
    values: OnceLock<Vec<u32>>,
}

impl Table {
    const fn new(
        name: &'static str,
        deflated: &'static [u8],
        len: usize,
        input: fn(u32) -> u32,
    ) -> Table {
        Table {
            name,
            deflated,
            len,
            input,
            values: OnceLock::new(),
        }
    }

    /// The stored results. The data is part of this library: a failure to inflate is a
    /// broken build, which the tests catch; it leaves zeros, every approximation wrong and
    /// visible, rather than a panic across the driver's API.
    pub fn values(&self) -> &[u32] {
        self.values.get_or_init(|| {
            let mut bytes = Vec::new();
            let _ = flate2::read::DeflateDecoder::new(self.deflated).read_to_end(&mut bytes);
            let mut values = decode(&bytes);
            values.resize(self.len, 0);
            values
        })
    }

    fn at(&self, i: usize) -> u32 {
        self.values().get(i).copied().unwrap_or(0)
    }
}

/// `values` as a table stores them (before deflating): each difference from the one before
/// (from 0 for the first), zigzagged, as LEB128.
pub fn encode(values: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len());
    let mut previous = 0i64;
    for &value in values {
        let step = i64::from(value) - previous;
        previous = i64::from(value);
        let mut zigzag = ((step << 1) ^ (step >> 63)) as u64;
        while zigzag >= 0x80 {
            out.push((zigzag as u8 & 0x7f) | 0x80);
            zigzag >>= 7;
        }
        out.push(zigzag as u8);
    }
    out
}

fn decode(bytes: &[u8]) -> Vec<u32> {
    let mut values = Vec::with_capacity(bytes.len());
    let (mut value, mut zigzag, mut shift) = (0i64, 0u64, 0u32);
    for &byte in bytes {
        zigzag |= u64::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
        shift += 7;
        if byte & 0x80 == 0 {
            value += (zigzag >> 1) as i64 ^ -((zigzag & 1) as i64);
            values.push(value as u32);
            (zigzag, shift) = (0, 0);
        }
    }
    values
}

const SIGN: u32 = 0x8000_0000;
const INF: u32 = 0x7f80_0000;
const MANTISSA: u32 = 0x007f_ffff;
const ONE: u32 = 0x3f80_0000;

/// `rcp` of [1, 2).
pub static RCP: Table = Table::new(
    "rcp-f32-h100.deflate",
    include_bytes!("approx/rcp-f32-h100.deflate"),
    1 << 23,
    |i| ONE | i,
);
/// `rsqrt` of [1, 4): the exponent's parity, then the mantissa.
pub static RSQRT: Table = Table::new(
    "rsqrt-f32-h100.deflate",
    include_bytes!("approx/rsqrt-f32-h100.deflate"),
    1 << 24,
    |i| ONE + i,
);
/// `sqrt` of [1, 4).
pub static SQRT: Table = Table::new(
    "sqrt-f32-h100.deflate",
    include_bytes!("approx/sqrt-f32-h100.deflate"),
    1 << 24,
    |i| ONE + i,
);
/// `ex2` of i / 2^23, for i below 2^23.
pub static EX2: Table = Table::new(
    "ex2-f32-h100.deflate",
    include_bytes!("approx/ex2-f32-h100.deflate"),
    1 << 23,
    |i| (i as f32 / 8_388_608.0).to_bits(),
);
/// `lg2` of [0.5, 2): the exponents -1 and 0, whose results keep bits a sum with a larger
/// exponent cuts.
pub static LG2: Table = Table::new(
    "lg2-f32-h100.deflate",
    include_bytes!("approx/lg2-f32-h100.deflate"),
    1 << 24,
    |i| 0x3f00_0000 + i,
);
/// `rsqrt.approx.ftz.f64` of [1, 4): the high words, by the exponent's parity and the top 20
/// mantissa bits.
pub static RSQRT64: Table = Table::new(
    "rsqrt-f64-h100.deflate",
    include_bytes!("approx/rsqrt-f64-h100.deflate"),
    1 << 21,
    |i| 0x3ff0_0000 + i,
);
/// `rcp.approx.ftz.f64` of [1, 2): the high words.
pub static RCP64: Table = Table::new(
    "rcp-f64-h100.deflate",
    include_bytes!("approx/rcp-f64-h100.deflate"),
    1 << 20,
    |i| 0x3ff0_0000 | i,
);

/// `sin` of the first quarter period: of i / 2^25 periods, for i below 2^23.
pub static SIN: Table = Table::new(
    "sin-f32-h200.deflate",
    include_bytes!("approx/sin-f32-h200.deflate"),
    1 << 23,
    sine_input,
);
/// `tanh` of [2^-8, 8): each binade's results by the mantissa bits the unit reads there.
pub static TANH: Table = Table::new(
    "tanh-f32-h200.deflate",
    include_bytes!("approx/tanh-f32-h200.deflate"),
    tanh_start(TANH_IGNORED.len()),
    tanh_input,
);

/// Every table, for the test that holds them to a GPU.
pub static TABLES: [(&Table, Approx, bool); 9] = [
    (&RCP, Approx::Rcp, false),
    (&RSQRT, Approx::Rsqrt, false),
    (&SQRT, Approx::Sqrt, false),
    (&EX2, Approx::Ex2, false),
    (&LG2, Approx::Lg2, false),
    (&RSQRT64, Approx::Rsqrt, true),
    (&RCP64, Approx::Rcp, true),
    (&SIN, Approx::Sin, false),
    (&TANH, Approx::Tanh, false),
];

/// The f32 instruction on the bits `x`: with `.ftz` the unit itself, without it the
/// sequence ptxas makes around the unit.
pub fn f32(op: Approx, x: u32, ftz: bool) -> u32 {
    if ftz {
        return unit(op, x);
    }
    const SUBNORMAL_SCALE: f32 = 16_777_216.0;
    let value = f32::from_bits(x);
    // Below the normals (zero included); a NaN is not.
    let subnormal = value.abs() < f32::MIN_POSITIVE;
    let scaled = |then: fn(f32) -> f32| {
        then(f32::from_bits(unit(
            op,
            canonical32(value * SUBNORMAL_SCALE).to_bits(),
        )))
    };
    let r = match op {
        // ptxas makes `sin` and `cos` alike with `.ftz` and without (read in an H200's SASS),
        // and `tanh` has no `.ftz`: each is the unit itself.
        Approx::Sin | Approx::Cos | Approx::Tanh => return unit(op, x),
        Approx::Rcp => {
            // Scaled both ways by one factor: the unit's result of a large input is below
            // the normals.
            let s = if value.abs() > 8.507_059e37 {
                0.25
            } else if subnormal {
                SUBNORMAL_SCALE
            } else {
                1.0
            };
            s * f32::from_bits(unit(op, canonical32(s * value).to_bits()))
        }
        _ if !subnormal && op != Approx::Ex2 => return unit(op, x),
        Approx::Rsqrt => scaled(|r| r * 4096.0),
        Approx::Sqrt => scaled(|r| r * (1.0 / 4096.0)),
        Approx::Lg2 => scaled(|r| r - 24.0),
        Approx::Ex2 if value < -126.0 => {
            let half = f32::from_bits(unit(op, (value * 0.5).to_bits()));
            half * half
        }
        Approx::Ex2 => return unit(op, x),
    };
    canonical32(r).to_bits()
}

/// The special-function unit's result for `x` (`.ftz`).
fn unit(op: Approx, x: u32) -> u32 {
    if (x & !SIGN) > INF {
        return NAN32;
    }
    let sign = x & SIGN;
    let exponent = (x >> 23 & 0xff) as i32;
    let mantissa = x & MANTISSA;
    match op {
        Approx::Rcp => match exponent {
            0 => sign | INF,
            255 => sign,
            e => sign | scale(RCP.at(mantissa as usize), 127 - e),
        },
        Approx::Rsqrt | Approx::Sqrt => {
            let root = op == Approx::Sqrt;
            match exponent {
                0 if root => sign,
                0 => sign | INF,
                _ if sign != 0 => NAN32,
                255 if root => INF,
                255 => 0,
                e => {
                    let odd = (e - 127).rem_euclid(2);
                    let half = (e - 127 - odd) / 2;
                    let table = if root { &SQRT } else { &RSQRT };
                    let value = table.at(((odd as usize) << 23) | mantissa as usize);
                    scale(value, if root { half } else { -half })
                }
            }
        }
        Approx::Ex2 => ex2(x),
        Approx::Lg2 => match exponent {
            0 => SIGN | INF,
            _ if sign != 0 => NAN32,
            255 => INF,
            e => lg2(e - 127, mantissa),
        },
        Approx::Sin | Approx::Cos => trig(op, x),
        Approx::Tanh => tanh(x),
    }
}

/// `v`, a positive table result, times 2^k: zero below the normals, infinite above.
fn scale(v: u32, k: i32) -> u32 {
    match (v >> 23) as i32 + k {
        e if e <= 0 => 0,
        e if e >= 255 => INF,
        e => (e as u32) << 23 | (v & MANTISSA),
    }
}

fn ex2(x: u32) -> u32 {
    let negative = x & SIGN != 0;
    let exponent = (x >> 23 & 0xff) as i32;
    // From 2^8 on (infinities included) the result is 0 or infinite whatever the fraction.
    if exponent >= 127 + 8 {
        return if negative { 0 } else { INF };
    }
    // |x| in units of 2^-23, cut; a subnormal is zero.
    let significand = i64::from(x & MANTISSA | 0x80_0000);
    let fixed = match exponent {
        0 => 0,
        e if e >= 127 => significand << (e - 127),
        e => significand.checked_shr((127 - e) as u32).unwrap_or(0),
    };
    let fraction = fixed & i64::from(MANTISSA);
    let v = match (negative, fraction) {
        (false, _) => fixed,
        (true, 0) => -fixed,
        (true, _) => -fixed - 1,
    };
    scale(EX2.at((v & i64::from(MANTISSA)) as usize), (v >> 23) as i32)
}

fn lg2(exponent: i32, mantissa: u32) -> u32 {
    const FRACTION_BITS: i32 = 36;
    let index = mantissa as usize;
    match exponent {
        -1 => LG2.at(index),
        0 => LG2.at(1 << 23 | index),
        _ => {
            // The table's log2 of the mantissa, cut where exponent 0 cut it: a sum with a
            // larger exponent is cut coarser still, so the bits it lacks never count.
            let t = LG2.at(1 << 23 | index);
            let f = match t {
                0 => 0,
                t => {
                    let significand = u64::from(t & MANTISSA | 0x80_0000);
                    let shift = (t >> 23) as i32 - 127 + FRACTION_BITS - 23;
                    if shift >= 0 {
                        significand << shift
                    } else {
                        significand >> -shift
                    }
                }
            };
            let whole = u64::from(exponent.unsigned_abs()) << FRACTION_BITS;
            if exponent > 0 {
                cut(whole + f, 0)
            } else {
                // |exponent| - f, one unit short, cut to the grid of its 24 bits: the unit
                // counts every f as far as that grid's next step.
                let grid = 1u64 << (63 - (whole - f - 1).leading_zeros() - 23);
                cut(whole - grid * (f / grid) - grid, SIGN)
            }
        }
    }
}

/// 1/(2 pi) as an f32, the factor of the `FMUL.RZ` ptxas puts before `MUFU.SIN` and
/// `MUFU.COS` (0x3e22f983, read in an H200's SASS).
const INV_2PI: f32 = 0.159_154_94;
/// The bits of a period the unit reads: all 2^32 inputs of `sin` and `cos` gave one result
/// for each floor(|t| 2^25) mod 2^25 (and sign of t), on an H200; 24 bits would not do.
const PERIOD_BITS: u32 = 25;
const QUARTER: u32 = 1 << (PERIOD_BITS - 2);

/// `sin` and `cos` of the bits `x` (not a NaN): the product ptxas makes, then the unit.
fn trig(op: Approx, x: u32) -> u32 {
    if x & !SIGN == INF {
        return NAN32;
    }
    let t = mul32(f32::from_bits(x), INV_2PI, Rnd::Z).to_bits();
    let fraction = period_fraction(t);
    if op == Approx::Cos {
        sine(fraction + QUARTER)
    } else {
        sine(fraction) ^ (t & SIGN)
    }
}

/// floor(|t| 2^25) mod 2^25 of a finite t: the fraction of a period the unit reads.
fn period_fraction(t: u32) -> u32 {
    let exponent = (t >> 23 & 0xff) as i32;
    if exponent == 0 {
        return 0;
    }
    let significand = u64::from(t & MANTISSA | 0x80_0000);
    // |t| 2^25 is the significand times 2^(exponent - 127 - 23 + 25).
    let shift = exponent - 125;
    let fixed = if shift >= 0 {
        significand.checked_shl(shift as u32)
    } else {
        significand.checked_shr(-shift as u32)
    };
    (fixed.unwrap_or(0) & u64::from((1u32 << PERIOD_BITS) - 1)) as u32
}

/// The unit's sine of `fraction` / 2^25 periods (its bits above the 25th ignored): the half
/// period its sign, the second quarter of each half the first's mirror (bit by bit).
fn sine(fraction: u32) -> u32 {
    let half = fraction >> (PERIOD_BITS - 1) & 1;
    let index = if fraction & QUARTER != 0 {
        !fraction
    } else {
        fraction
    };
    SIN.at((index & (QUARTER - 1)) as usize) | half << 31
}

/// An input whose fraction of a period is `i` / 2^25 (`i` below 2^23), for the test that
/// rewrites `SIN` from a GPU: the f32 near it, stepped until its product lands there. Below a
/// quarter period the inputs lie closer than 2^-25 periods apart, so each fraction has one.
fn sine_input(i: u32) -> u32 {
    let fraction = |x: f32| period_fraction(mul32(x, INV_2PI, Rnd::Z).to_bits());
    let periods = (f64::from(i) + 0.5) / f64::from(1u32 << PERIOD_BITS);
    let mut x = (periods / f64::from(INV_2PI)) as f32;
    while fraction(x) < i {
        x = x.next_up();
    }
    while fraction(x) > i {
        x = x.next_down();
    }
    x.to_bits()
}

/// The biased exponent of `TANH`'s first binade (2^-8): below it the unit returns x.
const TANH_FIRST: u32 = 119;
/// For each binade from 2^-8 to 4, how many low mantissa bits the unit ignores there: its
/// result is one for each run of 2^n inputs, and not for 2^(n+1) (all 2^32 inputs read on an
/// H200). From 8 on it is +-1.
const TANH_IGNORED: [u32; 11] = [6, 6, 6, 5, 5, 4, 4, 4, 3, 2, 3];

/// Where binade `b` (from `TANH_FIRST`) starts in `TANH`: the binades before it, each of
/// 2^(23 - ignored) results.
const fn tanh_start(b: usize) -> usize {
    let mut start = 0;
    let mut i = 0;
    while i < b {
        start += 1 << (23 - TANH_IGNORED[i]);
        i += 1;
    }
    start
}

/// `tanh` of the bits `x` (not a NaN).
fn tanh(x: u32) -> u32 {
    let sign = x & SIGN;
    match x >> 23 & 0xff {
        e if e < TANH_FIRST => x,
        e if e >= TANH_FIRST + TANH_IGNORED.len() as u32 => sign | ONE,
        e => {
            let b = (e - TANH_FIRST) as usize;
            sign | TANH.at(tanh_start(b) + ((x & MANTISSA) >> TANH_IGNORED[b]) as usize)
        }
    }
}

/// The input of `TANH`'s `i`-th result: the first of its run.
fn tanh_input(i: u32) -> u32 {
    let i = i as usize;
    let b = (0..TANH_IGNORED.len())
        .rfind(|&b| tanh_start(b) <= i)
        .unwrap_or(0);
    (TANH_FIRST + b as u32) << 23 | ((i - tanh_start(b)) as u32) << TANH_IGNORED[b]
}

/// A magnitude in units of 2^-36, cut to 24 significant bits, as a float of `sign`.
fn cut(m: u64, sign: u32) -> u32 {
    let top = 63 - m.leading_zeros() as i32;
    let significand = m >> (top - 23);
    sign | ((top - 36 + 127) as u32) << 23 | (significand as u32 & MANTISSA)
}

/// The NaN the approximate f64 instructions return (their low word is always zero).
const NAN64: u64 = 0x7fff_ffff_0000_0000;

/// The f64 instruction (`.ftz`): `rcp` and `rsqrt`, the only f64 approximations the loader
/// takes; their tables index the top 20 mantissa bits of the input's high word.
pub fn f64(op: Approx, x: f64) -> f64 {
    // The instruction reads the high word alone: a NaN whose payload is all in the low word
    // is an infinity to it (an H100 gives 0 for rsqrt of 0x7ff0000000000001).
    let bits = x.to_bits() & !0xffff_ffff;
    let x = f64::from_bits(bits);
    let exponent = ((bits >> 52) & 0x7ff) as i64;
    let sign = bits & (1 << 63);
    let index = ((bits >> 32) & 0xf_ffff) as usize;
    if x.is_nan() {
        return f64::from_bits(NAN64);
    }
    let k = exponent - 1023;
    let high = match op {
        Approx::Rsqrt => {
            if exponent == 0 {
                return f64::from_bits(sign | f64::INFINITY.to_bits());
            }
            if sign != 0 {
                return f64::from_bits(NAN64);
            }
            if x.is_infinite() {
                return 0.0;
            }
            let parity = k.rem_euclid(2);
            i64::from(RSQRT64.at(((parity as usize) << 20) | index)) - (((k - parity) / 2) << 20)
        }
        _ => {
            if exponent == 0 {
                return f64::from_bits(sign | f64::INFINITY.to_bits());
            }
            if x.is_infinite() {
                return f64::from_bits(sign);
            }
            let high = i64::from(RCP64.at(index));
            let result_exponent = ((high >> 20) & 0x7ff) - k;
            if result_exponent <= 0 {
                return f64::from_bits(sign);
            }
            (high & 0xf_ffff) | (result_exponent << 20)
        }
    };
    f64::from_bits(sign | ((high as u64) << 32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hi(x: f64) -> u64 {
        x.to_bits() >> 32
    }

    #[test]
    fn tables_decode_what_they_encode() {
        // A wrong zigzag or a lost continuation bit shifts every later value.
        let values = [
            0x3f80_0000,
            0x3f80_0001,
            0x3f7f_ffff,
            0,
            u32::MAX,
            0x4000_0000,
        ];
        assert_eq!(decode(&encode(&values)), values);
        for (table, ..) in &TABLES {
            assert_eq!(table.values().len(), table.len, "{}", table.name);
            // A table that fails to inflate is all zeros.
            assert!(
                table.values().iter().any(|&v| v != 0),
                "{} inflates",
                table.name
            );
        }
    }

    #[test]
    fn the_period_fraction_is_25_bits_of_t() {
        let t = |v: f32| period_fraction(v.to_bits());
        assert_eq!(t(0.5), 1 << 24);
        assert_eq!(t(-0.5), 1 << 24, "|t|");
        assert_eq!(t(1.75), 3 << 23);
        assert_eq!(t(2.0f32.powi(-25)), 1);
        assert_eq!(t(2.0f32.powi(-26)), 0, "below 2^-25 of a period");
        assert_eq!(t(8_388_607.5), 1 << 24, "the last float with a fraction");
        assert_eq!(t(2.0f32.powi(23)), 0);
        assert_eq!(t(f32::MAX), 0);
        assert_eq!(t(f32::from_bits(1)), 0, "a subnormal");
        // The second quarter reads the first's fraction complemented: its last fraction is
        // the first's 0 (sin 0), and the half period's sine is 0 with the second half's sign.
        assert_eq!(sine((1 << 24) - 1), 0);
        assert_eq!(sine(1 << 24), SIGN);
        assert_eq!(sine(QUARTER - 1), sine(QUARTER));
    }

    #[test]
    fn the_tables_inputs_give_their_own_index() {
        // The test that rewrites the tables from a GPU reads result i at input(i).
        for i in (0..SIN.len as u32).step_by(997).chain([0, 1, QUARTER - 1]) {
            let x = sine_input(i);
            let t = mul32(f32::from_bits(x), INV_2PI, Rnd::Z).to_bits();
            assert_eq!(period_fraction(t), i, "sin input {x:08x}");
        }
        let last = TANH.len - 1;
        for i in (0..TANH.len).step_by(991).chain([0, last]) {
            let x = tanh_input(i as u32);
            let b = ((x >> 23) - TANH_FIRST) as usize;
            let index = tanh_start(b) + ((x & MANTISSA) >> TANH_IGNORED[b]) as usize;
            assert_eq!(index, i, "tanh input {x:08x}");
        }
        assert_eq!(
            tanh_input(last as u32),
            0x40ff_fff8,
            "the table ends below 8"
        );
    }
    #[test]
    fn the_f64_approximations_give_what_the_h100_gave() {
        // (input, rsqrt.approx.ftz.f64, rcp.approx.ftz.f64), read on an H100.
        let seen: &[(u64, u64, u64)] = &[
            (0x0000000000000000, 0x7ff0000000000000, 0x7ff0000000000000),
            (0x8000000000000000, 0xfff0000000000000, 0xfff0000000000000),
            (0x3ff0000000000000, 0x3ff0000000000000, 0x3ff0000000000000),
            (0xbff0000000000000, 0x7fffffff00000000, 0xbff0000000000000),
            (0x4010000000000000, 0x3fe0000000000000, 0x3fd0000000000000),
            (0x3fd0000000000000, 0x4000000000000000, 0x4010000000000000),
            (0x000012688b70e62b, 0x7ff0000000000000, 0x7ff0000000000000),
            (0x800012688b70e62b, 0xfff0000000000000, 0xfff0000000000000),
            (0x0010000000000000, 0x5fe0000000000000, 0x7fd0000000000000),
            (0x7ff0000000000000, 0x0000000000000000, 0x0000000000000000),
            (0xfff0000000000000, 0x7fffffff00000000, 0x8000000000000000),
            (0xfff8000000000000, 0x7fffffff00000000, 0x7fffffff00000000),
            (0x7fefffffffffffff, 0x1ff0000000000000, 0x0000000000000000),
            (0x7e37e43c8800759c, 0x20ca2fe700000000, 0x01a56e2000000000),
            (0x01a56e1fc2f8f359, 0x5f138d3500000000, 0x7e37e43d00000000),
            (0x4008000000000000, 0x3fe279a700000000, 0x3fd5555500000000),
            (0x3fe8000000000000, 0x3ff279a700000000, 0x3ff5555500000000),
            (0x3ff8000000000000, 0x3fea20bd00000000, 0x3fe5555500000000),
            (0x4000000000000000, 0x3fe6a09e00000000, 0x3fe0000000000000),
            (0x4020000000000000, 0x3fd6a09e00000000, 0x3fc0000000000000),
        ];
        for &(x, rsq, rcp) in seen {
            let x = f64::from_bits(x);
            assert_eq!(f64(Approx::Rsqrt, x).to_bits(), rsq, "rsqrt of {x:e}");
            assert_eq!(f64(Approx::Rcp, x).to_bits(), rcp, "rcp of {x:e}");
        }
        // The approximation is close: within two units of the high word.
        for i in 0..1000u64 {
            let x = 1.0 + i as f64 * 0.003;
            let exact = 1.0 / x.sqrt();
            assert!(
                (hi(f64(Approx::Rsqrt, x)) as i64 - hi(exact) as i64).abs() <= 2,
                "{x}"
            );
        }
    }

    #[test]
    fn the_f32_approximations_give_what_the_h100_gave() {
        use Approx::*;
        // (instruction, .ftz, input, result), each read on an H100: the edges of the
        // exponent range, NaNs and zeros, a negative ex2 with and without fraction bits,
        // lg2 sums cut short, and the forms without .ftz on subnormal inputs and results.
        let seen: &[(Approx, bool, u32, u32)] = &[
            (Rcp, true, 0x0080_0000, 0x7e80_0000),
            (Rcp, true, 0x7f7f_ffff, 0),
            (Rcp, true, 0x8000_0001, 0xff80_0000),
            (Rcp, true, 0x7f80_0001, 0x7fff_ffff),
            (Rcp, false, 0x0020_0001, 0x7f7f_fff8),
            (Rcp, false, 0x7e80_0001, 0x007f_ffff),
            (Rcp, false, 0xfe80_0001, 0x807f_ffff),
            (Rsqrt, true, 0x0080_0000, 0x5f00_0000),
            (Rsqrt, true, 0x7f7f_ffff, 0x1f80_0000),
            (Rsqrt, true, 0xbf80_0000, 0x7fff_ffff),
            (Rsqrt, true, 0x8000_0000, 0xff80_0000),
            (Rsqrt, false, 0x0000_0001, 0x64b5_04f2),
            (Rsqrt, false, 0x8000_0001, 0x7fff_ffff),
            (Sqrt, true, 0x0080_0000, 0x2000_0000),
            (Sqrt, true, 0x7f7f_ffff, 0x5f7f_ffff),
            (Sqrt, true, 0x8000_0001, 0x8000_0000),
            (Sqrt, false, 0x0000_0001, 0x1a35_04f3),
            (Lg2, true, 0x0080_0000, 0xc2fb_ffff),
            (Lg2, true, 0x7f7f_ffff, 0x42ff_ffff),
            (Lg2, true, 0x3f80_0000, 0),
            (Lg2, true, 0x0000_0001, 0xff80_0000),
            (Lg2, true, 0x0480_ac01, 0xc2eb_fc21),
            (Lg2, true, 0x0881_006c, 0xc2db_fa3d),
            (Lg2, false, 0x0000_0001, 0xc315_0000),
            (Lg2, false, 0x8000_0001, 0x7fff_ffff),
            (Ex2, true, 0x3f80_0000, 0x4000_0000),
            (Ex2, true, 0xbf80_0000, 0x3f00_0000),
            (Ex2, true, 0x8080_0000, 0x3f80_0000),
            (Ex2, true, 0xb400_0000, 0x3f7f_fffe),
            (Ex2, true, 0xb800_0001, 0x3f7f_fe9c),
            (Ex2, true, 0xbc00_0002, 0x3f7e_9e10),
            (Ex2, true, 0xc000_0003, 0x3e7f_fff7),
            (Ex2, true, 0x3400_0000, 0x3f80_0001),
            (Ex2, true, 0xc2fc_0001, 0),
            (Ex2, true, 0x7f7f_ffff, 0x7f80_0000),
            (Ex2, true, 0xff80_0000, 0),
            (Ex2, false, 0xc2fc_0001, 0x007f_ffd3),
        ];
        // Read on an H200: sin and cos of 1, pi/2, 2^23, pi and -pi, 2^25 and -2^25 (half a
        // period: zeros of either sign), of x below 2^-25 periods (0) and just above it, of a
        // huge x, a subnormal and infinities; `.ftz` changes nothing.
        let trig: &[(u32, u32, u32)] = &[
            (0x3f80_0000, 0x3f57_6aa3, 0x3f0a_5141),
            (0x3fc9_0fdb, 0x3f80_0000, 0),
            (0x4b00_0000, 0x3f35_04f3, 0xbf35_04f2),
            (0x4049_0fdb, 0, 0xbf80_0000),
            (0xc049_0fdb, 0x8000_0000, 0xbf80_0000),
            (0x4c00_0000, 0x8000_0000, 0xbf80_0000),
            (0xcc00_0000, 0, 0xbf80_0000),
            (0x3400_0000, 0, 0x3f80_0000),
            (0x3800_0000, 0x37fe_7ac8, 0x3f7f_ffff),
            (0x5000_0000, 0, 0x3f80_0000),
            (0x8000_0001, 0x8000_0000, 0x3f80_0000),
            (0x7f80_0000, NAN32, NAN32),
            (0xff80_0000, NAN32, NAN32),
        ];
        // tanh (no .ftz), read on an H200: subnormals and x below 2^-8 as they are, the first
        // binade the unit's own, around 1, below 8 and from 8 on, infinities and NaNs.
        let tanh: &[(u32, u32)] = &[
            (0x0040_0000, 0x0040_0000),
            (0x8000_0001, 0x8000_0001),
            (0x3b80_0000, 0x3b80_0000),
            (0x3bff_ffff, 0x3bff_fec0),
            (0x3c00_0000, 0x3bff_ff00),
            (0x3f80_0000, 0x3f42_f848),
            (0x4080_0000, 0x3f7f_d430),
            (0x40ff_ffff, 0x3f7f_fffc),
            (0xbe00_0001, 0xbdfe_acd0),
            (0xc040_0000, 0xbf7e_bbee),
            (0x4100_0000, 0x3f80_0000),
            (0xff80_0000, 0xbf80_0000),
            (0xffc0_0000, NAN32),
            (0x7f80_0001, NAN32),
        ];
        let seen: Vec<(Approx, bool, u32, u32)> = seen
            .iter()
            .copied()
            .chain(
                trig.iter()
                    .flat_map(|&(x, sin, cos)| {
                        [true, false].map(|ftz| [(Sin, ftz, x, sin), (Cos, ftz, x, cos)])
                    })
                    .flatten(),
            )
            .chain(tanh.iter().map(|&(x, r)| (Tanh, false, x, r)))
            .collect();
        let wrong: Vec<String> = seen
            .iter()
            .filter(|&&(op, ftz, x, expect)| f32(op, x, ftz) != expect)
            .map(|&(op, ftz, x, expect)| {
                format!(
                    "{op:?} ftz {ftz} of {x:08x}: {:08x}, not {expect:08x}",
                    f32(op, x, ftz)
                )
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
