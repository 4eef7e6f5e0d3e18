//! The recorded runs in `docs/*.csv` (`bench --save`, `profile --save`), read and checked
//! once for every table and chart `docs` draws from them.

use anyhow::{bail, Context, Result};

use crate::csv::fields;

/// The columns of the CSV `profile --save` writes, in order: what `docs` draws a roofline
/// from.
pub const PROFILE_COLUMNS: &[&str] = &[
    "lab",
    "args",
    "kernel",
    "launch",
    "time_us",
    "occupancy_pct",
    "lanes_active",
    "fp64_ops",
    "fp32_ops",
    "fp64_gflops",
    "fp32_gflops",
    "fp64_pct_of_peak_no_fma",
    "dram_bytes",
    "dram_gbps",
    "dram_pct_of_peak",
    "l2_bytes",
    "l2_gbps",
    "atomic_sectors",
    "atomics_per_s",
    "ops_per_dram_byte",
    "lab01_loop_bodies",
    "lab01_bodies_per_s",
    "top_stalls",
    "device",
    "sms",
    "sm_clock_ghz",
    "fp64_peak_gflops_no_fma",
    "fp32_peak_gflops_fma",
    "dram_peak_gbps",
];

/// Every record of a CSV file, checked: each has the header's number of fields, quotes are
/// balanced, no cell holds `|` (it would split a Markdown cell), and the numeric columns hold
/// finite numbers or nothing. An error names the file, the line and what is wrong.
pub fn records(file: &str, csv: &str) -> Result<Vec<Vec<String>>> {
    let mut records: Vec<Vec<String>> = Vec::new();
    for (index, line) in csv.lines().enumerate() {
        let at = || format!("{file} line {}", index + 1);
        let cells = fields(line).with_context(|| format!("{}: a quote is not closed", at()))?;
        if let Some(header) = records.first() {
            if cells.len() != header.len() {
                bail!(
                    "{}: {} fields, the header has {}",
                    at(),
                    cells.len(),
                    header.len()
                );
            }
            for (name, cell) in header.iter().zip(&cells) {
                if is_numeric(name)
                    && !cell.is_empty()
                    && !cell.parse::<f64>().is_ok_and(f64::is_finite)
                {
                    bail!("{}: {name} is `{cell}`, not a finite number", at());
                }
            }
        }
        if let Some(cell) = cells.iter().find(|c| c.contains('|')) {
            bail!(
                "{}: `{cell}` holds a `|`, which would break the Markdown table",
                at()
            );
        }
        records.push(cells);
    }
    if records.is_empty() {
        bail!("{file} is empty");
    }
    Ok(records)
}

/// The columns of figures: right-aligned, and checked to hold numbers.
pub fn is_numeric(column: &str) -> bool {
    const FIGURES: &[&str] = &[
        "_ms",
        "_us",
        "_pct",
        "_gbps",
        "_gflops",
        "_ghz",
        "_ops",
        "_bytes",
        "_bodies",
        "_per_s",
        "_sectors",
        "_active",
        "_fma",
        "_of_peak",
        "_per_dram_byte",
    ];
    FIGURES.iter().any(|s| column.ends_with(s))
        || column.starts_with("speedup_")
        || column == "median"
}
