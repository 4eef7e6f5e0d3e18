//! The roofline of a recorded profile (`docs/profile-NAME.csv` to `docs/roofline-NAME.svg`,
//! written by `cargo xtask docs`): each kernel a point at its floating-point operations per
//! byte read or written in DRAM (x) and its operations per second (y), both logarithmic, under
//! the machine's roofs: DRAM bandwidth (the slope) and the FP64 peak without FMA (what the
//! bit-exact lab04 can reach), with FMA, and the FP32 peak with FMA (flat). A point's height
//! under the roof above it is the share of the machine it uses.
//!
//! A kernel with no floating-point operation (lab06's `read_peak` only loads and ORs bits)
//! has no place on these axes: its measured DRAM bandwidth is drawn as a dashed slope
//! instead, the bandwidth a real read reaches beside the specified one, and the side panel
//! says so.

use std::ops::Range;

use anyhow::{anyhow, bail, Context, Result};
use plotters::prelude::*;

use crate::format::distinct;

/// One kernel on the chart.
#[derive(Debug, PartialEq)]
pub struct Point {
    pub label: String,
    /// Floating-point operations per DRAM byte.
    pub intensity: f64,
    /// Floating-point operations per second.
    pub flops: f64,
    /// "FP64" or "FP32": which kind of operation it did more of.
    pub precision: &'static str,
}

/// What the chart is drawn from.
#[derive(Debug, PartialEq)]
pub struct Inputs {
    pub device: String,
    pub points: Vec<Point>,
    /// Kernels with no floating-point operation: label and measured DRAM bytes per second.
    pub bandwidth_only: Vec<(String, f64)>,
    /// Bytes per second.
    pub dram_peak: f64,
    /// Operations per second: FP64 without FMA, FP64 with FMA, FP32 with FMA.
    pub fp64_peak: f64,
    pub fp32_peak: f64,
}

/// The chart's inputs from the CSV `profile --save` writes. The roofs are the highest
/// peaks among its rows (each row's are worked out from the clocks during its launch).
pub fn inputs(file: &str, csv: &str) -> Result<Inputs> {
    let records = crate::recorded::records(file, csv)?;
    let (header, rows) = records
        .split_first()
        .with_context(|| format!("{file} is empty"))?;
    let index = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .with_context(|| format!("{file} has no column {name}"))
    };
    let [lab, kernel, device, fp64, fp32, time, dram, fp64_peak, fp32_peak, dram_peak] = [
        "lab",
        "kernel",
        "device",
        "fp64_ops",
        "fp32_ops",
        "time_us",
        "dram_bytes",
        "fp64_peak_gflops_no_fma",
        "fp32_peak_gflops_fma",
        "dram_peak_gbps",
    ]
    .map(index);
    let (lab, kernel, device) = (lab?, kernel?, device?);
    let [fp64, fp32, time, dram, fp64_peak, fp32_peak, dram_peak] = [
        fp64?, fp32?, time?, dram?, fp64_peak?, fp32_peak?, dram_peak?,
    ];
    let mut inputs = Inputs {
        device: String::new(),
        points: Vec::new(),
        bandwidth_only: Vec::new(),
        dram_peak: 0.0,
        fp64_peak: 0.0,
        fp32_peak: 0.0,
    };
    for (n, row) in rows.iter().enumerate() {
        let value = |i: usize, what: &str| -> Result<f64> {
            row[i]
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .with_context(|| format!("{file} line {}: {what} is `{}`", n + 2, row[i]))
        };
        let label = format!("{} {}", row[lab], row[kernel]);
        let seconds = value(time, "time_us")? * 1e-6;
        let bytes = value(dram, "dram_bytes")?;
        let (d, f) = (value(fp64, "fp64_ops")?, value(fp32, "fp32_ops")?);
        if seconds <= 0.0 || bytes <= 0.0 {
            bail!(
                "{file} line {}: {label} has no time or no DRAM bytes",
                n + 2
            );
        }
        if d + f == 0.0 {
            inputs.bandwidth_only.push((label, bytes / seconds));
        } else {
            inputs.points.push(Point {
                label,
                intensity: (d + f) / bytes,
                flops: (d + f) / seconds,
                precision: if d >= f { "FP64" } else { "FP32" },
            });
        }
        inputs.fp64_peak = inputs
            .fp64_peak
            .max(value(fp64_peak, "the FP64 peak")? * 1e9);
        inputs.fp32_peak = inputs
            .fp32_peak
            .max(value(fp32_peak, "the FP32 peak")? * 1e9);
        inputs.dram_peak = inputs
            .dram_peak
            .max(value(dram_peak, "the DRAM peak")? * 1e9);
        if inputs.device.is_empty() {
            inputs.device = row[device].clone();
        }
    }
    if inputs.points.is_empty() || inputs.fp64_peak == 0.0 || inputs.dram_peak == 0.0 {
        bail!("{file}: no kernel with floating-point operations, or no peaks");
    }
    Ok(inputs)
}

/// The chart of `inputs` as an SVG document (the same inputs give the same bytes).
pub fn svg(inputs: &Inputs) -> Result<String> {
    let mut svg = String::new();
    draw(&mut svg, inputs).map_err(|e| anyhow!("cannot draw the roofline: {e}"))?;
    Ok(svg)
}

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

fn draw(svg: &mut String, inputs: &Inputs) -> DrawResult {
    let bandwidth = inputs.dram_peak;
    let roofs = [
        (
            "FP32 with FMA",
            inputs.fp32_peak,
            RGBColor(0x99, 0x99, 0x99),
        ),
        (
            "FP64 with FMA",
            2.0 * inputs.fp64_peak,
            RGBColor(0x66, 0x66, 0x66),
        ),
        ("FP64 without FMA", inputs.fp64_peak, BLACK),
    ];
    let (x_range, y_range) = axes(inputs, roofs.map(|roof| roof.1));

    let root = SVGBackend::with_string(svg, (1080, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot, side) = root.split_horizontally(720);
    let mut chart = ChartBuilder::on(&plot)
        .caption(
            format!("Roofline: the labs' kernels on {}", inputs.device),
            ("sans-serif", 18),
        )
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x_range.clone().log_scale(), y_range.log_scale())?;
    chart
        .configure_mesh()
        .x_desc("floating-point operations per DRAM byte")
        .y_desc("floating-point operations per second")
        .x_label_formatter(&|x| short(*x))
        .y_label_formatter(&|y| short(*y))
        .draw()?;

    for (name, peak, colour) in roofs {
        let ridge = peak / bandwidth;
        let line = [
            (x_range.start, bandwidth * x_range.start),
            (ridge, peak),
            (x_range.end, peak),
        ];
        chart.draw_series(LineSeries::new(line, colour.stroke_width(2)))?;
        chart.draw_series(std::iter::once(
            EmptyElement::at((x_range.end, peak))
                + Text::new(
                    format!("{name}: {}FLOP/s", short(peak)),
                    (-190, -16),
                    ("sans-serif", 13).into_font().color(&colour),
                ),
        ))?;
    }
    for (_, measured) in &inputs.bandwidth_only {
        let ridge = inputs.fp32_peak / measured;
        chart.draw_series(DashedLineSeries::new(
            [
                (x_range.start, measured * x_range.start),
                (ridge, inputs.fp32_peak),
            ],
            6,
            4,
            BLUE.stroke_width(1),
        ))?;
    }

    let labs: Vec<&str> = distinct(inputs.points.iter().map(|p| lab_of(&p.label)));
    for (n, point) in inputs.points.iter().enumerate() {
        let colour = colour_of(&labs, point);
        // Points drawn on top of each other get their numbers side by side.
        let near = inputs.points[..n]
            .iter()
            .filter(|p| close(p.intensity, point.intensity) && close(p.flops, point.flops))
            .count() as i32;
        chart.draw_series(std::iter::once(
            EmptyElement::at((point.intensity, point.flops))
                + Circle::new((0, 0), 4, colour.filled())
                + Text::new(
                    format!("{}", n + 1),
                    (7 + 10 * near, -6),
                    ("sans-serif", 12).into_font().color(&colour),
                ),
        ))?;
    }

    let lines = legend(inputs, &labs);
    for (i, (text, colour)) in lines.iter().enumerate() {
        side.draw(&Text::new(
            text.clone(),
            (8, 40 + 18 * i as i32),
            ("sans-serif", 13).into_font().color(colour),
        ))?;
    }
    root.present()?;
    Ok(())
}

/// The side panel's lines: each kernel's number, label and figures in its lab's colour, then
/// the DRAM peak and the kernels with no floating-point operation.
fn legend(inputs: &Inputs, labs: &[&str]) -> Vec<(String, RGBColor)> {
    let mut lines: Vec<(String, RGBColor)> = vec![
        ("Kernels (one launch each, ncu):".to_string(), BLACK),
        (String::new(), BLACK),
    ];
    for (n, point) in inputs.points.iter().enumerate() {
        lines.push((
            format!("{}  {}", n + 1, point.label),
            colour_of(labs, point),
        ));
        lines.push((
            format!(
                "    {} {}FLOP/s at {} ops/byte",
                point.precision,
                short(point.flops),
                short(point.intensity)
            ),
            BLACK,
        ));
    }
    lines.push((String::new(), BLACK));
    lines.push((
        format!("DRAM peak: {}B/s (solid slope)", short(inputs.dram_peak)),
        BLACK,
    ));
    for (label, measured) in &inputs.bandwidth_only {
        lines.push((format!("{label}: no FP operation,"), BLUE));
        lines.push((
            format!(
                "    so no point; its reads: {}B/s (dashed)",
                short(*measured)
            ),
            BLUE,
        ));
    }
    lines
}

/// A point's colour: its lab's, the same in the chart and the side panel.
fn colour_of(labs: &[&str], point: &Point) -> RGBColor {
    const COLOURS: [RGBColor; 6] = [RED, BLUE, GREEN, MAGENTA, CYAN, RGBColor(0xcc, 0x88, 0x00)];
    let lab = labs
        .iter()
        .position(|l| *l == lab_of(&point.label))
        .unwrap_or(0);
    COLOURS[lab % COLOURS.len()]
}

/// The axes' ranges: every point and every ridge (where a roof meets the DRAM slope) well
/// inside, and the highest roof below the top.
fn axes(inputs: &Inputs, peaks: [f64; 3]) -> (Range<f64>, Range<f64>) {
    let bandwidth = inputs.dram_peak;
    let intensities = inputs
        .points
        .iter()
        .map(|p| p.intensity)
        .chain(peaks.iter().map(|peak| peak / bandwidth));
    let (x_low, x_high) = span(intensities);
    let flops = inputs.points.iter().map(|p| p.flops);
    let (y_low, _) = span(flops.chain([bandwidth * x_low]));
    (
        x_low / 4.0..x_high * 4.0,
        y_low / 4.0..inputs.fp32_peak * 3.0,
    )
}

/// The lowest and highest of `values`.
fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, 0.0_f64), |(low, high), v| {
        (low.min(v), high.max(v))
    })
}

/// Within a fifth of a decade of each other (on a log axis, about one point's width).
fn close(a: f64, b: f64) -> bool {
    (a.log10() - b.log10()).abs() < 0.2
}

fn lab_of(label: &str) -> &str {
    label.split(' ').next().unwrap_or(label)
}

/// A number to three figures with an SI prefix: 16.7 T, 3.35 T, 0.25.
pub(super) fn short(x: f64) -> String {
    let (scaled, prefix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(scale, _)| x >= *scale)
        .map_or((x, ""), |(scale, prefix)| (x / scale, prefix));
    let digits = if scaled >= 100.0 {
        0
    } else if scaled >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.digits$} {prefix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorded::PROFILE_COLUMNS as COLUMNS;

    /// A CSV of `profile --save`'s shape: (lab, kernel, fp64_ops, fp32_ops, time_us,
    /// dram_bytes); peaks of an H100 at 1.98 GHz.
    fn csv(rows: &[(&str, &str, &str, &str, &str, &str)]) -> String {
        let mut text = COLUMNS.join(",") + "\n";
        for (lab, kernel, fp64, fp32, time, dram) in rows {
            let cells: Vec<&str> = COLUMNS
                .iter()
                .map(|c| match *c {
                    "lab" => *lab,
                    "kernel" => *kernel,
                    "fp64_ops" => *fp64,
                    "fp32_ops" => *fp32,
                    "time_us" => *time,
                    "dram_bytes" => *dram,
                    "device" => "NVIDIA H100 80GB HBM3",
                    "fp64_peak_gflops_no_fma" => "16727",
                    "fp32_peak_gflops_fma" => "66908",
                    "dram_peak_gbps" => "3352",
                    _ => "",
                })
                .collect();
            text += &(cells.join(",") + "\n");
        }
        text
    }

    fn sample() -> String {
        csv(&[
            ("lab04", "escape_colour", "1.000e10", "0", "1000", "8.000e8"),
            ("lab06", "read_peak", "0", "0", "50", "1.342e8"),
            ("lab06", "reduce_plain", "0", "3.355e7", "50", "1.342e8"),
        ])
    }

    #[test]
    fn each_kernel_with_operations_is_a_point() {
        let inputs = inputs("docs/x.csv", &sample()).unwrap();
        assert_eq!(inputs.device, "NVIDIA H100 80GB HBM3");
        assert_eq!(inputs.points.len(), 2);
        let lab04 = &inputs.points[0];
        assert_eq!(lab04.label, "lab04 escape_colour");
        assert_eq!(lab04.precision, "FP64");
        assert!((lab04.intensity - 12.5).abs() < 1e-9, "{lab04:?}");
        assert!((lab04.flops - 1e13).abs() < 1.0, "{lab04:?}");
        let lab06 = &inputs.points[1];
        assert_eq!(lab06.precision, "FP32");
        assert!((lab06.intensity - 0.25).abs() < 1e-3, "{lab06:?}");
        assert_eq!(inputs.fp64_peak, 16727e9);
        assert_eq!(inputs.dram_peak, 3352e9);
    }

    #[test]
    fn a_kernel_without_operations_is_its_bandwidth() {
        let inputs = inputs("docs/x.csv", &sample()).unwrap();
        assert_eq!(inputs.bandwidth_only.len(), 1);
        let (label, bandwidth) = &inputs.bandwidth_only[0];
        assert_eq!(label, "lab06 read_peak");
        assert!((bandwidth - 2.684e12).abs() < 1e9, "{bandwidth}");
    }

    #[test]
    fn rows_that_cannot_be_placed_are_refused() {
        let no_time = csv(&[("lab04", "escape_colour", "1e10", "0", "0", "8e8")]);
        let error = format!("{:#}", inputs("docs/x.csv", &no_time).unwrap_err());
        assert!(
            error.contains("line 2: lab04 escape_colour has no time"),
            "{error}"
        );
        let blank = csv(&[("lab04", "escape_colour", "", "0", "1000", "8e8")]);
        let error = format!("{:#}", inputs("docs/x.csv", &blank).unwrap_err());
        assert!(error.contains("fp64_ops is ``"), "{error}");
        let none = csv(&[("lab06", "read_peak", "0", "0", "50", "1e8")]);
        assert!(inputs("docs/x.csv", &none).is_err());
    }

    #[test]
    fn the_chart_is_the_same_every_time() {
        let inputs = inputs("docs/x.csv", &sample()).unwrap();
        let first = svg(&inputs).unwrap();
        assert_eq!(first, svg(&inputs).unwrap());
        assert!(first.starts_with("<svg"), "{first}");
        for text in [
            "1  lab04 escape_colour",
            "FP64 without FMA: 16.7 TFLOP/s",
            "lab06 read_peak: no FP operation,",
        ] {
            assert!(first.contains(text), "{text}");
        }
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(short(16727e9), "16.7 T");
        assert_eq!(short(3352e9), "3.35 T");
        assert_eq!(short(0.25), "0.25 ");
        assert_eq!(short(450.0), "450 ");
    }
}
