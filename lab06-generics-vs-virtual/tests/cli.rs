//! lab06 as a user runs it: every variant's sum on small inputs, and bad input.
//!
//! The binary exits non-zero if any variant's sum is wrong, and its `--json` report says
//! which variants ran (`<variant>_sum`), the expected sum and whether every sum matched it.
//! The expected sums are pinned to values computed apart from the lab (in Python, from the
//! data's definition in src/data.rs). The GPU tests need a CUDA GPU and are ignored by
//! default (`cargo xtask test` runs them where there is one).

use assert_cmd::Command;
use lab06_generics_vs_virtual::kernel_file;
use shared::testing::assert_kernels_compile;
use shared::timing::LabReport;

fn lab06() -> Command {
    Command::cargo_bin("lab06").expect("the lab06 binary is built with the tests")
}

/// Run lab06 with `args` and `--json`; it must succeed. Returns its report.
fn run_ok(args: &[&str]) -> LabReport {
    let output = lab06()
        .args(args)
        .arg("--json")
        .output()
        .expect("lab06 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "lab06 {args:?} failed:\n{stderr}");
    serde_json::from_slice(&output.stdout).expect("one JSON object on stdout")
}

/// Whether `variant` ran, by its sum in the report (its GB/s are a GPU's only: the CPU
/// device reports none).
fn ran(report: &LabReport, variant: &str) -> bool {
    let key = format!("{}_sum", variant.replace('-', "_"));
    report
        .metrics
        .get(&key)
        .is_some_and(|v| v.as_f64().is_some())
}

/// Every variant in `variants` ran, and every sum equalled the expected one.
fn assert_sums_ok(report: &LabReport, variants: &[&str]) {
    assert_eq!(report.metrics["sums_ok"], true, "{report:?}");
    for variant in variants {
        assert!(ran(report, variant), "{variant} did not run: {report:?}");
    }
}

/// Lengths that use every tail: below one float4 / one lane row, odd, and past 2^22 (where
/// the data turns sparse).
/// With each length, the total of its data, computed in Python from src/data.rs's definition
/// (splitmix64's finaliser, 1 + x % 3, every `stride`-th element past 2^22).
const SIZES: [(&str, u64); 4] = [
    ("1", 2),
    ("7", 16),
    ("100003", 200_080),
    ("4194309", 4_194_515),
];

const CPU_VARIANTS: [&str; 10] = [
    "cpu-plain",
    "cpu-generic",
    "cpu-dyn",
    "cpu-box-fn",
    "cpu-fn-ptr",
    "cpu-plain-rayon",
    "cpu-generic-rayon",
    "cpu-dyn-rayon",
    "cpu-box-fn-rayon",
    "cpu-fn-ptr-rayon",
];

const GPU_VARIANTS: [&str; 5] = [
    "gpu-plain",
    "gpu-generic",
    "gpu-virtual",
    "gpu-fn-ptr-loop",
    "gpu-fn-ptr-hoisted",
];

#[test]
fn every_cpu_variant_sums_exactly() {
    for (n, total) in SIZES {
        let report = run_ok(&["--cpu-only", "--n", n, "--reps", "1"]);
        assert_eq!(report.metrics["expected_sum"], total, "n = {n}");
        assert_sums_ok(&report, &CPU_VARIANTS);
    }
}

#[test]
fn variants_can_be_picked_one_by_one() {
    let report = run_ok(&[
        "--variants",
        "cpu-dyn,cpu-plain",
        "--n",
        "1000",
        "--reps",
        "1",
    ]);
    assert_eq!(report.metrics["expected_sum"], 2005);
    assert_sums_ok(&report, &["cpu-dyn", "cpu-plain"]);
    assert!(!ran(&report, "cpu-generic"), "{report:?}");
}

#[test]
fn json_report_has_each_variant_and_its_share_of_the_peak() {
    let output = lab06()
        .args([
            "--variants",
            "cpu-generic",
            "--n",
            "5000",
            "--reps",
            "2",
            "--json",
        ])
        .output()
        .expect("lab06 runs");
    assert!(output.status.success());
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(report["lab"], "lab06");
    assert_eq!(report["width"], 5000);
    let metrics = &report["metrics"];
    assert!(metrics["cpu_generic_gbps"]
        .as_f64()
        .is_some_and(|v| v > 0.0));
    assert!(metrics["cpu_generic_pct_of_peak"].as_f64().is_some());
    assert_eq!(metrics["cpu_peak_pct_of_peak"], 100.0);
    assert_eq!(metrics["sums_ok"], true);
}

/// Without a GPU, the GPU variants are skipped (and the run says why); with one, they run.
#[test]
fn the_default_run_succeeds_with_or_without_a_gpu() {
    let output = lab06()
        .args(["--n", "1000", "--reps", "1", "--json"])
        .output()
        .expect("lab06 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: LabReport = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_sums_ok(&report, &["cpu-plain"]);
    let skipped = stderr.contains("skipping the GPU variants: no usable GPU");
    assert!(skipped != ran(&report, "gpu-plain"), "{stderr}");
}

/// Asked for the GPU alone: it runs, or the run fails with the reason, never silently.
#[test]
fn gpu_only_runs_or_says_why_not() {
    let output = lab06()
        .args(["--gpu-only", "--n", "1000", "--reps", "1", "--json"])
        .output()
        .expect("lab06 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        let report: LabReport = serde_json::from_slice(&output.stdout).expect("one JSON object");
        assert_sums_ok(&report, &["gpu-plain"]);
    } else {
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.starts_with("lab06: error: no usable GPU"),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

/// Bad input: one line naming the problem, exit status 2, no panic.
#[test]
fn bad_input_is_one_line_and_a_non_zero_exit() {
    let cases: [(&[&str], &str); 12] = [
        (&["--n", "0"], "N must be between 1"),
        (&["--n", "-5"], "N must be between 1"),
        (&["--n", "lots"], "N must be a whole number"),
        (&["--n", "99999999999999"], "N must be between 1"),
        (&["--reps", "0"], "--reps"),
        (&["--variants", "gpu-magic"], "unknown variant"),
        (&["--cpu-only", "--gpu-only"], "cannot be used with"),
        (&["--frobnicate"], "unexpected argument"),
        (&["--modulus", "1009"], "unexpected argument"),
        (&["--threads-per-block", "48"], "a multiple of 32"),
        (
            &["--threads-per-block", "2048"],
            "the block size is too large",
        ),
        (&["--blocks-per-sm", "0"], "between 1 and 32"),
    ];
    for (args, says) in cases {
        let output = lab06().args(args).output().expect("lab06 runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn nvrtc_compiles_the_kernels_for_sm60_sm75_sm80_and_sm90() {
    assert_kernels_compile(&[kernel_file()]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_gpu_variant_sums_exactly() {
    for (n, total) in SIZES {
        let report = run_ok(&["--gpu-only", "--n", n, "--reps", "1"]);
        assert_eq!(report.metrics["expected_sum"], total, "n = {n}");
        assert_sums_ok(&report, &GPU_VARIANTS);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn save_ptx_writes_the_kernels_ptx_and_says_where() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let output = lab06()
        .current_dir(dir.path())
        .args(["--variants", "gpu-plain", "--n", "64", "--reps", "1"])
        .args(["--save-ptx", "reduce.ptx"])
        .output()
        .expect("lab06 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.ends_with("\nlab06: wrote reduce.ptx\n"), "{stderr}");
    let ptx = std::fs::read_to_string(dir.path().join("reduce.ptx")).expect("the PTX was written");
    assert!(ptx.contains(".entry reduce_plain("), "{ptx}");
}

#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn nvrtc_ptx_shows_indirect_calls_only_where_expected() {
    let ptx = kernel_file().ptx("compute_80").expect("reduce.cu compiles");

    // An indirect call in PTX names a prototype: `call (...), %rd, (...), prototype_N;`.
    let indirect_calls = |kernel: &str| {
        let start = ptx
            .find(&format!(".entry {kernel}("))
            .unwrap_or_else(|| panic!("no kernel {kernel} in the PTX"));
        let body = &ptx[start..];
        let end = body[1..].find(".entry ").map_or(body.len(), |e| e + 1);
        body[..end].matches("prototype_").count()
    };
    assert_eq!(indirect_calls("reduce_plain"), 0);
    assert_eq!(indirect_calls("reduce_generic"), 0);
    assert!(indirect_calls("reduce_virtual") > 0);
    assert!(indirect_calls("reduce_fn_ptr_loop") > 0);
    assert!(indirect_calls("reduce_fn_ptr_hoisted") > 0);
}

/// On the CPU device, `--profile` counts the calls made through a register as they run:
/// none in the plain and generic sums, one per element (a warp instruction per 32) in the
/// others, whatever they load to make it.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn profile_counts_one_indirect_call_per_element_where_there_are_any() {
    let n = 1 << 20;
    let report = run_ok(&[
        "--gpu-only",
        "--emulate",
        "--profile",
        "--reps",
        "1",
        "--n",
        &n.to_string(),
    ]);
    let profile = report.profile.expect("a profile");
    let launches = profile.as_array().expect("a launch each");
    let calls = |kernel: &str| {
        let launch = launches
            .iter()
            .find(|l| l["kernel"] == kernel)
            .unwrap_or_else(|| panic!("no launch of {kernel}: {profile}"));
        launch["indirect_calls"].as_u64().expect("a count")
    };
    assert_eq!(calls("reduce_plain"), 0);
    assert_eq!(calls("reduce_generic"), 0);
    for kernel in [
        "reduce_virtual",
        "reduce_fn_ptr_loop",
        "reduce_fn_ptr_hoisted",
    ] {
        assert_eq!(calls(kernel), n / 32, "{kernel}");
    }
}

/// `--threads-per-block` and `--blocks-per-sm` time that one launch shape (the grid is the
/// blocks per multiprocessor times their count), and the CPU device launches each kernel
/// once per rep, no warm-up: a model's prediction is of the launch a GPU's median is of.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn one_launch_shape_is_timed_when_given() {
    let report = run_ok(&[
        "--emulate",
        "--profile",
        "--variants",
        "gpu-plain,gpu-virtual",
        "--threads-per-block",
        "96",
        "--blocks-per-sm",
        "3",
        "--reps",
        "1",
        "--n",
        "100003",
    ]);
    let profile = report.profile.expect("a profile");
    let launches = profile.as_array().expect("a launch each");
    for kernel in ["read_peak", "reduce_plain", "reduce_virtual"] {
        let of: Vec<_> = launches.iter().filter(|l| l["kernel"] == kernel).collect();
        assert_eq!(of.len(), 1, "{kernel}: {profile}");
        assert_eq!(of[0]["block"][0], 96, "{kernel}");
        let grid = of[0]["grid"][0].as_u64().expect("a grid");
        assert!(grid > 3 && grid % 3 == 0, "{kernel}: {grid} blocks");
    }
    assert!(launches.iter().all(|l| l["kernel"] != "reduce_generic"));
}

/// `--kernel FILE` compiles FILE with the `add.cuh` beside it where there is one, else the
/// lab's own: an `add` that doubles what it adds doubles the abstract variants' sums (and so
/// fails the run), and leaves the plain one, which adds with `+`, exact.
#[test]
#[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
fn kernel_flag_takes_the_header_beside_the_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kernel = dir.path().join("reduce.cu");
    std::fs::write(&kernel, kernel_file().source.as_bytes()).expect("written");
    let run = |expect_ok: bool| {
        let output = lab06()
            .args([
                "--emulate",
                "--variants",
                "gpu-plain,gpu-generic,gpu-virtual",
            ])
            .args(["--n", "100003", "--reps", "1", "--json", "--kernel"])
            .arg(&kernel)
            .output()
            .expect("lab06 runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.success(), expect_ok, "{stderr}");
        let report: LabReport = serde_json::from_slice(&output.stdout).expect("a report");
        let sum = |variant: &str| report.metrics[&format!("{variant}_sum")].as_f64();
        [sum("gpu_plain"), sum("gpu_generic"), sum("gpu_virtual")]
    };
    // The lab's own add.cuh, there being none beside the file.
    assert_eq!(run(true), [Some(200_080.0); 3]);
    std::fs::write(
        dir.path().join("add.cuh"),
        "__device__ float add(float acc, float x) { return acc + 2.0f * x; }\n",
    )
    .expect("written");
    assert_eq!(
        run(false),
        [Some(200_080.0), Some(400_160.0), Some(400_160.0)]
    );
}
