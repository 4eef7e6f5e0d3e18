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
    /// Whether its times are the device's own: not on the CPU device, whose times are an
    /// interpreter's, so that its GB/s and shares of a peak say nothing of a GPU.
    pub timed: bool,
}

/// What the table says in place of a figure only a GPU can give.
const NEEDS_A_GPU: &str = "needs a GPU";

impl Table {
    pub fn new(device: String) -> Self {
        Table {
            device,
            rows: Vec::new(),
            timed: true,
        }
    }

    /// The table of a device whose times say nothing of a GPU (the CPU device): its sums
    /// are checked, its figures shown as [`NEEDS_A_GPU`] and left out of the report.
    pub fn untimed(device: String) -> Self {
        Table {
            timed: false,
            ..Table::new(device)
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
        let (lines, wrong) = self.lines(expected);
        for line in lines {
            shared::cli::eprint_line(&line);
        }
        for (name, m) in &self.rows {
            let key = name.replace('-', "_");
            if self.timed {
                let pct = 100.0 * m.gbps / self.peak_gbps();
                timer.metric(&format!("{key}_gbps"), round1(m.gbps));
                timer.metric(&format!("{key}_pct_of_peak"), round1(pct));
            }
            if let Some(sum) = m.sum {
                // The sum itself, so that a grader can check it rather than take `sums_ok`.
                timer.metric(&format!("{key}_sum"), f64::from(sum));
            }
        }
        wrong
    }

    /// The table's lines, and how many sums were wrong.
    fn lines(&self, expected: u64) -> (Vec<String>, usize) {
        let peak = self.peak_gbps();
        let mut wrong = 0;
        let mut lines = vec![
            self.device.clone(),
            format!(
                "  {:<20} {:>11} {:>11}  {:<6} launch (GPU: blocks x threads, registers)",
                "variant", "GB/s", "% of peak", "sum"
            ),
        ];
        for (name, m) in &self.rows {
            let sum = match m.sum {
                None => "-".to_string(),
                Some(s) if is_exact(s, expected) => "ok".to_string(),
                Some(s) => {
                    wrong += 1;
                    format!("WRONG: {s}, expected {expected}")
                }
            };
            let (gbps, pct) = match self.timed {
                true => (
                    format!("{:.1}", m.gbps),
                    format!("{:.1}", 100.0 * m.gbps / peak),
                ),
                false => (NEEDS_A_GPU.to_string(), NEEDS_A_GPU.to_string()),
            };
            let line = format!(
                "  {name:<20} {gbps:>11} {pct:>11}  {sum:<6} {}",
                m.launch.as_deref().unwrap_or("")
            );
            lines.push(line.trim_end().to_string());
        }
        (lines, wrong)
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

    /// On the CPU device a GPU's figures are "needs a GPU", never an interpreter's GB/s or
    /// a share of its peak (238.8% once); its sums are still checked.
    #[test]
    fn the_cpu_device_shows_no_gpu_figures_but_checks_its_sums() {
        let row = |gbps, sum| Measured {
            gbps,
            sum,
            launch: None,
        };
        let mut table = Table::untimed("CPU device".to_string());
        table.rows = vec![
            ("gpu-peak", row(0.4, None)),
            ("gpu-plain", row(0.9, Some(16.0))),
            ("gpu-generic", row(0.0, Some(15.0))),
        ];
        let (lines, wrong) = table.lines(16);
        assert_eq!(wrong, 1);
        let plain = &lines[3];
        assert!(plain.contains("needs a GPU needs a GPU  ok"), "{plain}");
        assert!(
            !lines[2..]
                .iter()
                .any(|l| l.contains("225.0") || l.contains("0.9")),
            "{lines:?}"
        );
        assert!(
            lines[4].contains("WRONG: 15, expected 16"),
            "{:?}",
            lines[4]
        );
        table.timed = true;
        let (lines, _) = table.lines(16);
        assert!(lines[3].contains("0.9       225.0  ok"), "{:?}", lines[3]);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}
