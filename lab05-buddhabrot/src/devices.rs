//! Several GPUs: which ones (`--devices`), and which samples each one takes.
//!
//! The samples are split by index range: GPU k takes one stretch of consecutive indices,
//! and together the stretches are exactly `0..samples`. A sample's point depends on its
//! index alone (`src/rng.rs`), and each GPU's canvas is a sum of integer counts, so the sum
//! of the canvases is the canvas one GPU (or the CPU) makes: the same bytes, however many
//! GPUs take part and whichever finishes first.

use std::ops::Range;

use shared::{number, Error, Result};

use crate::orbit::VISIT_LOG2;

/// The most GPUs `--devices` may name: far beyond any one machine, so a larger number is a
/// typo.
pub const MAX_DEVICES: u64 = 1024;

/// The GPUs a run uses, as `--devices` names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Devices {
    /// Every GPU the driver shows.
    All,
    /// The first N GPUs, 0 to N-1.
    First(usize),
    /// These GPUs, in this order; the first one receives the sum.
    List(Vec<usize>),
}

impl Default for Devices {
    /// One GPU, the first.
    fn default() -> Devices {
        Devices::First(1)
    }
}

/// `all`, a number N (the first N GPUs), or GPU numbers with commas (`0,2`).
pub fn parse_devices(s: &str) -> std::result::Result<Devices, String> {
    let text = s.trim();
    if text.eq_ignore_ascii_case("all") {
        return Ok(Devices::All);
    }
    if !text.contains(',') {
        return number::whole("the number of GPUs", text, 1, MAX_DEVICES)
            .map(|n| Devices::First(n as usize))
            .map_err(|e| format!("{e}; or give `all`, or GPU numbers with commas (0,2)"));
    }
    let mut list = Vec::new();
    for item in text.split(',') {
        if item.trim().is_empty() {
            return Err("a GPU number is missing between two commas".to_string());
        }
        let ordinal = number::whole("a GPU number", item, 0, MAX_DEVICES - 1)? as usize;
        if list.contains(&ordinal) {
            return Err(format!("GPU {ordinal} is listed twice"));
        }
        list.push(ordinal);
    }
    Ok(Devices::List(list))
}

impl Devices {
    /// The GPU numbers to use on a machine that shows `count` GPUs (at least one).
    pub fn resolve(&self, count: usize) -> Result<Vec<usize>> {
        let has = match count {
            1 => "this machine has 1 GPU, number 0".to_string(),
            _ => format!("this machine has {count} GPUs, numbered 0 to {}", count - 1),
        };
        match self {
            Devices::All => Ok((0..count).collect()),
            Devices::First(n) if *n <= count => Ok((0..*n).collect()),
            Devices::First(n) => Err(Error::Usage(format!(
                "--devices {n} asks for {n} GPUs, but {has}; ask for fewer, or --devices all"
            ))),
            Devices::List(list) => match list.iter().find(|&&ordinal| ordinal >= count) {
                Some(ordinal) => Err(Error::Usage(format!(
                    "--devices names GPU {ordinal}, but {has}"
                ))),
                None => Ok(list.clone()),
            },
        }
    }
}

/// The samples each of `parts` GPUs takes: consecutive index ranges that together are
/// exactly `0..samples`, each within one cell visit (32 samples) of an equal share.
///
/// Every range but an empty one starts on a visit boundary (a multiple of 2^VISIT_LOG2).
/// The kernel's warps take 32 consecutive indices from the start of their range: starting
/// mid-visit, every warp of that GPU would straddle two cells for the whole run and lose
/// what stratification gains (`src/orbit.rs`).
pub fn split(samples: u64, parts: usize) -> Vec<Range<u64>> {
    let visit = 1u64 << VISIT_LOG2;
    // The k-th boundary: k/parts of the samples, rounded down to a visit. Both steps are
    // monotone in k, so the ranges never overlap; the last boundary is the sample count.
    let boundary = |k: usize| {
        if k == parts {
            samples
        } else {
            let share = u128::from(samples) * k as u128 / parts as u128;
            share as u64 / visit * visit
        }
    };
    (0..parts).map(|k| boundary(k)..boundary(k + 1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VISIT: u64 = 1 << VISIT_LOG2;

    /// Sample counts that divide evenly and that do not, tiny and as large as allowed.
    const COUNTS: [u64; 14] = [
        0,
        1,
        31,
        32,
        33,
        95,
        1000,
        1_000_003,
        4_000_000,
        33_554_432,
        (1 << 31) + 777,
        (1 << 34) + 1,
        (1 << 44) - 1,
        1 << 44,
    ];

    #[test]
    fn ranges_cover_every_sample_once_in_order() {
        for samples in COUNTS {
            for parts in (1..=9).chain([16, 64, 1024]) {
                let ranges = split(samples, parts);
                assert_eq!(ranges.len(), parts, "{samples} samples, {parts} GPUs");
                assert_eq!(ranges[0].start, 0, "{samples} samples, {parts} GPUs");
                assert_eq!(ranges[parts - 1].end, samples);
                for pair in ranges.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start, "{samples}, {parts}: {ranges:?}");
                }
                for range in &ranges {
                    assert!(range.start <= range.end, "{samples}, {parts}: {ranges:?}");
                }
            }
        }
    }

    #[test]
    fn every_index_is_taken_by_exactly_one_gpu() {
        for samples in 0..=300u64 {
            for parts in 1..=7 {
                let mut taken = vec![0u32; samples as usize];
                for range in split(samples, parts) {
                    for index in range {
                        taken[index as usize] += 1;
                    }
                }
                assert!(
                    taken.iter().all(|&n| n == 1),
                    "{samples} samples, {parts} GPUs: {taken:?}"
                );
            }
        }
    }

    #[test]
    fn shares_are_equal_within_a_visit_and_start_on_a_visit() {
        for samples in COUNTS {
            for parts in (1..=9).chain([16, 64]) {
                let fair = samples as f64 / parts as f64;
                for range in split(samples, parts) {
                    let length = (range.end - range.start) as f64;
                    assert!(
                        (length - fair).abs() <= VISIT as f64,
                        "{samples} samples, {parts} GPUs: {range:?} against {fair}"
                    );
                    if range.start < range.end {
                        assert_eq!(range.start % VISIT, 0, "{samples}, {parts}: {range:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn one_gpu_takes_everything() {
        let whole = |samples: u64| std::iter::once(0..samples).collect::<Vec<_>>();
        assert_eq!(split(1_000_003, 1), whole(1_000_003));
        assert_eq!(split(0, 1), whole(0));
    }

    #[test]
    fn devices_are_all_a_count_or_a_list() {
        assert_eq!(parse_devices("all"), Ok(Devices::All));
        assert_eq!(parse_devices(" ALL "), Ok(Devices::All));
        assert_eq!(parse_devices("2"), Ok(Devices::First(2)));
        assert_eq!(parse_devices("0,1"), Ok(Devices::List(vec![0, 1])));
        assert_eq!(parse_devices("3, 1"), Ok(Devices::List(vec![3, 1])));
        assert_eq!(Devices::default(), Devices::First(1));
        let refused = [
            ("0", "the number of GPUs must be between 1 and 1024"),
            ("-1", "the number of GPUs must be between 1 and 1024"),
            ("1025", "the number of GPUs is too large"),
            ("two", "the number of GPUs must be a whole number"),
            ("", "the number of GPUs must be a whole number"),
            ("1,1", "GPU 1 is listed twice"),
            ("0,,1", "a GPU number is missing between two commas"),
            ("1,", "a GPU number is missing between two commas"),
            ("0,x", "a GPU number must be a whole number"),
            ("0,-2", "a GPU number must be between 0 and 1023"),
        ];
        for (text, message) in refused {
            let error = parse_devices(text).expect_err(text);
            assert!(error.starts_with(message), "{text:?}: {error}");
        }
    }

    #[test]
    fn devices_resolve_against_the_machine() {
        assert_eq!(Devices::All.resolve(2).ok(), Some(vec![0, 1]));
        assert_eq!(Devices::First(1).resolve(8).ok(), Some(vec![0]));
        assert_eq!(Devices::First(2).resolve(2).ok(), Some(vec![0, 1]));
        assert_eq!(Devices::List(vec![2, 0]).resolve(3).ok(), Some(vec![2, 0]));
        let message = |devices: Devices, count| devices.resolve(count).unwrap_err().to_string();
        assert_eq!(
            message(Devices::First(3), 2),
            "--devices 3 asks for 3 GPUs, but this machine has 2 GPUs, numbered 0 to 1; ask \
             for fewer, or --devices all"
        );
        assert_eq!(
            message(Devices::List(vec![0, 1]), 1),
            "--devices names GPU 1, but this machine has 1 GPU, number 0"
        );
    }
}
