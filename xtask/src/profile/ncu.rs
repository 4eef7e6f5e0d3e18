//! What ncu is asked for, and reading its answer: `ncu --csv --page raw --print-units base`.

use std::collections::BTreeMap;

use crate::csv::fields;

/// A column of the printed table: its heading and the ncu metric behind it.
pub struct Metric {
    pub heading: &'static str,
    pub name: &'static str,
}

pub const TIME: &str = "gpu__time_duration.sum";
pub const OCCUPANCY: &str = "sm__warps_active.avg.pct_of_peak_sustained_active";
pub const LANES: &str = "smsp__thread_inst_executed_per_inst_executed.ratio";

/// The printed table's columns.
pub const SHOWN: &[Metric] = &[
    Metric {
        heading: "time (us)",
        name: TIME,
    },
    Metric {
        heading: "occupancy %",
        name: OCCUPANCY,
    },
    Metric {
        heading: "SM %",
        name: "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    },
    Metric {
        heading: "FP64 pipe %",
        name: "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active",
    },
    Metric {
        heading: "L2 %",
        name: "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    },
    Metric {
        heading: "DRAM %",
        name: "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    },
    Metric {
        heading: "lanes active /32",
        name: LANES,
    },
];

/// Floating-point instructions executed by threads whose predicate was on, by kind: what a
/// kernel really computed (the roofline sections of ncu count the same).
pub fn fp_ops(kind: &str) -> String {
    format!("smsp__sass_thread_inst_executed_op_{kind}_pred_on.sum")
}
pub const FP64_KINDS: [&str; 3] = ["dadd", "dmul", "dfma"];
pub const FP32_KINDS: [&str; 3] = ["fadd", "fmul", "ffma"];

pub const DRAM_BYTES: &str = "dram__bytes.sum";
pub const L2_BYTES: &str = "lts__t_bytes.sum";
/// L2 sectors touched by reductions (`atomicAdd` whose result is unused) and by atomics
/// that return a value.
pub const L2_ATOMIC_SECTORS: [&str; 2] =
    ["lts__t_sectors_op_red.sum", "lts__t_sectors_op_atom.sum"];
pub const GRID: &str = "launch__grid_size";
pub const BLOCK: &str = "launch__block_size";

/// The machine's peaks, as ncu's own roofline sections work them out: per-cycle peaks of
/// the whole GPU times the clock measured during the kernel.
pub const SMS: &str = "device__attribute_multiprocessor_count";
pub const SM_CLOCK: &str = "sm__cycles_elapsed.avg.per_second";
/// FP64 lanes of the GPU: fused multiply-adds (or adds, or multiplies) per cycle.
pub const FP64_PER_CYCLE: &str = "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained";
pub const FP32_PER_CYCLE: &str = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained";
pub const DRAM_BYTES_PER_CYCLE: &str = "dram__bytes.sum.peak_sustained";
pub const DRAM_CLOCK: &str = "dram__cycles_elapsed.avg.per_second";

/// The stall reasons: ncu's cycles that warps spent waiting on each, per instruction sent.
const STALL_PREFIX: &str = "smsp__average_warps_issue_stalled_";
const STALL_SUFFIX: &str = "_per_issue_active.ratio";

/// Every metric asked for, as `--metrics` takes them.
pub fn metrics() -> String {
    let mut names: Vec<String> = SHOWN.iter().map(|m| m.name.to_string()).collect();
    names.extend(FP64_KINDS.iter().chain(&FP32_KINDS).map(|k| fp_ops(k)));
    names.extend(
        [
            DRAM_BYTES,
            L2_BYTES,
            GRID,
            BLOCK,
            SMS,
            SM_CLOCK,
            FP64_PER_CYCLE,
            FP32_PER_CYCLE,
            DRAM_BYTES_PER_CYCLE,
            DRAM_CLOCK,
        ]
        .iter()
        .chain(&L2_ATOMIC_SECTORS)
        .map(|m| m.to_string()),
    );
    names.push(format!("regex:^{STALL_PREFIX}.*{STALL_SUFFIX}$"));
    names.join(",")
}

/// One profiled launch: its kernel, every numeric metric in base units (seconds, bytes,
/// per second), and the three stall reasons with the most cycles, largest first.
#[derive(Debug, PartialEq)]
pub struct Launch {
    pub kernel: String,
    values: BTreeMap<String, f64>,
    pub stalls: Vec<(String, f64)>,
}

impl Launch {
    /// A metric's value in base units, if ncu gave one.
    pub fn get(&self, metric: &str) -> Option<f64> {
        self.values.get(metric).copied()
    }
}

/// The launches of `ncu --csv --page raw`: a heading line, a units line, then one line per
/// profiled launch (lines before the heading are the lab's own output and ncu's notes).
pub fn read_csv(text: &str) -> Vec<Launch> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("\"ID\""))
        // A line with a quote left open is no launch, as a line with too few fields is not.
        .filter_map(fields);
    let Some(heading) = lines.next() else {
        return Vec::new();
    };
    let Some(kernel) = heading.iter().position(|h| h == "Kernel Name") else {
        return Vec::new();
    };
    let Some(units) = lines.next() else {
        return Vec::new();
    };
    lines
        .filter(|cells| cells.len() == heading.len())
        .map(|cells| {
            let mut values = BTreeMap::new();
            let mut stalls = Vec::new();
            for (i, name) in heading.iter().enumerate() {
                let Some(value) = number(&cells[i]) else {
                    continue;
                };
                let stall = name
                    .strip_prefix(STALL_PREFIX)
                    .and_then(|n| n.strip_suffix(STALL_SUFFIX));
                match stall {
                    Some(reason) if value > 0.0 => stalls.push((reason.to_string(), value)),
                    Some(_) => {}
                    None if name.contains("__") => {
                        let unit = units.get(i).map_or("", String::as_str);
                        values.insert(name.clone(), value * scale(unit));
                    }
                    None => {}
                }
            }
            stalls.sort_by(|a, b| b.1.total_cmp(&a.1));
            stalls.truncate(3);
            Launch {
                kernel: cells[kernel].clone(),
                values,
                stalls,
            }
        })
        .collect()
}

/// `1,234.5` as ncu may print it.
fn number(text: &str) -> Option<f64> {
    text.replace(',', "").trim().parse().ok()
}

/// What one `unit` is in base units: times in seconds, `Kbyte` 1000 bytes, `Ghz` and
/// `cycle/nsecond` 1e9 per second. ncu prints base units when asked (`--print-units base`);
/// this reads the scaled ones too.
fn scale(unit: &str) -> f64 {
    let exponent = match unit.split_once('/') {
        Some((per, over)) => exponent(per) - exponent(over),
        None => exponent(unit),
    };
    10f64.powi(exponent)
}

/// The power of ten of a unit's prefix.
fn exponent(unit: &str) -> i32 {
    match unit {
        "nsecond" | "ns" => return -9,
        "usecond" | "us" => return -6,
        "msecond" | "ms" => return -3,
        _ => {}
    }
    let mut chars = unit.chars();
    let prefix = match chars.next() {
        Some('K' | 'k') => 3,
        Some('M') => 6,
        Some('G') => 9,
        Some('T') => 12,
        _ => return 0,
    };
    // A prefix only before a unit's name: `Kbyte`, `Ghz`, not a name of its own.
    if chars.next().is_some_and(char::is_lowercase) {
        prefix
    } else {
        0
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// The shape of `ncu --csv --page raw`: the lab's own lines first, a heading, units,
    /// then a line per launch. `values`: metric, unit, value.
    pub fn sample(kernel: &str, values: &[(&str, &str, &str)]) -> String {
        let mut heading = vec!["\"ID\"".to_string(), "\"Kernel Name\"".to_string()];
        let mut units = vec!["\"\"".to_string(), "\"\"".to_string()];
        let mut row = vec!["\"0\"".to_string(), format!("\"{kernel}\"")];
        for (name, unit, value) in values {
            heading.push(format!("\"{name}\""));
            units.push(format!("\"{unit}\""));
            row.push(format!("\"{value}\""));
        }
        format!(
            "lab04: 4096x4096 ...\n==PROF== Disconnected\n{}\n{}\n{}\n",
            heading.join(","),
            units.join(","),
            row.join(",")
        )
    }

    #[test]
    fn each_profiled_launch_is_a_row_with_its_top_stalls() {
        let wait = format!("{STALL_PREFIX}wait{STALL_SUFFIX}");
        let scoreboard = format!("{STALL_PREFIX}long_scoreboard{STALL_SUFFIX}");
        let barrier = format!("{STALL_PREFIX}barrier{STALL_SUFFIX}");
        let launches = read_csv(&sample(
            "escape_colour",
            &[
                (TIME, "nsecond", "1,234,000"),
                (OCCUPANCY, "%", "61.25"),
                (&wait, "", "0.5"),
                (&scoreboard, "", "4.25"),
                (&barrier, "", "0"),
            ],
        ));
        assert_eq!(launches.len(), 1);
        let launch = &launches[0];
        assert_eq!(launch.kernel, "escape_colour");
        assert_eq!(launch.get(TIME), Some(1.234e-3), "seconds");
        assert_eq!(launch.get(OCCUPANCY), Some(61.25));
        assert_eq!(launch.get(DRAM_BYTES), None);
        assert_eq!(
            launch.stalls,
            vec![
                ("long_scoreboard".to_string(), 4.25),
                ("wait".to_string(), 0.5)
            ]
        );
    }

    #[test]
    fn units_are_read_into_base_units() {
        for (unit, base) in [
            ("byte", 1.0),
            ("Kbyte", 1e3),
            ("Gbyte", 1e9),
            ("usecond", 1e-6),
            ("second", 1.0),
            ("cycle/second", 1.0),
            ("cycle/nsecond", 1e9),
            ("Ghz", 1e9),
            ("Gbyte/second", 1e9),
            ("%", 1.0),
            ("inst", 1.0),
            ("SM", 1.0),
            ("", 1.0),
        ] {
            assert_eq!(scale(unit), base, "{unit}");
        }
    }

    #[test]
    fn no_heading_is_no_row() {
        assert!(read_csv("==ERROR== the lab failed\n").is_empty());
    }

    #[test]
    fn numbers_keep_their_thousands_separators() {
        assert_eq!(number("1,234.5"), Some(1234.5));
    }

    #[test]
    fn every_metric_is_asked_for_once() {
        let metrics = metrics();
        let names: Vec<&str> = metrics.split(',').collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{metrics}");
        assert!(names.contains(&"smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"));
    }
}
