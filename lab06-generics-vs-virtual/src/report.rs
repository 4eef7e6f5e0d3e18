//! What a measurement is, and the table that shows them side by side.

use shared::timing::Timer;

/// One variant's result.
pub struct Measured {
    /// Bytes of input read per second, in GB/s (10^9 bytes), from the median time.
    pub gbps: f64,
    /// The sum, or a wrong one if any run got one; `None` for the peak, which sums nothing.
    pub sum: Option<f32>,
    /// The best launch shape, for GPU kernels.
    pub launch: Option<String>,
}

/// A table of one device's variants, its peak first.
pub struct Table {
    pub device: String,
    pub rows: Vec<(&'static str, Measured)>,
}

impl Table {
    pub fn new(device: String) -> Self {
        Table {
            device,
            rows: Vec::new(),
        }
    }

    /// The peak's GB/s (the first row), against which the others are compared.
    fn peak_gbps(&self) -> f64 {
        self.rows.first().map_or(f64::NAN, |(_, m)| m.gbps)
    }

    /// Print the table on stderr and put each row's figures into the report as
    /// `<variant>_gbps`, `<variant>_pct_of_peak` and `<variant>_sum` (dashes become
    /// underscores).
    /// Returns how many sums were wrong.
    pub fn report(&self, expected: u64, timer: &mut Timer) -> usize {
        let peak = self.peak_gbps();
        let mut wrong = 0;
        shared::cli::eprint_line(&self.device);
        shared::cli::eprint_line(&format!(
            "  {:<20} {:>10} {:>10}  {:<6} launch (GPU: blocks x threads, registers)",
            "variant", "GB/s", "% of peak", "sum"
        ));
        for (name, m) in &self.rows {
            let pct = 100.0 * m.gbps / peak;
            let sum = match m.sum {
                None => "-".to_string(),
                Some(s) if is_exact(s, expected) => "ok".to_string(),
                Some(s) => {
                    wrong += 1;
                    format!("WRONG: {s}, expected {expected}")
                }
            };
            let line = format!(
                "  {name:<20} {:>10.1} {pct:>10.1}  {sum:<6} {}",
                m.gbps,
                m.launch.as_deref().unwrap_or("")
            );
            shared::cli::eprint_line(line.trim_end());
            let key = name.replace('-', "_");
            timer.metric(&format!("{key}_gbps"), round1(m.gbps));
            timer.metric(&format!("{key}_pct_of_peak"), round1(pct));
            if let Some(sum) = m.sum {
                // The sum itself, so that a grader can check it rather than take `sums_ok`.
                timer.metric(&format!("{key}_sum"), f64::from(sum));
            }
        }
        wrong
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Whether a float sum is exactly the integer total.
pub fn is_exact(sum: f32, expected: u64) -> bool {
    f64::from(sum) == expected as f64
}

/// GB/s for reading `n` floats in `ms` milliseconds.
pub fn gbps(n: usize, ms: f64) -> f64 {
    (n * std::mem::size_of::<f32>()) as f64 / (ms * 1e6)
}

/// The median of `values` (the mean of the middle two for an even count). Sorts them.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    match values.len() {
        0 => f64::NAN,
        len if len % 2 == 1 => values[mid],
        _ => (values[mid - 1] + values[mid]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}
