//! `--simd` and `--shortcuts`, alone and together, write exactly plain lab02's bytes.

use shared::testing::{json_report, render};

const SWITCHES: [&[&str]; 3] = [&["--simd"], &["--shortcuts"], &["--simd", "--shortcuts"]];

fn assert_variants_match_plain(args: &[&str]) {
    let plain = render("lab02", args);
    for switches in SWITCHES {
        let variant = render("lab02", &[args, switches].concat());
        assert!(
            variant == plain,
            "lab02 {} differs from plain lab02 {}",
            [args, switches].concat().join(" "),
            args.join(" ")
        );
    }
}

#[test]
fn variants_are_byte_identical_at_odd_and_non_square_sizes() {
    for size in [
        ["1", "1"],
        ["2", "3"],
        ["7", "5"],
        ["64", "48"],
        ["333", "517"],
    ] {
        assert_variants_match_plain(&size);
    }
}

#[test]
fn variants_are_byte_identical_in_zooms_and_off_axis_views() {
    for view in [
        // The period-2 bulb's edge, where its early exit borders escaping points.
        &[
            "161", "97", "--cx", "-1.25", "--cy", "0.01", "--scale", "0.0005",
        ][..],
        // The cardioid's neck and cusp.
        &[
            "120", "91", "--cx", "-0.75", "--cy", "0.0", "--scale", "0.0002",
        ],
        &[
            "99", "100", "--cx", "0.26", "--cy", "0.0", "--scale", "0.0001",
        ],
        // Off the real axis: only some rows (or none) have an exact mirror.
        &["200", "151", "--cy", "0.3"],
        &["150", "150", "--cy", "1e-17"],
    ] {
        assert_variants_match_plain(view);
    }
}

#[test]
fn the_report_names_the_lanes_and_the_rows_computed() {
    let plain = json_report("lab02", &["64", "49"]);
    assert_eq!(plain.metrics["lanes"], "none");
    assert_eq!(plain.metrics["computed_rows"], 49);

    let best = json_report("lab02", &["64", "49", "--simd", "--shortcuts"]);
    let lanes = best.metrics["lanes"].as_str().expect("lanes is a string");
    assert!(lanes.contains("f64 lanes"), "{lanes}");
    // The default view mirrors every row but the middle one at odd heights.
    assert_eq!(best.metrics["computed_rows"], 25);
    assert!(best.phases_ms.contains_key("compute"));
}
