//! `cargo instructor autograder --out autograder.zip`: the zip Gradescope's programming
//! assignments take. `setup.sh` and `run_autograder` at its root, this workspace's tracked
//! files (`git ls-files`) in `workspace/`. Gradescope unpacks it into `/autograder/source`,
//! runs `setup.sh` once (Rust, bubblewrap, the build), then `run_autograder` for each
//! submission: `grade` on `/autograder/submission` into `/autograder/results/results.json`.
//! Gradescope's machines have no GPU: the GPU checks run on the CPU device (NVRTC from
//! pip), all but the kernels' speed, which is listed as graded on a GPU machine. Both
//! scripts take the root from `AUTOGRADER_ROOT` (default `/autograder`), so the zip can be
//! tried anywhere. (Gradescope's "Export Submissions" download is graded as a class by
//! `grade-class`.)

use std::fs;
use std::io::{Cursor, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use xtask::bins::workspace_root;

#[derive(clap::Args)]
pub struct Args {
    /// The zip to write (upload it as the assignment's autograder)
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub fn run(args: Args) -> Result<()> {
    // The path is checked before the work; the zip appears whole or not at all.
    let mut output = shared::output::Output::create(&args.out)?;
    let rust = rust_version()?;
    let root = workspace_root();
    let files = crate::files::tracked_files(&root)?;
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = |mode: u32| {
        zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(mode)
    };
    let scripts = [
        ("setup.sh", setup_script(&rust), 0o755),
        ("run_autograder", RUN_AUTOGRADER.to_string(), 0o755),
        (FILE_LIST, file_list(&files), 0o644),
    ];
    for (name, text, mode) in scripts {
        zip.start_file(name, options(mode))
            .and_then(|()| Ok(zip.write_all(text.as_bytes())?))
            .with_context(|| format!("cannot add {name} to the zip"))?;
    }
    for relative in &files {
        let path = root.join(relative);
        let meta = fs::symlink_metadata(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if !meta.is_file() {
            bail!(
                "{} is tracked but not a regular file; the autograder takes regular files only",
                relative.display()
            );
        }
        let bytes = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let mode = if meta.permissions().mode() & 0o111 != 0 {
            0o755
        } else {
            0o644
        };
        let name = format!("workspace/{}", relative.display());
        zip.start_file(name.as_str(), options(mode))
            .and_then(|()| Ok(zip.write_all(&bytes)?))
            .with_context(|| format!("cannot add {name} to the zip"))?;
    }
    let bytes = zip.finish().context("cannot finish the zip")?.into_inner();
    output.write_all(&bytes)?;
    output.commit()?;
    shared::cli::eprint_line(&format!(
        "xtask: wrote {}: setup.sh, run_autograder and {} files of this workspace (Rust {rust}); \
         upload it as the assignment's autograder",
        args.out.display(),
        files.len()
    ));
    Ok(())
}

/// The version of the Rust this zip is made with (`1.95.0`): Gradescope installs the same.
pub fn rust_version() -> Result<String> {
    let output = Command::new("rustc")
        .arg("--version")
        .output()
        .context("cannot run rustc (the autograder installs the Rust this zip is made with)")?;
    let text = String::from_utf8_lossy(&output.stdout);
    let version = text
        .split_whitespace()
        .nth(1)
        .filter(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .with_context(|| format!("cannot read rustc's version from '{}'", text.trim()))?;
    Ok(version.to_string())
}

/// The zip's list of the workspace's files, beside the scripts: `setup.sh` tracks these and
/// nothing else, whatever else lies in the workspace by then (NVRTC's own headers, which
/// `install` unpacks into `.nvrtc/`, say `fmad`, and a hand-out that holds them is refused).
const FILE_LIST: &str = "workspace-files";

/// One path a line: the tracked paths are this workspace's own names, none with a newline.
fn file_list(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|path| format!("{}\n", path.display()))
        .collect()
}

fn setup_script(rust: &str) -> String {
    SETUP.replace("@RUST_VERSION@", rust)
}

const SETUP: &str = r#"#!/usr/bin/env bash
# Gradescope runs this once, as root, on its Ubuntu image, when the autograder is built:
# `install` puts in Rust, bubblewrap and NVRTC (the CPU device compiles the kernels with it,
# as a GPU machine does), `build` builds the reference labs, the grader, and
# the grader's cache (the hand-out built once in the sandbox, so each submission compiles
# only what the student changed). `setup.sh build` alone is for a machine that has Rust and
# bubblewrap already. The root is $AUTOGRADER_ROOT (default /autograder).
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
WORKSPACE="$ROOT/source/workspace"
# The Rust the zip was made with.
RUST_VERSION=@RUST_VERSION@

install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends \
    bubblewrap ca-certificates curl gcc git libc6-dev util-linux python3-pip unzip
  # NVRTC's wheel, unpacked where `cargo xtask` looks for it (pip download, not install:
  # Ubuntu's Python refuses installs outside a virtual environment).
  if [ ! -f "$WORKSPACE/.nvrtc/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" ]; then
    local wheels
    wheels=$(mktemp -d)
    python3 -m pip download --quiet --no-deps -d "$wheels" nvidia-cuda-nvrtc-cu12==12.9.86
    unzip -q -o "$wheels"/*.whl -d "$WORKSPACE/.nvrtc"
    rm -rf "$wheels"
  fi
  if [ ! -x "$HOME/.cargo/bin/cargo" ]; then
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
      sh -s -- -y --profile minimal --default-toolchain "$RUST_VERSION"
  fi
}

build() {
  export PATH="$HOME/.cargo/bin:$PATH"
  cd "$WORKSPACE"
  # The grader makes the hand-out from the files git tracks: track the zip's files, as its
  # list names them, and nothing else (not NVRTC's files in .nvrtc/, nor a build's).
  if [ ! -d .git ]; then
    git init -q
    git --literal-pathspecs add -f --pathspec-from-file="$ROOT/source/workspace-files"
  fi
  cargo build --release --locked --workspace
  local instructor="${CARGO_TARGET_DIR:-$WORKSPACE/target}/release/instructor"
  local scratch
  scratch=$(mktemp -d)
  "$instructor" handout --out "$scratch/handout"
  "$instructor" grade "$scratch/handout" --build-only "$scratch/built"
  rm -rf "$scratch"
}

case "${1:-all}" in
  install) install ;;
  build) build ;;
  all) install && build ;;
  *) echo "setup.sh: say install, build or nothing (both)" >&2; exit 2 ;;
esac
"#;

const RUN_AUTOGRADER: &str = r#"#!/usr/bin/env bash
# Gradescope runs this for each submission: the student's files are in $ROOT/submission,
# the results go to $ROOT/results/results.json. Gradescope's machines have no GPU: the GPU
# checks run on the CPU device, and results.json lists the kernels' speed checks as graded
# on a GPU machine (`cargo instructor grade-class` there). The root is $AUTOGRADER_ROOT
# (default /autograder).
set -uo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
WORKSPACE="$ROOT/source/workspace"
TARGET="${CARGO_TARGET_DIR:-$WORKSPACE/target}"
RESULTS="$ROOT/results/results.json"
LOG="$ROOT/results/grade.log"
export PATH="$HOME/.cargo/bin:$PATH"
# No GPU opens: the GPU checks run on the CPU device, the speed of kernels is listed.
export CUDA_VISIBLE_DEVICES=
mkdir -p "$ROOT/results"

# A workspace uploaded as one folder (a zip of the folder) is graded from inside it.
submission="$ROOT/submission"
if [ ! -e "$submission/Cargo.toml" ]; then
  found=("$submission"/*/Cargo.toml)
  if [ "${#found[@]}" -eq 1 ] && [ -f "${found[0]}" ]; then
    submission="${found[0]%/Cargo.toml}"
  fi
fi

"$TARGET/release/instructor" grade "$submission" --bin-dir "$TARGET/release" \
  --gradescope "$RESULTS" 2>"$LOG"
status=$?
cat "$LOG" >&2
if [ "$status" -ne 0 ]; then
  # The grader's own last line says why; as JSON text, without control characters.
  why=$(tail -n 1 "$LOG" | tr -d '\000-\037' | sed 's/\\/\\\\/g; s/"/\\"/g')
  printf '{"score": 0, "output": "The autograder could not grade this submission: %s"}\n' \
    "$why" >"$RESULTS"
fi
exit 0
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_take_their_root_from_a_variable() {
        let setup = setup_script("1.95.0");
        assert!(setup.contains("RUST_VERSION=1.95.0\n"));
        for script in [setup.as_str(), RUN_AUTOGRADER] {
            assert!(script.starts_with("#!/usr/bin/env bash\n"));
            assert!(script.contains("ROOT=\"${AUTOGRADER_ROOT:-/autograder}\""));
        }
        assert!(RUN_AUTOGRADER.contains("--gradescope \"$RESULTS\""));
    }

    /// A grader that cannot grade still leaves Gradescope a results.json that says why, as
    /// JSON whatever the message holds.
    #[test]
    fn run_autograder_reports_a_grader_that_failed() {
        let root = tempfile::tempdir().expect("a temp folder");
        let release = root.path().join("source/workspace/target/release");
        fs::create_dir_all(&release).expect("created");
        fs::create_dir_all(root.path().join("submission")).expect("created");
        let fake = release.join("instructor");
        fs::write(
            &fake,
            "#!/bin/sh\necho 'progress' >&2\nprintf 'xtask: no \"sandbox\" \\\\ here\\t!\\n' >&2\nexit 1\n",
        )
        .expect("written");
        fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).expect("executable");
        let script = root.path().join("run_autograder");
        fs::write(&script, RUN_AUTOGRADER).expect("written");
        let status = Command::new("bash")
            .arg(&script)
            .env("AUTOGRADER_ROOT", root.path())
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .expect("bash runs");
        assert!(
            status.status.success(),
            "run_autograder exits 0 whatever happens"
        );
        let text = fs::read_to_string(root.path().join("results/results.json")).expect("results");
        let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(json["score"], 0);
        assert_eq!(
            json["output"],
            "The autograder could not grade this submission: xtask: no \"sandbox\" \\ here!"
        );
    }

    #[test]
    fn the_rust_version_is_read_from_rustc() {
        let version = rust_version().expect("rustc runs here");
        assert!(
            version.split('.').count() == 3 && version.split('.').all(|p| p.parse::<u32>().is_ok()),
            "{version}"
        );
    }
}
