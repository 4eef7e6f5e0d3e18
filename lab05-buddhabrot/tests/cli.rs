//! lab05 as a user runs it: reproducible canvases, mirror symmetry, the CPU backend against
//! orbits computed here, bad input. The GPU tests need a CUDA GPU and are ignored by default
//! (`cargo xtask test` runs them where there is one).

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use lab05_buddhabrot::gpu::kernel_file;
use lab05_buddhabrot::rng::{philox2x32_10, uniform};
use shared::testing::{assert_kernels_compile, assert_says_where_it_wrote, ptx_loops};
use shared::timing::LabReport;
use tempfile::TempDir;

fn lab05() -> Command {
    Command::cargo_bin("lab05").expect("the lab05 binary is built with the tests")
}

/// A canvas read back from a `--raw` file.
#[derive(Debug, PartialEq)]
struct Canvas {
    width: usize,
    height: usize,
    counts: Vec<u32>,
}

fn read_raw(path: &Path) -> Canvas {
    let bytes = fs::read(path).expect("the raw file exists");
    assert_eq!(&bytes[..8], b"LAB05RAW");
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let (width, height) = (word(8) as usize, word(12) as usize);
    assert_eq!(bytes.len(), 16 + 4 * width * height);
    let counts = (0..width * height).map(|i| word(16 + 4 * i)).collect();
    Canvas {
        width,
        height,
        counts,
    }
}

/// Run lab05 with `args` plus a PNG and a raw file in `dir`; it must succeed.
fn render(dir: &TempDir, name: &str, args: &[&str]) -> Canvas {
    render_with_report(dir, name, args).0
}

/// [`render`], and the run's `--json` report.
fn render_with_report(dir: &TempDir, name: &str, args: &[&str]) -> (Canvas, LabReport) {
    let raw = dir.path().join(format!("{name}.raw"));
    let png = dir.path().join(format!("{name}.png"));
    let output = lab05()
        .args(args)
        .arg("--raw")
        .arg(&raw)
        .arg("-o")
        .arg(&png)
        .arg("--json")
        .output()
        .expect("lab05 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "lab05 {args:?} failed:\n{stderr}");
    let png = fs::read(&png).expect("the PNG exists");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let report = serde_json::from_slice(&output.stdout).expect("a --json report");
    (read_raw(&raw), report)
}

/// A small canvas and sample count, so that the debug build runs in well under a second.
const SMALL: [&str; 6] = ["--width", "144", "--height", "256", "--samples", "300000"];

#[test]
fn says_where_it_wrote_the_image() {
    assert_says_where_it_wrote("lab05", &SMALL, "lab05-buddhabrot.png", "144x256");
}

#[test]
fn same_seed_same_canvas_other_seed_other_canvas() {
    let dir = TempDir::new().unwrap();
    let run =
        |name: &str, seed: &str| render(&dir, name, &[&SMALL[..], &["--seed", seed]].concat());
    let first = run("a", "7");
    assert!(first.counts.iter().any(|&c| c > 0), "an empty canvas");
    assert_eq!(first, run("b", "7"));
    assert_ne!(first, run("c", "8"));
}

#[test]
fn canvas_is_a_mirror_image_with_symmetry() {
    let dir = TempDir::new().unwrap();
    let canvas = render(&dir, "sym", &SMALL);
    for row in canvas.counts.chunks(canvas.width) {
        let mirrored: Vec<u32> = row.iter().rev().copied().collect();
        assert_eq!(row, &mirrored[..]);
    }
}

#[test]
fn bulb_check_changes_nothing_but_speed() {
    let dir = TempDir::new().unwrap();
    let with = render(&dir, "with", &SMALL);
    let without = render(
        &dir,
        "without",
        &[&SMALL[..], &["--no-bulb-check"]].concat(),
    );
    assert_eq!(with, without);
}

/// The CPU backend against a computation written here from the definition: sample i's point
/// from Philox (its own known-answer test is in src/rng.rs), the orbit z <- z^2 + c from
/// z = c, and one count at every orbit point's pixel (and its mirror) if |z|^2 > 4 within
/// max_iter steps. No bulb check here: the lab's check must not matter.
#[test]
fn cpu_backend_matches_orbits_computed_here() {
    let dir = TempDir::new().unwrap();
    let (width, height, samples, seed, max_iter) = (36usize, 64usize, 300u64, 3u32, 20);
    for stratify in [false, true] {
        let mut args = vec![
            "--width".to_string(),
            width.to_string(),
            "--height".to_string(),
            height.to_string(),
            "--samples".to_string(),
            samples.to_string(),
            "--seed".to_string(),
            seed.to_string(),
        ];
        if !stratify {
            args.push("--no-stratify".to_string());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let canvas = render(&dir, "tiny", &args);

        let mut expected = vec![0u32; width * height];
        let (re_min, re_max, im_min, im_max) = (-3.2f32, 2.0f32, -1.5f32, 1.5f32);
        let row_scale = height as f32 / (re_max - re_min);
        let col_scale = width as f32 / (im_max - im_min);
        let mut escaped = 0;
        for i in 0..samples {
            let [a, b] = philox2x32_10([i as u32, (i >> 32) as u32], seed);
            let (mut u, mut v) = (uniform(a), uniform(b));
            if stratify {
                // 1024 x 1024 cells, 32 consecutive samples per cell; the visit number,
                // bits reversed, is a Z-order code: even bits column, odd bits row.
                let visit = ((i >> 5) as u32) & 0xf_ffff;
                let z = visit.reverse_bits() >> 12;
                let (mut col, mut row) = (0, 0);
                for bit in 0..10 {
                    col |= ((z >> (2 * bit)) & 1) << bit;
                    row |= ((z >> (2 * bit + 1)) & 1) << bit;
                }
                u = (col as f32 + u) / 1024.0;
                v = (row as f32 + v) / 1024.0;
            }
            // Symmetry: only Im(c) in [0, 1.8] is sampled.
            let cr = -2.1f32 + u * (1.1f32 - -2.1f32);
            let ci = 0.0f32 + v * 1.8f32;
            let (mut x, mut y) = (cr, ci);
            let mut orbit = Vec::new();
            for _ in 0..max_iter {
                (x, y) = (x * x - y * y + cr, 2.0 * x * y + ci);
                orbit.push((x, y));
                if x * x + y * y > 4.0 {
                    break;
                }
            }
            let (x, y) = orbit[orbit.len() - 1];
            if x * x + y * y <= 4.0 {
                continue;
            }
            escaped += 1;
            for (x, y) in orbit {
                let row = (x - re_min) * row_scale;
                let col = (y - im_min) * col_scale;
                if row >= 0.0 && row < height as f32 && col >= 0.0 && col < width as f32 {
                    let (row, col) = (row as usize, col as usize);
                    expected[row * width + col] += 1;
                    expected[row * width + width - 1 - col] += 1;
                }
            }
        }
        assert!(escaped > 100, "only {escaped} of {samples} samples escaped");
        assert_eq!(canvas.counts, expected, "stratify: {stratify}");
    }
}

#[test]
fn asymmetric_ranges_work_without_symmetry() {
    let dir = TempDir::new().unwrap();
    let args = [
        "--width",
        "50",
        "--height",
        "70",
        "--samples",
        "20000",
        "--im-min",
        "-0.5",
        "--im-max",
        "1.7",
        "--no-symmetry",
    ];
    let canvas = render(&dir, "asym", &args);
    assert!(canvas.counts.iter().any(|&c| c > 0));
}

#[test]
fn json_report_has_the_statistics() {
    let dir = TempDir::new().unwrap();
    let output = lab05()
        .args(SMALL)
        .arg("--json")
        .arg("-o")
        .arg(dir.path().join("j.png"))
        .output()
        .unwrap();
    assert!(output.status.success());
    let report: LabReport = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report.lab, "lab05");
    assert_eq!(report.metrics["samples"], 300000);
    for key in [
        "total_counts",
        "counts_per_pixel",
        "max_count",
        "min_count",
        "counts_per_second",
    ] {
        assert!(report.metrics[key].as_f64().is_some(), "{key}: {report:?}");
    }
    for phase in ["compute", "write"] {
        assert!(report.phases_ms.contains_key(phase), "{phase}: {report:?}");
    }
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn nvrtc_compiles_the_kernel_for_sm60_sm75_sm80_and_sm90() {
    assert_kernels_compile(&[kernel_file()]);
}

/// Identical canvases need every f32 operation of an orbit rounded as on the CPU: no
/// multiply fused with an add in any loop of the kernel.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn nvrtc_no_fused_multiply_add_in_the_kernel_loops() {
    let loops = ptx_loops(&kernel_file());
    assert!(loops.iter().any(|body| body.contains("mul.rn.f32")));
    for body in &loops {
        assert!(
            !body.contains("fma.rn.f32"),
            "a fused multiply-add:\n{body}"
        );
    }
}

/// A literal with a point is a double in CUDA C++: `0.25` beside a float promotes the
/// expression to double, which the CPU twin never computes (and which can change a sample's
/// fate). No double arithmetic in any loop of the kernel.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn nvrtc_no_double_arithmetic_in_the_kernel_loops() {
    let loops = ptx_loops(&kernel_file());
    assert!(!loops.is_empty());
    for body in &loops {
        assert!(!body.contains(".f64"), "double arithmetic:\n{body}");
    }
}

/// `--profile-png` draws the samples' warps over the canvas, each where its point c lies:
/// a picture the canvas's size, dark where nothing was sampled (Im c < 0 with symmetry),
/// and in the main cardioid, without the bulb check, the colour of warps that ran every
/// lane to the iteration limit: bright, all green; with the check, skipped: dark.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn the_profile_picture_draws_each_sample_where_its_point_lies() {
    let dir = TempDir::new().expect("a scratch folder");
    let (width, height) = (72, 128);
    let draw = |extra: &[&str]| {
        let picture = dir.path().join("warps.png");
        let output = lab05()
            .args([
                "--backend",
                "gpu",
                "--emulate",
                "--profile",
                "--profile-png",
            ])
            .arg(&picture)
            .args(["--width", "72", "--height", "128", "--samples", "1048576"])
            .args(["--max-iter", "200", "-o"])
            .arg(dir.path().join("canvas.png"))
            .args(extra)
            .output()
            .expect("lab05 runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        image::open(&picture).expect("a PNG").into_rgb8()
    };
    // The pixel of c on the default view: row (Re c + 3.2) / 5.2 x 128, column
    // (Im c + 1.5) / 3 x 72.
    let pixel_of = |cr: f32, ci: f32| {
        let (row, col) = ((cr + 3.2) / 5.2 * 128.0, (ci + 1.5) / 3.0 * 72.0);
        (col as u32, row as u32)
    };
    let (x, y) = pixel_of(-0.2, 0.3);
    let (mirror_x, mirror_y) = pixel_of(-0.2, -0.3);
    let checked = draw(&[]);
    let unchecked = draw(&["--no-bulb-check"]);
    for picture in [&checked, &unchecked] {
        assert_eq!(picture.dimensions(), (width, height));
        assert_eq!(picture.get_pixel(mirror_x, mirror_y).0, [0, 0, 0]);
    }
    let [red, green, _] = unchecked.get_pixel(x, y).0;
    assert!(red == 0 && green > 120, "without the check: {red} {green}");
    let [red, dark, _] = checked.get_pixel(x, y).0;
    assert!(red == 0 && dark < green / 2, "with the check: {red} {dark}");
}

/// Bad input: one line on stderr, a non-zero exit, and no file left behind.
#[test]
fn bad_input_fails_cleanly() {
    let cases: &[&[&str]] = &[
        &["--width", "0"],
        &["--height", "-5"],
        &["--width", "abc"],
        &["--width", "100000"],
        &["--max-iter", "0"],
        &["--samples", "0"],
        &["--samples", "-3"],
        &["--samples", "2e13"],
        &["--samples", "1.5"],
        &["--seed", "-1"],
        &["--re-min", "2", "--re-max", "1"],
        &["--sample-re-min", "nan"],
        &["--im-min", "-1", "--im-max", "2"],
        &["--backend", "tpu"],
        &["--backend", "gpu", "--devices", "0"],
        &["--backend", "gpu", "--devices", "-1"],
        &["--backend", "gpu", "--devices", "two"],
        &["--backend", "gpu", "--devices", "1,1"],
        &["--backend", "gpu", "--devices", "0,,1"],
        &["--backend", "gpu", "--reduce", "sideways"],
        &["--devices", "2"],
        &["--reduce", "host"],
        &["--emulate", "--profile"],
        &["--emulate", "--profile", "--profile-png", "warps.png"],
        &["-o", "no-such-folder/out.png"],
        &["-o", "a-file/out.png"],
        &["--raw", "no-such-folder/out.raw"],
    ];
    for args in cases {
        let dir = TempDir::new().unwrap();
        fs::write(dir.path().join("a-file"), b"not a folder").unwrap();
        let output = lab05()
            .current_dir(dir.path())
            .args(["--width", "16", "--height", "16", "--samples", "1000"])
            .args(*args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("lab05: "), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        let left: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["a-file"], "{args:?} left files behind");
    }
}

#[test]
fn gpu_choices_are_refused_with_the_cpu_backend() {
    let output = lab05()
        .args(["--width", "16", "--height", "16", "--samples", "1000"])
        .args(["--devices", "all", "-o", "/no-such-folder/out.png"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(
        stderr.trim_end(),
        "lab05: error: --devices and --reduce choose GPUs: add --backend gpu (the CPU \
         backend always uses every core)"
    );
}

#[test]
fn a_failed_run_keeps_the_previous_image() {
    let dir = TempDir::new().unwrap();
    let png = dir.path().join("out.png");
    fs::write(&png, b"the previous image").unwrap();
    let output = lab05()
        .args(["--width", "16", "--height", "16", "--samples", "1000", "-o"])
        .arg(&png)
        .args(["--raw", "/no-such-folder/out.raw"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert_eq!(fs::read(&png).unwrap(), b"the previous image");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// The GPU canvas must equal the CPU canvas exactly, for the defaults and with every switch
/// flipped, on odd sizes, and with long orbits.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_canvas_equals_cpu_canvas() {
    let dir = TempDir::new().unwrap();
    let cases: &[&[&str]] = &[
        &["--samples", "4000000", "--seed", "7"],
        &[
            "--samples",
            "1000003",
            "--no-stratify",
            "--no-symmetry",
            "--no-bulb-check",
            "--max-iter",
            "200",
        ],
        &[
            "--width",
            "333",
            "--height",
            "517",
            "--samples",
            "500000",
            "--im-min",
            "-0.5",
            "--im-max",
            "1.7",
            "--no-symmetry",
            "--max-iter",
            "1000",
            "--seed",
            "4294967295",
        ],
    ];
    for args in cases {
        let cpu = render(&dir, "cpu", &[&["--backend", "cpu"], *args].concat());
        let gpu = render(&dir, "gpu", &[&["--backend", "gpu"], *args].concat());
        assert!(cpu.counts.iter().any(|&c| c > 0), "{args:?}: empty canvas");
        let differing = cpu
            .counts
            .iter()
            .zip(&gpu.counts)
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(differing, 0, "{args:?}: {differing} pixels differ");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_report_names_the_device_and_the_kernel() {
    let dir = TempDir::new().unwrap();
    // A small run: the report is the point (the default 2,560 x 1,440 took 90 s of CI on
    // the CPU device).
    let output = lab05()
        .args(SMALL)
        .args(["--backend", "gpu", "--json", "-o"])
        .arg(dir.path().join("g.png"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: LabReport = serde_json::from_slice(&output.stdout).unwrap();
    shared::testing::assert_names_the_device(&report.device);
    assert!(report.phases_ms.get("kernel").is_some_and(|&ms| ms > 0.0));
    assert!(report.phases_ms.contains_key("compile"));
    assert!(report.metrics["counts_per_second"].as_f64().is_some());
    assert_eq!(report.metrics["gpus"], 1);
    assert!(!report.phases_ms.contains_key("reduce"), "{report:?}");
    // The options the kernel was compiled with, as src/gpu.rs gives them.
    let options = report.metrics["nvrtc_options"].as_str().unwrap_or_default();
    let given = kernel_file().options.join(" ");
    assert!(options.starts_with(&given), "{options}");
}

/// Runs that split the samples across GPUs, chosen to break the split: sample counts that
/// do not divide evenly, fewer samples than one cell visit per GPU, several launches per
/// GPU, odd sizes, every switch, another seed.
const SPLIT_CASES: &[&[&str]] = &[
    &["--samples", "4000000", "--seed", "7"],
    &["--samples", "45", "--seed", "5"],
    &[
        "--samples",
        "1000003",
        "--seed",
        "3",
        "--width",
        "333",
        "--height",
        "517",
    ],
    &[
        "--samples",
        "999999",
        "--seed",
        "4294967295",
        "--no-stratify",
        "--no-symmetry",
        "--no-bulb-check",
        "--max-iter",
        "200",
    ],
];

/// The canvas of every GPU of the machine together, summed by NCCL (where it is installed)
/// or on the host, equals one GPU's and the CPU's, byte for byte.
#[test]
#[ignore = "needs two CUDA GPUs (cargo xtask test runs it where two open)"]
fn multi_gpu_canvas_equals_one_gpu_and_the_cpu() {
    let dir = TempDir::new().unwrap();
    for args in SPLIT_CASES {
        let cpu = render(&dir, "cpu", &[&["--backend", "cpu"], *args].concat());
        let one = render(&dir, "one", &[&["--backend", "gpu"], *args].concat());
        assert_eq!(cpu, one, "{args:?}: one GPU against the CPU");
        let every = ["--backend", "gpu", "--devices", "all"];
        for reduce in ["auto", "host"] {
            let run = [&every[..], &["--reduce", reduce], *args].concat();
            let (all, report) = render_with_report(&dir, "all", &run);
            let gpus = report.metrics["gpus"].as_u64().unwrap_or(0);
            assert!(
                gpus >= 2,
                "{run:?}: ran on {gpus} GPU(s); this test needs two"
            );
            assert!(report.phases_ms.contains_key("reduce"), "{report:?}");
            // auto: NCCL, or the host with the reason NCCL was not used.
            let how = report.metrics["reduction"].as_str().unwrap_or_default();
            let said = match reduce {
                "host" => how.starts_with("host") && !how.contains("NCCL not used"),
                _ => how.starts_with("NCCL ") || how.contains("(NCCL not used: "),
            };
            assert!(said, "{run:?}: {how}");
            assert_eq!(cpu, all, "{run:?}: {gpus} GPUs against the CPU");
        }
    }
}

/// Long enough for several launches on each GPU: the canvas of two GPUs equals one GPU's.
#[test]
#[ignore = "needs two CUDA GPUs (cargo xtask test runs it where two open)"]
fn multi_gpu_canvas_equals_one_gpu_over_several_launches() {
    let dir = TempDir::new().unwrap();
    let args = ["--backend", "gpu", "--samples", "2147484425", "--seed", "9"];
    let one = render(&dir, "one", &args);
    let two = render(&dir, "two", &[&args[..], &["--devices", "0,1"]].concat());
    assert!(one.counts.iter().any(|&c| c > 0), "an empty canvas");
    assert_eq!(one, two);
}

/// `--devices` asking for more GPUs than the machine has: one line, naming what it has.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_more_devices_than_the_machine_has_fail_cleanly() {
    let dir = TempDir::new().unwrap();
    for devices in ["1024", "0,1023"] {
        let output = lab05()
            .current_dir(dir.path())
            .args([
                "--backend",
                "gpu",
                "--samples",
                "1000",
                "--devices",
                devices,
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{devices}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{devices}: {stderr}");
        assert!(
            stderr.contains("but this machine has"),
            "{devices}: {stderr}"
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "{devices}");
    }
}
