//! lab01 from the outside: the given C program's images (its committed digests, and the
//! program itself where a C compiler is present), a few pixels derived by hand, bad input.

#![allow(clippy::unwrap_used)] // a test that cannot set itself up should panic

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use sha2::{Digest, Sha256};
use shared::testing::{
    assert_fails_cleanly, assert_missing_directory_fails, assert_rejects_bad_sizes,
    assert_says_where_it_wrote, describe_difference, reference_ppm, render,
};

/// SHA-256 of the given program's images (written by `reference/digests.sh`).
const DIGESTS: &str = include_str!("../reference/digests.txt");

/// Set to skip the comparison with the C program knowingly, on a machine without a C
/// compiler (`cargo xtask test` sets it there, and says so in its summary).
const NO_C_COMPILER: &str = "LAB01_NO_C_COMPILER";

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Each committed case: its digest, and lab01's arguments for it.
fn digest_cases() -> Vec<(&'static str, Vec<&'static str>)> {
    DIGESTS
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let args = match words[..] {
                [_, width, height] => vec![width, height],
                [_, width, height, cx, cy, scale] => {
                    vec![width, height, "--cx", cx, "--cy", cy, "--scale", scale]
                }
                _ => panic!("bad line in reference/digests.txt: {line}"),
            };
            (words[0], args)
        })
        .collect()
}

/// The committed cases whose image, as `render` makes it, has another digest than the given
/// program's, as `lab01 ARGS` lines; a message naming them, or `None` when all match.
fn digest_mismatches(what: &str, render: impl Fn(&[&str]) -> Vec<u8>) -> Option<String> {
    let cases = digest_cases();
    assert!(cases.len() >= 8, "reference/digests.txt lost its cases");
    let differing: Vec<String> = cases
        .iter()
        .filter(|(digest, args)| sha256_hex(&render(args)) != *digest)
        .map(|(_, args)| format!("`lab01 {}`", args.join(" ")))
        .collect();
    (!differing.is_empty()).then(|| {
        format!(
            "{what} is no longer the given program's image (reference/digests.txt) for {} of \
             the {} committed cases: {}; some pixel changed (byte_identical_to_the_given_c_program \
             says which, where a C compiler is found)",
            differing.len(),
            cases.len(),
            differing.join(", ")
        )
    })
}

#[test]
fn images_match_the_committed_digests_of_the_given_program() {
    if let Some(message) = digest_mismatches("lab01's image", |args| render("lab01", args)) {
        panic!("{message}");
    }
}

#[test]
fn the_in_process_reference_matches_the_committed_digests() {
    // The other labs' tests compare with `reference_ppm`; this pins it to the C program too.
    if let Some(message) = digest_mismatches("shared::testing::reference_ppm", reference_ppm) {
        panic!("{message}");
    }
}

/// The system C compiler (`$CC`, else `cc`, else `gcc`), if one runs.
fn c_compiler() -> Option<String> {
    let candidates = std::env::var("CC")
        .into_iter()
        .chain(["cc".into(), "gcc".into()]);
    candidates.into_iter().find(|cc| {
        std::process::Command::new(cc)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Build reference/mandelbrot.c in `dir` as its header says: no contracted multiply-adds.
fn build_c_program(cc: &str, dir: &Path) -> PathBuf {
    // `xtask test --bin-dir` names the copy in its dist folder: the path built in is the
    // build machine's.
    let source = std::env::var_os("LAB01_C_REFERENCE").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("reference/mandelbrot.c"),
        PathBuf::from,
    );
    let exe = dir.join("mandelbrot");
    let output = std::process::Command::new(cc)
        .args(["-O2", "-ffp-contract=off"])
        .arg(&source)
        .args(["-lm", "-o"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{cc} could not build reference/mandelbrot.c:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    exe
}

#[test]
fn byte_identical_to_the_given_c_program() {
    let Some(cc) = c_compiler() else {
        assert!(
            std::env::var_os(NO_C_COMPILER).is_some(),
            "no C compiler found ($CC, cc or gcc): install one to compare lab01 with \
             reference/mandelbrot.c, or set {NO_C_COMPILER}=1 to skip this comparison \
             knowingly (the committed digests are still checked)"
        );
        shared::cli::eprint_line(&format!(
            "{NO_C_COMPILER} is set: lab01 is not compared with the C program here"
        ));
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c_program(&cc, dir.path());
    // Odd, non-square, one-pixel-wide, off the real axis, in the period-2 bulb, zoomed deep.
    let cases: [[&str; 5]; 8] = [
        ["1", "1", "-0.6", "0", ""],
        ["3", "1", "-0.6", "0", ""],
        ["1", "9", "-0.6", "0", ""],
        ["97", "61", "-0.6", "0", ""],
        ["257", "128", "-0.6", "0.25", "0.0117"],
        ["160", "120", "-1.0", "0.01", "0.004"],
        [
            "200",
            "150",
            "-0.7436438870371587",
            "0.1318259042053119",
            "3e-13",
        ],
        ["120", "90", "0.28", "0.0085", "0.00002"],
    ];
    for [width, height, cx, cy, scale] in cases {
        let c_file = dir.path().join("c.ppm");
        let mut c = std::process::Command::new(&exe);
        c.args([width, height]).arg(&c_file);
        let mut args = vec![width, height];
        if !scale.is_empty() {
            c.args([cx, cy, scale]);
            args.extend(["--cx", cx, "--cy", cy, "--scale", scale]);
        }
        assert!(c.output().unwrap().status.success(), "the C program failed");
        if let Some(difference) =
            describe_difference(&std::fs::read(&c_file).unwrap(), &render("lab01", &args))
        {
            panic!(
                "`lab01 {}` differs from reference/mandelbrot.c: {difference}",
                args.join(" ")
            );
        }
    }
}

/// The pixel at image row `i`, column `j` (the file stores the bottom row first).
fn pixel(file: &[u8], width: usize, height: usize, i: usize, j: usize) -> [u8; 3] {
    let header = format!("P6\n{width} {height}\n255\n").len();
    let at = header + ((height - 1 - i) * width + j) * 3;
    [file[at], file[at + 1], file[at + 2]]
}

#[test]
fn writes_a_p6_header_and_every_pixel() {
    let file = render("lab01", &["7", "5"]);
    assert!(file.starts_with(b"P6\n7 5\n255\n"));
    assert_eq!(file.len(), "P6\n7 5\n255\n".len() + 7 * 5 * 3);
}

#[test]
fn pixels_match_values_worked_out_by_hand() {
    // 64 x 64: scale = 4/64 = 1/16, x = (j - 32)/16 - 0.6, y = (i - 32)/16.
    let file = render("lab01", &["64", "64"]);
    // i = 32, j = 40: c = -0.1, well inside the main cardioid: black.
    assert_eq!(pixel(&file, 64, 64, 32, 40), [0, 0, 0]);
    // j = 0: c = -2.6. z1 = c, |z1|^2 = 6.76 >= 4: the loop runs once, counter 1,
    // palette entry 1.
    assert_eq!(pixel(&file, 64, 64, 32, 0), [25, 7, 26]);
    // j = 63: c = 1.3375. z1 = 1.3375 (|z|^2 = 1.79), z2 = 1.3375^2 + 1.3375 = 3.126
    // (|z|^2 = 9.77): counter 2, palette entry 2.
    assert_eq!(pixel(&file, 64, 64, 32, 63), [9, 1, 47]);
    // i = 32, j = 26: c = -0.975, inside the period-2 bulb. It never escapes: the counter
    // wraps to 0, black (the 1/16 quirk means it is iterated in full first).
    assert_eq!(pixel(&file, 64, 64, 32, 26), [0, 0, 0]);
}

#[test]
fn default_output_name_and_json_report() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::cargo_bin("lab01")
        .unwrap()
        .current_dir(dir.path())
        .args(["16", "8", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(dir.path().join("cpu-mandelbrot.ppm").is_file());
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["lab"], "lab01");
    assert_eq!(report["width"], 16);
    for phase in ["compute", "colour", "write", "total"] {
        assert!(
            report["phases_ms"][phase].as_f64().unwrap() >= 0.0,
            "{phase}"
        );
    }
}

#[test]
fn says_where_it_wrote_the_image() {
    assert_says_where_it_wrote("lab01", &["16", "8"], "cpu-mandelbrot.ppm", "16x8");
}

#[test]
fn rejects_bad_sizes() {
    assert_rejects_bad_sizes("lab01");
}

#[test]
fn rejects_views_that_are_not_finite_or_not_positive() {
    for (flag, value) in [
        ("--cx", "inf"),
        ("--cx", "NaN"),
        ("--cy", "-1e999"),
        ("--scale", "0"),
        ("--scale", "-0.01"),
        ("--scale", "inf"),
        ("--scale", "nan"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::cargo_bin("lab01").unwrap();
        command
            .args(["8", "8", flag, value, "-o"])
            .arg(dir.path().join("out.ppm"));
        let message = assert_fails_cleanly(&mut command, "lab01", dir.path());
        assert!(message.contains(flag), "{flag} {value}: {message}");
    }
}

#[test]
fn missing_output_directory_is_one_clear_line() {
    assert_missing_directory_fails("lab01");
}

#[test]
fn failed_run_leaves_an_existing_image_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("good.ppm");
    std::fs::write(&target, b"a good image").unwrap();
    // A directory where the file should go: the write must fail, and nothing may change.
    let blocked = dir.path().join("blocked.ppm");
    std::fs::create_dir(&blocked).unwrap();
    let output = Command::cargo_bin("lab01")
        .unwrap()
        .args(["8", "8", "-o"])
        .arg(&blocked)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert_eq!(std::fs::read(&target).unwrap(), b"a good image");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "no temporary file left"
    );
}
