//! `xtask sanitize --emulate` end to end with a fake lab06: a shell script in a `--bin-dir`
//! folder that stops as the CPU device does, under racecheck only, and refuses to run
//! anywhere but on the CPU device.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::PermissionsExt;

use xtask_test_support::xtask;

/// lab06 on the CPU device: its racecheck run stops where a warp's store races with
/// another's load, in the driver's words as a lab prints them.
const LAB06: &str = r#"#!/bin/sh
case " $* " in
  *" --emulate "*) ;;
  *) echo "lab06: asked to run on the GPU" >&2; exit 2 ;;
esac
if [ "$LABS_EMULATE_RACECHECK" = 1 ]; then
  echo 'lab06: error: CUDA error while launching a kernel: DriverError(CUDA_ERROR_ILLEGAL_ADDRESS, "the CPU device stopped kernel `reduce_plain` at block (0, 0, 0), thread (32, 0, 0): shared store of 4 bytes at 0x4 in reduce_plain (reduce.cu line 61; PTX line 434), racecheck: thread (1, 0, 0), of another warp, loaded these bytes")' >&2
  exit 1
fi
"#;

#[test]
fn on_the_cpu_device_each_tool_runs_the_lab_there_and_a_stop_is_its_error() {
    let bins = tempfile::tempdir().expect("a folder");
    let lab06 = bins.path().join("lab06");
    fs::write(&lab06, LAB06).expect("a fake lab");
    fs::set_permissions(&lab06, fs::Permissions::from_mode(0o755)).expect("executable");
    let output = xtask()
        .args(["sanitize", "lab06", "--emulate", "--bin-dir"])
        .arg(bins.path())
        .output()
        .expect("xtask runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}");
    for row in [
        "| lab06 | memcheck | 0 | clean |",
        "| lab06 | racecheck | 1 | the CPU device stopped kernel `reduce_plain` at block (0, 0, 0), thread (32, 0, 0): shared store of 4 bytes at 0x4 in reduce_plain (reduce.cu line 61; PTX line 434), racecheck: thread (1, 0, 0), of another warp, loaded these bytes |",
        "| lab06 | synccheck | 0 | clean |",
    ] {
        assert!(stdout.contains(row), "no '{row}' in\n{stdout}\n{stderr}");
    }
    assert!(
        stderr.contains("xtask: lab06 under racecheck (the CPU device) ...")
            && stderr.contains("1 run(s) under the sanitizer reported errors or failed"),
        "{stderr}"
    );
}
