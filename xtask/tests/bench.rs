//! `xtask bench` end to end on tiny sizes with the two CPU labs.
//!
//! The lab binaries come from a debug build made here (`cargo build -p lab01-cpu-baseline
//! -p lab02-rayon`, with the `cargo` that runs the tests): a release build of rayon would
//! cost a 2-core CI machine far more than the tiny images it renders, and `cargo test -p
//! xtask` alone would not build the labs at all. Without cargo (the test executables of
//! `cargo xtask dist --tests`, run by `xtask test --bin-dir`), the labs are read from the
//! folder that holds xtask, where `dist` put them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use xtask_test_support::{fields, xtask};

/// Run `xtask bench` with `args`, the lab binaries and `out`; return its stdout.
fn bench(out: &Path, args: &[&str]) -> String {
    let output = xtask()
        .arg("bench")
        .arg("--bin-dir")
        .arg(lab_bin_dir())
        .arg("--out")
        .arg(out)
        .args(args)
        .output()
        .expect("xtask runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "xtask bench failed: {stderr}");
    String::from_utf8(output.stdout).expect("stdout is UTF-8")
}

/// The folder holding lab01 and lab02 (see the module comment).
fn lab_bin_dir() -> PathBuf {
    let Some(cargo) = std::env::var_os("CARGO") else {
        let xtask = assert_cmd::cargo::cargo_bin("xtask");
        return xtask.parent().expect("xtask is in a folder").to_path_buf();
    };
    let output = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--quiet", "--message-format=json"])
        .args([
            "--package",
            "lab01-cpu-baseline",
            "--package",
            "lab02-rayon",
        ])
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "building lab01 and lab02 failed");
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find_map(|message| {
            let exe = message["executable"].as_str()?;
            Some(Path::new(exe).parent()?.to_path_buf())
        })
        .expect("cargo names the lab executables")
}

/// Each lab of `labs` has rows among `labels`; where one has none, the failure says which
/// and bench's own note on it (a lab whose exercise is not written yet stops with "not
/// written yet", and this test then fails until it is).
fn assert_timed(labs: &[&str], labels: &[&str], stdout: &str) {
    let missing: Vec<&str> = labs
        .iter()
        .copied()
        .filter(|lab| !labels.contains(lab))
        .collect();
    let notes: Vec<&str> = stdout
        .lines()
        .filter(|line| {
            missing
                .iter()
                .any(|lab| line.starts_with(&format!("- {lab}")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "bench timed no run of {}: {}{}",
        missing.join(", "),
        notes.join("; "),
        match notes.iter().any(|note| note.contains("not written yet")) {
            true =>
                " (this test times lab01 and lab02: it passes once their exercises are written)",
            false => "",
        }
    );
}

#[test]
fn a_lab_without_rows_is_named_with_why() {
    let stdout = "| lab | size |\n\n- lab02: failed after 0 run(s): lab02-rayon/src/main.rs:90: \
                  not written yet: the planned rows\n";
    let failure =
        std::panic::catch_unwind(|| assert_timed(&["lab01", "lab02"], &["lab01"], stdout));
    let message = failure
        .err()
        .and_then(|panic| panic.downcast_ref::<String>().cloned())
        .expect("lab02 has no rows: the check fails");
    assert!(
        message.starts_with("bench timed no run of lab02: - lab02: failed after 0 run(s): "),
        "{message}"
    );
    assert!(
        message.ends_with("it passes once their exercises are written)"),
        "{message}"
    );
    assert_timed(
        &["lab01", "lab02"],
        &["lab01", "lab02", "lab02 best CPU"],
        "",
    );
}

#[test]
fn bench_writes_a_table_a_csv_and_a_chart() {
    let out = tempfile::tempdir().expect("a temporary folder");
    let stdout = bench(
        out.path(),
        &["--sizes", "16,32", "--runs", "2", "--labs", "lab01,lab02"],
    );

    let csv = std::fs::read_to_string(out.path().join("bench.csv")).expect("bench.csv");
    let mut lines = csv.lines();
    let header = fields(lines.next().expect("a header"));
    for column in [
        "lab",
        "size",
        "device",
        "runs",
        "compute_ms",
        "total_ms",
        "wall_ms",
    ] {
        assert!(
            header.iter().any(|h| h == column),
            "no {column} in {header:?}"
        );
    }
    assert!(header.contains(&"speedup_vs_lab01".to_string()));
    let rows: Vec<Vec<String>> = lines.map(fields).collect();
    let mut seen = Vec::new();
    for row in &rows {
        assert_eq!(row.len(), header.len(), "{row:?}");
        for (name, value) in header.iter().zip(row) {
            let text = name == "lab" || name == "device";
            // A phase the lab does not have (lab02 has no colour pass) is left empty.
            if !text && !value.is_empty() {
                let number: f64 = value.parse().expect("a numeric field");
                assert!(number >= 0.0, "{name} = {number}");
            }
        }
        let column = |name: &str| &row[header.iter().position(|h| h == name).expect(name)];
        assert_eq!(column("runs"), "2");
        assert!(!column("wall_ms").is_empty() && !column("total_ms").is_empty());
        seen.push(format!("{} {}", column("lab"), column("size")));
    }
    // One row per variant and size: lab01 and lab02, and any variant of lab02 ("lab02 best
    // CPU"), each at both sizes.
    seen.sort();
    let labels: Vec<&str> = seen.iter().filter_map(|s| s.strip_suffix(" 16")).collect();
    assert_timed(&["lab01", "lab02"], &labels, &stdout);
    assert!(
        labels.iter().all(|label| label.starts_with("lab0")),
        "{seen:?}"
    );
    let mut expected: Vec<String> = labels
        .iter()
        .flat_map(|label| [format!("{label} 16"), format!("{label} 32")])
        .collect();
    expected.sort();
    assert_eq!(seen, expected);

    let svg = std::fs::read_to_string(out.path().join("bench.svg")).expect("bench.svg");
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{svg:.80}"
    );
    assert!(svg.trim_end().ends_with("</svg>"));
    // Axes and ticks are polylines too: at least one line per lab, in its own colour, and
    // each lab named in the legend.
    let coloured_lines = svg
        .lines()
        .filter(|l| l.starts_with("<polyline") && l.contains("stroke-width=\"2\""))
        .count();
    assert!(
        coloured_lines >= labels.len(),
        "{coloured_lines} lines for {labels:?}"
    );
    for label in &labels {
        assert!(svg.contains(label), "{label} is not in the legend");
    }

    let markdown = std::fs::read_to_string(out.path().join("bench.md")).expect("bench.md");
    assert_eq!(
        stdout, markdown,
        "stdout shows the table written to bench.md"
    );
    assert!(markdown.contains("| lab01 | 32 |") && markdown.contains("| lab02 | 16 |"));

    let mut left: Vec<String> = std::fs::read_dir(out.path())
        .expect("the out folder")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["bench.csv", "bench.md", "bench.svg"],
        "images are deleted"
    );
}

#[test]
fn bench_refuses_bad_arguments_before_running_anything() {
    let out = tempfile::tempdir().expect("a temporary folder");
    for (args, message) in [
        (
            &["--labs", "lab05"][..],
            "--labs takes one of lab01, lab02, lab03, lab04, not lab05",
        ),
        (
            &["--include", "lab01"][..],
            "--include takes one of lab05, lab06, not lab01",
        ),
        (&["--labs", "lab09"][..], "no lab called 'lab09'"),
        (&["--sizes", "0"][..], "an image side must be between 1 and"),
        (
            &["--sizes", "-512"][..],
            "an image side must be between 1 and",
        ),
        (&["--runs", "0"][..], "--runs"),
        (
            &["--lab05-samples", "-1"][..],
            "the number of samples must be between 1 and",
        ),
        (
            &["--time-limit", "1.5"][..],
            "the time limit in seconds must be a whole number",
        ),
        (&["--bogus"][..], "unexpected argument '--bogus'"),
    ] {
        let output = xtask()
            .arg("bench")
            .arg("--out")
            .arg(out.path())
            .args(args)
            .output()
            .expect("xtask runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} accepted");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(stderr.starts_with("xtask: "), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    }
    let file = out.path().join("taken");
    std::fs::write(&file, "").expect("a file");
    let output = xtask()
        .args(["bench", "--out"])
        .arg(&file)
        .output()
        .expect("xtask runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("is a file; bench needs a folder"),
        "{stderr}"
    );
}

#[test]
fn bench_survives_a_reader_that_goes_away() {
    let out = tempfile::tempdir().expect("a temporary folder");
    let mut child = xtask()
        .arg("bench")
        .arg("--bin-dir")
        .arg(lab_bin_dir())
        .arg("--out")
        .arg(out.path())
        .args(["--sizes", "8", "--runs", "1", "--labs", "lab01"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xtask starts");
    // The reader of its stdout is gone before the table is printed (`bench | true`).
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("xtask ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        out.path().join("bench.md").is_file(),
        "the results are kept"
    );
}

#[test]
fn run_says_where_the_labs_arguments_go() {
    let output = xtask()
        .args(["run", "lab01", "64", "64"])
        .output()
        .expect("xtask runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(
        stderr.trim_end(),
        "xtask: put the lab's arguments after --: cargo xtask run lab01 -- 64 64"
    );
}

/// A missing argument is named in the one line that says so.
#[test]
fn a_missing_argument_is_named() {
    let output = xtask().arg("run").output().expect("xtask runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("were not provided: <LAB> (see --help)"),
        "{stderr}"
    );
}
