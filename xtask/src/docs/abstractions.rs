//! lab06's variants as the CPU device counts them (`docs/lab06-profile-NAME.json`, the
//! `--json` report of `lab06 --gpu-only --emulate --profile`, to
//! `docs/lab06-counts-NAME.svg`, written by `cargo xtask docs`): for each kernel, the bytes
//! its global loads and stores moved (the 32-byte sectors its requests touched, a sector
//! read twice counted twice), the calls it made through a register, and the warp
//! instructions it issued, as bars side by side. Counted, not timed: the same on any
//! machine.

use anyhow::{anyhow, bail, Context, Result};
use plotters::prelude::*;
use serde_json::Value;

/// One kernel's figures: its first launch's (a kernel launched again does the same work).
#[derive(Debug, PartialEq)]
pub struct Bar {
    pub kernel: String,
    pub bytes: u64,
    pub indirect_calls: u64,
    pub issued: u64,
}

/// What the chart is drawn from.
#[derive(Debug, PartialEq)]
pub struct Inputs {
    /// The floats each kernel sums (the report's width).
    pub n: u64,
    pub bars: Vec<Bar>,
}

/// The chart's inputs from lab06's `--json` report with its profiles. Launches of one
/// thread (the kernels that build the virtual object and store the function pointer) are
/// set-up, not a variant, and left out.
pub fn inputs(file: &str, json: &str) -> Result<Inputs> {
    let report: Value =
        serde_json::from_str(json).with_context(|| format!("{file} is not JSON"))?;
    let launches = report["profile"]
        .as_array()
        .with_context(|| format!("{file} has no profile: record it with --emulate --profile"))?;
    let number = |launch: &Value, pointer: &str| -> Result<u64> {
        launch
            .pointer(pointer)
            .and_then(Value::as_u64)
            .with_context(|| format!("{file}: a launch has no {pointer}"))
    };
    let mut bars: Vec<Bar> = Vec::new();
    for launch in launches {
        let kernel = launch["kernel"]
            .as_str()
            .with_context(|| format!("{file}: a launch has no kernel"))?;
        let threads: u64 = [
            "/grid/0", "/grid/1", "/grid/2", "/block/0", "/block/1", "/block/2",
        ]
        .iter()
        .map(|p| number(launch, p))
        .product::<Result<u64>>()?;
        if threads <= 1 || bars.iter().any(|b| b.kernel == kernel) {
            continue;
        }
        bars.push(Bar {
            kernel: kernel.to_string(),
            bytes: 32 * number(launch, "/global/sectors")?,
            indirect_calls: number(launch, "/indirect_calls")?,
            issued: number(launch, "/issued")?,
        });
    }
    if bars.is_empty() {
        bail!("{file}: no launch of more than one thread");
    }
    let n = report["width"]
        .as_u64()
        .with_context(|| format!("{file} has no width (n)"))?;
    Ok(Inputs { n, bars })
}

/// The chart of `inputs` as an SVG document (the same inputs give the same bytes).
pub fn svg(inputs: &Inputs) -> Result<String> {
    let mut svg = String::new();
    draw(&mut svg, inputs).map_err(|e| anyhow!("cannot draw lab06's counts: {e}"))?;
    Ok(svg)
}

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// Pixels: the names' column, each panel's width, a row's height, the title's band.
const NAMES: i32 = 190;
const PANEL: i32 = 270;
const ROW: i32 = 34;
const TOP: i32 = 70;

/// A panel: its title, the figure of a bar it shows, its bars' colour.
type Panel = (&'static str, fn(&Bar) -> u64, RGBColor);

fn draw(svg: &mut String, inputs: &Inputs) -> DrawResult {
    let panels: [Panel; 3] = [
        (
            "bytes moved by global loads and stores",
            |b| b.bytes,
            RGBColor(0x33, 0x66, 0xcc),
        ),
        ("indirect calls", |b| b.indirect_calls, RED),
        (
            "warp instructions issued",
            |b| b.issued,
            RGBColor(0x66, 0x66, 0x66),
        ),
    ];
    let rows = inputs.bars.len() as i32;
    let size = (
        (NAMES + PANEL * panels.len() as i32) as u32,
        (TOP + ROW * rows + 30) as u32,
    );
    let root = SVGBackend::with_string(svg, size).into_drawing_area();
    root.fill(&WHITE)?;
    let font = |size| ("sans-serif", size).into_font();
    root.draw(&Text::new(
        format!(
            "lab06 on the CPU device: one launch of each kernel, {} floats (counted, not timed)",
            inputs.n
        ),
        (10, 10),
        font(18),
    ))?;
    for (row, bar) in inputs.bars.iter().enumerate() {
        let y = TOP + ROW * row as i32;
        root.draw(&Text::new(bar.kernel.clone(), (10, y + 9), font(15)))?;
    }
    for (p, (title, value, colour)) in panels.iter().enumerate() {
        let left = NAMES + PANEL * p as i32;
        root.draw(&Text::new(title.to_string(), (left, TOP - 26), font(15)))?;
        let most = inputs.bars.iter().map(value).max().unwrap_or(0).max(1) as f64;
        // Room on the right of the longest bar for its number.
        let full = f64::from(PANEL - 80);
        for (row, bar) in inputs.bars.iter().enumerate() {
            let y = TOP + ROW * row as i32;
            let v = value(bar);
            let length = (full * v as f64 / most).round() as i32;
            if length > 0 {
                root.draw(&Rectangle::new(
                    [(left, y + 4), (left + length, y + ROW - 8)],
                    colour.filled(),
                ))?;
            }
            root.draw(&Text::new(
                super::roofline::short(v as f64).trim_end().to_string(),
                (left + length + 6, y + 9),
                font(14),
            ))?;
        }
        root.draw(&PathElement::new(
            [(left, TOP - 4), (left, TOP + ROW * rows)],
            BLACK,
        ))?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report of lab06's shape: a set-up launch of one thread, then kernels each launched
    /// twice.
    fn report() -> String {
        let launch = |kernel: &str, threads: u32, sectors: u64, indirect: u64, issued: u64| {
            format!(
                r#"{{"kernel": "{kernel}", "grid": [{threads}, 1, 1], "block": [1, 1, 1],
                    "global": {{"sectors": {sectors}}}, "indirect_calls": {indirect},
                    "issued": {issued}}}"#
            )
        };
        let launches = [
            launch("build_adder", 1, 1, 0, 7),
            launch("reduce_plain", 132, 131_204, 0, 369_944),
            launch("reduce_plain", 132, 131_204, 0, 369_944),
            launch("reduce_virtual", 132, 196_740, 32_768, 738_840),
            launch("reduce_virtual", 132, 196_740, 32_768, 738_840),
        ];
        format!(
            r#"{{"lab": "lab06", "width": 1048576, "profile": [{}]}}"#,
            launches.join(",")
        )
    }

    /// Each kernel once, from its first launch, in launch order; the set-up left out; the
    /// bytes are the sectors' 32 bytes each.
    #[test]
    fn each_kernel_is_a_bar_of_its_counts() {
        let inputs = inputs("docs/x.json", &report()).unwrap();
        assert_eq!(inputs.n, 1_048_576);
        assert_eq!(
            inputs.bars,
            [
                Bar {
                    kernel: "reduce_plain".to_string(),
                    bytes: 4_198_528,
                    indirect_calls: 0,
                    issued: 369_944,
                },
                Bar {
                    kernel: "reduce_virtual".to_string(),
                    bytes: 6_295_680,
                    indirect_calls: 32_768,
                    issued: 738_840,
                },
            ]
        );
    }

    /// The bars' lengths and numbers are the report's: the largest of each panel is the
    /// panel's full length, the others in proportion, each with its number beside it.
    #[test]
    fn the_chart_draws_the_reports_numbers() {
        let inputs = inputs("docs/x.json", &report()).unwrap();
        let chart = svg(&inputs).unwrap();
        assert_eq!(chart, svg(&inputs).unwrap(), "the same every time");
        for text in [
            "reduce_plain",
            "reduce_virtual",
            "4.20 M",
            "6.30 M",
            "32.8 k",
            "739 k",
            "1048576 floats",
        ] {
            assert!(chart.contains(text), "{text} in {chart}");
        }
        // Bytes: the virtual kernel's bar is the panel's full 190 pixels, the plain one's
        // 190 x 4198528 / 6295680 = 127; indirect calls: none for the plain kernel.
        let widths: Vec<&str> = chart
            .split("<rect")
            .skip(2)
            .filter_map(|r| r.split("width=\"").nth(1)?.split('"').next())
            .collect();
        assert_eq!(widths, ["127", "190", "190", "95", "190"], "{chart}");
    }

    /// A report without profiles, or with a launch missing a count, is refused by name.
    #[test]
    fn reports_that_cannot_be_drawn_are_refused() {
        let error = |json: &str| format!("{:#}", inputs("docs/x.json", json).unwrap_err());
        assert!(error(r#"{"width": 4}"#).contains("no profile"));
        let no_calls = report().replace(r#""indirect_calls": 0,"#, "");
        assert!(
            error(&no_calls).contains("no /indirect_calls"),
            "{no_calls}"
        );
        assert!(error("not json").contains("docs/x.json is not JSON"));
    }
}
