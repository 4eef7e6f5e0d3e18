//! The chart of `cargo xtask bench`: median wall time against image side, both axes
//! logarithmic (sizes double, times span five orders of magnitude), one line per variant.

use anyhow::{anyhow, Result};
use plotters::prelude::*;

use super::Row;
use crate::format::distinct;

/// Draw `rows` as an SVG document, titled with the devices the labs ran on.
pub fn draw(rows: &[Row]) -> Result<String> {
    let mut svg = String::new();
    draw_into(&mut svg, rows)?;
    Ok(svg)
}

fn draw_into(svg: &mut String, rows: &[Row]) -> Result<()> {
    let fail = |e: &dyn std::fmt::Display| anyhow!("cannot draw the chart: {e}");
    let labs = distinct(rows.iter().map(|row| row.lab.as_str()));
    let devices = distinct(rows.iter().map(|row| row.device.as_str()));
    // A tick at every size timed: plotters' own log ticks (1, 2, 5 x 10^k) miss doubling sizes.
    let mut sizes: Vec<f64> = rows.iter().map(|row| f64::from(row.size)).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();

    let root = SVGBackend::with_string(svg, (960, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Mandelbrot labs on {}", devices.join(" / ")),
            ("sans-serif", 22),
        )
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(
            padded(rows.iter().map(|row| f64::from(row.size)))
                .log_scale()
                .with_key_points(sizes),
            padded(rows.iter().map(|row| row.wall_ms)).log_scale(),
        )
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("image side (pixels, square image)")
        .y_desc("median wall time (ms)")
        .x_label_formatter(&|side| format!("{side:.0}"))
        .y_label_formatter(&|&ms| milliseconds(ms))
        .draw()
        .map_err(|e| fail(&e))?;

    for (i, lab) in labs.iter().enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|row| row.lab == *lab)
            .map(|row| (f64::from(row.size), row.wall_ms))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
            .map_err(|e| fail(&e))?
            .label(*lab)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2)));
        chart
            .draw_series(PointSeries::of_element(
                points,
                4,
                colour.filled(),
                &|c, s, st| Circle::new(c, s, st),
            ))
            .map_err(|e| fail(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))
}

/// A tick label: whole milliseconds, or one decimal below 1 ms.
fn milliseconds(ms: f64) -> String {
    if ms >= 1.0 {
        format!("{ms:.0}")
    } else {
        format!("{ms:.1}")
    }
}

/// The range of `values` widened by a third of a doubling each side, so the end points are
/// not drawn on the frame and a single value still makes a range a log axis accepts.
fn padded(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (low, high) = values.fold((f64::INFINITY, 0.0_f64), |(low, high), v| {
        (low.min(v), high.max(v))
    });
    let pad = 2.0_f64.powf(1.0 / 3.0);
    low / pad..high * pad
}
