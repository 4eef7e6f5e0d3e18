//! A class of five graded three ways, with the same scores every way: `grade-class` on
//! this machine, Gradescope's autograder (the zip of `cargo instructor autograder`, unpacked into
//! a root laid out like `/autograder`, its setup's build step run, then `run_autograder` for
//! each submission), and a Slurm job array on a one-node cluster this test starts (ignored for
//! needing Slurm: `cargo instructor test` runs it where Slurm is found). The five: the solution,
//! the hand-out, a correct lab02 written differently from the solution, a submission that
//! does not build, and a hostile one. Speed checks are left out of the comparisons: they
//! time the machine of the moment. And the Classroom 50 autograder: each check passes on the
//! solution and fails on the hand-out.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use xtask_test_support::{binary, cargo_run, copy_dir, fields, target_dir, workspace};

/// The tests that build into copies of this workspace's release folder, or into it, one at a
/// time: a copy taken while another build writes would be half old, half new.
static RELEASE_BUILDS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn release_builds() -> std::sync::MutexGuard<'static, ()> {
    RELEASE_BUILDS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// lab06's CPU harness as `--build-only` plants and builds it beside a student's
/// `src/cpu/variants.rs` (the grader's `grade/planted/lab06_variants.rs` and its data
/// module), here beside the solution's, as a crate of its own (std alone) in `scratch`.
fn lab06_harness(scratch: &Path) -> PathBuf {
    let root = workspace();
    let krate = scratch.join("lab06-harness");
    let main = krate.join("src/bin/grade-lab06-variants");
    fs::create_dir_all(&main).expect("created");
    fs::create_dir_all(krate.join("src/cpu")).expect("created");
    let planted = root.join("xtask/instructor/src/grade/planted");
    for (from, to) in [
        (planted.join("lab06_variants.rs"), main.join("main.rs")),
        (planted.join("lab06_data.rs"), main.join("data.rs")),
        (
            root.join("lab06-generics-vs-virtual/src/cpu/variants.rs"),
            krate.join("src/cpu/variants.rs"),
        ),
    ] {
        fs::copy(&from, &to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    }
    fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"lab06-harness\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .expect("written");
    let target = scratch.join("lab06-harness-target");
    succeed(
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["build", "--release", "--quiet", "--offline"])
            .current_dir(&krate)
            .env("CARGO_TARGET_DIR", &target),
        "building lab06's harness",
    );
    target.join("release/grade-lab06-variants")
}

/// Run `command`; its output, after checking it succeeded.
fn succeed(command: &mut Command, what: &str) -> Output {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Seed `target` (a `CARGO_TARGET_DIR`) with this workspace's release build, so that a build
/// of a copy of the workspace compiles its own crates alone (minutes less on CI's 2 cores).
/// The compiled files are linked, not copied (a gigabyte less of disk): rustc writes each
/// anew. Cargo's own records are copied: it writes them in place, and a crate's record has
/// the same name in every copy of the workspace (cargo hashes a member's path from the
/// workspace's root), so a linked record written by the solution's build made the hand-out's
/// build, in its own folder, take the solution's binaries for its own, and moved this
/// workspace's records too. The lock is each build's own.
fn seed_from_release(target: &Path) {
    let release = target_dir().join("release");
    fs::create_dir_all(target).expect("created");
    succeed(
        Command::new("cp").arg("-al").arg(&release).arg(target),
        "linking the release build",
    );
    let seeded = target.join("release");
    let _ = fs::remove_file(seeded.join(".cargo-lock"));
    for records in [".fingerprint", "build"] {
        fs::remove_dir_all(seeded.join(records)).expect("unlinked");
        succeed(
            Command::new("cp")
                .arg("-a")
                .arg(release.join(records))
                .arg(&seeded),
            "copying cargo's records",
        );
    }
    // The dependency lists rustc writes beside each crate, which cargo reads back.
    for entry in fs::read_dir(seeded.join("deps")).expect("deps").flatten() {
        if entry.path().extension().is_some_and(|e| e == "d") {
            fs::remove_file(entry.path()).expect("unlinked");
            fs::copy(release.join("deps").join(entry.file_name()), entry.path()).expect("copied");
        }
    }
}

/// A correct lab02 written apart from the solution: scoped threads taking file rows from a
/// shared counter, lab01's own per-pixel function, no rayon, no lanes, no row plan.
const INDEPENDENT_LAB02: &str = r#"let _ = (&near, &plan);
        let row_bytes = view.width as usize * 3;
        let height = view.height as usize;
        let next = std::sync::atomic::AtomicUsize::new(0);
        let rows: Vec<std::sync::Mutex<&mut [u8]>> = image
            .chunks_exact_mut(row_bytes)
            .map(std::sync::Mutex::new)
            .collect();
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if k >= height {
                        break;
                    }
                    // The file's row k is the image's row height - 1 - k.
                    let y = ys[height - 1 - k];
                    let Ok(mut out) = rows[k].lock() else { break };
                    for (j, pixel) in out.chunks_exact_mut(3).enumerate() {
                        let counter = shared::mandelbrot::escape_count(xs[j], y);
                        pixel.copy_from_slice(&shared::palette::colour(counter));
                    }
                    progress.add(1);
                });
            }
        });
        let computed_rows: usize = height;"#;

/// The folder Classroom 50's `gh teacher download ORG gpu mandelbrot` clones into, by default:
/// one clone per student, `gpu-mandelbrot-USER/`.
const DOWNLOAD: &str = "gpu-mandelbrot_submissions_2026_11_27_T_01_02_03";

/// The five submissions: each student's workspace folder, and the class folder holding them
/// the way Classroom 50's download does, two of them as archives.
struct Five {
    _scratch: tempfile::TempDir,
    class: PathBuf,
    folders: BTreeMap<&'static str, PathBuf>,
    root: PathBuf,
}

const STUDENTS: [&str; 5] = ["broken", "handout", "hostile", "independent", "solution"];

fn class_of_five() -> Five {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let root = scratch.path().to_path_buf();
    let made = root.join("made");
    fs::create_dir(&made).expect("created");
    let handout = made.join("handout");
    let solution = made.join("solution");
    succeed(
        binary("instructor")
            .args(["handout", "--out"])
            .arg(&handout),
        "handout",
    );
    succeed(
        binary("instructor")
            .args(["handout", "--solved", "--out"])
            .arg(&solution),
        "handout --solved",
    );

    let independent = made.join("independent");
    copy_dir(&handout, &independent);
    let main = independent.join("lab02-rayon/src/main.rs");
    let text = fs::read_to_string(&main).expect("lab02's main.rs");
    let start = text
        .find("let computed_rows: usize = shared::unfinished!(")
        .expect("lab02's stub");
    let end = start + text[start..].find(");").expect("the stub's end") + 2;
    fs::write(
        &main,
        format!("{}{INDEPENDENT_LAB02}{}", &text[..start], &text[end..]),
    )
    .expect("written");

    let broken = made.join("broken");
    copy_dir(&handout, &broken);
    let main = broken.join("lab02-rayon/src/main.rs");
    let text = fs::read_to_string(&main).expect("lab02's main.rs");
    fs::write(&main, format!("{text}\nfn half_written( {{\n")).expect("written");

    // Hostile: lab02 reads what it should not see and tries to leave something behind; its
    // lab06 is a link to the instructor's solution.
    let hostile = made.join("hostile");
    copy_dir(&handout, &hostile);
    let main = hostile.join("lab02-rayon/src/main.rs");
    let text = fs::read_to_string(&main).expect("lab02's main.rs");
    let attack = format!(
        "fn main() -> ExitCode {{\n    let _ = std::fs::read_to_string(\"{}\");\n    \
         let _ = std::fs::write(\"/tmp/class-attack\", \"x\");\n    \
         let _ = std::process::Command::new(\"sleep\").arg(\"600\").spawn();\n",
        workspace().join("xtask/instructor/rubric.toml").display()
    );
    fs::write(
        &main,
        text.replacen("fn main() -> ExitCode {\n", &attack, 1),
    )
    .expect("written");
    let cpu = hostile.join("lab06-generics-vs-virtual/src/cpu.rs");
    fs::remove_file(&cpu).expect("removed");
    std::os::unix::fs::symlink(
        workspace().join("lab06-generics-vs-virtual/src/cpu.rs"),
        &cpu,
    )
    .expect("a link");

    let class = root.join(DOWNLOAD);
    fs::create_dir(&class).expect("created");
    for name in ["solution", "broken", "hostile"] {
        copy_dir(
            &made.join(name),
            &class.join(format!("gpu-mandelbrot-{name}")),
        );
    }
    tarball(&handout, &class.join("gpu-mandelbrot-handout.tar.gz"));
    zip(&independent, &class.join("gpu-mandelbrot-independent.zip"));
    // The download's summary beside the clones: Classroom 50's file, not a submission.
    let mut scores = String::from(
        "username,first_name,last_name,email,section,score,max_score,datetime,submission_tag,\
         submitted_by,review_url,late,override\n",
    );
    for student in STUDENTS {
        scores.push_str(&format!("{student},,,,,,,,,,,,\n"));
    }
    fs::write(class.join("scores.csv"), scores).expect("written");

    let folders = STUDENTS
        .iter()
        .map(|&name| (name, made.join(name)))
        .collect();
    Five {
        _scratch: scratch,
        class,
        folders,
        root,
    }
}

/// A .tar.gz of `dir`, under its own name, as `tar czf` makes it.
fn tarball(dir: &Path, to: &Path) {
    let file = fs::File::create(to).expect("created");
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::fast(),
    ));
    let name = dir.file_name().expect("a name");
    builder.append_dir_all(name, dir).expect("archived");
    builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .expect("finished");
}

/// A zip of `dir`, under its own name, as a file manager makes it.
fn zip(dir: &Path, to: &Path) {
    let mut writer = zip::ZipWriter::new(fs::File::create(to).expect("created"));
    let options = zip::write::SimpleFileOptions::default();
    let mut stack = vec![dir.to_path_buf()];
    let top = dir.parent().expect("a parent");
    while let Some(folder) = stack.pop() {
        for entry in fs::read_dir(&folder).expect("readable").flatten() {
            let path = entry.path();
            let name = path
                .strip_prefix(top)
                .expect("inside")
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                stack.push(path);
            } else {
                writer.start_file(name, options).expect("a member");
                writer
                    .write_all(&fs::read(&path).expect("readable"))
                    .expect("written");
            }
        }
    }
    writer.finish().expect("finished");
}

/// A check that times the machine of the moment.
fn is_speed(name: &str) -> bool {
    name.contains("time against the solution")
}

/// Each check's (score, max_score) in a results.json.
fn scores(results: &Path) -> BTreeMap<String, (f64, f64)> {
    let json: Value =
        serde_json::from_slice(&fs::read(results).unwrap_or_else(|e| panic!("{results:?}: {e}")))
            .expect("results.json is JSON");
    json["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().expect("a name").to_string(),
                (
                    t["score"].as_f64().expect("a score"),
                    t["max_score"].as_f64().expect("a max_score"),
                ),
            )
        })
        .collect()
}

/// What each of the five earns on a machine without a GPU, speed aside: a lab02 that is
/// right earns lab02's checks; nothing else earns anything.
/// `report` is the grade's own account, shown when a score is not the one expected.
fn assert_expected(student: &str, scores: &BTreeMap<String, (f64, f64)>, how: &str, report: &str) {
    let graded: Vec<(&String, &(f64, f64))> = scores
        .iter()
        .filter(|(name, (_, max))| *max > 0.0 && !is_speed(name))
        .collect();
    assert!(
        graded.len() >= 6,
        "{how}: {student}: too few checks graded: {scores:?}"
    );
    for (name, &(score, max)) in graded {
        let full = match student {
            "solution" => true,
            "independent" => name.starts_with("lab02: "),
            _ => false,
        };
        let expected = if full { max } else { 0.0 };
        assert_eq!(score, expected, "{how}: {student}: {name}\n{report}");
    }
}

/// Every check but the speed checks, as (name, score).
fn comparable(scores: &BTreeMap<String, (f64, f64)>) -> Vec<(String, f64)> {
    scores
        .iter()
        .filter(|(name, _)| !is_speed(name))
        .map(|(name, &(score, _))| (name.clone(), score))
        .collect()
}

/// Grade the class with `args` added; the checks' scores per student, from OUT.
fn grade_class(five: &Five, out: &Path, extra: &[&str], env: &[(&str, &Path)]) -> Output {
    // A line on the terminal while a class is graded (libtest keeps `eprintln!` back).
    shared::cli::eprint_line(&format!("class: grading the class of five {extra:?}"));
    let mut command = binary("instructor");
    command
        .arg("grade-class")
        .arg(&five.class)
        .arg("--out")
        .arg(out)
        .args(extra)
        // The comparisons are of the checks graded without a GPU, everywhere alike (the
        // CPU device's grading is the coursework test's).
        .arg("--no-cpu-device")
        .env("CUDA_VISIBLE_DEVICES", "");
    for (key, value) in env {
        command.env(key, value);
    }
    succeed(&mut command, "grade-class")
}

fn class_scores(out: &Path) -> BTreeMap<String, BTreeMap<String, (f64, f64)>> {
    STUDENTS
        .iter()
        .map(|s| {
            (
                s.to_string(),
                scores(&out.join(format!("students/gpu-mandelbrot-{s}/results.json"))),
            )
        })
        .collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A script of Gradescope's (`setup.sh` as it builds the image, `run_autograder` for each
/// submission), run as Gradescope runs it: in a Docker container, without CAP_SYS_ADMIN,
/// where bubblewrap cannot make namespaces (capsh drops it; only root may).
fn autograder_command(script: &Path) -> Command {
    if !is_root() {
        return Command::new(script);
    }
    let mut command = Command::new("capsh");
    command
        .args(["--drop=cap_sys_admin", "--", "-c", "exec \"$0\" \"$@\""])
        .arg(script);
    command
}

#[test]
#[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
fn a_class_of_five_grades_alike_through_class_and_the_autograder() {
    let _builds = release_builds();
    let five = class_of_five();
    let out = five.root.join("out");
    let started = Instant::now();
    let first = grade_class(&five, &out, &[], &[]);
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert!(stdout.starts_with("# Class summary"), "{stdout}");
    assert!(
        stdout.contains("5 submissions (Classroom 50's download), 5 students"),
        "{stdout}"
    );

    let by_class = class_scores(&out);
    for (student, scores) in &by_class {
        let feedback = out.join(format!("students/gpu-mandelbrot-{student}/feedback.md"));
        let report = fs::read_to_string(feedback).unwrap_or_default();
        assert_expected(student, scores, "grade-class", &report);
    }

    // grades.csv: one row per student, a column per check, the total from results.json.
    let csv = fs::read_to_string(out.join("grades.csv")).expect("grades.csv");
    let mut lines = csv.lines();
    let header = fields(lines.next().expect("a header"));
    assert_eq!(header.first().map(String::as_str), Some("student"));
    assert_eq!(header.last().map(String::as_str), Some("total"));
    // A column per check of results.json (the rubric's), in the rubric's order.
    let mut columns: Vec<String> = header[1..header.len() - 1].to_vec();
    columns.sort();
    assert_eq!(
        columns,
        by_class["solution"].keys().cloned().collect::<Vec<_>>()
    );
    let rows: BTreeMap<String, Vec<String>> = lines
        .map(|line| {
            let cells = fields(line);
            (cells[0].clone(), cells)
        })
        .collect();
    assert_eq!(
        rows.keys().map(String::as_str).collect::<Vec<_>>(),
        STUDENTS
    );
    for (student, cells) in &rows {
        assert_eq!(cells.len(), header.len(), "{student}");
        for (check, cell) in header.iter().zip(cells).skip(1).take(header.len() - 2) {
            let (score, most) = by_class[student.as_str()][check];
            if most == 0.0 {
                // Not graded on this machine (a GPU check): an empty cell, not a 0.
                assert_eq!(cell, "", "{student}: {check}");
                continue;
            }
            let cell: f64 = cell.parse().unwrap_or(-1.0);
            assert!((cell - score).abs() < 0.01, "{student}: {check}: {cell}");
        }
        let results: Value = serde_json::from_slice(
            &fs::read(out.join(format!("students/gpu-mandelbrot-{student}/results.json")))
                .expect("results.json"),
        )
        .expect("JSON");
        let total: f64 = cells.last().expect("a total").parse().expect("a number");
        assert!(
            (total - results["score"].as_f64().expect("a score")).abs() < 0.01,
            "{student}"
        );
    }
    let summary = fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(
        summary.contains("## The checks most students fail"),
        "{summary}"
    );
    let broken = fs::read_to_string(out.join("students/gpu-mandelbrot-broken/feedback.md"))
        .expect("feedback");
    assert!(broken.contains("did not build"), "{broken}");
    let hostile = fs::read_to_string(out.join("students/gpu-mandelbrot-hostile/feedback.md"))
        .expect("feedback");
    assert!(hostile.contains("symbolic link"), "{hostile}");
    assert!(
        !Path::new("/tmp/class-attack").exists(),
        "the attack wrote outside"
    );

    // Run again: nothing changed, so nothing is graded again, and the gradebook is the same.
    let started = Instant::now();
    let again = grade_class(&five, &out, &[], &[]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains("5 submissions graded before with the same content: kept"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < took / 4,
        "a resumed class grades nothing again"
    );
    assert_eq!(
        fs::read_to_string(out.join("grades.csv")).expect("grades.csv"),
        csv
    );

    // Gradescope: the autograder zip, unpacked into a root laid out like /autograder.
    let zip_file = five.root.join("autograder.zip");
    succeed(
        binary("instructor")
            .args(["autograder", "--out"])
            .arg(&zip_file),
        "autograder",
    );
    let root = five.root.join("autograder");
    let source = root.join("source");
    let mut archive =
        zip::ZipArchive::new(fs::File::open(&zip_file).expect("the zip")).expect("a zip");
    archive.extract(&source).expect("unpacked");
    for script in ["setup.sh", "run_autograder"] {
        assert!(source.join(script).is_file(), "{script} at the zip's root");
    }
    // What `setup.sh install` leaves in the workspace before the build: NVRTC's wheel in
    // .nvrtc/, whose header says `fmad` (line 798 of nvrtc.h). Tracked by the build, it made
    // the hand-out hold an exercise's answer, and setup.sh refused it. A stand-in header:
    // with no library beside it, no grade below finds NVRTC here.
    let header = source.join("workspace/.nvrtc/nvidia/cuda_nvrtc/include/nvrtc.h");
    fs::create_dir_all(header.parent().expect("a folder")).expect("created");
    fs::write(&header, "/* nvrtcCompileProgram takes --fmad=false */\n").expect("written");
    // The build step only (Rust and bubblewrap are here), into a target folder of its own:
    // built into this workspace's, the autograder's copy of the workspace replaced its
    // release binaries with its own, which name that copy's (since deleted) folder, and
    // `cargo xtask dist` after this test ran an instructor that could not find its workspace.
    let autograder_target = target_dir().join("autograder");
    // Seeded with this workspace's release build: the dependencies are the same crates
    // built the same way, so the setup's build compiles the workspace's own crates alone.
    if !autograder_target.exists() && target_dir().join("release").is_dir() {
        seed_from_release(&autograder_target);
    }
    // In the image's conditions, so that its grader's cache is of the kind each grade's
    // sandbox is (the fallback): built with bubblewrap, it served no grade, and every
    // submission built the hand-out again (a minute and a half each on 2 cores).
    succeed(
        autograder_command(Path::new("bash"))
            .arg(source.join("setup.sh"))
            .arg("build")
            .env("AUTOGRADER_ROOT", &root)
            .env("CARGO_TARGET_DIR", &autograder_target),
        "setup.sh build",
    );
    // Two of the five through the autograder: the solution (every check run, and run alike)
    // and the hostile one (its attack met by the fallback sandbox). The others' checks are
    // the same code on the same files, three grades (minutes on CI's 2 cores) proving nothing
    // more.
    for (student, folder) in five
        .folders
        .iter()
        .filter(|(student, _)| ["solution", "hostile"].contains(student))
    {
        let submission = root.join("submission");
        let _ = fs::remove_dir_all(&submission);
        let _ = fs::remove_dir_all(root.join("results"));
        copy_dir(folder, &submission);
        // Without NVRTC (`setup.sh build` skips its install), as the class above runs with
        // --no-cpu-device: the GPU checks are listed, not run on the CPU device, both ways.
        let output = succeed(
            autograder_command(&source.join("run_autograder"))
                .env("AUTOGRADER_ROOT", &root)
                .env("CARGO_TARGET_DIR", &autograder_target)
                .env_remove("LD_LIBRARY_PATH")
                .stdin(Stdio::null()),
            "run_autograder",
        );
        let results = root.join("results/results.json");
        let by_autograder = scores(&results);
        assert_expected(
            student,
            &by_autograder,
            "the autograder",
            &String::from_utf8_lossy(&output.stderr),
        );
        assert_eq!(
            comparable(&by_autograder),
            comparable(&by_class[*student]),
            "{student}: the autograder and grade-class differ\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        // The image's cache serves every submission: none builds the hand-out again.
        assert!(
            !String::from_utf8_lossy(&output.stderr).contains("building the hand-out once"),
            "{student}: run_autograder built the grader's cache that setup.sh built:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let text = fs::read_to_string(&results).expect("results.json");
        if is_root() {
            assert!(
                text.contains("student code ran in the fallback sandbox"),
                "{student}: graded in the fallback sandbox: {text}"
            );
        }
        assert!(
            text.contains("graded on a GPU machine"),
            "{student}: the GPU checks are listed as graded later: {text}"
        );
    }
}

/// The dist grades alone: a copy of `cargo xtask dist` in a fresh folder grades a folder of
/// `grade SUBMISSION --build-only`'s making, on its own (`--built`) and as a class
/// (`--prebuilt`), with PATH holding neither git nor cargo nor rustc and the workspace it
/// was built in hidden under an empty folder (a mount namespace of its own): the class's
/// identity read the hand-out from the workspace's path with git, and failed at once on a
/// machine without them ("cannot run git").
#[test]
#[ignore = "needs root and a sandbox (cargo instructor test runs it as root where one starts)"]
fn the_dist_grades_alone_with_no_workspace_git_or_cargo() {
    let _builds = release_builds();
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let made = scratch.path().join("made");
    succeed(
        cargo_run("xtask").args(["dist", "--out"]).arg(&made),
        "cargo xtask dist",
    );
    // Taken elsewhere, as a laptop's dist to a cluster.
    let dist = scratch.path().join("elsewhere").join("dist");
    fs::create_dir_all(scratch.path().join("elsewhere")).expect("created");
    copy_dir(&made, &dist);
    assert!(
        fs::read_to_string(dist.join(".xtask-dist"))
            .expect("the dist's stamp")
            .lines()
            .any(|line| line == "instructor-handout.json"),
        "the dist lists the hand-out's digest it carries"
    );
    // The solution's binaries, laid out as `--build-only` lays a student's out.
    let class = scratch.path().join("class");
    let built = class.join("alice");
    fs::create_dir_all(built.join("bin")).expect("created");
    for lab in ["lab02", "lab03", "lab04", "lab05", "lab06"] {
        fs::copy(dist.join(lab), built.join("bin").join(lab)).expect("copied");
    }
    fs::copy(
        lab06_harness(scratch.path()),
        built.join("bin").join("grade-lab06-variants"),
    )
    .expect("copied");
    fs::write(built.join("intake.json"), r#"{"notes": [], "broken": []}"#).expect("written");
    // The machine's programs, git's, cargo's and rustc's left out.
    let tools = scratch.path().join("tools");
    fs::create_dir(&tools).expect("created");
    for dir in ["/usr/bin", "/bin", "/usr/sbin", "/sbin"] {
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let left_out = ["git", "cargo", "rustc", "rustup"]
                .iter()
                .any(|tool| name.starts_with(tool));
            let link = tools.join(&name);
            if !left_out && fs::symlink_metadata(&link).is_err() {
                std::os::unix::fs::symlink(entry.path(), &link).expect("a link");
            }
        }
    }
    // Run from the copy, the workspace an empty folder, no variable of cargo's set.
    let alone = |args: &[&std::ffi::OsStr]| {
        let mut command = Command::new("unshare");
        command
            .env_clear()
            .env("PATH", &tools)
            .env("HOME", scratch.path())
            .env("CUDA_VISIBLE_DEVICES", "")
            .args(["--mount", "sh", "-c"])
            .arg("mount -t tmpfs -o size=1m none \"$0\" && exec \"$@\"")
            .arg(workspace())
            .arg(dist.join("instructor"))
            .args(args);
        let output = command.output().expect("unshare runs");
        let said = format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "{args:?}:\n{said}");
        assert!(!said.contains("cannot run git"), "{said}");
        said
    };
    let results = scratch.path().join("alice.json");
    let said = alone(&[
        "grade".as_ref(),
        "--built".as_ref(),
        built.as_os_str(),
        "--no-cpu-device".as_ref(),
        "--gradescope".as_ref(),
        results.as_os_str(),
    ]);
    assert_expected(
        "solution",
        &scores(&results),
        "--built from the dist",
        &said,
    );
    let out = scratch.path().join("out");
    let said = alone(&[
        "grade-class".as_ref(),
        class.as_os_str(),
        "--prebuilt".as_ref(),
        "--no-cpu-device".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    let results = fs::read_dir(out.join("students"))
        .expect("the students' folder")
        .flatten()
        .map(|e| e.path().join("results.json"))
        .next()
        .expect("alice's row");
    assert_expected(
        "solution",
        &scores(&results),
        "grade-class from the dist",
        &said,
    );
}

#[test]
#[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
fn an_archive_that_attacks_costs_its_own_row() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let class = scratch.path().join("class");
    fs::create_dir(&class).expect("created");
    // A zip whose member climbs out of its folder, and a tarball bomb.
    let mut writer = zip::ZipWriter::new(fs::File::create(class.join("eve.zip")).expect("a zip"));
    writer
        .start_file("../../escaped.rs", zip::write::SimpleFileOptions::default())
        .expect("a member");
    writer.write_all(b"fn main() {}").expect("written");
    writer.finish().expect("finished");
    let mut bomb = tar::Builder::new(flate2::write::GzEncoder::new(
        fs::File::create(class.join("mallory.tar.gz")).expect("a tarball"),
        flate2::Compression::fast(),
    ));
    let mut header = tar::Header::new_gnu();
    let size = 300u64 << 20;
    header.set_size(size);
    header.set_mode(0o644);
    bomb.append_data(
        &mut header,
        "work/lab02-rayon/src/main.rs",
        std::io::repeat(0).take(size),
    )
    .expect("appended");
    bomb.into_inner()
        .and_then(|gz| gz.finish())
        .expect("finished");
    std::os::unix::fs::symlink("/etc", class.join("trudy")).expect("a link");
    // A member name that rewrites the terminal: a CR, an escape that clears the line, a
    // forged score.
    let mut writer = zip::ZipWriter::new(fs::File::create(class.join("zoe.zip")).expect("a zip"));
    writer
        .start_file(
            "../\r\u{1b}[2Kzoe: 14 of 14 points\u{1b}[8m",
            zip::write::SimpleFileOptions::default(),
        )
        .expect("a member");
    writer.finish().expect("finished");

    let out = scratch.path().join("out");
    let output = succeed(
        binary("instructor")
            .arg("grade-class")
            .arg(&class)
            .arg("--out")
            .arg(&out)
            .arg("--no-cpu-device"),
        "grade-class",
    );
    let summary = String::from_utf8_lossy(&output.stdout);
    let log = String::from_utf8_lossy(&output.stderr);
    // Shown inert everywhere: the terminal, the log, summary.md, feedback.md.
    let feedback = fs::read_to_string(out.join("students/zoe/feedback.md")).expect("feedback");
    for (what, text) in [
        ("summary", &*summary),
        ("log", &*log),
        ("feedback", &feedback),
    ] {
        assert!(
            !text.contains(['\u{1b}', '\r']),
            "{what} holds a raw escape or CR:\n{text}"
        );
    }
    assert!(
        log.lines().any(|l| l.contains("zoe: not graded: the archive zoe.zip has a member outside its folder (../\\r\\u{1b}[2Kzoe: 14 of 14 points\\u{1b}[8m)")),
        "{log}"
    );
    for said in [
        "- eve (students/eve): the archive eve.zip has a member outside its folder (../../escaped.rs)",
        "- mallory (students/mallory): the archive mallory.tar.gz unpacks to more than 256 MiB",
        "- trudy (students/trudy): trudy is a symbolic link",
    ] {
        assert!(summary.contains(said), "{said}\n{summary}");
    }
    assert!(!scratch.path().join("escaped.rs").exists());
    assert!(!out.join(".class/unpacked/mallory").exists(), "cleaned up");
    let csv = fs::read_to_string(out.join("grades.csv")).expect("grades.csv");
    for student in ["eve", "mallory", "trudy", "zoe"] {
        let row = csv
            .lines()
            .find(|l| l.starts_with(&format!("{student},")))
            .unwrap_or_else(|| panic!("{student}'s row: {csv}"));
        assert!(row.ends_with(",0"), "{row}");
    }
}

/// Two entries that tried to decide how the class is read. Mallory: a git repository
/// holding only `intake.json` (notes the report printed as the grader's own) and `bin/lab02`,
/// `bin/lab06` linked into the instructor's own release build; graded as `--built`, it
/// earned 14 of 14 with no source. Eve: a `submission_metadata.yml` beside `submission_1/`,
/// read as Gradescope's export, naming the class's rows ("Alice Victim"). Now each is one
/// submission built from its sources, a row under its own name, and earns nothing.
#[test]
#[ignore = "needs a sandbox (cargo instructor test runs it where one starts)"]
fn an_entry_decides_nothing_of_how_the_class_is_read() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let class = scratch.path().join(DOWNLOAD);
    let mallory = class.join("gpu-mandelbrot-mallory");
    fs::create_dir_all(mallory.join("bin")).expect("created");
    fs::write(
        mallory.join("intake.json"),
        r#"{"notes": ["FORGED NOTE: reviewed by the instructor"], "broken": []}"#,
    )
    .expect("written");
    for lab in ["lab02", "lab06"] {
        std::os::unix::fs::symlink(
            target_dir().join("release").join(lab),
            mallory.join("bin").join(lab),
        )
        .expect("a link");
    }
    succeed(
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(&mallory),
        "git init",
    );
    let eve = class.join("gpu-mandelbrot-eve");
    fs::create_dir_all(eve.join("submission_1")).expect("created");
    fs::write(
        eve.join("submission_metadata.yml"),
        "submission_1:\n  :submitters:\n  - :name: Alice Victim\n    :sid: Alice Victim\n",
    )
    .expect("written");

    let out = scratch.path().join("out");
    let output = succeed(
        binary("instructor")
            .arg("grade-class")
            .arg(&class)
            .arg("--out")
            .arg(&out)
            .arg("--no-cpu-device")
            .env("CUDA_VISIBLE_DEVICES", ""),
        "grade-class",
    );
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(
        log.contains("gpu-mandelbrot-eve holds submission_metadata.yml: graded as one submission"),
        "{log}"
    );
    let csv = fs::read_to_string(out.join("grades.csv")).expect("grades.csv");
    assert!(!csv.contains("Alice Victim"), "{csv}");
    let students: Vec<&str> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .collect();
    assert_eq!(students, ["eve", "mallory"], "{csv}");
    for line in csv.lines().skip(1) {
        assert!(line.ends_with(",0"), "earned something: {line}");
    }
    let feedback = fs::read_to_string(out.join("students/gpu-mandelbrot-mallory/feedback.md"))
        .expect("feedback");
    assert!(!feedback.contains("FORGED NOTE"), "{feedback}");
}

/// OUT inside the class folder was refused after it was made (the next run graded a student
/// "out"); a FIFO for OUT/grades.csv hung before any work. Each is one line, a non-zero
/// exit, and nothing made.
#[test]
fn an_out_that_cannot_be_used_is_refused_before_anything_is_made() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let class = scratch.path().join("class");
    fs::create_dir_all(class.join("ada")).expect("created");
    let refused = |out: &Path| {
        let mut child = binary("instructor")
            .arg("grade-class")
            .arg(&class)
            .arg("--out")
            .arg(out)
            .arg("--no-cpu-device")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("started");
        let started = Instant::now();
        while child.try_wait().expect("waited").is_none() {
            if started.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                panic!("grade-class --out {} hangs", out.display());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let output = child.wait_with_output().expect("its output");
        assert!(!output.status.success(), "{}", out.display());
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    for out in [class.join("out"), class.join("new/../out2"), class.clone()] {
        let said = refused(&out);
        assert!(said.contains("is inside the class folder"), "{said}");
        assert_eq!(said.trim_end().lines().count(), 1, "{said}");
    }
    assert!(!class.join("out").exists() && !class.join("new").exists());
    assert!(!class.join("out2").exists());

    let out = scratch.path().join("out");
    fs::create_dir(&out).expect("created");
    let fifo = out.join("grades.csv");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let said = refused(&out);
    assert!(said.contains("grades.csv is not a regular file"), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "{said}");
    assert!(!out.join("students").exists(), "no work began");
}

/// The Classroom 50 autograder `cargo instructor classroom` writes, run as Classroom 50's
/// runner runs it (in the student's checkout, the submission's identity in its environment):
/// its result.json gives every check on the solution and none on the hand-out.
#[test]
fn the_classroom_50_autograder_passes_the_solution_and_fails_the_hand_out() {
    let _builds = release_builds();
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let handout = scratch.path().join("handout");
    let solution = scratch.path().join("solution");
    let assignment = scratch.path().join("classroom50-gpu");
    succeed(
        binary("instructor")
            .args(["handout", "--out"])
            .arg(&handout),
        "handout",
    );
    succeed(
        binary("instructor")
            .args(["handout", "--solved", "--out"])
            .arg(&solution),
        "handout --solved",
    );
    succeed(
        binary("instructor")
            .args(["classroom", "--slug", "mandelbrot", "--out"])
            .arg(&assignment),
        "classroom",
    );
    let script = assignment.join("autograders/mandelbrot/autograder.py");
    let plan: Value = serde_json::from_str(
        &fs::read_to_string(assignment.join("autograders/mandelbrot/checks.json"))
            .expect("checks.json"),
    )
    .expect("JSON");
    let checks = plan["checks"].as_array().expect("the checks").len();
    assert!(checks >= 4, "{plan}");

    // This workspace's release build, which seeds theirs (a no-op once built).
    succeed(
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["build", "--release", "--workspace", "--locked"])
            .current_dir(workspace()),
        "this workspace's release build",
    );
    // Both workspaces build in one target folder, seeded with this one's release build. Cargo
    // names a workspace's units by paths inside it, so the hand-out's units are the
    // solution's, told apart by their files' times: the hand-out's files that differ are
    // made newer than the solution's build, and only the labs with a stub build again
    // (shared and the CPU device stay built: a minute of CI's 2 cores).
    let target = scratch.path().join("target");
    seed_from_release(&target);
    for (dir, passes) in [(&solution, true), (&handout, false)] {
        if !passes {
            newer_where_they_differ(&handout, &solution);
        }
        let user = if passes { "solution" } else { "handout" };
        succeed(
            Command::new("python3")
                .arg(&script)
                .current_dir(dir)
                .env("CARGO_TARGET_DIR", &target)
                .env("CLASSROOM", "gpu")
                .env("ASSIGNMENT", "mandelbrot")
                .env("SUBMISSION_TAG", "submit/2026-11-27T01-02-03Z-abcdef0")
                .env("OWNER", user)
                .env("ASSIGNMENT_TYPE", "individual")
                .env(
                    "COMMIT_URL",
                    format!("https://github.com/c/gpu-mandelbrot-{user}/commit/a"),
                )
                .env(
                    "RELEASE_URL",
                    format!("https://github.com/c/gpu-mandelbrot-{user}/releases"),
                ),
            "the autograder",
        );
        let result: Value = serde_json::from_str(
            &fs::read_to_string(dir.join("result.json")).expect("result.json"),
        )
        .expect("JSON");
        assert_eq!(result["schema"], "classroom50/result/v1");
        assert_eq!(result["owner"], user);
        let tests = result["tests"].as_array().expect("the tests");
        assert_eq!(tests.len(), checks + 1, "the set-up and each check");
        assert_eq!(
            tests[0]["passed"], true,
            "the set-up: {}",
            tests[0]["output"]
        );
        for test in &tests[1..] {
            assert_eq!(
                test["passed"], passes,
                "{} in {}: {test}",
                test["test-name"], user
            );
        }
        let max = result["max-score"].as_u64().expect("a whole max-score");
        assert_eq!(result["score"].as_u64(), Some(if passes { max } else { 0 }));
    }
}

/// Set the time of each file of `dir` whose bytes differ from its twin in `twin` to now.
fn newer_where_they_differ(dir: &Path, twin: &Path) {
    for entry in fs::read_dir(dir).expect("a folder").flatten() {
        let path = entry.path();
        let other = twin.join(entry.file_name());
        let kind = entry.file_type().expect("a file type");
        if kind.is_dir() {
            newer_where_they_differ(&path, &other);
        } else if kind.is_file() && fs::read(&path).ok() != fs::read(&other).ok() {
            fs::File::options()
                .append(true)
                .open(&path)
                .and_then(|file| file.set_modified(std::time::SystemTime::now()))
                .expect("the file's time set");
        }
    }
}

/// A one-node Slurm cluster of this test's own, stopped when dropped.
struct Cluster {
    conf: PathBuf,
    daemons: Vec<Child>,
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        let host =
            String::from_utf8(succeed(Command::new("hostname").arg("-s"), "hostname").stdout)
                .expect("a host name")
                .trim()
                .to_string();
        let port = || {
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port()
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        for sub in ["state", "spool"] {
            fs::create_dir_all(dir.join(sub)).expect("created");
        }
        let d = dir.display();
        let conf = dir.join("slurm.conf");
        fs::write(
            &conf,
            format!(
                "ClusterName=xtasktest\nSlurmctldHost={host}(127.0.0.1)\n\
                 SlurmctldPort={}\nSlurmdPort={}\n\
                 AuthType=auth/none\nCredType=cred/none\n\
                 ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
                 SlurmUser=root\nSlurmdUser=root\n\
                 StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
                 SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
                 SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
                 ReturnToService=2\nMpiDefault=none\n\
                 SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n\
                 JobAcctGatherType=jobacct_gather/none\n\
                 AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\n\
                 NodeName={host} NodeAddr=127.0.0.1 CPUs={cores} State=UNKNOWN\n\
                 PartitionName=grading Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
                port(),
                port()
            ),
        )
        .expect("written");
        let daemon = |name: &str, extra: &[&str]| {
            let program = ["/usr/sbin", "/usr/local/sbin", "/usr/bin"]
                .iter()
                .map(|d| Path::new(d).join(name))
                .find(|p| p.is_file())
                .unwrap_or_else(|| PathBuf::from(name));
            Command::new(program)
                .args(["-D", "-f"])
                .arg(&conf)
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        let cluster = Cluster {
            daemons: vec![daemon("slurmctld", &[]), daemon("slurmd", &["-N", &host])],
            conf,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let state = Command::new("sinfo")
                .args(["-h", "-o", "%t"])
                .env("SLURM_CONF", &cluster.conf)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            if state == "idle" {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the node is not idle after 60 s ({state}); see {d}/slurmctld.log"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        cluster
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for daemon in &mut self.daemons {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }
}

#[test]
#[ignore = "needs Slurm's daemons and sbatch (cargo instructor test runs it where they are found)"]
fn slurm_a_class_grades_alike_as_a_job_array() {
    // Two of the five, the solution and the hostile one: a job array's tasks are alike, and
    // CI's minutes are counted (the five are graded through `grade-class` and Gradescope).
    let five = class_of_five();
    fs::remove_dir_all(five.class.join("gpu-mandelbrot-broken")).expect("removed");
    for left_out in [
        "gpu-mandelbrot-handout.tar.gz",
        "gpu-mandelbrot-independent.zip",
    ] {
        fs::remove_file(five.class.join(left_out)).expect("removed");
    }
    let students = ["hostile", "solution"];
    let summary = fs::read_to_string(five.class.join("scores.csv")).expect("scores.csv");
    let kept: Vec<&str> = summary
        .lines()
        .enumerate()
        .filter(|(i, line)| *i == 0 || students.iter().any(|s| line.starts_with(&format!("{s},"))))
        .map(|(_, line)| line)
        .collect();
    fs::write(five.class.join("scores.csv"), kept.join("\n") + "\n").expect("written");
    let cluster = Cluster::start(&five.root.join("slurm"));
    let out = five.root.join("out");
    let output = grade_class(&five, &out, &["--slurm"], &[("SLURM_CONF", &cluster.conf)]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("2 tasks, one per submission"), "{stderr}");
    for student in students {
        let folder = out.join(format!("students/gpu-mandelbrot-{student}"));
        let report = fs::read_to_string(folder.join("feedback.md")).unwrap_or_default();
        let scores = scores(&folder.join("results.json"));
        assert_expected(student, &scores, "Slurm", &report);
    }
    // One task per submission, each with its log.
    for task in 0..students.len() {
        let log = out.join(format!(".class/slurm/task-{task}.log"));
        assert!(log.is_file(), "{}", log.display());
    }
    let csv = fs::read_to_string(out.join("grades.csv")).expect("grades.csv");
    assert_eq!(csv.lines().count(), 3, "{csv}");
    // A student on the cluster: a GPU lab run through `srun` (on the CPU device here, no
    // GPU), byte for byte lab01's image, as the README's cluster row says.
    let release = target_dir().join("release");
    succeed(
        Command::new("srun")
            .env("SLURM_CONF", &cluster.conf)
            .arg(format!("--chdir={}", out.display()))
            .arg(release.join("lab04"))
            .args(["641", "479", "--emulate", "-o", "srun-lab04.ppm"]),
        "srun lab04",
    );
    succeed(
        Command::new(release.join("lab01")).current_dir(&out).args([
            "641",
            "479",
            "-o",
            "lab01.ppm",
        ]),
        "lab01",
    );
    let read = |name: &str| fs::read(out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        read("srun-lab04.ppm") == read("lab01.ppm"),
        "lab04 through srun differs from lab01"
    );
    drop(cluster);
}
