//! What a grade tells: the table on stdout and Gradescope's results.json, which always agree.
//!
//! A check not graded on this machine (a GPU check without a GPU) is not a zero: the table
//! shows `-/N` and leaves it out of the total; results.json gives it a `max_score` of 0 and
//! says in its output what it is worth and that it is graded on a GPU machine, so Gradescope
//! adds nothing for it in either direction until that run replaces the results.

use serde::Serialize;

use super::checks::Outcome;

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
                output.as_str(),
            ),
            Outcome::NotGraded(why) => (format!("-/{}", round(r.max)), why.as_str()),
        };
        let said = said.replace('|', "/").replace('\n', " ");
        text.push_str(&format!("| {}{hidden} | {points} | {said} |\n", r.name));
    }
    for note in notes {
        text.push_str(&format!("{note}\n"));
    }
    text.push_str(&total_line(results));
    text.push('\n');
    text
}

/// `total: 12 of 14 points; 30 more not graded here (needs a GPU)`.
pub fn total_line(results: &[Graded]) -> String {
    let (score, max, not_graded) = totals(results);
    let mut line = format!("total: {} of {} points", round(score), round(max));
    if not_graded > 0.0 {
        line.push_str(&format!(
            "; {} more not graded here (needs a GPU)",
            round(not_graded)
        ));
    }
    line
}

fn totals(results: &[Graded]) -> (f64, f64, f64) {
    let (mut score, mut max, mut not_graded) = (0.0, 0.0, 0.0);
    for r in results {
        match &r.outcome {
            Outcome::Scored { score: s, .. } => {
                score += round(*s);
                max += r.max;
            }
            Outcome::NotGraded(_) => not_graded += r.max,
        }
    }
    (score, max, not_graded)
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
}

#[derive(Serialize)]
pub struct TestResult {
    pub name: String,
    pub score: f64,
    pub max_score: f64,
    pub output: String,
    pub visibility: &'static str,
}

pub fn gradescope(results: &[Graded], notes: &[String]) -> Results {
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
            };
            TestResult {
                name: r.name.clone(),
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
    Results {
        score: round(tests.iter().map(|t| t.score).sum()),
        output: notes.join("\n"),
        tests,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let json = gradescope(&results(), &[]);
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
