//! `cargo instructor classroom --out DIR`: the hand-out's `.github/workflows/classroom.yml`,
//! GitHub Classroom's autograding workflow. One `autograding-command-grader` step per
//! visible check of the rubric that a student's runner can make (its GPU labs on the CPU
//! device, with NVRTC from pip; no speed against a solution the student does not have),
//! worth the check's points, and the `autograding-grading-reporter` step that adds them
//! up. Each command compares the student's lab with the hand-out's own lab01 (or lab05's
//! GPU canvas with its CPU one), or lets lab06 check its sums: feedback on every push.
//! The hidden and speed checks, and the grade that counts, come from `cargo instructor grade
//! --class` on the instructor's machine, which trusts nothing of the student's (which grades
//! Classroom's clone of every student repository as a class).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::rubric::{Check, Rubric, Test};
use xtask::labs;

/// Where GitHub looks for the workflow, inside the repository.
pub const WORKFLOW: &str = ".github/workflows/classroom.yml";

/// The actions the workflow uses, at the major versions GitHub Classroom's own template names.
const COMMAND_GRADER: &str = "classroom-resources/autograding-command-grader@v1";
const REPORTER: &str = "classroom-resources/autograding-grading-reporter@v1";

/// Minutes each step may take: the first one compiles the labs' dependencies.
const TIMEOUT_MINUTES: u32 = 30;

#[derive(clap::Args)]
pub struct Args {
    /// The hand-out's folder: the workflow goes to DIR/.github/workflows/classroom.yml
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

pub fn run(args: Args) -> Result<()> {
    let rubric = Rubric::load()?;
    let text = workflow(&rubric)?;
    let path = args.out.join(WORKFLOW);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    shared::output::write_file(&path, text.as_bytes())?;
    let steps = steps(&rubric)?;
    shared::cli::eprint_line(&format!(
        "xtask: wrote {}: {} checks worth {} points (the visible ones a runner can make, the \
         GPU labs' on the CPU device); commit it with the hand-out",
        path.display(),
        steps.len(),
        steps.iter().map(|s| s.points).sum::<u64>()
    ));
    Ok(())
}

/// One grader step.
pub struct Step {
    pub id: String,
    pub name: String,
    pub command: String,
    pub points: u64,
}

/// Whether a student's runner can make `check`: visible, no solution to compare with (a
/// speed check), nothing but the hand-out's own programs (GPU labs on the CPU device).
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

/// The steps: the checks a runner can make, in the rubric's order.
pub fn steps(rubric: &Rubric) -> Result<Vec<Step>> {
    let mut steps = Vec::new();
    let mut per_lab = std::collections::BTreeMap::<&str, usize>::new();
    for check in rubric.checks.iter().filter(|c| on_runner(c)) {
        let number = per_lab.entry(check.lab.name).or_insert(0);
        *number += 1;
        let id = format!("{}-{number}", check.lab.name);
        if check.points.fract() != 0.0 || check.points < 1.0 {
            bail!(
                "{}: GitHub Classroom scores whole points, this check has {}",
                check.name(),
                check.points
            );
        }
        steps.push(Step {
            command: command(check, &id)?,
            name: check.name(),
            id,
            points: check.points as u64,
        });
    }
    Ok(steps)
}

/// The shell command that passes (exits 0) when the check would.
fn command(check: &Check, id: &str) -> Result<String> {
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
    // A GPU lab's kernels run on the CPU device: GitHub's runners have no GPU.
    let emulate = if check.needs_gpu() {
        vec!["--emulate".to_string()]
    } else {
        Vec::new()
    };
    match &check.test {
        Test::Image {
            size,
            view,
            max_differing: 0,
            ..
        } => {
            let image = |name: &str| -> Vec<String> {
                let mut args = size.args().to_vec();
                args.extend(view.args());
                args.extend(["-o".to_string(), format!("{id}-{name}.ppm")]);
                args
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
            let mut args = args.args();
            args.extend([
                "--variants".to_string(),
                crate::rubric::SumVariant::list(variants, ","),
            ]);
            run(check.lab.name, &[args, emulate].concat())
        }
        Test::Canvas { args, .. } => {
            // The GPU canvas, on the CPU device, must be the CPU backend's, counter for counter.
            let canvas = |backend: &str| -> Vec<String> {
                let mut all = args.args_on(backend);
                all.extend([
                    "--raw".to_string(),
                    format!("{id}-{backend}.raw"),
                    "-o".to_string(),
                    format!("{id}-{backend}.png"),
                ]);
                all
            };
            Ok(format!(
                "{} && {} && cmp {id}-cpu.raw {id}-gpu.raw",
                run(check.lab.name, &canvas("cpu"))?,
                run(check.lab.name, &[canvas("gpu"), emulate].concat())?,
            ))
        }
        _ => bail!(
            "{}: no GitHub Classroom command for this kind of check",
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

/// A YAML double-quoted string.
fn yaml(text: &str) -> String {
    let mut quoted = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(quoted, "\\u{:04x}", c as u32);
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// The workflow file.
pub fn workflow(rubric: &Rubric) -> Result<String> {
    let steps = steps(rubric)?;
    if steps.is_empty() {
        bail!("the rubric has no visible check a runner can make: nothing for GitHub Classroom");
    }
    let mut text = String::from(
        "# GitHub Classroom's autograding, written by `cargo instructor classroom` from the\n\
         # instructor's rubric: one step per visible check with no solution to compare with,\n\
         # worth the rubric's points; the GPU labs' kernels run on the CPU device (GitHub's\n\
         # runners have no GPU), with NVRTC from pip. The hidden and speed checks, and the\n\
         # grade that counts, come from the instructor's grader.\n\
         name: Autograding Tests\n\
         \"on\":\n  - push\n  - repository_dispatch\n\
         permissions:\n  checks: write\n  actions: read\n  contents: read\n\
         jobs:\n  run-autograding-tests:\n    runs-on: ubuntu-latest\n\
         \x20   if: \"github.actor != 'github-classroom[bot]'\"\n\
         \x20   env:\n      LD_LIBRARY_PATH: \"${{ github.workspace }}/.nvrtc/nvidia/cuda_nvrtc/lib\"\n\
         \x20   steps:\n\
         \x20     - name: Checkout code\n        uses: actions/checkout@v4\n\
         \x20     - name: NVRTC and the CPU device, for the GPU labs\n        run: |\n\
         \x20         python3 -m pip download --quiet --no-deps -d \"$RUNNER_TEMP/nvrtc\" nvidia-cuda-nvrtc-cu12==12.9.86\n\
         \x20         unzip -q -o \"$RUNNER_TEMP\"/nvrtc/*.whl -d .nvrtc\n\
         \x20         cargo build --release --locked --quiet -p cpu-device\n",
    );
    for step in &steps {
        let _ = write!(
            text,
            "      - name: {name}\n        id: {id}\n        uses: {COMMAND_GRADER}\n        with:\n\
             \x20         test-name: {name}\n          setup-command: \"\"\n\
             \x20         command: {command}\n          timeout: {TIMEOUT_MINUTES}\n\
             \x20         max-score: {points}\n",
            name = yaml(&step.name),
            id = step.id,
            command = yaml(&step.command),
            points = step.points,
        );
    }
    text.push_str("      - name: Autograding Reporter\n        uses: ");
    text.push_str(REPORTER);
    text.push_str("\n        env:\n");
    for step in &steps {
        let _ = writeln!(
            text,
            "          {}_RESULTS: \"${{{{steps.{}.outputs.result}}}}\"",
            step.id.to_uppercase(),
            step.id
        );
    }
    let runners: Vec<&str> = steps.iter().map(|s| s.id.as_str()).collect();
    let _ = writeln!(
        text,
        "        with:\n          runners: {}",
        runners.join(",")
    );
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml_rust2::{Yaml, YamlLoader};

    #[test]
    fn the_workflow_parses_and_names_every_runner() {
        let rubric = Rubric::load().expect("the rubric");
        let text = workflow(&rubric).expect("a workflow");
        let docs = YamlLoader::load_from_str(&text).expect("valid YAML");
        let steps = docs[0]["jobs"]["run-autograding-tests"]["steps"]
            .as_vec()
            .expect("steps");
        let graders: Vec<&Yaml> = steps
            .iter()
            .filter(|s| s["uses"].as_str() == Some(COMMAND_GRADER))
            .collect();
        let expected: Vec<&Check> = rubric.checks.iter().filter(|c| on_runner(c)).collect();
        assert_eq!(graders.len(), expected.len());
        assert!(graders.len() >= 4, "lab02's images and lab06's CPU sums");
        // The GPU labs' visible checks run on the CPU device, set up by a step of its own.
        assert!(graders.iter().any(|g| g["with"]["command"]
            .as_str()
            .is_some_and(|c| c.contains("-p lab04-cuda-optimized") && c.contains("--emulate"))));
        let setup = steps[1]["run"].as_str().expect("the setup step");
        assert!(
            setup.contains("nvidia-cuda-nvrtc-cu12") && setup.contains("-p cpu-device"),
            "{setup}"
        );
        for (step, check) in graders.iter().zip(&expected) {
            assert_eq!(
                step["with"]["test-name"].as_str(),
                Some(check.name().as_str())
            );
            assert_eq!(
                step["with"]["max-score"].as_i64(),
                Some(check.points as i64)
            );
            let command = step["with"]["command"].as_str().expect("a command");
            assert!(
                command.starts_with("cargo run --release --locked"),
                "{command}"
            );
        }
        let reporter = steps.last().expect("the reporter");
        assert_eq!(reporter["uses"].as_str(), Some(REPORTER));
        let runners: Vec<&str> = reporter["with"]["runners"]
            .as_str()
            .expect("runners")
            .split(',')
            .collect();
        assert_eq!(runners.len(), graders.len());
        for (runner, step) in runners.iter().zip(&graders) {
            assert_eq!(step["id"].as_str(), Some(*runner));
            let env = &reporter["env"][format!("{}_RESULTS", runner.to_uppercase()).as_str()];
            assert_eq!(
                env.as_str(),
                Some(format!("${{{{steps.{runner}.outputs.result}}}}").as_str())
            );
        }
        assert_eq!(
            docs[0]["jobs"]["run-autograding-tests"]["if"].as_str(),
            Some("github.actor != 'github-classroom[bot]'")
        );
    }

    /// The command of the workflow's step `id`.
    fn command_of(id: &str) -> String {
        let rubric = Rubric::load().expect("the rubric");
        let steps = steps(&rubric).expect("steps");
        let step = steps.iter().find(|s| s.id == id).expect("the step");
        step.command.clone()
    }

    #[test]
    fn an_image_check_compares_with_lab01() {
        assert_eq!(
            command_of("lab02-1"),
            "cargo run --release --locked --quiet -p lab02-rayon -- 333 517 --cy 0.25 -o \
             lab02-1-student.ppm && cargo run --release --locked --quiet -p lab01-cpu-baseline \
             -- 333 517 --cy 0.25 -o lab02-1-reference.ppm && cmp lab02-1-reference.ppm \
             lab02-1-student.ppm"
        );
    }

    /// A flag of the rubric's lost, moved or given to one backend only, or the GPU's canvas
    /// made without the CPU device, and the step would compare other canvases.
    #[test]
    fn a_canvas_check_compares_the_gpu_canvas_with_the_cpu_one() {
        let run = "cargo run --release --locked --quiet -p lab05-buddhabrot --";
        let args = "--samples 4000000 --seed 7";
        assert_eq!(
            command_of("lab05-1"),
            format!(
                "{run} --backend cpu {args} --raw lab05-1-cpu.raw -o lab05-1-cpu.png && \
                 {run} --backend gpu {args} --raw lab05-1-gpu.raw -o lab05-1-gpu.png \
                 --emulate && cmp lab05-1-cpu.raw lab05-1-gpu.raw"
            )
        );
    }

    #[test]
    fn words_and_strings_are_quoted() {
        assert_eq!(quote("-0.74364"), "-0.74364");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(yaml("say \"hi\"\\\n"), r#""say \"hi\"\\\u000a""#);
    }
}
