//! The figures `profile --save` writes: one CSV row per profiled launch, its measurements
//! and what follows from them, beside the peaks of the machine they are shares of.
//!
//! Operations: a fused multiply-add counts two. Peaks, from the same launch: FP64 without
//! FMA is one add or multiply per FP64 lane per cycle (ncu's FP64 lanes per cycle times the
//! SM clock measured during the kernel), FP32 with FMA two per FP32 lane per cycle, DRAM the
//! bytes per cycle times the DRAM clock. Atomics are the L2 sectors touched by reductions and
//! atomics: with scattered addresses, about one per thread's `atomicAdd`.

use super::ncu::{self, Launch};
use crate::recorded::PROFILE_COLUMNS as COLUMNS;

/// What a row is made from besides the launch.
pub struct Context<'a> {
    pub lab: &'a str,
    pub args: &'a str,
    pub device: &'a str,
    /// lab01's loop bodies for the same image, where the lab renders one.
    pub lab01_bodies: Option<u64>,
}

/// One launch's row, in [`COLUMNS`] order; a figure ncu did not give is an empty cell.
pub fn row(launch: &Launch, context: &Context) -> Vec<String> {
    let get = |metric: &str| launch.get(metric);
    let sum = |metrics: &[String]| -> Option<f64> {
        let mut total = 0.0;
        for metric in metrics {
            let factor = if metric.contains("fma") { 2.0 } else { 1.0 };
            total += factor * get(metric)?;
        }
        Some(total)
    };
    let fp64_ops = sum(&ncu::FP64_KINDS.map(ncu::fp_ops));
    let fp32_ops = sum(&ncu::FP32_KINDS.map(ncu::fp_ops));
    let time = get(ncu::TIME).filter(|&t| t > 0.0);
    let per_second = |x: Option<f64>| Some(x? / time?);
    let ratio = |x: Option<f64>, y: Option<f64>| y.filter(|&y| y > 0.0).and_then(|y| Some(x? / y));
    let product = |x: Option<f64>, y: Option<f64>| Some(x? * y?);
    let clock = get(ncu::SM_CLOCK);
    let fp64_peak = product(get(ncu::FP64_PER_CYCLE), clock);
    let fp32_peak = product(get(ncu::FP32_PER_CYCLE), clock).map(|p| 2.0 * p);
    let dram_peak = product(get(ncu::DRAM_BYTES_PER_CYCLE), get(ncu::DRAM_CLOCK));
    let dram = get(ncu::DRAM_BYTES);
    let atomics = ncu::L2_ATOMIC_SECTORS
        .iter()
        .map(|m| get(m))
        .sum::<Option<f64>>();
    let flops = fp64_ops.zip(fp32_ops).map(|(d, f)| d + f);
    let bodies = context.lab01_bodies.map(|b| b as f64);
    let launch_shape = match (get(ncu::GRID), get(ncu::BLOCK)) {
        (Some(grid), Some(block)) => format!("{grid} x {block}"),
        _ => String::new(),
    };
    let stalls: Vec<String> = launch
        .stalls
        .iter()
        .map(|(reason, cycles)| format!("{reason} {cycles:.1}"))
        .collect();

    let giga = |x: Option<f64>| x.map(|x| x / 1e9);
    let percent = |x: Option<f64>, peak: Option<f64>| ratio(x, peak).map(|r| 100.0 * r);
    let mut cells = vec![
        context.lab.to_string(),
        context.args.to_string(),
        launch.kernel.clone(),
        launch_shape,
    ];
    cells.extend(
        [
            time.map(|t| t * 1e6),
            get(ncu::OCCUPANCY),
            get(ncu::LANES),
            fp64_ops,
            fp32_ops,
            giga(per_second(fp64_ops)),
            giga(per_second(fp32_ops)),
            percent(per_second(fp64_ops), fp64_peak),
            dram,
            giga(per_second(dram)),
            percent(per_second(dram), dram_peak),
            get(ncu::L2_BYTES),
            giga(per_second(get(ncu::L2_BYTES))),
            atomics,
            per_second(atomics),
            ratio(flops, dram),
            bodies,
            per_second(bodies),
        ]
        .map(figure),
    );
    cells.push(stalls.join(", "));
    cells.push(context.device.to_string());
    cells.extend(
        [
            get(ncu::SMS),
            giga(clock),
            giga(fp64_peak),
            giga(fp32_peak),
            giga(dram_peak),
        ]
        .map(figure),
    );
    cells
}

/// A figure to four significant digits (in scientific notation from a million up), as the
/// READMEs show it; none is an empty cell.
pub fn figure(x: Option<f64>) -> String {
    let Some(x) = x.filter(|x| x.is_finite()) else {
        return String::new();
    };
    if x == 0.0 {
        return "0".to_string();
    }
    if x.abs() >= 1e6 {
        return format!("{x:.3e}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{x:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// The CSV file: a heading line, then one line per row; a cell with a comma is quoted.
pub fn csv(rows: &[Vec<String>]) -> String {
    let line = |cells: &[String]| {
        let quoted: Vec<String> = cells
            .iter()
            .map(|c| {
                if c.contains(',') {
                    format!("\"{c}\"")
                } else {
                    c.clone()
                }
            })
            .collect();
        quoted.join(",") + "\n"
    };
    let heading: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
    std::iter::once(&heading)
        .chain(rows)
        .map(|r| line(r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ncu::tests::sample;
    use crate::profile::ncu::{read_csv, FP32_PER_CYCLE};

    fn column(row: &[String], name: &str) -> String {
        row[COLUMNS.iter().position(|c| *c == name).expect(name)].clone()
    }

    /// An H100-like launch: 1 ms, 1e9 DFMA and 1e9 DADD (3e9 operations), 1 GB from DRAM.
    fn launch() -> Launch {
        let fma = ncu::fp_ops("dfma");
        let add = ncu::fp_ops("dadd");
        let mul = ncu::fp_ops("dmul");
        let mut launches = read_csv(&sample(
            "escape_colour",
            &[
                (ncu::TIME, "nsecond", "1000000"),
                (&fma, "inst", "1000000000"),
                (&add, "inst", "1000000000"),
                (&mul, "inst", "0"),
                (ncu::DRAM_BYTES, "Gbyte", "1"),
                (ncu::SMS, "SM", "132"),
                (ncu::SM_CLOCK, "cycle/second", "1980000000"),
                (ncu::FP64_PER_CYCLE, "inst/cycle", "8448"),
                (FP32_PER_CYCLE, "inst/cycle", "16896"),
                (ncu::DRAM_BYTES_PER_CYCLE, "byte/cycle", "2048"),
                (ncu::DRAM_CLOCK, "cycle/second", "1593000000"),
                (ncu::GRID, "", "1056"),
                (ncu::BLOCK, "", "256"),
            ],
        ));
        launches.remove(0)
    }

    #[test]
    fn the_figures_follow_from_the_launch_and_the_peaks() {
        let row = row(
            &launch(),
            &Context {
                lab: "lab04",
                args: "16384 16384",
                device: "NVIDIA H100 80GB HBM3",
                lab01_bodies: Some(2_302_000_000),
            },
        );
        assert_eq!(row.len(), COLUMNS.len());
        for (name, value) in [
            ("lab", "lab04"),
            ("launch", "1056 x 256"),
            ("time_us", "1000"),
            ("fp64_ops", "3.000e9"),
            ("fp32_ops", ""),
            ("fp64_gflops", "3000"),
            // 132 SMs x 64 lanes x 1.98 GHz = 16727 GFLOP/s.
            ("fp64_peak_gflops_no_fma", "16727"),
            ("fp64_pct_of_peak_no_fma", "17.94"),
            ("fp32_peak_gflops_fma", "66908"),
            ("dram_gbps", "1000"),
            ("dram_peak_gbps", "3262"),
            ("dram_pct_of_peak", "30.65"),
            ("ops_per_dram_byte", ""),
            ("lab01_bodies_per_s", "2.302e12"),
            ("sm_clock_ghz", "1.98"),
            ("sms", "132"),
            ("atomics_per_s", ""),
        ] {
            assert_eq!(column(&row, name), value, "{name}");
        }
    }

    #[test]
    fn figures_keep_four_digits() {
        assert_eq!(figure(Some(47.126)), "47.13");
        assert_eq!(figure(Some(2912.4)), "2912");
        assert_eq!(figure(Some(0.96345)), "0.9635");
        assert_eq!(figure(Some(86.5)), "86.5");
        assert_eq!(figure(Some(132.0)), "132");
        assert_eq!(figure(Some(2_302_123_456.0)), "2.302e9");
        assert_eq!(figure(Some(0.0)), "0");
        assert_eq!(figure(None), "");
        assert_eq!(figure(Some(f64::NAN)), "");
    }

    #[test]
    fn a_cell_with_a_comma_is_quoted() {
        let mut row = vec![String::new(); COLUMNS.len()];
        row[0] = "lab06".to_string();
        row[1] = "wait 1.0, barrier 0.5".to_string();
        let text = csv(&[row]);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(COLUMNS.join(",").as_str()));
        assert!(lines
            .next()
            .is_some_and(|l| l.starts_with("lab06,\"wait 1.0, barrier 0.5\",")));
    }
}
