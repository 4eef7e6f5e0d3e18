//! The medians as text: the Markdown table (stdout and bench.md), bench.csv and extras.csv.

use shared::timing::Phase;

use super::{Extra, Row};
use crate::format::ms;
use crate::labs::{self, Program, Work};

/// Phases in the order work happens; `total` has a column of its own.
const PHASES: [Phase; 9] = [
    Phase::Context,
    Phase::Compile,
    Phase::Allocate,
    Phase::Compute,
    Phase::Colour,
    Phase::Kernel,
    Phase::CopyBack,
    Phase::Write,
    Phase::CopyAndWrite,
];

/// What speedups are measured against: every CPU variant of a Mandelbrot lab that was timed
/// (lab01, the program as given; lab02, and lab02's best CPU where it is a variant: the fair
/// comparison for the GPU labs).
fn baselines(rows: &[Row]) -> Vec<&'static str> {
    labs::programs(Work::Mandelbrot)
        .filter(|program| !program.gpu())
        .map(|program| program.label())
        .filter(|label| rows.iter().any(|row| row.lab == *label))
        .collect()
}

/// How many times faster `row` is than `baseline` at the same size, by wall time.
pub fn speedup(rows: &[Row], row: &Row, baseline: &str) -> Option<f64> {
    rows.iter()
        .find(|other| other.lab == baseline && other.size == row.size)
        .map(|base| base.wall_ms / row.wall_ms)
}

/// The phases any row reports, `total` aside, in the order work happens; unknown ones after.
fn phase_columns(rows: &[Row]) -> Vec<String> {
    let mut columns: Vec<String> = rows
        .iter()
        .flat_map(|row| row.phases.keys().cloned())
        .filter(|phase| phase != Phase::Total.name())
        .collect();
    columns.sort_by_key(|phase| {
        let known = PHASES.iter().position(|p| p.name() == phase);
        (known.unwrap_or(PHASES.len()), phase.clone())
    });
    columns.dedup();
    columns
}

pub fn markdown(rows: &[Row], extras: &[Extra], notes: &[String], runs: u32) -> String {
    let mut md = String::new();
    if !rows.is_empty() {
        md += &mandelbrot_table(rows, runs);
    }
    if !extras.is_empty() {
        md += &format!("\n## Other labs: median of {runs} run(s)\n\n| lab | metric | median |\n|---|---|---:|\n");
        for extra in extras {
            md += &format!(
                "| {} | {} | {} |\n",
                extra.lab,
                extra.metric,
                number(extra.median)
            );
        }
    }
    if !notes.is_empty() {
        md += "\nNot timed:\n\n";
        for note in notes {
            md += &format!("- {note}\n");
        }
    }
    md
}

fn mandelbrot_table(rows: &[Row], runs: u32) -> String {
    let phases = phase_columns(rows);
    let mut md = format!("## Mandelbrot labs: median of {runs} run(s), milliseconds\n\n");
    md += &devices_line(rows);
    md += "`total` is the lab's own clock; `wall` is the whole process, spawn to exit; \
           speedups compare `wall` at the same size.\n";
    md += &variants_line(rows, labs::programs(Work::Mandelbrot));
    md += "\n";
    let mut header = vec!["lab".to_string(), "size".to_string()];
    header.extend(phases.iter().cloned());
    header.extend(["total", "wall"].map(String::from));
    let bases = baselines(rows);
    header.extend(bases.iter().map(|base| format!("vs {base}")));
    md += &format!("| {} |\n", header.join(" | "));
    md += &format!("|---|{}\n", "---:|".repeat(header.len() - 1));
    for row in rows {
        let mut cells = vec![row.lab.clone(), row.size.to_string()];
        for phase in phases.iter().map(String::as_str).chain(["total"]) {
            cells.push(row.phases.get(phase).map_or("-".to_string(), |&v| ms(v)));
        }
        cells.push(ms(row.wall_ms));
        for &base in &bases {
            let times = speedup(rows, row, base);
            cells.push(times.map_or("-".to_string(), |x| format!("{x:.2}x")));
        }
        md += &format!("| {} |\n", cells.join(" | "));
    }
    md
}

/// "Devices: CPU, 2 threads (lab01, lab02); NVIDIA H100 (lab03, lab04)."
fn devices_line(rows: &[Row]) -> String {
    let mut devices: Vec<(String, Vec<String>)> = Vec::new();
    for row in rows {
        match devices.iter_mut().find(|(device, _)| *device == row.device) {
            Some((_, labs)) if labs.contains(&row.lab) => {}
            Some((_, labs)) => labs.push(row.lab.clone()),
            None => devices.push((row.device.clone(), vec![row.lab.clone()])),
        }
    }
    let parts: Vec<String> = devices
        .iter()
        .map(|(device, labs)| format!("{device} ({})", labs.join(", ")))
        .collect();
    format!("Devices: {}.\n\n", parts.join("; "))
}

/// The flags behind each variant timed that has any: "lab02 best CPU is `lab02 --simd
/// --shortcuts`."
fn variants_line(rows: &[Row], programs: impl Iterator<Item = Program>) -> String {
    let described: Vec<String> = programs
        .filter(|program| !program.variant.flags.is_empty())
        .filter(|program| rows.iter().any(|row| row.lab == program.label()))
        .map(|program| {
            let flags = program.variant.flags.join(" ");
            format!("{} is `{} {flags}`", program.label(), program.lab.name)
        })
        .collect();
    if described.is_empty() {
        String::new()
    } else {
        format!("{}.\n", described.join("; "))
    }
}

/// A metric's median, without a float's noise.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value:.4}")
    }
}

/// One row per variant and size: `lab,size,device,runs,<phase>_ms...,total_ms,wall_ms,
/// speedup_vs_<baseline>...` (for the baselines timed); a phase a lab does not have is left
/// empty.
pub fn csv(rows: &[Row]) -> String {
    let phases = phase_columns(rows);
    let mut header: Vec<String> = ["lab", "size", "device", "runs"].map(String::from).to_vec();
    header.extend(phases.iter().map(|phase| format!("{phase}_ms")));
    header.extend(["total_ms", "wall_ms"].map(String::from));
    let bases = baselines(rows);
    header.extend(
        bases
            .iter()
            .map(|base| csv_field(&format!("speedup_vs_{}", base.replace(' ', "_")))),
    );
    let mut text = header.join(",") + "\n";
    for row in rows {
        let mut fields = vec![
            csv_field(&row.lab),
            row.size.to_string(),
            csv_field(&row.device),
            row.runs.to_string(),
        ];
        for phase in phases.iter().map(String::as_str).chain(["total"]) {
            fields.push(
                row.phases
                    .get(phase)
                    .map_or(String::new(), |v| format!("{v:.3}")),
            );
        }
        fields.push(format!("{:.3}", row.wall_ms));
        for &base in &bases {
            let times = speedup(rows, row, base);
            fields.push(times.map_or(String::new(), |x| format!("{x:.3}")));
        }
        text += &(fields.join(",") + "\n");
    }
    text
}

pub fn extras_csv(extras: &[Extra]) -> String {
    let mut text = "lab,metric,median\n".to_string();
    for extra in extras {
        text += &format!(
            "{},{},{}\n",
            csv_field(&extra.lab),
            csv_field(&extra.metric),
            extra.median
        );
    }
    text
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180); device
/// names such as "CPU, 16 threads" do.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(lab: &str, size: u32, wall_ms: f64, phases: &[(&str, f64)]) -> Row {
        Row {
            lab: lab.to_string(),
            size,
            device: "CPU, 2 threads".to_string(),
            runs: 3,
            phases: phases.iter().map(|&(p, ms)| (p.to_string(), ms)).collect(),
            wall_ms,
        }
    }

    #[test]
    fn speedup_compares_wall_time_at_the_same_size() {
        let rows = [
            row("lab01", 512, 100.0, &[]),
            row("lab01", 1024, 400.0, &[]),
            row("lab02", 1024, 50.0, &[]),
        ];
        assert_eq!(speedup(&rows, &rows[2], "lab01"), Some(8.0));
        assert_eq!(speedup(&rows, &rows[2], "lab02"), Some(1.0));
        assert_eq!(speedup(&rows, &rows[0], "lab02"), None);
    }

    #[test]
    fn csv_quotes_only_what_needs_it() {
        assert_eq!(csv_field("lab01"), "lab01");
        assert_eq!(csv_field("CPU, 2 threads"), "\"CPU, 2 threads\"");
        assert_eq!(csv_field("a \"b\""), "\"a \"\"b\"\"\"");
    }

    #[test]
    fn csv_has_one_row_per_lab_and_size_with_phases_in_work_order() {
        let rows = [
            row(
                "lab01",
                512,
                10.0,
                &[
                    ("write", 1.0),
                    ("compute", 6.0),
                    ("colour", 2.0),
                    ("total", 9.0),
                ],
            ),
            row("lab02", 512, 5.0, &[("compute", 2.5), ("total", 4.0)]),
        ];
        let text = csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "lab,size,device,runs,compute_ms,colour_ms,write_ms,total_ms,wall_ms,speedup_vs_lab01,speedup_vs_lab02",
                "lab01,512,\"CPU, 2 threads\",3,6.000,2.000,1.000,9.000,10.000,1.000,0.500",
                "lab02,512,\"CPU, 2 threads\",3,2.500,,,4.000,5.000,2.000,1.000",
            ]
        );
    }

    #[test]
    fn every_cpu_variant_timed_is_a_baseline_and_gpu_labs_are_not() {
        let mut rows = vec![row("lab04", 512, 1.0, &[]), row("lab01", 512, 10.0, &[])];
        let cpu_variants: Vec<&str> = labs::programs(Work::Mandelbrot)
            .filter(|p| !p.gpu())
            .map(|p| p.label())
            .collect();
        assert_eq!(&cpu_variants[..2], ["lab01", "lab02"]);
        for label in &cpu_variants[1..] {
            rows.push(row(label, 512, 5.0, &[]));
        }
        assert_eq!(baselines(&rows), cpu_variants);
        let md = markdown(&rows, &[], &[], 1);
        for label in &cpu_variants {
            assert!(md.contains(&format!("vs {label} |")), "{md}");
        }
        assert!(!md.contains("vs lab04"), "{md}");
    }

    #[test]
    fn a_variant_with_flags_is_explained_under_the_table() {
        use crate::labs::{Device, Exact, Lab, Variant};
        static LAB: Lab = Lab {
            name: "lab02",
            package: "lab02-rayon",
            work: Work::Mandelbrot,
            exact: Exact::Required,
            variants: &[
                Variant {
                    label: "lab02",
                    flags: &[],
                    device: Device::Cpu,
                },
                Variant {
                    label: "lab02 fast",
                    flags: &["--fast", "--x"],
                    device: Device::Cpu,
                },
            ],
            kernels: None,
        };
        let both = [
            row("lab02", 512, 5.0, &[]),
            row("lab02 fast", 512, 1.0, &[]),
        ];
        let line = variants_line(&both, LAB.runs());
        assert_eq!(line, "lab02 fast is `lab02 --fast --x`.\n");
        assert_eq!(
            variants_line(&both[..1], LAB.runs()),
            "",
            "only variants timed"
        );
    }

    #[test]
    fn markdown_marks_missing_phases_and_speedups() {
        let rows = [
            row("lab01", 1024, 40.0, &[("colour", 2.0)]),
            row("lab02", 512, 5.0, &[("compute", 2.5), ("total", 4.0)]),
        ];
        let md = markdown(&rows, &[], &["lab03: skipped".to_string()], 3);
        let header = "| lab | size | compute | colour | total | wall | vs lab01 | vs lab02 |";
        assert!(md.contains(header), "{md}");
        assert!(md.contains("| lab02 | 512 | 2.50 | - | 4.00 | 5.00 | - | 1.00x |"));
        assert!(md.contains("- lab03: skipped"));
        let without_lab01 = markdown(&rows[1..], &[], &[], 3);
        assert!(
            !without_lab01.contains("vs lab01"),
            "a column only for a baseline timed"
        );
    }
}
