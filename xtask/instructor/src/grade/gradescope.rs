//! Gradescope, both ways round:
//! - `cargo instructor autograder --out autograder.zip`: the zip Gradescope's programming
//!   assignments take. `setup.sh` and `run_autograder` at its root, this workspace's tracked
//!   files (`git ls-files`) in `workspace/`. Gradescope unpacks it into `/autograder/source`,
//!   runs `setup.sh` once (Rust, bubblewrap, the build), then `run_autograder` for each
//!   submission: `grade` on `/autograder/submission` into `/autograder/results/results.json`,
//!   Gradescope's machines have no GPU: the GPU checks run on the CPU device (NVRTC from
//!   pip), all but the kernels' speed, which is listed as graded on a GPU machine. Both scripts take the root from `AUTOGRADER_ROOT`
//!   (default `/autograder`), so the zip can be tried anywhere.
//! - Its "Export Submissions" download, graded as a class: `submission_metadata.yml` says
//!   which students each `submission_ID/` folder belongs to ([`export_students`]).

use std::collections::BTreeMap;
use std::fs;
use std::io::{Cursor, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use yaml_rust2::parser::{Event, EventReceiver, Parser};
use yaml_rust2::{Yaml, YamlLoader};

use xtask::bins::workspace_root;

/// The export's list of submissions and their students.
pub const METADATA: &str = "submission_metadata.yml";

/// The largest metadata file read: a class of 500 takes about 200 KB.
const MAX_METADATA_BYTES: u64 = 4 << 20;

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
        ("setup.sh", setup_script(&rust)),
        ("run_autograder", RUN_AUTOGRADER.to_string()),
    ];
    for (name, text) in scripts {
        zip.start_file(name, options(0o755))
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
fn rust_version() -> Result<String> {
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
  # The grader makes the hand-out from the files git tracks: track the zip's files.
  if [ ! -d .git ]; then
    git init -q
    git add -A -f
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
# on a GPU machine (`cargo instructor grade --class` there). The root is $AUTOGRADER_ROOT
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

/// For each submission folder of a Gradescope export, its students (SID, else email, else
/// name); `None` where `dir` has no `submission_metadata.yml`.
pub fn export_students(dir: &Path) -> Result<Option<BTreeMap<String, Vec<String>>>> {
    let path = dir.join(METADATA);
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("cannot read {} ({e})", path.display()),
    };
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() || meta.len() > MAX_METADATA_BYTES {
        bail!(
            "{} is not a regular file of at most 4 MiB; give the folder Gradescope's export unpacks to",
            path.display()
        );
    }
    let mut text = String::new();
    file.take(MAX_METADATA_BYTES)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {} as UTF-8 text", path.display()))?;
    parse_metadata(&text)
        .map(Some)
        .with_context(|| format!("{} is not Gradescope's export metadata", path.display()))
}

/// Counts the aliases of a YAML text: the loader copies what an alias names, so a few lines
/// of aliases to aliases would fill the memory. Gradescope writes none.
struct Aliases(usize);

impl EventReceiver for Aliases {
    fn on_event(&mut self, event: Event) {
        if matches!(event, Event::Alias(_)) {
            self.0 += 1;
        }
    }
}

fn parse_metadata(text: &str) -> Result<BTreeMap<String, Vec<String>>> {
    let mut aliases = Aliases(0);
    Parser::new_from_str(text)
        .load(&mut aliases, true)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if aliases.0 > 0 {
        bail!("it uses YAML aliases, which Gradescope's export never does");
    }
    let docs = YamlLoader::load_from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
    let Some(Yaml::Hash(top)) = docs.first() else {
        bail!("it is not a mapping of submission folders");
    };
    let mut students = BTreeMap::new();
    for (folder, record) in top {
        let Some(folder) = folder.as_str() else {
            continue;
        };
        let mut ids = Vec::new();
        if let Yaml::Array(submitters) = &record[":submitters"] {
            for submitter in submitters {
                let id = [":sid", ":email", ":name"]
                    .into_iter()
                    .filter_map(|key| scalar(&submitter[key]))
                    .find(|value| !value.trim().is_empty());
                if let Some(id) = id {
                    // One line of text: a name is the student's own to choose.
                    let id: String = id
                        .trim()
                        .chars()
                        .map(|c| if c.is_control() { ' ' } else { c })
                        .collect();
                    ids.push(id);
                }
            }
        }
        students.insert(folder.to_string(), ids);
    }
    Ok(students)
}

/// A scalar as text: SIDs may be written as numbers.
fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The form of Gradescope's export (Ruby symbols as keys), with a group submission.
    const EXPORT: &str = "\
submission_1001:
  :submitters:
  - :name: Ada Lovelace
    :sid: '2001'
    :email: ada@example.edu
  :created_at: 2026-03-01 10:00:00.000000000 -08:00
  :score: 14.0
submission_1002:
  :submitters:
  - :name: Pair One
    :sid: 2002
    :email: one@example.edu
  - :name: Pair Two
    :sid: ''
    :email: two@example.edu
submission_1003:
  :submitters:
  - :name: Only A Name
";

    #[test]
    fn the_export_names_each_folders_students() {
        let students = parse_metadata(EXPORT).expect("parsed");
        assert_eq!(students["submission_1001"], ["2001"]);
        assert_eq!(students["submission_1002"], ["2002", "two@example.edu"]);
        assert_eq!(students["submission_1003"], ["Only A Name"]);
    }

    #[test]
    fn aliases_and_other_shapes_are_refused() {
        let bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\n";
        let error = parse_metadata(bomb).expect_err("aliases").to_string();
        assert!(error.contains("aliases"), "{error}");
        assert!(parse_metadata("- just\n- a list\n").is_err());
        assert!(parse_metadata("a: [unclosed\n").is_err());
    }

    #[test]
    fn a_folder_without_metadata_is_no_export() {
        let dir = tempfile::tempdir().expect("a temp folder");
        assert!(export_students(dir.path()).expect("read").is_none());
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join(METADATA)).expect("a link");
        assert!(export_students(dir.path()).is_err(), "a link is refused");
    }

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
