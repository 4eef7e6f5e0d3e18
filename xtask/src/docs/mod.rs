//! `cargo xtask docs`: the READMEs' tables of figures, generated from the recorded runs in
//! `docs/*.csv`, so that a number appears once, in the run that measured it.
//!
//! A README asks for a table with a comment, and the table follows it up to `end table`:
//!
//! ```text
//! <!-- table: docs/bench-h100.csv; lab=lab01,lab02; size=4096; columns=lab,size,compute_ms -->
//! | lab | size | compute ms |
//! ...
//! <!-- end table -->
//! ```
//!
//! `FILE; COLUMN=VALUE,VALUE; ...; columns=A,B`: the rows of FILE whose COLUMN holds one of
//! the VALUEs (every such filter must hold), in the file's order, showing columns A and B.
//! `cargo xtask docs` rewrites every such table; `--check` only says which are out of date
//! (the test suite runs it, so a CSV and its READMEs cannot drift apart). Each recorded
//! profile, `docs/profile-NAME.csv` (`cargo xtask profile --save`), is drawn the same way as
//! a roofline chart, `docs/roofline-NAME.svg`; and lab06's counts on the CPU device,
//! `docs/lab06-profile-NAME.json`, as a bar chart, `docs/lab06-counts-NAME.svg`.

mod abstractions;
mod roofline;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::bins::workspace_root;
use crate::format::ms;
use crate::recorded::{is_numeric, records};

#[derive(clap::Args)]
pub struct Args {
    /// Only check that every table is up to date; change nothing
    #[arg(long)]
    check: bool,
}

const OPEN: &str = "<!-- table: ";
const CLOSE: &str = "<!-- end table -->";

pub fn run(args: Args) -> Result<()> {
    let root = workspace_root();
    // Every README is regenerated in memory first: one bad CSV changes no file at all.
    let mut changed = Vec::new();
    for readme in readmes(&root)? {
        let text = fs::read_to_string(&readme)
            .with_context(|| format!("cannot read {}", readme.display()))?;
        let generated =
            regenerate(&root, &text).with_context(|| format!("in {}", readme.display()))?;
        if generated != text {
            changed.push((readme, generated));
        }
    }
    for (chart, generated) in charts(&root)? {
        if fs::read_to_string(&chart).ok().as_ref() != Some(&generated) {
            changed.push((chart, generated));
        }
    }
    if args.check {
        if !changed.is_empty() {
            let stale: Vec<String> = changed
                .iter()
                .map(|(readme, _)| {
                    readme
                        .strip_prefix(&root)
                        .unwrap_or(readme)
                        .display()
                        .to_string()
                })
                .collect();
            bail!(
                "out of date with docs/*.csv: {}; run `cargo xtask docs`",
                stale.join(", ")
            );
        }
        return Ok(());
    }
    for (readme, generated) in changed {
        shared::output::write_file(&readme, generated.as_bytes())?;
        shared::cli::eprint_line(&format!("xtask: updated {}", readme.display()));
    }
    Ok(())
}

/// README.md at the top and in each folder below it.
fn readmes(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = vec![root.join("README.md")];
    let entries = fs::read_dir(root).with_context(|| format!("cannot list {}", root.display()))?;
    for entry in entries {
        let readme = entry
            .context("cannot list the workspace")?
            .path()
            .join("README.md");
        if readme.is_file() {
            found.push(readme);
        }
    }
    found.sort();
    Ok(found)
}

/// Each recorded profile's chart: its roofline, `docs/roofline-NAME.svg`, for
/// `docs/profile-NAME.csv`; lab06's counts, `docs/lab06-counts-NAME.svg`, for
/// `docs/lab06-profile-NAME.json`.
fn charts(root: &Path) -> Result<Vec<(PathBuf, String)>> {
    let docs = root.join("docs");
    let entries = fs::read_dir(&docs).with_context(|| format!("cannot list {}", docs.display()))?;
    let mut charts = Vec::new();
    for entry in entries {
        let name = entry
            .context("cannot list docs/")?
            .file_name()
            .to_string_lossy()
            .into_owned();
        let file = format!("docs/{name}");
        let read =
            || fs::read_to_string(docs.join(&name)).with_context(|| format!("cannot read {file}"));
        if let Some(stem) = name
            .strip_prefix("profile-")
            .and_then(|n| n.strip_suffix(".csv"))
        {
            let chart = roofline::svg(&roofline::inputs(&file, &read()?)?)?;
            charts.push((docs.join(format!("roofline-{stem}.svg")), chart));
        } else if let Some(stem) = name
            .strip_prefix("lab06-profile-")
            .and_then(|n| n.strip_suffix(".json"))
        {
            let chart = abstractions::svg(&abstractions::inputs(&file, &read()?)?)?;
            charts.push((docs.join(format!("lab06-counts-{stem}.svg")), chart));
        }
    }
    charts.sort();
    Ok(charts)
}

/// `text` with every table regenerated from its CSV (files relative to `root`).
fn regenerate(root: &Path, text: &str) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        out.push_str(line);
        let Some(spec) = line.trim().strip_prefix(OPEN) else {
            continue;
        };
        let spec = spec
            .strip_suffix("-->")
            .with_context(|| format!("`{}` does not end with -->", line.trim()))?;
        let request = Request::parse(spec)?;
        let csv = fs::read_to_string(root.join(&request.file))
            .with_context(|| format!("cannot read {}", request.file))?;
        out.push_str(&request.table(&csv)?);
        // Skip the old table, up to and including its end marker.
        if !lines.any(|old| old.trim() == CLOSE) {
            bail!("the table from {} has no `{CLOSE}`", request.file);
        }
        out.push_str(CLOSE);
        out.push('\n');
    }
    Ok(out)
}

/// One table's comment: the file, the filters, the columns.
#[derive(Debug, PartialEq)]
struct Request {
    file: String,
    filters: Vec<(String, Vec<String>)>,
    columns: Vec<String>,
}

impl Request {
    fn parse(spec: &str) -> Result<Request> {
        let mut parts = spec.split(';').map(str::trim);
        let file = parts.next().unwrap_or_default().to_string();
        let mut filters = Vec::new();
        let mut columns = Vec::new();
        for part in parts.filter(|p| !p.is_empty()) {
            let (key, values) = part
                .split_once('=')
                .with_context(|| format!("`{part}` is not COLUMN=VALUE,VALUE"))?;
            let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
            if key == "columns" {
                columns = values;
            } else {
                filters.push((key.to_string(), values));
            }
        }
        if file.is_empty() || columns.is_empty() {
            bail!("`{spec}` needs a file and columns=...");
        }
        Ok(Request {
            file,
            filters,
            columns,
        })
    }

    /// The Markdown table, and a line naming its source.
    fn table(&self, csv: &str) -> Result<String> {
        let mut records = records(&self.file, csv)?.into_iter();
        let header = records.next().unwrap_or_default();
        let index = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .with_context(|| format!("{} has no column {name}", self.file))
        };
        let filters = self
            .filters
            .iter()
            .map(|(key, values)| Ok((index(key)?, values)))
            .collect::<Result<Vec<_>>>()?;
        let shown = self
            .columns
            .iter()
            .map(|c| index(c))
            .collect::<Result<Vec<_>>>()?;
        let numeric: Vec<bool> = self.columns.iter().map(|c| is_numeric(c)).collect();

        let mut table = format!(
            "| {} |\n|{}|\n",
            self.columns
                .iter()
                .map(|c| heading(c))
                .collect::<Vec<_>>()
                .join(" | "),
            numeric
                .iter()
                .map(|&n| if n { "---:" } else { "---" })
                .collect::<Vec<_>>()
                .join("|")
        );
        let mut rows = 0;
        for cells in records {
            let wanted = filters.iter().all(|(i, values)| {
                cells
                    .get(*i)
                    .is_some_and(|cell| values.iter().any(|v| v == cell))
            });
            if !wanted {
                continue;
            }
            let shown: Vec<String> = shown
                .iter()
                .zip(&self.columns)
                .map(|(&i, name)| cell(name, cells.get(i).map_or("", String::as_str)))
                .collect();
            table += &format!("| {} |\n", shown.join(" | "));
            rows += 1;
        }
        if rows == 0 {
            bail!("no row of {} matches {:?}", self.file, self.filters);
        }
        table += &format!(
            "\nFrom `{}` (generated by `cargo xtask docs`).\n",
            self.file
        );
        Ok(table)
    }
}

/// A column's heading: `compute_ms` as "compute ms", `speedup_vs_lab01` as "vs lab01",
/// `dram_pct_of_peak` as "DRAM % of peak".
fn heading(column: &str) -> String {
    column
        .strip_prefix("speedup_")
        .unwrap_or(column)
        .split('_')
        .map(|word| match word {
            "pct" => "%",
            "us" => "µs",
            "gbps" => "GB/s",
            "gflops" => "GFLOP/s",
            "ghz" => "GHz",
            "fp64" => "FP64",
            "fp32" => "FP32",
            "fma" => "FMA",
            "dram" => "DRAM",
            "l2" => "L2",
            "s" => "second",
            other => other,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A cell as a person reads it: milliseconds to about three figures, speedups as `12.3x`,
/// large counts in scientific notation; an empty cell as `-`.
fn cell(column: &str, value: &str) -> String {
    let Ok(number) = value.parse::<f64>() else {
        return if value.is_empty() {
            "-".to_string()
        } else {
            value.to_string()
        };
    };
    if column.starts_with("speedup_") && number < 1.0 {
        format!("{number:.2}x")
    } else if column.starts_with("speedup_") {
        format!("{number:.1}x")
    } else if number.abs() >= 1e6 {
        format!("{number:.2e}")
    } else if column.ends_with("_ms") || column == "median" {
        ms(number)
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "lab,size,compute_ms,speedup_vs_lab01\nlab01,512,11.128,1.000\nlab02,512,1.754,6.344\nlab01,4096,584.0,1.000\n";

    #[test]
    fn a_table_shows_the_rows_and_columns_asked_for() {
        let request = Request::parse(
            " docs/x.csv; lab=lab02,lab01; size=512; columns=lab,compute_ms,speedup_vs_lab01 ",
        )
        .unwrap();
        let table = request.table(CSV).unwrap();
        assert_eq!(
            table,
            "| lab | compute ms | vs lab01 |\n|---|---:|---:|\n| lab01 | 11.1 | 1.0x |\n| lab02 | 1.75 | 6.3x |\n\nFrom `docs/x.csv` (generated by `cargo xtask docs`).\n"
        );
    }

    #[test]
    fn a_stale_table_is_replaced_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("docs")).unwrap();
        fs::write(dir.path().join("docs/x.csv"), CSV).unwrap();
        let text = "intro\n<!-- table: docs/x.csv; size=4096; columns=lab,compute_ms -->\n| old |\n<!-- end table -->\nafter\n";
        let out = regenerate(dir.path(), text).unwrap();
        assert_eq!(
            out,
            "intro\n<!-- table: docs/x.csv; size=4096; columns=lab,compute_ms -->\n| lab | compute ms |\n|---|---:|\n| lab01 | 584 |\n\nFrom `docs/x.csv` (generated by `cargo xtask docs`).\n<!-- end table -->\nafter\n"
        );
        assert_eq!(regenerate(dir.path(), &out).unwrap(), out, "stable");
    }

    #[test]
    fn malformed_csv_files_are_refused_with_their_line() {
        let request = Request::parse("docs/x.csv; columns=lab,compute_ms").unwrap();
        for (csv, said) in [
            (
                "lab,compute_ms\nlab01\n",
                "docs/x.csv line 2: 1 fields, the header has 2",
            ),
            (
                "lab,compute_ms\n\"lab01,5\n",
                "docs/x.csv line 2: a quote is not closed",
            ),
            ("lab,compute_ms\nlab|01,5\n", "holds a `|`"),
            (
                "lab,compute_ms\nlab01,NaN\n",
                "docs/x.csv line 2: compute_ms is `NaN`, not a finite number",
            ),
            ("lab,compute_ms\nlab01,inf\n", "compute_ms is `inf`"),
        ] {
            let error = format!("{:#}", request.table(csv).unwrap_err());
            assert!(error.contains(said), "{csv:?}: {error}");
        }
    }

    #[test]
    fn headings_read_as_words() {
        assert_eq!(heading("compute_ms"), "compute ms");
        assert_eq!(heading("speedup_vs_lab02_best_CPU"), "vs lab02 best CPU");
        assert_eq!(heading("dram_pct_of_peak"), "DRAM % of peak");
        assert_eq!(heading("fp64_gflops"), "FP64 GFLOP/s");
        assert_eq!(heading("atomics_per_s"), "atomics per second");
        assert!(is_numeric("time_us") && is_numeric("lab01_loop_bodies"));
        assert!(!is_numeric("kernel") && !is_numeric("top_stalls"));
    }

    #[test]
    fn bad_requests_are_errors() {
        assert!(
            Request::parse("docs/x.csv; lab=lab01").is_err(),
            "no columns"
        );
        let request = Request::parse("docs/x.csv; columns=lab,nope").unwrap();
        assert!(request.table(CSV).is_err(), "unknown column");
        let request = Request::parse("docs/x.csv; lab=lab09; columns=lab").unwrap();
        assert!(request.table(CSV).is_err(), "no row");
    }

    #[test]
    fn each_recorded_profile_is_drawn_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("docs")).unwrap();
        fs::write(dir.path().join("docs/x.csv"), CSV).unwrap();
        assert!(charts(dir.path()).unwrap().is_empty());
        let profile = "lab,kernel,device,fp64_ops,fp32_ops,time_us,dram_bytes,fp64_peak_gflops_no_fma,fp32_peak_gflops_fma,dram_peak_gbps\nlab04,escape_colour,H100,1e10,0,1000,8e8,16727,66908,3352\n";
        fs::write(dir.path().join("docs/profile-h100.csv"), profile).unwrap();
        let lab06 = r#"{"width": 64, "profile": [{"kernel": "reduce_virtual", "grid": [2, 1, 1], "block": [32, 1, 1], "global": {"sectors": 3}, "indirect_calls": 2, "issued": 9}]}"#;
        fs::write(dir.path().join("docs/lab06-profile-here.json"), lab06).unwrap();
        let drawn = charts(dir.path()).unwrap();
        assert_eq!(drawn.len(), 2);
        assert_eq!(drawn[0].0, dir.path().join("docs/lab06-counts-here.svg"));
        assert!(drawn[0].1.contains("reduce_virtual"));
        assert_eq!(drawn[1].0, dir.path().join("docs/roofline-h100.svg"));
        assert!(drawn[1].1.contains("lab04 escape_colour"));
        fs::write(
            dir.path().join("docs/profile-bad.csv"),
            "lab,kernel\nlab04\n",
        )
        .unwrap();
        let error = format!("{:#}", charts(dir.path()).unwrap_err());
        assert!(error.contains("docs/profile-bad.csv line 2"), "{error}");
    }

    /// Each chart is its recorded profile's figures: edit the CSV or the JSON, and this
    /// fails until `cargo xtask docs` has redrawn it.
    #[test]
    fn every_chart_is_up_to_date() {
        let root = workspace_root();
        for (chart, generated) in charts(&root).unwrap() {
            let text = fs::read_to_string(&chart).unwrap_or_default();
            assert!(
                generated == text,
                "{} is out of date: run `cargo xtask docs`",
                chart.display()
            );
        }
    }

    /// The READMEs' tables are the CSVs' figures: edit a CSV, and this fails until
    /// `cargo xtask docs` has regenerated them.
    #[test]
    fn every_readme_table_is_up_to_date() {
        let root = workspace_root();
        for readme in readmes(&root).unwrap() {
            let text = fs::read_to_string(&readme).unwrap();
            let generated = regenerate(&root, &text).unwrap();
            assert!(
                generated == text,
                "{} is out of date: run `cargo xtask docs`",
                readme.display()
            );
        }
    }
}
