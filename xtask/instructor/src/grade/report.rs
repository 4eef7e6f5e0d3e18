//! What a grade tells: the table on stdout and Gradescope's results.json, which always agree.
//!
//! A check not graded on this machine (a GPU check without a GPU) is not a zero: the table
//! shows `-/N` and leaves it out of the total; results.json gives it a `max_score` of 0 and
//! says in its output what it is worth and that it is graded on a GPU machine, so Gradescope
//! adds nothing for it in either direction until that run replaces the results.
//!
//! A check the grader itself failed at (its reference failed, the sandbox did not start) is
//! not the student's 0 either: the table shows `-/N` and "not graded: the grader failed",
//! the total line counts it apart, and results.json gives it a `max_score` of 0 and lists it
//! in `extra_data.grader_failed`, which `grade-class` reads to grade the submission again.
//!
//! Every string in a check's output may hold text of the student's (their program's last
//! line on stderr): the table, for the terminal, shows it through [`inert::line`] with its
//! `|` escaped, so it cannot restyle the terminal or forge a row (feedback.md, Markdown, is
//! written from results.json through [`inert::markdown`]).

use serde::Serialize;

use super::checks::Outcome;
use super::inert;

/// One check's result.
pub struct Graded {
    pub name: String,
    pub max: f64,
    pub hidden: bool,
    pub outcome: Outcome,
}

/// The table and the total line.
pub fn table(results: &[Graded], notes: &[String]) -> String {
    let mut text = String::from("| check | points | result |\n|---|---:|---|\n");
    for r in results {
        let hidden = if r.hidden { " (hidden)" } else { "" };
        let (points, said) = match &r.outcome {
            Outcome::Scored { score, output } => (
                format!("{}/{}", round(*score), round(r.max)),
                output.clone(),
            ),
            Outcome::NotGraded(why) => (format!("-/{}", round(r.max)), why.clone()),
            Outcome::GraderFailed(why) => (format!("-/{}", round(r.max)), graders_failure(why)),
        };
        let said = inert::line(&said).replace('|', "\\|");
        text.push_str(&format!("| {}{hidden} | {points} | {said} |\n", r.name));
    }
    for note in notes {
        text.push_str(&format!("{note}\n"));
    }
    text.push_str(&total_line(results));
    text.push('\n');
    text
}

/// A check the grader failed at, as the table and the grade's log say it: the one place
/// that says whose fault it is (the failure's own text never does).
pub fn graders_failure(why: &str) -> String {
    format!("not graded: the grader failed (not the student's fault): {why}")
}

/// The same to the student (results.json, a class's feedback), with what the check is worth.
pub fn graders_failure_to_student(why: &str, points: f64) -> String {
    format!(
        "not graded: the grader failed, not you ({why}); worth {} points, graded again once \
         it is fixed",
        round(points)
    )
}

/// `total: 12 of 14 points; 30 more not graded here (needs a GPU)`, and what the grader
/// failed at, apart.
pub fn total_line(results: &[Graded]) -> String {
    let totals = totals(results);
    let mut line = format!(
        "total: {} of {} points",
        round(totals.score),
        round(totals.max)
    );
    if totals.not_graded > 0.0 {
        line.push_str(&format!(
            "; {} more not graded here (needs a GPU)",
            round(totals.not_graded)
        ));
    }
    if totals.grader_failed > 0.0 {
        line.push_str(&format!(
            "; {} more not graded: the grader failed (not the student's fault), grade again",
            round(totals.grader_failed)
        ));
    }
    line
}

struct Totals {
    score: f64,
    max: f64,
    not_graded: f64,
    grader_failed: f64,
}

fn totals(results: &[Graded]) -> Totals {
    let mut totals = Totals {
        score: 0.0,
        max: 0.0,
        not_graded: 0.0,
        grader_failed: 0.0,
    };
    for r in results {
        match &r.outcome {
            Outcome::Scored { score: s, .. } => {
                totals.score += round(*s);
                totals.max += r.max;
            }
            Outcome::NotGraded(_) => totals.not_graded += r.max,
            Outcome::GraderFailed(_) => totals.grader_failed += r.max,
        }
    }
    totals
}

/// The checks the grader failed at: a submission with any is graded again, never kept.
pub fn grader_failed(results: &[Graded]) -> Vec<String> {
    results
        .iter()
        .filter_map(|r| match &r.outcome {
            Outcome::GraderFailed(why) => Some(format!("{}: {why}", r.name)),
            _ => None,
        })
        .collect()
}

pub fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Gradescope's results.json.
#[derive(Serialize)]
pub struct Results {
    pub score: f64,
    /// Shown above the tests: how the code ran, and what was taken from the submission.
    pub output: String,
    pub tests: Vec<TestResult>,
    /// Gradescope keeps it unread; `grade-class` reads `grader_failed` from it.
    pub extra_data: ExtraData,
}

#[derive(Serialize, serde::Deserialize, Default, Debug, PartialEq)]
pub struct ExtraData {
    /// The checks the grader itself failed at, each with why: not graded, not a 0.
    #[serde(default)]
    pub grader_failed: Vec<String>,
    /// The labs a partial grade (`--only`) graded alone; empty for a whole grade.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial: Vec<String>,
}

#[derive(Serialize)]
pub struct TestResult {
    pub name: String,
    pub score: f64,
    pub max_score: f64,
    pub output: String,
    pub visibility: &'static str,
}

/// Gradescope's results.json of `results`, `notes` above them. A partial grade (`only`
/// names the labs it graded alone, `--only`) says so where Gradescope shows it: the first
/// line above the tests and each test's name (a score of 8 of lab06 alone passed for a
/// whole grade), and in `extra_data.partial`.
pub fn gradescope(results: &[Graded], notes: &[String], only: &[&str]) -> Results {
    let partial = (!only.is_empty()).then(|| only.join(" and "));
    let tests: Vec<TestResult> = results
        .iter()
        .map(|r| {
            let (score, max_score, output) = match &r.outcome {
                Outcome::Scored { score, output } => (round(*score), r.max, output.clone()),
                Outcome::NotGraded(why) => (
                    0.0,
                    0.0,
                    format!(
                        "{why}; worth {} points, graded on a GPU machine",
                        round(r.max)
                    ),
                ),
                Outcome::GraderFailed(why) => (0.0, 0.0, graders_failure_to_student(why, r.max)),
            };
            TestResult {
                name: match &partial {
                    Some(labs) => format!("{} (partial grade: {labs} alone)", r.name),
                    None => r.name.clone(),
                },
                score,
                max_score,
                output,
                visibility: if r.hidden {
                    "after_published"
                } else {
                    "visible"
                },
            }
        })
        .collect();
    let mut output: Vec<String> = partial
        .iter()
        .map(|labs| {
            format!(
                "PARTIAL GRADE: {labs} alone (--only); the score is theirs, not the whole \
                 rubric's."
            )
        })
        .collect();
    output.extend(notes.iter().cloned());
    Results {
        score: round(tests.iter().map(|t| t.score).sum()),
        output: output.join("\n"),
        tests,
        extra_data: ExtraData {
            grader_failed: grader_failed(results),
            partial: only.iter().map(|lab| lab.to_string()).collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--only lab06 --gradescope` wrote a score of 8 and six tests that passed for a whole
    /// grade: its first line, each test's name and extra_data say it is partial.
    #[test]
    fn a_partial_grade_says_so_in_results_json() {
        let notes = ["Grading: ...".to_string()];
        let json = gradescope(&results(), &notes, &["lab06"]);
        assert!(json.output.starts_with(
            "PARTIAL GRADE: lab06 alone (--only); the score is theirs, not the whole rubric's.\n"
        ));
        assert!(json.output.ends_with("Grading: ..."), "{}", json.output);
        assert_eq!(json.tests[0].name, "lab02: a (partial grade: lab06 alone)");
        assert!(json
            .tests
            .iter()
            .all(|t| t.name.ends_with("(partial grade: lab06 alone)")));
        assert_eq!(json.extra_data.partial, ["lab06"]);
        // A whole grade says nothing of it, and writes no `partial`.
        let whole = gradescope(&results(), &notes, &[]);
        assert_eq!(whole.output, "Grading: ...");
        assert_eq!(whole.tests[0].name, "lab02: a");
        let text = serde_json::to_string(&whole).expect("encoded");
        assert!(!text.contains("partial"), "{text}");
    }

    fn results() -> Vec<Graded> {
        vec![
            Graded {
                name: "lab02: a".into(),
                max: 3.0,
                hidden: false,
                outcome: Outcome::score(1.5, "half"),
            },
            Graded {
                name: "lab04: b".into(),
                max: 4.0,
                hidden: true,
                outcome: Outcome::NotGraded("not graded here: needs a GPU".into()),
            },
        ]
    }

    /// The grader's own failure is neither the student's 0 nor a check passed over in
    /// silence: the table says so, the total counts it apart, results.json lists it.
    #[test]
    fn a_grader_failure_is_not_a_zero() {
        let mut all = results();
        all.push(Graded {
            name: "lab02: c".into(),
            max: 2.0,
            hidden: false,
            outcome: Outcome::GraderFailed("the reference lab02 failed: crashed".into()),
        });
        let text = table(&all, &[]);
        assert!(
            text.contains("| lab02: c | -/2 | not graded: the grader failed (not the student's fault): the reference lab02 failed: crashed |\n"),
            "{text}"
        );
        // Said once in its row (it was said twice: the report's words and the failure's own).
        assert_eq!(text.matches("not the student's fault").count(), 2, "{text}");
        assert!(
            text.ends_with("total: 1.5 of 3 points; 4 more not graded here (needs a GPU); 2 more not graded: the grader failed (not the student's fault), grade again\n"),
            "{text}"
        );
        let json = gradescope(&all, &[], &[]);
        assert_eq!((json.score, json.tests[2].max_score), (1.5, 0.0));
        assert_eq!(
            json.tests[2].output,
            "not graded: the grader failed, not you (the reference lab02 failed: crashed); worth 2 points, graded again once it is fixed"
        );
        assert_eq!(
            json.extra_data.grader_failed,
            ["lab02: c: the reference lab02 failed: crashed"]
        );
        assert!(gradescope(&results(), &[], &[])
            .extra_data
            .grader_failed
            .is_empty());
    }

    /// The student's last line on stderr reached the table raw: a forged row, a forged
    /// total, the real one black on black.
    #[test]
    fn a_students_output_forges_no_row_or_colour() {
        let forged = "x |\n| lab02: a | 4/4 | identical |\ntotal: 14 of 14 points\u{1b}[30;40m";
        let results = vec![Graded {
            name: "lab02: a".into(),
            max: 4.0,
            hidden: false,
            outcome: Outcome::score(0.0, format!("crashed: panicked: {forged}")),
        }];
        let text = table(&results, &[]);
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(!text.contains("\ntotal: 14"), "{text}");
        assert!(text.ends_with("total: 0 of 4 points\n"), "{text}");
        assert_eq!(
            text.lines().nth(2).map(|l| l.matches(" | ").count()),
            Some(2),
            "{text}"
        );
    }

    /// A check not graded here is neither a zero in the table nor points in results.json.
    #[test]
    fn table_and_results_agree() {
        let text = table(&results(), &["student code ran in a sandbox".into()]);
        assert!(
            text.contains("| lab04: b (hidden) | -/4 | not graded here: needs a GPU |"),
            "{text}"
        );
        assert!(
            text.ends_with("total: 1.5 of 3 points; 4 more not graded here (needs a GPU)\n"),
            "{text}"
        );
        let json = gradescope(&results(), &[], &[]);
        assert_eq!(json.score, 1.5);
        let max: f64 = json.tests.iter().map(|t| t.max_score).sum();
        assert_eq!(max, 3.0, "the GPU check adds no max_score here");
        assert!(
            json.tests[1].output.contains("worth 4 points"),
            "{}",
            json.tests[1].output
        );
        assert_eq!(json.tests[1].visibility, "after_published");
    }
}
