//! One submission of a class, graded into its own folder `OUT/students/KEY/`:
//! `results.json` (Gradescope's form), `feedback.md` (what the student reads) and, last,
//! `record.json` (what was graded, with which grader, and how it went), so that a class that
//! was stopped resumes after its last whole submission.
//!
//! The grade itself is this same instructor binary, `grade SUBMISSION --gradescope FILE`, run as
//! a subprocess in a process group of its own with a time limit: a submission that does not
//! build, hangs or attacks costs its own row, never the class.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::entries::{self, Entry, Form};
use super::gpus::Slot;
use crate::grade::fault::Fault;
use crate::grade::{inert, report, Common};
use xtask::runner;

/// What every grade of a class shares.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Settings {
    /// The instructor binary that grades (this one).
    pub exe: PathBuf,
    /// The class's output folder.
    pub out: PathBuf,
    /// The options passed on to each `grade` (`--bin-dir`, `--unsandboxed`, ...).
    pub forward: Common,
    /// Seconds one submission may take, build and checks together.
    pub limit_s: u64,
    /// What the grader is: a digest of this binary and of what changes its results.
    pub grader: String,
    /// The rubric's check names, in order, and their points.
    pub checks: Vec<(String, f64)>,
    /// The instructor said (`--prebuilt`) that every entry is a `--build-only` folder of
    /// theirs: graded with `--built`. Never read from an entry.
    #[serde(default)]
    pub prebuilt: bool,
}

/// How one submission went, kept beside its results.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// The digest of the submission that was graded.
    pub digest: String,
    pub grader: String,
    /// `None` when the grade ran; else why the submission could not be graded.
    pub not_graded: Option<String>,
    /// The checks the grader itself failed at (results.json's `extra_data`): the grade is
    /// not the student's, and is never kept; the next run grades it again.
    #[serde(default)]
    pub grader_failed: Vec<String>,
    pub seconds: f64,
}

/// The results folder of an entry.
pub fn folder(out: &Path, key: &str) -> PathBuf {
    out.join("students").join(key)
}

/// The record of an earlier grade of `entry`, if it graded the same content with the same
/// grader and ran: then it need not be graded again.
pub fn done(settings: &Settings, entry: &Entry, digest: &str) -> Option<Record> {
    let dir = folder(&settings.out, &entry.key);
    let record: Record = serde_json::from_slice(&fs::read(dir.join("record.json")).ok()?).ok()?;
    let same = record.digest == digest && record.grader == settings.grader;
    let results_ok =
        read_results(&dir.join("results.json")).is_ok_and(|json| grader_failures(&json).is_empty());
    let whole = record.not_graded.is_none() && record.grader_failed.is_empty();
    (same && whole && results_ok).then_some(record)
}

/// Forget an entry's earlier record, so that a grade stopped half-way is not taken as done.
pub fn forget(settings: &Settings, entry: &Entry) -> Result<()> {
    let record = folder(&settings.out, &entry.key).join("record.json");
    match fs::remove_file(&record) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", record.display()))
        }
        _ => Ok(()),
    }
}

/// Grade `entry` on `slot`; its record (also written last, into its folder).
pub fn grade(settings: &Settings, entry: &Entry, digest: &str, slot: &Slot) -> Result<Record> {
    let dir = folder(&settings.out, &entry.key);
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    forget(settings, entry)?;
    let started = Instant::now();
    let unpacked = settings.out.join(".class/unpacked").join(&entry.key);
    let outcome = run(settings, entry, slot, &dir, &unpacked);
    // The unpacked copy served its grade; the results stay.
    if unpacked.exists() {
        fs::remove_dir_all(&unpacked)
            .with_context(|| format!("cannot remove {}", unpacked.display()))?;
    }
    let results = dir.join("results.json");
    let (notes, not_graded) = match outcome {
        Ok(notes) => (notes, None),
        Err(Fault::Student(why)) => {
            write_failed_results(settings, &results, &why, false)?;
            (Vec::new(), Some(why))
        }
        // The grader's own failure: no check scores, results.json says why, and the row's
        // total stays empty until a run grades it (read back below, as for one check).
        Err(Fault::Grader(why)) => {
            write_failed_results(settings, &results, &why, true)?;
            (Vec::new(), None)
        }
    };
    let stdout = fs::read_to_string(dir.join("grade.out")).unwrap_or_default();
    let _ = fs::remove_file(dir.join("grade.out"));
    let grader_failed = read_results(&results)
        .map(|json| grader_failures(&json))
        .unwrap_or_default();
    let feedback = if stdout.is_empty() && !grader_failed.is_empty() {
        feedback_grader_failed(entry, &grader_failed)
    } else {
        feedback(entry, &notes, not_graded.as_deref(), &stdout)
    };
    shared::output::write_file(&dir.join("feedback.md"), feedback.as_bytes())?;
    let record = Record {
        digest: digest.to_string(),
        grader: settings.grader.clone(),
        not_graded,
        grader_failed,
        seconds: started.elapsed().as_secs_f64(),
    };
    let json = serde_json::to_string_pretty(&record).context("cannot encode the record")?;
    shared::output::write_file(&dir.join("record.json"), format!("{json}\n").as_bytes())?;
    Ok(record)
}

/// Unpack if need be, find the workspace and grade it: what unpacking passed over, or why
/// the submission could not be graded: its own doing (a link, a bad archive, a grade that
/// refused it or ran out of time), or the grader's (it could not start, wrote no results,
/// could not unpack into its own folder). The grade's table is left in `dir/grade.out`.
fn run(
    settings: &Settings,
    entry: &Entry,
    slot: &Slot,
    dir: &Path,
    unpacked: &Path,
) -> Result<Vec<String>, Fault> {
    let grader = Fault::Grader;
    let (root, notes) = match &entry.form {
        Form::Refused(why) => return Err(Fault::Student(format!("{} {why}", entry.name))),
        Form::Archive(_) if settings.prebuilt => {
            return Err(grader(format!(
                "{} is an archive; with --prebuilt every entry is a folder made by \
                 `grade --build-only`",
                entry.name
            )))
        }
        Form::Folder if settings.prebuilt => (entry.path.clone(), Vec::new()),
        Form::Folder => (entries::workspace_in(&entry.path), Vec::new()),
        Form::Archive(_) => {
            if unpacked.exists() {
                fs::remove_dir_all(unpacked)
                    .map_err(|e| grader(format!("cannot clear {} ({e})", unpacked.display())))?;
            }
            fs::create_dir_all(unpacked)
                .map_err(|e| grader(format!("cannot create {} ({e})", unpacked.display())))?;
            let notes = entries::unpack_entry(entry, unpacked)
                .map_err(|why| Fault::Student(format!("the archive {} {why}", entry.name)))?;
            (entries::workspace_in(unpacked), notes)
        }
    };
    let results = dir.join("results.json");
    let _ = fs::remove_file(&results);
    let mut command = grade_command(settings, &root);
    command.arg("--gradescope").arg(&results).current_dir(dir);
    // A user of this grade's own, not the slot's: see `next_class_user`.
    let slot = Slot {
        user: crate::sandbox::next_class_user(),
        ..slot.clone()
    };
    slot.apply(&mut command);
    // The grade dies with the thread that waits for it: a class stopped by Ctrl-C or a
    // signal leaves no grade running on (the grade's sandboxes die with the grade).
    // SAFETY: prctl in the forked child before exec, on its own process only.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let limit = Duration::from_secs(settings.limit_s);
    let ran = runner::run(&mut command, limit);
    // The fallback sandbox has no PID namespace to die with a grade that was stopped.
    crate::sandbox::end_user(slot.user);
    let finished = match ran {
        Ok(finished) => finished,
        Err(runner::Failure::TimedOut(_)) => {
            return Err(Fault::Student(format!(
                "grading took longer than {} s and was stopped",
                settings.limit_s
            )))
        }
        // The grade could not start at all: nothing of the submission ran.
        Err(failure @ runner::Failure::Spawn(_)) => {
            return Err(grader(format!("the grader stopped: {failure}")))
        }
        // The grade refused the submission (not a workspace, a link at its top) or died.
        Err(failure) => return Err(Fault::Student(format!("the grader stopped: {failure}"))),
    };
    fs::write(dir.join("grade.out"), &finished.stdout)
        .map_err(|e| grader(format!("cannot keep the grade's table ({e})")))?;
    // The grade exited 0: a missing results.json is the grader's failure.
    read_results(&results)
        .map_err(|why| grader(format!("the grade wrote no usable results.json: {why}")))?;
    Ok(notes)
}

/// The grade of the workspace at `root`: built from its sources, unless the instructor said
/// the class is of `--build-only` folders (`--prebuilt`). What the folder holds (an
/// `intake.json`, a `bin/`) never decides it.
fn grade_command(settings: &Settings, root: &Path) -> Command {
    let mut command = Command::new(&settings.exe);
    command.arg("grade");
    if settings.prebuilt {
        command.arg("--built");
    }
    command.arg(root).args(settings.forward.to_args());
    command
}

/// A results.json that parses, with a test list.
pub fn read_results(path: &Path) -> Result<Value, String> {
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    let json: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    if !json["tests"].is_array() || !json["score"].is_number() {
        return Err("no score or tests".to_string());
    }
    Ok(json)
}

/// The student's feedback when the grader failed before any check ran.
fn feedback_grader_failed(entry: &Entry, why: &[String]) -> String {
    let students: Vec<String> = entry.students.iter().map(|s| inert::markdown(s)).collect();
    format!(
        "# Grade of {}\n\nSubmission: {}\n\nNot graded yet: the grader failed, not you \
         ({}). It is graded again once it is fixed.\n",
        students.join(", "),
        inert::markdown(&entry.name),
        inert::markdown(&why.join("; "))
    )
}

/// The grade's table without the rows of hidden checks (their names hold the sizes and
/// views the hand-out never shows, their results what those runs did), and how many there
/// were. A row is the grade's own: its first cell is a rubric check's name, and what a
/// submission wrote in the last cell has every `|` escaped, so no row can pass for another.
fn without_hidden(table: &str) -> (String, usize) {
    let mut kept = String::new();
    let mut hidden = 0;
    for line in table.lines() {
        let first_cell = line
            .strip_prefix("| ")
            .and_then(|rest| rest.split(" | ").next());
        if first_cell.is_some_and(|name| name.ends_with(" (hidden)")) {
            hidden += 1;
            continue;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    (kept, hidden)
}

/// The checks a results.json says the grader failed at (`extra_data.grader_failed`).
pub fn grader_failures(json: &Value) -> Vec<String> {
    json["extra_data"]["grader_failed"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

/// Gradescope's results.json for a submission that could not be graded: every check of the
/// rubric at zero, saying why; or, when the grader failed (`grader`), every check worth
/// nothing here and `extra_data.grader_failed` saying why, so that no 0 is recorded.
fn write_failed_results(settings: &Settings, path: &Path, why: &str, grader: bool) -> Result<()> {
    let tests: Vec<Value> = settings
        .checks
        .iter()
        .map(|(name, points)| {
            let (max, output) = if grader {
                (0.0, report::graders_failure_to_student(why, *points))
            } else {
                (*points, format!("not graded: {why}"))
            };
            serde_json::json!({
                "name": name,
                "score": 0.0,
                "max_score": max,
                "output": output,
                "visibility": "visible",
            })
        })
        .collect();
    let failed: Vec<String> = if grader {
        vec![why.to_string()]
    } else {
        Vec::new()
    };
    let json = serde_json::json!({
        "score": 0.0,
        "output": format!("This submission could not be graded: {why}"),
        "tests": tests,
        "extra_data": { "grader_failed": failed },
    });
    let text = serde_json::to_string_pretty(&json).context("cannot encode the results")?;
    shared::output::write_file(path, format!("{text}\n").as_bytes())?;
    Ok(())
}

/// The student's feedback: who, what was graded, and the grader's own table. Every name and
/// reason is the submission's own text: shown through [`inert::markdown`] (the table is
/// already, by the grade that wrote it).
fn feedback(entry: &Entry, notes: &[String], not_graded: Option<&str>, table: &str) -> String {
    let students: Vec<String> = entry.students.iter().map(|s| inert::markdown(s)).collect();
    let mut text = format!(
        "# Grade of {}\n\nSubmission: {}\n\n",
        students.join(", "),
        inert::markdown(&entry.name)
    );
    if !notes.is_empty() {
        text.push_str("Unpacking the archive passed over:\n\n");
        for note in notes {
            text.push_str(&format!("- {}\n", inert::markdown(note)));
        }
        text.push('\n');
    }
    match not_graded {
        Some(why) => text.push_str(&format!(
            "Not graded: {}.\n\nNo check could run: every check scores 0.\n",
            inert::markdown(why)
        )),
        None => {
            let (table, hidden) = without_hidden(table);
            if hidden > 0 {
                text.push_str(&format!(
                    "{hidden} hidden checks are not listed here: they count in the total, and \
                     are shown once grades are published.\n\n"
                ));
            }
            text.push_str(table.trim_end());
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(out: &Path, exe: &str) -> Settings {
        Settings {
            exe: PathBuf::from(exe),
            out: out.to_path_buf(),
            forward: Common::default(),
            limit_s: 5,
            grader: "g1".into(),
            checks: vec![("lab02: a".into(), 3.0), ("lab06: b".into(), 1.0)],
            prebuilt: false,
        }
    }

    fn entry(path: &Path, form: Form) -> Entry {
        Entry {
            name: "ada.zip".into(),
            path: path.to_path_buf(),
            form,
            key: "ada".into(),
            students: vec!["ada".into()],
        }
    }

    /// The attack: a folder holding only `intake.json` and `bin/lab02` (a link into the
    /// instructor's own build) was graded as `--built`, 14 of 14 with no source. A folder
    /// is built from its sources whatever it holds; `--built` is the instructor's word.
    #[test]
    fn a_folder_holding_intake_json_is_built_from_its_sources() {
        let out = tempfile::tempdir().expect("a temp folder");
        let mallory = out.path().join("mandelbrot-mallory");
        fs::create_dir_all(mallory.join("bin")).expect("created");
        fs::write(mallory.join("intake.json"), r#"{"notes":[],"broken":[]}"#).expect("written");
        std::os::unix::fs::symlink(
            "/proc/self/cwd/../../../target/release/lab02",
            mallory.join("bin/lab02"),
        )
        .expect("a link");
        let mut settings = settings(out.path(), "/nonexistent/xtask");
        let args = |settings: &Settings| -> Vec<String> {
            grade_command(settings, &mallory)
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(args(&settings), ["grade", &mallory.to_string_lossy()]);
        settings.prebuilt = true;
        assert_eq!(
            args(&settings),
            ["grade", "--built", &mallory.to_string_lossy()]
        );
        // An archive cannot be the instructor's --build-only folder.
        let zip = out.path().join("ada.zip");
        fs::write(&zip, "zip").expect("written");
        let record = grade(
            &settings,
            &entry(&zip, Form::Archive(super::super::unpack::Kind::Zip)),
            "d1",
            &Slot::numbered(0),
        )
        .expect("recorded");
        // The instructor's word was wrong, not the student's work: not a 0.
        assert_eq!(record.not_graded, None);
        let why = &record.grader_failed[0];
        assert!(
            why.contains("with --prebuilt every entry is a folder"),
            "{why}"
        );
    }

    /// Names, archive members and reasons reached feedback.md raw: Markdown, HTML, escapes.
    #[test]
    fn the_feedback_shows_the_submissions_text_inert() {
        let mut entry = entry(Path::new("/x"), Form::Folder);
        entry.name = "<b>ada</b>`.zip".into();
        entry.students = vec!["[Ada](http://evil) \u{202e}".into()];
        let notes = ["x/\r\u{1b}[2Kzoe: 14 of 14 points".to_string()];
        let text = feedback(&entry, &notes, Some("the archive has `**bold**`"), "");
        assert!(
            text.starts_with("# Grade of \\[Ada\\](http://evil) \\\\u{202e}\n"),
            "{text}"
        );
        assert!(
            text.contains("Submission: &lt;b&gt;ada&lt;/b&gt;\\`.zip\n"),
            "{text}"
        );
        assert!(
            text.contains("- x/\\\\r\\\\u{1b}\\[2Kzoe: 14 of 14 points\n"),
            "{text}"
        );
        assert!(
            text.contains("Not graded: the archive has \\`\\*\\*bold\\*\\*\\`."),
            "{text}"
        );
        assert!(!text.contains(['\u{1b}', '\r', '\u{202e}', '<']), "{text}");
    }

    /// Class feedback.md listed the hidden checks with their sizes and views.
    #[test]
    fn the_feedback_leaves_the_hidden_checks_out() {
        let table = "| check | points | result |\n|---|---:|---|\n\
                     | lab02: image 640x480 | 4/4 | identical |\n\
                     | lab02: image 3001x2001 --cy 0.123 (hidden) | 0/2 | wrote a 1x1 image |\n\
                     | lab06: sums | 1/1 | x (hidden) \\| y |\n\
                     total: 5 of 7 points\n";
        let text = feedback(&entry(Path::new("/x"), Form::Folder), &[], None, table);
        assert!(
            !text.contains("3001x2001") && !text.contains("0.123"),
            "{text}"
        );
        assert!(
            text.contains("| lab02: image 640x480 | 4/4 | identical |"),
            "{text}"
        );
        assert!(
            text.contains("| lab06: sums | 1/1 | x (hidden) \\| y |"),
            "{text}"
        );
        assert!(
            text.contains("1 hidden checks are not listed here"),
            "{text}"
        );
        assert!(text.ends_with("total: 5 of 7 points\n"), "{text}");
    }

    #[test]
    fn a_refused_entry_gets_zeros_feedback_and_a_record() {
        let out = tempfile::tempdir().expect("a temp folder");
        let settings = settings(out.path(), "/nonexistent/xtask");
        let entry = entry(out.path(), Form::Refused("is a symbolic link".into()));
        let record = grade(&settings, &entry, "d1", &Slot::numbered(0)).expect("recorded");
        assert_eq!(
            record.not_graded.as_deref(),
            Some("ada.zip is a symbolic link")
        );
        let dir = folder(out.path(), "ada");
        let results = read_results(&dir.join("results.json")).expect("results");
        assert_eq!(results["score"], 0.0);
        assert_eq!(results["tests"][0]["max_score"], 3.0);
        let feedback = fs::read_to_string(dir.join("feedback.md")).expect("feedback");
        assert!(
            feedback.contains("Not graded: ada.zip is a symbolic link."),
            "{feedback}"
        );
        assert!(
            done(&settings, &entry, "d1").is_none(),
            "a failure is tried again"
        );
    }

    #[test]
    fn a_bad_archive_and_a_grader_that_cannot_start_cost_their_row() {
        let out = tempfile::tempdir().expect("a temp folder");
        let settings = settings(out.path(), "/nonexistent/xtask");
        let zip = out.path().join("ada.zip");
        fs::write(&zip, "not a zip").expect("written");
        let record = grade(
            &settings,
            &entry(&zip, Form::Archive(super::super::unpack::Kind::Zip)),
            "d1",
            &Slot::numbered(0),
        )
        .expect("recorded");
        let why = record.not_graded.expect("not graded");
        assert!(
            why.starts_with("the archive ada.zip is not a valid zip"),
            "{why}"
        );
        assert!(
            !out.path().join(".class/unpacked/ada").exists(),
            "cleaned up"
        );

        // A grader that cannot start is the grader's failure: no 0, graded again.
        let folder_entry = entry(out.path(), Form::Folder);
        let record = grade(&settings, &folder_entry, "d2", &Slot::numbered(0)).expect("recorded");
        assert_eq!(record.not_graded, None);
        assert!(
            record.grader_failed[0].starts_with("the grader stopped: cannot run"),
            "{:?}",
            record.grader_failed
        );
        let results =
            read_results(&folder(out.path(), "ada").join("results.json")).expect("results");
        assert_eq!(results["tests"][0]["max_score"], 0.0);
        assert!(
            done(&settings, &folder_entry, "d2").is_none(),
            "graded again"
        );
        let feedback =
            fs::read_to_string(folder(out.path(), "ada").join("feedback.md")).expect("feedback");
        assert!(
            feedback.contains("Not graded yet: the grader failed, not you"),
            "{feedback}"
        );
    }

    #[test]
    fn a_grade_that_ran_is_done_for_the_same_content_and_grader_only() {
        let out = tempfile::tempdir().expect("a temp folder");
        let settings = settings(out.path(), "/nonexistent/xtask");
        let entry = entry(out.path(), Form::Folder);
        let dir = folder(out.path(), "ada");
        fs::create_dir_all(&dir).expect("created");
        fs::write(
            dir.join("results.json"),
            r#"{"score": 3, "tests": [{"name": "lab02: a", "score": 3, "max_score": 3}]}"#,
        )
        .expect("written");
        let record = Record {
            digest: "d1".into(),
            grader: "g1".into(),
            not_graded: None,
            grader_failed: Vec::new(),
            seconds: 1.0,
        };
        fs::write(
            dir.join("record.json"),
            serde_json::to_string(&record).expect("json"),
        )
        .expect("written");
        assert_eq!(done(&settings, &entry, "d1"), Some(record));
        assert!(done(&settings, &entry, "d2").is_none(), "new content");
        let mut other = settings.clone();
        other.grader = "g2".into();
        assert!(done(&other, &entry, "d1").is_none(), "a new grader");
        forget(&settings, &entry).expect("forgotten");
        assert!(done(&settings, &entry, "d1").is_none());
    }

    /// A failure of the grader's own reference scored the student 0 and was kept as graded:
    /// now such a grade is never kept.
    #[test]
    fn a_grade_the_grader_failed_at_is_not_kept() {
        let out = tempfile::tempdir().expect("a temp folder");
        let settings = settings(out.path(), "/nonexistent/xtask");
        let entry = entry(out.path(), Form::Folder);
        let dir = folder(out.path(), "ada");
        fs::create_dir_all(&dir).expect("created");
        fs::write(
            dir.join("results.json"),
            r#"{"score": 0, "tests": [{"name": "lab02: a", "score": 0, "max_score": 0}],
                "extra_data": {"grader_failed": ["lab02: a: the reference lab02 failed"]}}"#,
        )
        .expect("written");
        let json = read_results(&dir.join("results.json")).expect("results");
        assert_eq!(
            grader_failures(&json),
            ["lab02: a: the reference lab02 failed"]
        );
        let record = Record {
            digest: "d1".into(),
            grader: "g1".into(),
            not_graded: None,
            grader_failed: grader_failures(&json),
            seconds: 1.0,
        };
        fs::write(
            dir.join("record.json"),
            serde_json::to_string(&record).expect("json"),
        )
        .expect("written");
        assert!(done(&settings, &entry, "d1").is_none(), "graded again");
        // An older record without the field, beside the same results: not kept either.
        fs::write(
            dir.join("record.json"),
            r#"{"digest": "d1", "grader": "g1", "not_graded": null, "seconds": 1.0}"#,
        )
        .expect("written");
        assert!(
            done(&settings, &entry, "d1").is_none(),
            "read from results.json"
        );
    }
}
