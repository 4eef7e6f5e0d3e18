//! `printf` in a kernel. NVRTC compiles it to a call of `vprintf(format, args)`: `format`
//! is the address of the format string, `args` of a buffer in the thread's local memory
//! holding each argument at an offset aligned to its own size (floats promoted to double,
//! as C's variadic arguments are). The GPU copies the arguments into a buffer of
//! `cudaLimitPrintfFifoSize` bytes and the host's C library formats them when the launch is
//! synchronised (CUDA C++ Programming Guide, "Formatted Output"); here the line is formatted
//! as glibc's `printf` formats it, and the tests hold it to glibc's own `snprintf`.
//!
//! The guide's rules: a conversion is `%[flags][width][.precision][size]type`, every
//! combination accepted; the size of each argument follows from its conversion (`%d` an
//! int, `%ld` and `%lld` 64 bits, `%f` a double, `%s` and `%p` a pointer); at most 32
//! arguments, past them a conversion is written as it stands; the return value is the
//! number of arguments, -1 for a null format.

/// The GPU's default printf buffer (`cudaLimitPrintfFifoSize`, 1 MiB): a launch's lines
/// past it are dropped.
pub const FIFO_BYTES: usize = 1 << 20;

/// Arguments a format may take; conversions past them are written as they stand.
pub const MAX_ARGS: usize = 32;

/// Where the formatter reads: the argument buffer and the strings `%s` names.
pub trait Source {
    type Error;
    /// `size` bytes (4 or 8) at `offset` in the argument buffer, little-endian.
    fn arg(&mut self, offset: u64, size: u32) -> Result<u64, Self::Error>;
    /// The byte at `address` (a generic address: the format string, a `%s` string).
    fn byte(&mut self, address: u64) -> Result<u8, Self::Error>;
}

/// One conversion's flags, width and precision.
#[derive(Default, Clone, Copy)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
}

/// The NUL-terminated string at `address`, at most `max` bytes of it.
pub fn string<S: Source>(src: &mut S, address: u64, max: usize) -> Result<Vec<u8>, S::Error> {
    let mut out = Vec::new();
    while out.len() < max {
        let b = src.byte(address.wrapping_add(out.len() as u64))?;
        if b == 0 {
            break;
        }
        out.push(b);
    }
    Ok(out)
}

/// `format` with its arguments from `src`: the text, and `vprintf`'s return value.
pub fn format<S: Source>(format: &[u8], src: &mut S) -> Result<(Vec<u8>, i32), S::Error> {
    let mut out = Vec::new();
    let mut offset = 0u64;
    let mut used = 0usize;
    let mut i = 0;
    while i < format.len() {
        let c = format[i];
        if c != b'%' {
            out.push(c);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        if format.get(i) == Some(&b'%') {
            out.push(b'%');
            i += 1;
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&f) = format.get(i) {
            match f {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                b'0' => spec.zero = true,
                _ => break,
            }
            i += 1;
        }
        // `*` takes the width from an int argument; counted among the 32.
        let mut stars = 0;
        let mut star_width = false;
        if format.get(i) == Some(&b'*') {
            star_width = true;
            stars += 1;
            i += 1;
        } else {
            spec.width = digits(format, &mut i);
        }
        let mut star_precision = false;
        if format.get(i) == Some(&b'.') {
            i += 1;
            if format.get(i) == Some(&b'*') {
                star_precision = true;
                stars += 1;
                i += 1;
            } else {
                spec.precision = Some(digits(format, &mut i));
            }
        }
        let mut size = 0u8; // 0: int, 1: short, 2: char, 8: 64 bits
        while let Some(&m) = format.get(i) {
            match m {
                b'h' => size = if size == 1 { 2 } else { 1 },
                b'l' | b'L' | b'q' | b'j' | b'z' | b't' => size = 8,
                _ => break,
            }
            i += 1;
        }
        let Some(&conv) = format.get(i) else {
            out.extend_from_slice(&format[start..]);
            break;
        };
        i += 1;
        let known = b"cdiouxXpeEfFgGaAs".contains(&conv);
        if !known || used + stars + 1 > MAX_ARGS {
            out.extend_from_slice(&format[start..i]);
            continue;
        }
        let mut next = |src: &mut S, bytes: u32| -> Result<u64, S::Error> {
            offset = offset.div_ceil(u64::from(bytes)) * u64::from(bytes);
            let v = src.arg(offset, bytes)?;
            offset += u64::from(bytes);
            used += 1;
            Ok(v)
        };
        if star_width {
            let w = next(src, 4)? as u32 as i32;
            if w < 0 {
                spec.left = true;
            }
            spec.width = w.unsigned_abs() as usize;
        }
        if star_precision {
            let p = next(src, 4)? as u32 as i32;
            spec.precision = usize::try_from(p).ok();
        }
        let wide = size == 8;
        match conv {
            b'd' | b'i' => {
                let raw = next(src, if wide { 8 } else { 4 })?;
                let v = match size {
                    8 => raw as i64,
                    1 => i64::from(raw as i16),
                    2 => i64::from(raw as i8),
                    _ => i64::from(raw as i32),
                };
                let sign = sign_of(v < 0, &spec);
                let digits = int_digits(v.unsigned_abs(), 10, false, spec.precision);
                pad(&mut out, &spec, sign, &digits, spec.precision.is_none());
            }
            b'u' | b'o' | b'x' | b'X' => {
                let raw = next(src, if wide { 8 } else { 4 })?;
                let v = match size {
                    8 => raw,
                    1 => u64::from(raw as u16),
                    2 => u64::from(raw as u8),
                    _ => u64::from(raw as u32),
                };
                let (base, upper) = match conv {
                    b'u' => (10, false),
                    b'o' => (8, false),
                    b'x' => (16, false),
                    _ => (16, true),
                };
                let mut digits = int_digits(v, base, upper, spec.precision);
                let mut prefix: &[u8] = b"";
                if spec.alt && base == 8 && digits.first() != Some(&b'0') {
                    digits.insert(0, b'0');
                }
                if spec.alt && base == 16 && v != 0 {
                    prefix = if upper { b"0X" } else { b"0x" };
                }
                pad(&mut out, &spec, prefix, &digits, spec.precision.is_none());
            }
            b'c' => {
                let v = next(src, 4)?;
                let plain = Spec {
                    zero: false,
                    ..spec
                };
                pad(&mut out, &plain, b"", &[v as u8], false);
            }
            b's' => {
                let address = next(src, 8)?;
                let max = spec.precision.unwrap_or(usize::MAX);
                let text = if address == 0 {
                    // glibc's: "(null)" where the precision leaves room for it.
                    if max >= 6 {
                        b"(null)".to_vec()
                    } else {
                        Vec::new()
                    }
                } else {
                    string(src, address, max)?
                };
                let plain = Spec {
                    zero: false,
                    ..spec
                };
                pad(&mut out, &plain, b"", &text, false);
            }
            b'p' => {
                let v = next(src, 8)?;
                if v == 0 {
                    let plain = Spec {
                        zero: false,
                        ..spec
                    };
                    pad(&mut out, &plain, b"", b"(nil)", false);
                } else {
                    let digits = int_digits(v, 16, false, spec.precision);
                    let sign: &[u8] = if spec.plus {
                        b"+0x"
                    } else if spec.space {
                        b" 0x"
                    } else {
                        b"0x"
                    };
                    pad(&mut out, &spec, sign, &digits, spec.precision.is_none());
                }
            }
            _ => {
                let x = f64::from_bits(next(src, 8)?);
                float(&mut out, &spec, conv, x);
            }
        }
    }
    Ok((out, used as i32))
}

fn digits(format: &[u8], i: &mut usize) -> usize {
    let mut n = 0usize;
    while let Some(d) = format.get(*i).filter(|c| c.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(usize::from(d - b'0'));
        *i += 1;
    }
    n
}

/// The sign a signed conversion writes.
fn sign_of(negative: bool, spec: &Spec) -> &'static [u8] {
    if negative {
        b"-"
    } else if spec.plus {
        b"+"
    } else if spec.space {
        b" "
    } else {
        b""
    }
}

/// `v`'s digits in `base`, at least `precision` of them (none for 0 with precision 0).
fn int_digits(v: u64, base: u64, upper: bool, precision: Option<usize>) -> Vec<u8> {
    let table: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut digits = Vec::new();
    let mut v = v;
    while v != 0 {
        digits.push(table[(v % base) as usize]);
        v /= base;
    }
    let min = precision.unwrap_or(1);
    while digits.len() < min {
        digits.push(b'0');
    }
    digits.reverse();
    digits
}

/// `prefix` (a sign, `0x`) and `body` in the field's width: spaces before, zeros between
/// (where `zero_ok` and the `0` flag ask for them), or spaces after (`-`).
fn pad(out: &mut Vec<u8>, spec: &Spec, prefix: &[u8], body: &[u8], zero_ok: bool) {
    let len = prefix.len() + body.len();
    let fill = spec.width.saturating_sub(len);
    if spec.left {
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
        out.resize(out.len() + fill, b' ');
    } else if spec.zero && zero_ok {
        out.extend_from_slice(prefix);
        out.resize(out.len() + fill, b'0');
        out.extend_from_slice(body);
    } else {
        out.resize(out.len() + fill, b' ');
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
    }
}

/// `%f %F %e %E %g %G %a %A` of `x`.
fn float(out: &mut Vec<u8>, spec: &Spec, conv: u8, x: f64) {
    let upper = conv.is_ascii_uppercase();
    // glibc writes a NaN's sign too.
    let sign = sign_of(x.is_sign_negative(), spec);
    if !x.is_finite() {
        let body: &[u8] = match (x.is_nan(), upper) {
            (true, false) => b"nan",
            (true, true) => b"NAN",
            (false, false) => b"inf",
            (false, true) => b"INF",
        };
        pad(out, spec, sign, body, false);
        return;
    }
    let a = x.abs();
    let mut prefix = sign.to_vec();
    let body = match conv.to_ascii_lowercase() {
        b'f' => fixed(a, spec.precision.unwrap_or(6), spec.alt),
        b'e' => exponential(a, spec.precision.unwrap_or(6), spec.alt, upper),
        b'g' => general(a, spec.precision.unwrap_or(6), spec.alt, upper),
        _ => {
            prefix.extend_from_slice(if upper { b"0X" } else { b"0x" });
            hexadecimal(a, spec.precision, spec.alt, upper)
        }
    };
    pad(out, spec, &prefix, &body, true);
}

fn fixed(a: f64, precision: usize, alt: bool) -> Vec<u8> {
    // Rust's exact formatting rounds the binary value to nearest, ties to even, as
    // glibc does in the default rounding mode.
    let mut s = format!("{a:.precision$}").into_bytes();
    if alt && precision == 0 {
        s.push(b'.');
    }
    s
}

/// `a` as `d.ddde+XX`: the mantissa's text and the exponent, rounded to `precision` digits.
fn mantissa_exponent(a: f64, precision: usize) -> (String, i32) {
    let s = format!("{a:.precision$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    (m.to_string(), e.parse().unwrap_or(0))
}

fn exponential(a: f64, precision: usize, alt: bool, upper: bool) -> Vec<u8> {
    let (mut m, e) = mantissa_exponent(a, precision);
    if alt && precision == 0 {
        m.push('.');
    }
    let letter = if upper { 'E' } else { 'e' };
    let sign = if e < 0 { '-' } else { '+' };
    format!("{m}{letter}{sign}{:02}", e.unsigned_abs()).into_bytes()
}

fn general(a: f64, precision: usize, alt: bool, upper: bool) -> Vec<u8> {
    let p = precision.max(1);
    let (_, x) = mantissa_exponent(a, p - 1);
    let mut s = if x < p as i32 && x >= -4 {
        fixed(a, (p as i32 - 1 - x) as usize, alt)
    } else {
        exponential(a, p - 1, alt, upper)
    };
    if !alt {
        let split = s.iter().position(|&c| c == b'e' || c == b'E');
        let tail = split.map(|at| s.split_off(at)).unwrap_or_default();
        if s.contains(&b'.') {
            while s.last() == Some(&b'0') {
                s.pop();
            }
            if s.last() == Some(&b'.') {
                s.pop();
            }
        }
        s.extend_from_slice(&tail);
    }
    s
}

/// `%a`'s digits after `0x`: glibc's form, `1.8p+1` for normal numbers, `0.0008p-1022`
/// for subnormals, rounded to `precision` hex digits to nearest, ties to even.
fn hexadecimal(a: f64, precision: Option<usize>, alt: bool, upper: bool) -> Vec<u8> {
    let bits = a.to_bits();
    let field = (bits >> 52) as i32;
    let mut fraction = bits & ((1 << 52) - 1);
    let (mut lead, exp) = match (field, fraction) {
        (0, 0) => (0u64, 0),
        (0, _) => (0, -1022),
        _ => (1, field - 1023),
    };
    let digits = match precision {
        None => {
            let mut n = 13;
            while n > 0 && (fraction >> (4 * (13 - n))) & 0xf == 0 {
                n -= 1;
            }
            n
        }
        Some(p) => p,
    };
    if digits < 13 {
        // The leading digit joins the kept digits: its parity breaks a tie at precision 0.
        let drop = 4 * (13 - digits) as u32;
        let kept = lead << (4 * digits) | fraction >> drop;
        let rest = fraction & ((1u64 << drop) - 1);
        let half = 1u64 << (drop - 1);
        let kept = kept + u64::from(rest > half || (rest == half && kept & 1 == 1));
        lead = kept >> (4 * digits);
        fraction = kept & ((1u64 << (4 * digits)) - 1);
    }
    let table: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut s = vec![table[lead as usize & 0xf]];
    if digits > 0 || alt {
        s.push(b'.');
    }
    for k in 0..digits {
        let d = if digits <= 13 {
            (fraction >> (4 * (digits - 1 - k))) & 0xf
        } else if k < 13 {
            (fraction >> (4 * (12 - k))) & 0xf
        } else {
            0
        };
        s.push(table[d as usize]);
    }
    let letter = if upper { 'P' } else { 'p' };
    let sign = if exp < 0 { '-' } else { '+' };
    s.extend(format!("{letter}{sign}{}", exp.unsigned_abs()).bytes());
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{c_char, c_int, CString};

    extern "C" {
        fn snprintf(buf: *mut c_char, n: usize, format: *const c_char, ...) -> c_int;
    }

    /// An argument buffer laid out as NVRTC lays it out, and strings at fake addresses.
    struct Buffer {
        bytes: Vec<u8>,
        strings: Vec<(u64, Vec<u8>)>,
    }

    impl Source for Buffer {
        type Error = String;
        fn arg(&mut self, offset: u64, size: u32) -> Result<u64, String> {
            let at = offset as usize;
            let b = self
                .bytes
                .get(at..at + size as usize)
                .ok_or_else(|| format!("argument at {offset} past the buffer"))?;
            let mut v = [0u8; 8];
            v[..b.len()].copy_from_slice(b);
            Ok(u64::from_le_bytes(v))
        }
        fn byte(&mut self, address: u64) -> Result<u8, String> {
            for (at, s) in &self.strings {
                if address >= *at && address <= at + s.len() as u64 {
                    return Ok(s.get((address - at) as usize).copied().unwrap_or(0));
                }
            }
            Err(format!("no string at {address:#x}"))
        }
    }

    fn push(buf: &mut Vec<u8>, v: u64, size: usize) {
        while !buf.len().is_multiple_of(size) {
            buf.push(0xAA);
        }
        buf.extend_from_slice(&v.to_le_bytes()[..size]);
    }

    fn ours(fmt: &str, bytes: Vec<u8>) -> Vec<u8> {
        let mut b = Buffer {
            bytes,
            strings: vec![(0x1000, b"hello".to_vec())],
        };
        format(fmt.as_bytes(), &mut b).expect("formats").0
    }

    fn glibc(call: impl FnOnce(*mut c_char, usize) -> c_int) -> Vec<u8> {
        let mut buf = vec![0u8; 512];
        let n = call(buf.as_mut_ptr().cast(), buf.len());
        buf.truncate(n as usize);
        buf
    }

    const FLAGS: [&str; 8] = ["", "-", "+", " ", "#", "0", "-#", "+0"];
    const WIDTHS: [&str; 3] = ["", "1", "12"];
    const PRECISIONS: [&str; 6] = ["", ".", ".0", ".1", ".3", ".17"];

    #[test]
    fn doubles_format_as_glibc_formats_them() {
        let values = [
            0.0,
            -0.0,
            1.0,
            0.5,
            0.125,
            2.5,
            -1.5,
            123.456,
            1e-5,
            9.9999996e-5,
            0.0001,
            99999.95,
            1e21,
            6.02214076e23,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            1.2e-310,
            std::f64::consts::PI,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
        ];
        for flags in FLAGS {
            for width in WIDTHS {
                for precision in PRECISIONS {
                    for conv in ["f", "F", "e", "E", "g", "G", "a", "A"] {
                        let fmt = format!("[%{flags}{width}{precision}{conv}]");
                        let c = CString::new(fmt.clone()).expect("no NUL");
                        for x in values {
                            let mut bytes = Vec::new();
                            push(&mut bytes, x.to_bits(), 8);
                            // SAFETY: a format with one double conversion, one double.
                            let want = glibc(|p, n| unsafe { snprintf(p, n, c.as_ptr(), x) });
                            assert_eq!(ours(&fmt, bytes), want, "{fmt} of {x:e}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn integers_format_as_glibc_formats_them() {
        let values: [i64; 9] = [0, 1, -1, 42, -42, 255, i64::from(i32::MIN), i64::MAX, 70000];
        for flags in FLAGS {
            for width in WIDTHS {
                for precision in ["", ".", ".0", ".3", ".12"] {
                    for size in ["", "h", "hh", "l", "ll"] {
                        for conv in ["d", "i", "u", "o", "x", "X", "c"] {
                            if conv == "c" && !size.is_empty() {
                                continue;
                            }
                            let fmt = format!("[%{flags}{width}{precision}{size}{conv}]");
                            let c = CString::new(fmt.clone()).expect("no NUL");
                            for v in values {
                                let wide = size.starts_with('l');
                                let v = if wide { v } else { i64::from(v as i32) };
                                let mut bytes = Vec::new();
                                push(&mut bytes, v as u64, if wide { 8 } else { 4 });
                                let want = if wide {
                                    // SAFETY: one 64-bit conversion, one 64-bit integer.
                                    glibc(|p, n| unsafe { snprintf(p, n, c.as_ptr(), v) })
                                } else {
                                    // SAFETY: one int conversion, one int.
                                    glibc(|p, n| unsafe { snprintf(p, n, c.as_ptr(), v as c_int) })
                                };
                                assert_eq!(ours(&fmt, bytes), want, "{fmt} of {v}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn strings_and_pointers_format_as_glibc_formats_them() {
        let hello = CString::new("hello").expect("no NUL");
        for flags in ["", "-", "+", " ", "#", "0"] {
            for width in WIDTHS {
                for precision in ["", ".0", ".3", ".8"] {
                    let fmt = format!("[%{flags}{width}{precision}s]");
                    let c = CString::new(fmt.clone()).expect("no NUL");
                    let mut bytes = Vec::new();
                    push(&mut bytes, 0x1000, 8);
                    // SAFETY: one string conversion, one string.
                    let want = glibc(|p, n| unsafe { snprintf(p, n, c.as_ptr(), hello.as_ptr()) });
                    assert_eq!(ours(&fmt, bytes), want, "{fmt}");
                    let mut bytes = Vec::new();
                    push(&mut bytes, 0, 8);
                    let null: *const c_char = std::ptr::null();
                    // SAFETY: glibc prints a null string as "(null)".
                    let want = glibc(|p, n| unsafe { snprintf(p, n, c.as_ptr(), null) });
                    assert_eq!(ours(&fmt, bytes), want, "{fmt} of null");
                }
                let fmt = format!("[%{flags}{width}p]");
                let c = CString::new(fmt.clone()).expect("no NUL");
                for v in [0usize, 0x7f12_3456_7890] {
                    let mut bytes = Vec::new();
                    push(&mut bytes, v as u64, 8);
                    let ptr = v as *const u8;
                    // SAFETY: one pointer conversion, one pointer (never read).
                    let want = glibc(|p, n| unsafe { snprintf(p, n, c.as_ptr(), ptr) });
                    assert_eq!(ours(&fmt, bytes), want, "{fmt} of {v:#x}");
                }
            }
        }
    }

    #[test]
    fn arguments_are_read_at_their_own_alignment_and_counted() {
        // int, double, int, long long: offsets 0, 8, 16, 24.
        let mut bytes = Vec::new();
        push(&mut bytes, 7, 4);
        push(&mut bytes, 2.5f64.to_bits(), 8);
        push(&mut bytes, (-3i32) as u32 as u64, 4);
        push(&mut bytes, (-5i64) as u64, 8);
        let mut b = Buffer {
            bytes,
            strings: Vec::new(),
        };
        let (text, n) = format(b"%d %.1f %i %lld %% %y\n", &mut b).expect("formats");
        assert_eq!(
            String::from_utf8(text).expect("utf-8"),
            "7 2.5 -3 -5 % %y\n"
        );
        assert_eq!(n, 4);
        let (text, n) = format(b"no arguments", &mut b).expect("formats");
        assert_eq!((text.as_slice(), n), (&b"no arguments"[..], 0));
    }

    #[test]
    fn past_32_arguments_a_conversion_is_written_as_it_stands() {
        let mut bytes = Vec::new();
        for v in 0..40 {
            push(&mut bytes, v, 4);
        }
        let fmt = "%d ".repeat(34);
        let mut b = Buffer {
            bytes,
            strings: Vec::new(),
        };
        let (text, n) = format(fmt.as_bytes(), &mut b).expect("formats");
        let want: String = (0..32).map(|v| format!("{v} ")).collect::<String>() + "%d %d ";
        assert_eq!(String::from_utf8(text).expect("utf-8"), want);
        assert_eq!(n, 32);
    }
}
