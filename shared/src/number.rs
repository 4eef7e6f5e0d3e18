//! The one number parser behind every numeric flag of every lab (and xtask's).
//!
//! Each function takes the text of one value and returns the number or the reason it is not
//! acceptable, phrased to follow clap's "invalid value 'X' for '--flag':". Negative values in
//! any notation (`-1e-3`, `-5E-1`, `-.5`) reach these functions only if the argument lets
//! hyphen values through: every numeric flag sets `allow_hyphen_values = true`, because clap
//! alone takes `-1e-3` or `-.5` for a flag.

/// A finite `f64`: `-0.6`, `-.5`, `1e-3`, `-5E-1`. Infinity and NaN are refused, and a value
/// too large for an `f64` says so.
pub fn finite(s: &str) -> Result<f64, String> {
    let text = s.trim();
    let value: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number (write it as e.g. -0.5, .25 or -1e-3)"))?;
    if value.is_finite() {
        Ok(value)
    } else if names_a_special_value(text) {
        Err("must be a finite number".to_string())
    } else {
        Err(format!(
            "{text} is too large for a double (at most about 1.8e308)"
        ))
    }
}

/// A finite `f64` greater than zero; a value so small that it rounds to 0 says so.
pub fn positive(s: &str) -> Result<f64, String> {
    let value = finite(s)?;
    if value > 0.0 {
        Ok(value)
    } else if value == 0.0 && has_nonzero_digit(s) {
        Err(format!(
            "{} rounds to 0 in double precision (the smallest positive double is about \
             4.9e-324): choose a larger value",
            s.trim()
        ))
    } else {
        Err("must be a positive number".to_string())
    }
}

/// A finite `f32` (lab05 computes in single precision): the value is parsed, then rounded
/// once to the nearest `f32`. A value beyond `f32`'s range says so.
pub fn finite_f32(s: &str) -> Result<f32, String> {
    let value = finite(s)?;
    // Parsed again as f32 rather than cast: one rounding, not two.
    let single: f32 = s.trim().parse().unwrap_or(value as f32);
    if single.is_finite() {
        Ok(single)
    } else {
        Err(format!(
            "{} is too large for single precision (f32 holds at most about 3.4e38)",
            s.trim()
        ))
    }
}

/// A whole number in `min..=max`, named `what` in the message ("the width"). Written in
/// scientific notation (`4e9`) it is accepted too when it is whole: sample counts are large.
pub fn whole(what: &str, s: &str, min: u64, max: u64) -> Result<u64, String> {
    let text = s.trim();
    let out_of_range = |too_large: bool| {
        if too_large {
            format!("{what} is too large: it must be between {min} and {max}")
        } else {
            format!("{what} must be between {min} and {max}")
        }
    };
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    let negative = text.starts_with('-');
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        // Plain digits: exact, however many there are.
        return match digits.trim_start_matches('0').len() {
            n if n > 20 && !negative => Err(out_of_range(true)),
            n if n > 20 => Err(out_of_range(false)),
            _ => {
                let magnitude: u128 = digits.parse().map_err(|_| out_of_range(!negative))?;
                if (negative && magnitude > 0) || magnitude < u128::from(min) {
                    Err(out_of_range(false))
                } else if magnitude > u128::from(max) {
                    Err(out_of_range(true))
                } else {
                    Ok(magnitude as u64)
                }
            }
        };
    }
    match text.parse::<f64>() {
        Ok(v) if v.is_nan() || (v.is_infinite() && names_a_special_value(text)) => {
            Err(format!("{what} must be a whole number"))
        }
        Ok(v) if v.fract() != 0.0 && v.is_finite() => Err(format!("{what} must be a whole number")),
        Ok(v) if v < min as f64 => Err(out_of_range(false)),
        Ok(v) if v > max as f64 => Err(out_of_range(true)),
        Ok(v) => Ok(v as u64),
        Err(_) => Err(format!("{what} must be a whole number")),
    }
}

/// "inf", "-Infinity", "NaN": the words Rust's float parser accepts besides digits.
fn names_a_special_value(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.contains("inf") || lower.contains("nan")
}

/// Whether the mantissa of a number has a digit other than 0 (so it is not zero itself).
fn has_nonzero_digit(text: &str) -> bool {
    let mantissa = text.split(['e', 'E']).next().unwrap_or("");
    mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_accepts_every_notation() {
        assert_eq!(finite("-1e-3"), Ok(-1e-3));
        assert_eq!(finite("-5E-1"), Ok(-0.5));
        assert_eq!(finite("-.5"), Ok(-0.5));
        assert_eq!(finite(" +2 "), Ok(2.0));
        assert_eq!(finite("-inf"), Err("must be a finite number".to_string()));
        assert_eq!(finite("NaN"), Err("must be a finite number".to_string()));
        assert!(finite("1e400").unwrap_err().contains("too large"));
        assert!(finite("-1x").unwrap_err().contains("not a number"));
    }

    #[test]
    fn positive_says_when_a_value_rounds_to_zero() {
        assert_eq!(positive("1e-3"), Ok(1e-3));
        assert!(positive("1e-400").unwrap_err().contains("rounds to 0"));
        assert_eq!(positive("0"), Err("must be a positive number".to_string()));
        assert_eq!(positive("-1"), Err("must be a positive number".to_string()));
    }

    #[test]
    fn finite_f32_rounds_once_and_knows_its_range() {
        assert_eq!(finite_f32("-3.2"), Ok(-3.2f32));
        assert_eq!(finite_f32("-3.4e38"), Ok(-3.4e38f32));
        assert!(finite_f32("1e39").unwrap_err().contains("single precision"));
    }

    #[test]
    fn whole_numbers_and_their_limits() {
        assert_eq!(whole("w", "16", 1, 100), Ok(16));
        assert_eq!(whole("w", "1e2", 1, 100), Ok(100));
        assert_eq!(
            whole("w", "0", 1, 100),
            Err("w must be between 1 and 100".into())
        );
        assert_eq!(
            whole("w", "-3", 1, 100),
            Err("w must be between 1 and 100".into())
        );
        assert!(whole("w", "101", 1, 100).unwrap_err().contains("too large"));
        let huge = "9".repeat(60);
        assert!(whole("w", &huge, 1, 100).unwrap_err().contains("too large"));
        assert!(whole("w", &format!("-{huge}"), 1, 100)
            .unwrap_err()
            .contains("between"));
        assert_eq!(
            whole("w", "1.5", 1, 100),
            Err("w must be a whole number".into())
        );
        assert_eq!(
            whole("w", "abc", 1, 100),
            Err("w must be a whole number".into())
        );
        assert_eq!(
            whole("w", "inf", 1, 100),
            Err("w must be a whole number".into())
        );
        assert!(whole("w", "1e30", 1, 100)
            .unwrap_err()
            .contains("too large"));
    }
}
