//! `cargo instructor classroom --out DIR`: the labs as an assignment of Classroom 50
//! (github.com/foundation50/classroom50), an open-source tool that hands out and grades
//! assignments through GitHub. Into DIR go the files of the assignment in the course's
//! `classroom50` configuration repository (the paths below are that repository's):
//!
//! - `autograders/SLUG/autograder.py` and `checks.json`: the autograder Classroom 50's runner
//!   runs in the student's repository on every submission (an assignment's autograder is
//!   `CLASSROOM/autograders/SLUG/autograder.py`, its sibling files beside it; it must write
//!   `./result.json` of schema `classroom50/result/v1`: wiki/Autograders.md,
//!   schemas/result-v1.schema.json). It runs one command per visible check of the rubric that
//!   the runner can make (no speed against a solution the student does not have), worth the
//!   check's points, after a set-up row worth none (NVRTC from pip; the CPU device built
//!   where the GPU labs' kernels run on it);
//! - `runtime.json`: the assignment's `runtime` (schemas/assignments-v1.schema.json): GitHub's
//!   `ubuntu-latest` with this workspace's Rust, the GPU labs on the CPU device; or, with
//!   `--gpu-runner LABEL`, the course's self-hosted GPU runner (`runs-on: [self-hosted,
//!   LABEL]`), where Classroom 50 sets up no toolchain (the runner's image has Rust and the
//!   driver) and the GPU labs run on its GPU;
//! - `assignments.json`: the assignment's entry as Classroom 50 keeps it
//!   (`classroom50/assignments/v1`), the runtime in it.
//!
//! All of it is feedback, run by the student's repository on the student's own code: the
//! hidden and speed checks, and the grade of record, come from `cargo instructor
//! grade-class` on the instructor's machine, in a sandbox, on the folder `gh teacher download`
//! clones.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::rubric::{words, Check, Rubric, Test};
use lab05_buddhabrot::config::Backend;
use xtask::labs;

/// The autograder, the same for every course: what it runs is in `checks.json`.
const AUTOGRADER: &str = include_str!("autograder.py");

/// Seconds each check may take: the first one compiles the labs.
const CHECK_SECONDS: u64 = 30 * 60;

/// The GitHub-hosted runner, when the course has no GPU runner.
const HOSTED: &str = "ubuntu-latest";

#[derive(clap::Args)]
pub struct Args {
    /// Where the assignment's files go: DIR/assignments.json, DIR/runtime.json and
    /// DIR/autograders/SLUG/ (autograder.py, checks.json)
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The assignment's slug in Classroom 50: lower-case letters, digits and hyphens
    #[arg(long, default_value = "gpu-labs", value_parser = slug)]
    slug: String,
    /// The assignment's name, as students see it
    #[arg(long, default_value = "GPU porting labs")]
    name: String,
    /// The label of the course's self-hosted runner with an NVIDIA GPU (its image has Rust):
    /// the GPU labs' checks run on its GPU, not on the CPU device of a GitHub-hosted runner
    #[arg(long, value_name = "LABEL", value_parser = label)]
    gpu_runner: Option<String>,
}

/// Where the checks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    /// A GitHub-hosted runner: no GPU, the GPU labs on the CPU device.
    Hosted,
    /// The course's self-hosted GPU runner.
    Gpu,
}

pub fn run(args: Args) -> Result<()> {
    let rubric = Rubric::load()?;
    let runner = match args.gpu_runner {
        Some(_) => Runner::Gpu,
        None => Runner::Hosted,
    };
    let checks = checks(&rubric, runner)?;
    let runtime = runtime(args.gpu_runner.as_deref())?;
    let assignments = json!({
        "schema": "classroom50/assignments/v1",
        "assignments": [entry(&args.slug, &args.name, &runtime)],
    });
    let grader = args.out.join("autograders").join(&args.slug);
    let files = [
        (args.out.join("assignments.json"), pretty(&assignments)?),
        (args.out.join("runtime.json"), pretty(&runtime)?),
        (grader.join("checks.json"), pretty(&checks)?),
        (grader.join("autograder.py"), AUTOGRADER.to_string()),
    ];
    std::fs::create_dir_all(&grader)
        .with_context(|| format!("cannot create {}", grader.display()))?;
    for (path, text) in &files {
        shared::output::write_file(path, text.as_bytes())?;
    }
    let points: u64 = checks["checks"]
        .as_array()
        .map(|all| all.iter().filter_map(|c| c["points"].as_u64()).sum())
        .unwrap_or(0);
    shared::cli::eprint_line(&format!(
        "xtask: wrote {}: assignment {} ({} checks worth {points} points, {}); put \
         autograders/{} in the classroom's folder of your classroom50 repository and add the \
         assignment with its runtime.json (INSTRUCTORS.md says how)",
        args.out.display(),
        args.slug,
        checks["checks"].as_array().map_or(0, Vec::len),
        match runner {
            Runner::Hosted => "the GPU labs on the CPU device of ubuntu-latest",
            Runner::Gpu => "the GPU labs on the GPU runner",
        },
        args.slug,
    ));
    Ok(())
}

/// JSON as the files hold it: indented, one final newline.
fn pretty(value: &Value) -> Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

/// An assignment slug as Classroom 50 takes one (`^[a-z0-9][a-z0-9-]{1,38}$`,
/// schemas/assignments-v1.schema.json's `shortName`).
fn slug(text: &str) -> Result<String, String> {
    let ok = (2..=39).contains(&text.len())
        && !text.starts_with('-')
        && text
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-');
    if ok {
        Ok(text.to_string())
    } else {
        Err("2 to 39 lower-case letters, digits and hyphens, not starting with a hyphen".into())
    }
}

/// A runner label as Classroom 50 takes one (`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`, the
/// schema's `runs-on`).
fn label(text: &str) -> Result<String, String> {
    let ok = (1..=64).contains(&text.len())
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(&c));
    if ok {
        Ok(text.to_string())
    } else {
        Err("1 to 64 letters, digits, '.', '_' and '-', starting with a letter or digit".into())
    }
}

/// The assignment's `runtime`: the GPU runner by its labels (Classroom 50 sets up no
/// toolchain on a self-hosted runner), else `ubuntu-latest` with this workspace's Rust.
pub fn runtime(gpu_runner: Option<&str>) -> Result<Value> {
    Ok(match gpu_runner {
        Some(label) => json!({ "runs-on": ["self-hosted", label] }),
        None => json!({ "runs-on": HOSTED, "rust": crate::autograder::rust_version()? }),
    })
}

/// The assignment's entry of `assignments.json`: one repository per student, Classroom 50's
/// own workflow (`default`) running `autograders/SLUG/autograder.py`.
pub fn entry(slug: &str, name: &str, runtime: &Value) -> Value {
    json!({
        "slug": slug,
        "name": name,
        "mode": "individual",
        "autograder": "default",
        "runtime": runtime,
    })
}

/// Whether a runner can make `check`: visible, no solution to compare with (a speed check),
/// nothing but the hand-out's own programs.
pub fn on_runner(check: &Check) -> bool {
    let kind = matches!(
        check.test,
        Test::Image {
            max_differing: 0,
            ..
        } | Test::Sums { kernel: None, .. }
            | Test::Canvas { .. }
    );
    kind && !check.hidden
}

/// `checks.json`: the set-up, where NVRTC goes, and the checks a runner can make, in the
/// rubric's order, each with its command and whole points.
pub fn checks(rubric: &Rubric, runner: Runner) -> Result<Value> {
    let mut checks = Vec::new();
    let mut per_lab = std::collections::BTreeMap::<&str, usize>::new();
    for check in rubric.checks.iter().filter(|c| on_runner(c)) {
        let number = per_lab.entry(check.lab.name).or_insert(0);
        *number += 1;
        let id = format!("{}-{number}", check.lab.name);
        if check.points.fract() != 0.0 || check.points < 1.0 {
            bail!(
                "{}: Classroom 50 scores whole points, this check has {}",
                check.name(),
                check.points
            );
        }
        checks.push(json!({
            "name": check.name(),
            "command": command(check, &id, runner)?,
            "points": check.points as u64,
            "timeout": CHECK_SECONDS,
        }));
    }
    if checks.is_empty() {
        bail!("the rubric has no visible check a runner can make: nothing for Classroom 50");
    }
    Ok(json!({
        "setup": { "name": "setup", "command": setup(runner), "timeout": CHECK_SECONDS },
        "library_path": format!("{}/{}", xtask::nvrtc::NVRTC_FOLDER, shared::nvrtc::PIP_FOLDER),
        "checks": checks,
    }))
}

/// The set-up: NVRTC from pip where the labs look for it (the kernels are compiled by it on
/// a GPU and on the CPU device alike), and the CPU device where the kernels run on it.
fn setup(runner: Runner) -> String {
    let mut line = format!("set -e; {}", xtask::nvrtc::NVRTC_INSTALL);
    if runner == Runner::Hosted {
        line.push_str("; cargo build --release --locked --quiet -p cpu-device");
    }
    line
}

/// The shell command that passes (exits 0) when the check would.
fn command(check: &Check, id: &str, runner: Runner) -> Result<String> {
    let package = |lab: &str| -> Result<&'static str> { Ok(labs::find(lab)?.package) };
    let run = |lab: &str, args: &[String]| -> Result<String> {
        let mut line = format!(
            "cargo run --release --locked --quiet -p {} --",
            package(lab)?
        );
        for arg in args {
            line.push(' ');
            line.push_str(&quote(arg));
        }
        Ok(line)
    };
    // A GPU lab's kernels run on the CPU device, unless the runner has a GPU.
    let emulate = shared::gpu::DeviceArg {
        emulate: check.needs_gpu() && runner == Runner::Hosted,
        ..Default::default()
    };
    // There, the smaller work the rubric gives the CPU device, as the grader's.
    let test = check.test_on(emulate.emulate);
    let emulate = words(&emulate.to_args());
    match test {
        Test::Image {
            size,
            view,
            max_differing: 0,
            ..
        } => {
            let image = |name: &str| -> Vec<String> {
                let args = shared::view::MandelbrotArgs {
                    output: Some(format!("{id}-{name}.ppm").into()),
                    ..view.lab_args(*size)
                };
                words(&args.to_args())
            };
            let student = [image("student"), emulate].concat();
            Ok(format!(
                "{} && {} && cmp {id}-reference.ppm {id}-student.ppm",
                run(check.lab.name, &student)?,
                run("lab01", &image("reference"))?,
            ))
        }
        Test::Sums {
            kernel: None,
            args,
            variants,
        } => {
            // lab06 checks each variant's sum against its exact total and exits non-zero
            // on any wrong one.
            let args = lab06_generics_vs_virtual::cli::Args {
                variants: variants.iter().map(|v| v.variant()).collect(),
                ..args.lab_args()
            };
            run(check.lab.name, &[words(&args.to_args()), emulate].concat())
        }
        Test::Canvas { args, .. } => {
            // The GPU canvas, on the CPU device, must be the CPU backend's, counter for counter.
            let canvas = |backend: Backend, name: &str| -> Vec<String> {
                let all = lab05_buddhabrot::config::Args {
                    raw: Some(format!("{id}-{name}.raw").into()),
                    output: format!("{id}-{name}.png").into(),
                    ..args.lab_args(backend)
                };
                words(&all.to_args())
            };
            Ok(format!(
                "{} && {} && cmp {id}-cpu.raw {id}-gpu.raw",
                run(check.lab.name, &canvas(Backend::Cpu, "cpu"))?,
                run(
                    check.lab.name,
                    &[canvas(Backend::Gpu, "gpu"), emulate].concat()
                )?,
            ))
        }
        _ => bail!(
            "{}: no command a runner can run for this kind of check",
            check.name()
        ),
    }
}

/// A word for the shell, quoted unless it is plainly safe.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-+=,:/".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command of the check named `id` (`lab02-1`) on `runner`.
    fn command_of(id: &str, runner: Runner) -> String {
        let rubric = Rubric::load().expect("the rubric");
        let (lab, number) = id.split_once('-').expect("LAB-N");
        let number: usize = number.parse().expect("N");
        let check = rubric
            .checks
            .iter()
            .filter(|c| on_runner(c) && c.lab.name == lab)
            .nth(number - 1)
            .expect("the check");
        command(check, id, runner).expect("a command")
    }

    #[test]
    fn an_image_check_compares_with_lab01() {
        assert_eq!(
            command_of("lab02-1", Runner::Hosted),
            "cargo run --release --locked --quiet -p lab02-rayon -- 333 517 --cy 0.25 -o \
             lab02-1-student.ppm && cargo run --release --locked --quiet -p lab01-cpu-baseline \
             -- 333 517 --cy 0.25 -o lab02-1-reference.ppm && cmp lab02-1-reference.ppm \
             lab02-1-student.ppm"
        );
    }

    /// A flag of the rubric's lost, moved or given to one backend only, or the GPU's canvas
    /// made without the CPU device on a runner with no GPU (or with it on the GPU runner),
    /// and the check would compare other canvases. On the CPU device, the smaller work the
    /// rubric gives it there (`on_cpu_device`), as the grader's.
    #[test]
    fn a_canvas_check_compares_the_gpu_canvas_with_the_cpu_one() {
        let run = "cargo run --release --locked --quiet -p lab05-buddhabrot --";
        let canvases = |samples: &str| {
            let args = format!("--samples {samples} --seed 7");
            // The CPU backend is lab05's default: its flag is left out, as every default is.
            let gpu =
                format!("{run} --backend gpu {args} -o lab05-1-gpu.png --raw lab05-1-gpu.raw");
            let cpu = format!("{run} {args} -o lab05-1-cpu.png --raw lab05-1-cpu.raw");
            (cpu, gpu)
        };
        let (cpu, gpu) = canvases("400000");
        assert_eq!(
            command_of("lab05-1", Runner::Hosted),
            format!("{cpu} && {gpu} --emulate && cmp lab05-1-cpu.raw lab05-1-gpu.raw")
        );
        let (cpu, gpu) = canvases("4000000");
        assert_eq!(
            command_of("lab05-1", Runner::Gpu),
            format!("{cpu} && {gpu} && cmp lab05-1-cpu.raw lab05-1-gpu.raw")
        );
    }

    /// checks.json holds every check a runner can make, with the rubric's points, and the
    /// set-up the CPU device needs only where the kernels run on it.
    #[test]
    fn the_checks_are_the_rubrics_visible_ones() {
        let rubric = Rubric::load().expect("the rubric");
        let expected: Vec<&Check> = rubric.checks.iter().filter(|c| on_runner(c)).collect();
        assert!(expected.len() >= 4, "lab02's images and lab06's CPU sums");
        for runner in [Runner::Hosted, Runner::Gpu] {
            let plan = checks(&rubric, runner).expect("checks");
            let all = plan["checks"].as_array().expect("an array");
            assert_eq!(all.len(), expected.len());
            for (row, check) in all.iter().zip(&expected) {
                assert_eq!(row["name"].as_str(), Some(check.name().as_str()));
                assert_eq!(row["points"].as_f64(), Some(check.points));
                assert_eq!(row["timeout"].as_u64(), Some(CHECK_SECONDS));
                let line = row["command"].as_str().expect("a command");
                assert!(line.starts_with("cargo run --release --locked"), "{line}");
                assert_eq!(
                    line.contains("--emulate"),
                    runner == Runner::Hosted && check.needs_gpu(),
                    "{line}"
                );
            }
            let setup = plan["setup"]["command"].as_str().expect("the set-up");
            assert!(setup.contains("nvidia-cuda-nvrtc-cu12"), "{setup}");
            assert_eq!(setup.contains("-p cpu-device"), runner == Runner::Hosted);
            assert_eq!(plan["library_path"], ".nvrtc/nvidia/cuda_nvrtc/lib");
        }
    }

    #[test]
    fn words_are_quoted() {
        assert_eq!(quote("-0.74364"), "-0.74364");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn slugs_and_labels_are_classroom_50s() {
        assert!(slug("gpu-labs").is_ok());
        for bad in ["G", "gpu labs", "-gpu", "gpu_labs", &"a".repeat(40)] {
            assert!(slug(bad).is_err(), "{bad}");
        }
        assert!(label("gpu").is_ok() && label("a100.x-2_b").is_ok());
        for bad in ["", "-gpu", "gpu label", "gpu\n", &"a".repeat(65)] {
            assert!(label(bad).is_err(), "{bad:?}");
        }
    }

    /// classroom50/result/v1 as Classroom 50 publishes it (foundation50/classroom50,
    /// schemas/result-v1.schema.json, and the cross-field rules its description says the
    /// runner and collect-scores enforce in code): every rule checked, so that a result.json
    /// Classroom 50 would refuse fails here.
    fn assert_result_v1(result: &Value) {
        let object = result.as_object().expect("an object");
        let required = [
            "schema",
            "classroom",
            "assignment",
            "assignment_type",
            "owner",
            "submission",
            "commit",
            "release",
            "review",
            "datetime",
            "score",
            "max-score",
            "tests",
        ];
        for key in required {
            assert!(object.contains_key(key), "{key} missing: {result}");
        }
        for key in object.keys() {
            let optional = ["graded_at", "submitted_by"].contains(&key.as_str());
            assert!(
                required.contains(&key.as_str()) || optional,
                "{key} not in the schema"
            );
        }
        assert_eq!(result["schema"], "classroom50/result/v1");
        for key in [
            "classroom",
            "assignment",
            "owner",
            "commit",
            "release",
            "review",
        ] {
            assert!(result[key].as_str().is_some_and(|s| !s.is_empty()), "{key}");
        }
        assert!(["individual", "group"]
            .contains(&result["assignment_type"].as_str().expect("a string")));
        assert!(result["submission"]
            .as_str()
            .expect("a string")
            .starts_with("submit/"));
        let utc = |key: &str| {
            let text = result[key].as_str().expect("a string").as_bytes();
            let shape = b"dddd-dd-ddTdd:dd:ddZ";
            assert!(
                text.len() == shape.len()
                    && text.iter().zip(shape).all(|(c, s)| match s {
                        b'd' => c.is_ascii_digit(),
                        s => c == s,
                    })
                    && (b"00".as_slice()..=b"23".as_slice()).contains(&&text[11..13])
                    && text[14] <= b'5'
                    && text[17] <= b'5',
                "{key}: {}",
                result[key]
            );
        };
        utc("datetime");
        if object.contains_key("graded_at") {
            utc("graded_at");
        }
        let score = result["score"].as_u64().expect("a whole score");
        let max = result["max-score"].as_u64().expect("a whole max-score");
        assert!(score <= max);
        let mut sums = (0, 0);
        for test in result["tests"].as_array().expect("an array") {
            assert!(test["test-name"].as_str().is_some_and(|s| !s.is_empty()));
            assert!(test["passed"].is_boolean());
            let (got, of) = (
                test["score"].as_u64().expect("a whole score"),
                test["max-score"].as_u64().expect("a whole max-score"),
            );
            assert!(got <= of, "{test}");
            sums = (sums.0 + got, sums.1 + of);
        }
        assert_eq!(sums, (score, max), "the totals are the tests' sums");
    }

    /// The runner's environment for a submission of ada's.
    fn runner_env(command: &mut std::process::Command) -> &mut std::process::Command {
        command
            .env("CLASSROOM", "gpu-course")
            .env("ASSIGNMENT", "gpu-labs")
            .env("SUBMISSION_TAG", "submit/2026-11-27T01-02-03Z-abcdef0")
            .env("OWNER", "ada")
            .env("ASSIGNMENT_TYPE", "individual")
            .env(
                "COMMIT_URL",
                "https://github.com/c/gpu-course-gpu-labs-ada/commit/abcdef0",
            )
            .env(
                "RELEASE_URL",
                "https://github.com/c/gpu-course-gpu-labs-ada/releases/tag/x",
            )
            .env_remove("REVIEW_URL")
    }

    /// A bundle of the autograder beside `plan` as its checks.json, and an empty checkout.
    fn bundle(plan: &Value) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let top = tempfile::tempdir().expect("a temp folder");
        let grader = top.path().join("autograders/gpu-labs");
        let checkout = top.path().join("checkout");
        std::fs::create_dir_all(&grader).expect("created");
        std::fs::create_dir(&checkout).expect("created");
        std::fs::write(grader.join("autograder.py"), AUTOGRADER).expect("written");
        std::fs::write(grader.join("checks.json"), pretty(plan).expect("json")).expect("written");
        (top, grader.join("autograder.py"), checkout)
    }

    fn python(script: &std::path::Path, checkout: &std::path::Path) -> std::process::Command {
        let mut command = std::process::Command::new("python3");
        command.arg(script).current_dir(checkout);
        command
    }

    /// The autograder's result.json is classroom50/result/v1, scores each check by its exit
    /// status, sees NVRTC's folder on the loader's path, kills a check that overruns (and what
    /// it started), and replaces a result.json the student committed rather than writing
    /// through it.
    #[test]
    fn the_autograder_writes_a_result_of_classroom_50s_schema() {
        let plan = json!({
            "setup": { "name": "setup", "command": "mkdir -p .nvrtc/lib", "timeout": 60 },
            "library_path": ".nvrtc/lib",
            "checks": [
                { "name": "passes", "command": "echo \"$LD_LIBRARY_PATH\" | grep -q \"$PWD/.nvrtc/lib\"", "points": 4, "timeout": 60 },
                { "name": "fails", "command": "echo wrong; exit 3", "points": 2, "timeout": 60 },
                { "name": "hangs", "command": "sleep 300 & sleep 300", "points": 1, "timeout": 1 },
            ],
        });
        let (top, script, checkout) = bundle(&plan);
        let outside = top.path().join("outside");
        std::fs::write(&outside, "untouched").expect("written");
        std::os::unix::fs::symlink(&outside, checkout.join("result.json")).expect("a link");
        let started = std::time::Instant::now();
        let output = runner_env(&mut python(&script, &checkout))
            .output()
            .expect("python3 runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            started.elapsed().as_secs() < 60,
            "the hanging check was killed"
        );
        assert_eq!(
            std::fs::read_to_string(&outside).expect("read"),
            "untouched"
        );
        let text = std::fs::read_to_string(checkout.join("result.json")).expect("result.json");
        let result: Value = serde_json::from_str(&text).expect("JSON");
        assert_result_v1(&result);
        assert_eq!(result["owner"], "ada");
        assert_eq!(result["review"], result["commit"]);
        let rows: Vec<(&str, bool, u64, u64)> = result["tests"]
            .as_array()
            .expect("tests")
            .iter()
            .map(|t| {
                (
                    t["test-name"].as_str().expect("a name"),
                    t["passed"].as_bool().expect("a bool"),
                    t["score"].as_u64().expect("a score"),
                    t["max-score"].as_u64().expect("a max"),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("setup", true, 0, 0),
                ("passes", true, 4, 4),
                ("fails", false, 0, 2),
                ("hangs", false, 0, 1)
            ]
        );
        assert_eq!(
            (result["score"].as_u64(), result["max-score"].as_u64()),
            (Some(4), Some(7))
        );
        let said = result["tests"][2]["output"].as_str().expect("output");
        assert!(
            said.contains("wrong") && said.contains("exit status 3"),
            "{said}"
        );
        let said = result["tests"][3]["output"].as_str().expect("output");
        assert!(said.contains("timed out after 1 s"), "{said}");
    }

    /// A failed set-up fails its row and runs no check; with no identity from the runner the
    /// autograder says which and writes nothing (Classroom 50 reports an error, not a 0).
    #[test]
    fn no_set_up_runs_no_check_and_no_identity_writes_nothing() {
        let plan = json!({
            "setup": { "name": "setup", "command": "exit 1", "timeout": 60 },
            "library_path": ".nvrtc",
            "checks": [{ "name": "would pass", "command": "true", "points": 3, "timeout": 60 }],
        });
        let (_top, script, checkout) = bundle(&plan);
        let output = runner_env(&mut python(&script, &checkout))
            .output()
            .expect("python3 runs");
        assert!(output.status.success());
        let text = std::fs::read_to_string(checkout.join("result.json")).expect("result.json");
        let result: Value = serde_json::from_str(&text).expect("JSON");
        assert_result_v1(&result);
        assert_eq!(result["tests"][1]["passed"], false);
        assert_eq!(result["tests"][1]["output"], "not run: setup failed");
        assert_eq!(
            (result["score"].as_u64(), result["max-score"].as_u64()),
            (Some(0), Some(3))
        );

        std::fs::remove_file(checkout.join("result.json")).expect("removed");
        let output = runner_env(&mut python(&script, &checkout))
            .env_remove("OWNER")
            .env_remove("USERNAME")
            .output()
            .expect("python3 runs");
        assert_eq!(output.status.code(), Some(1));
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(
            said.starts_with("::error::") && said.contains("OWNER"),
            "{said}"
        );
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(!checkout.join("result.json").exists());
    }

    /// The files `classroom` writes parse back: the assignment as classroom50/assignments/v1
    /// takes it (schemas/assignments-v1.schema.json), its runtime, the checks and the
    /// autograder beside them.
    #[test]
    fn the_assignment_files_parse_back() {
        let top = tempfile::tempdir().expect("a temp folder");
        for gpu in [None, Some("gpu-a100")] {
            let out = top.path().join(gpu.unwrap_or("hosted"));
            run(Args {
                out: out.clone(),
                slug: "gpu-labs".into(),
                name: "GPU porting labs".into(),
                gpu_runner: gpu.map(str::to_string),
            })
            .expect("written");
            let read = |path: &str| -> Value {
                serde_json::from_str(&std::fs::read_to_string(out.join(path)).expect(path))
                    .expect("JSON")
            };
            let assignments = read("assignments.json");
            assert_eq!(assignments["schema"], "classroom50/assignments/v1");
            let entry = &assignments["assignments"][0];
            assert_eq!(assignments["assignments"].as_array().map(Vec::len), Some(1));
            assert_eq!(entry["slug"], "gpu-labs");
            assert_eq!(entry["name"], "GPU porting labs");
            assert_eq!(entry["mode"], "individual");
            assert_eq!(entry["autograder"], "default");
            assert!(entry.get("max_group_size").is_none(), "individual: none");
            let runtime = read("runtime.json");
            assert_eq!(entry["runtime"], runtime);
            // The runtime is a closed object in the schema: nothing but its own keys.
            for key in runtime.as_object().expect("an object").keys() {
                assert!(["runs-on", "rust"].contains(&key.as_str()), "{key}");
            }
            match gpu {
                Some(label) => assert_eq!(runtime, json!({ "runs-on": ["self-hosted", label] })),
                None => {
                    assert_eq!(runtime["runs-on"], "ubuntu-latest");
                    let rust = runtime["rust"].as_str().expect("a toolchain");
                    assert!(rust.split('.').all(|n| n.parse::<u32>().is_ok()), "{rust}");
                }
            }
            let plan = read("autograders/gpu-labs/checks.json");
            assert_eq!(
                plan,
                checks(
                    &Rubric::load().expect("the rubric"),
                    if gpu.is_some() {
                        Runner::Gpu
                    } else {
                        Runner::Hosted
                    }
                )
                .expect("checks")
            );
            let script = std::fs::read_to_string(out.join("autograders/gpu-labs/autograder.py"))
                .expect("autograder.py");
            assert_eq!(script, AUTOGRADER);
        }
    }
}
