//! The value parsers that several commands' flags share.

use crate::bins::Result;

/// A clap value parser for a whole number from 1 up, through the labs' own number parser:
/// `--runs -1` gets "the number of runs must be between 1 and ...", not clap's "unexpected
/// argument '-1'" (the flags that take it accept a leading hyphen).
pub fn at_least_one(
    what: &'static str,
    max: u64,
) -> impl Fn(&str) -> Result<u64> + Clone + Send + Sync + 'static {
    move |text: &str| shared::number::whole(what, text, 1, max)
}

/// [`at_least_one`] for a `u32`.
pub fn at_least_one_u32(
    what: &'static str,
) -> impl Fn(&str) -> Result<u32> + Clone + Send + Sync + 'static {
    let parse = at_least_one(what, u32::MAX.into());
    // Within `u32`'s range, as `whole` has checked.
    move |text: &str| parse(text).map(|n| n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_start_at_one_and_name_what_is_wrong() {
        let runs = at_least_one_u32("the number of runs");
        assert_eq!(runs("5"), Ok(5));
        for bad in ["-1", "0", "1.5", "x", "4294967296"] {
            let message = runs(bad).err().unwrap_or_default();
            assert!(
                message.starts_with("the number of runs "),
                "{bad}: {message}"
            );
        }
        assert_eq!(at_least_one("samples", u64::MAX)("4294967296"), Ok(1 << 32));
    }
}
