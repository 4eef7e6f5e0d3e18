//! The class's gradebook, read back from each submission's results.json (whoever graded it:
//! this machine, another GPU, a Slurm task): `grades.csv`, one row per student in a form an
//! LMS imports, and `summary.md`, the score distribution and the checks most students fail.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde_json::Value;

use super::entries::Entry;
use super::one::{self, Record};
use crate::grade::inert;

/// One student's row.
#[derive(Debug, Clone)]
pub struct Row {
    pub student: String,
    /// The submission's folder under OUT/students.
    pub key: String,
    /// Each check's score and the most it could earn here, from results.json.
    pub checks: BTreeMap<String, (f64, f64)>,
    pub total: f64,
    pub max: f64,
    /// Why the submission was not graded, if it was not.
    pub not_graded: Option<String>,
    /// The checks the grader itself failed at: the row's total is left empty, never a 0
    /// the student did not earn.
    pub grader_failed: Vec<String>,
}

impl Row {
    /// Whether the row is a whole grade: graded, and no check failed by the grader.
    fn whole(&self) -> bool {
        self.not_graded.is_none() && self.grader_failed.is_empty()
    }
}

/// Every student's row, from the results in `out`; a submission without a record is a row
/// that says so.
pub fn rows(out: &Path, entries: &[Entry]) -> Vec<Row> {
    let mut rows = Vec::new();
    for entry in entries {
        let dir = one::folder(out, &entry.key);
        let record: Option<Record> = fs::read(dir.join("record.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        let results = one::read_results(&dir.join("results.json"));
        let (checks, total, max, not_graded, grader_failed) = match (record, results) {
            (None, _) => (
                BTreeMap::new(),
                0.0,
                0.0,
                Some("no grade was recorded (stopped before it ended?)".to_string()),
                Vec::new(),
            ),
            (Some(record), Ok(json)) => {
                let (checks, max) = scores(&json);
                let total = json["score"].as_f64().unwrap_or(0.0);
                let failed = one::grader_failures(&json);
                (checks, total, max, record.not_graded, failed)
            }
            (Some(_), Err(why)) => (
                BTreeMap::new(),
                0.0,
                0.0,
                Some(format!("its results.json is not readable: {why}")),
                Vec::new(),
            ),
        };
        for student in &entry.students {
            rows.push(Row {
                student: student.clone(),
                key: entry.key.clone(),
                checks: checks.clone(),
                total,
                max,
                not_graded: not_graded.clone(),
                grader_failed: grader_failed.clone(),
            });
        }
    }
    rows.sort_by(|a, b| a.student.cmp(&b.student).then(a.key.cmp(&b.key)));
    rows
}

/// Each test's score and max_score, and the sum of the max_scores.
fn scores(json: &Value) -> (BTreeMap<String, (f64, f64)>, f64) {
    let mut checks = BTreeMap::new();
    let mut max = 0.0;
    for test in json["tests"].as_array().into_iter().flatten() {
        let Some(name) = test["name"].as_str() else {
            continue;
        };
        let score = test["score"].as_f64().unwrap_or(0.0);
        let most = test["max_score"].as_f64().unwrap_or(0.0);
        max += most;
        checks.insert(name.to_string(), (score, most));
    }
    (checks, max)
}

/// `grades.csv`: `student`, one column per check (in the rubric's order), `total`. A check
/// not graded on this machine (worth nothing here: a GPU check graded without a GPU) or
/// failed by the grader is an empty cell, not a 0 an LMS would record as earned nothing;
/// so is the total of a row the grader failed at.
pub fn csv(checks: &[String], rows: &[Row]) -> String {
    let mut text = String::from("student");
    for check in checks {
        text.push(',');
        text.push_str(&field(check));
    }
    text.push_str(",total\n");
    for row in rows {
        text.push_str(&field(&row.student));
        for check in checks {
            text.push(',');
            match row.checks.get(check) {
                Some((score, most)) if *most > 0.0 => text.push_str(&number(*score)),
                _ => {}
            }
        }
        text.push(',');
        if row.grader_failed.is_empty() {
            text.push_str(&number(row.total));
        }
        text.push('\n');
    }
    text
}

/// A CSV field: no control or bidi character, never read as a formula by a spreadsheet
/// ([`inert::csv_name`]), quoted where it must be.
fn field(text: &str) -> String {
    let text = inert::csv_name(text);
    if text.contains([',', '"']) || text.starts_with(' ') || text.ends_with(' ') {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// A score as an LMS reads it: `3`, `1.5`, `0.67`.
pub fn number(x: f64) -> String {
    let rounded = (x * 100.0).round() / 100.0;
    format!("{}", rounded + 0.0)
}

/// What the run did, for the summary's first line.
pub struct Run<'a> {
    pub layout: &'a str,
    pub submissions: usize,
    pub graded_now: usize,
    pub reused: usize,
    pub where_: &'a str,
}

/// `summary.md`.
pub fn summary(checks: &[String], rows: &[Row], run: &Run) -> String {
    let graded: Vec<&Row> = rows.iter().filter(|r| r.whole()).collect();
    let mut text = format!(
        "# Class summary\n\n{} submissions ({}), {} students; graded in this run: {}, \
         kept from an earlier run: {}, not graded: {}. Graded on {}.\n",
        run.submissions,
        run.layout,
        rows.len(),
        run.graded_now,
        run.reused,
        rows.len() - graded.len(),
        run.where_
    );
    scores_section(&mut text, &graded);
    failing_section(&mut text, checks, &graded);
    not_graded_section(&mut text, rows);
    text
}

/// The summary's scores: mean, median, range and a histogram of the share of the points.
fn scores_section(text: &mut String, graded: &[&Row]) {
    text.push_str("\n## Scores\n\n");
    if graded.is_empty() {
        text.push_str("No submission was graded.\n");
        return;
    }
    let mut totals: Vec<f64> = graded.iter().map(|r| r.total).collect();
    totals.sort_by(f64::total_cmp);
    let mean = totals.iter().sum::<f64>() / totals.len() as f64;
    let median = if totals.len() % 2 == 1 {
        totals[totals.len() / 2]
    } else {
        (totals[totals.len() / 2 - 1] + totals[totals.len() / 2]) / 2.0
    };
    let max = most_common_max(graded);
    let _ = writeln!(
        text,
        "Out of {} points (the checks graded here): mean {}, median {}, lowest {}, highest {}.\n",
        number(max),
        number(mean),
        number(median),
        number(totals[0]),
        number(totals[totals.len() - 1])
    );
    text.push_str("| share of the points | students | |\n|---|---:|---|\n");
    let mut bins = [0usize; 11];
    for row in graded {
        let share = if row.max > 0.0 {
            row.total / row.max
        } else {
            0.0
        };
        bins[((share * 10.0).floor().clamp(0.0, 10.0)) as usize] += 1;
    }
    let widest = bins.iter().copied().max().unwrap_or(1).max(1);
    for (bin, &count) in bins.iter().enumerate() {
        let label = if bin == 10 {
            "100%".to_string()
        } else {
            format!("{}-{}%", bin * 10, bin * 10 + 9)
        };
        let bar = "#".repeat((count * 40).div_ceil(widest));
        let _ = writeln!(text, "| {label} | {count} | {bar} |");
    }
}

/// The summary's ten checks failed by the most graded students.
fn failing_section(text: &mut String, checks: &[String], graded: &[&Row]) {
    text.push_str("\n## The checks most students fail\n\n");
    let mut failing: Vec<(usize, usize, &String)> = checks
        .iter()
        .map(|check| {
            let scored: Vec<(f64, f64)> = graded
                .iter()
                .filter_map(|r| r.checks.get(check).copied())
                .filter(|&(_, most)| most > 0.0)
                .collect();
            let failed = scored.iter().filter(|&&(s, most)| s < most).count();
            (failed, scored.len(), check)
        })
        .filter(|&(failed, _, _)| failed > 0)
        .collect();
    failing.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(b.2)));
    if failing.is_empty() {
        text.push_str("Every student earned every check graded here.\n");
    } else {
        text.push_str("| check | failed by | of |\n|---|---:|---:|\n");
        for (failed, of, check) in failing.iter().take(10) {
            let _ = writeln!(text, "| {} | {failed} | {of} |", cell(check));
        }
    }
}

/// The summary's rows not graded: the students' (scored 0), then the grader's failures.
fn not_graded_section(text: &mut String, rows: &[Row]) {
    let not_graded: Vec<&Row> = rows.iter().filter(|r| r.not_graded.is_some()).collect();
    if !not_graded.is_empty() {
        text.push_str(
            "\n## Not graded\n\nEach scores 0 in grades.csv; a run again tries them again.\n\n",
        );
        for row in not_graded {
            let _ = writeln!(
                text,
                "- {} (students/{}): {}",
                cell(&row.student),
                cell(&row.key),
                cell(row.not_graded.as_deref().unwrap_or_default())
            );
        }
    }
    let grader_failed: Vec<&Row> = rows
        .iter()
        .filter(|r| !r.grader_failed.is_empty())
        .collect();
    if !grader_failed.is_empty() {
        text.push_str(
            "\n## Not graded: the grader failed\n\nNot the students' fault: their total in \
             grades.csv is empty, and a run again grades them again.\n\n",
        );
        for row in grader_failed {
            let _ = writeln!(
                text,
                "- {} (students/{}): {}",
                cell(&row.student),
                cell(&row.key),
                cell(&row.grader_failed.join("; "))
            );
        }
    }
}

/// The maximum most graded students were scored out of.
fn most_common_max(rows: &[&Row]) -> f64 {
    let mut counts: BTreeMap<String, (usize, f64)> = BTreeMap::new();
    for row in rows {
        counts.entry(number(row.max)).or_insert((0, row.max)).0 += 1;
    }
    counts
        .values()
        .max_by_key(|(count, _)| *count)
        .map_or(0.0, |&(_, max)| max)
}

/// Text for one Markdown table cell or list item: [`inert::markdown`].
fn cell(text: &str) -> String {
    inert::markdown(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(student: &str, scores: &[(&str, f64, f64)], not_graded: Option<&str>) -> Row {
        let checks: BTreeMap<String, (f64, f64)> = scores
            .iter()
            .map(|(n, s, m)| (n.to_string(), (*s, *m)))
            .collect();
        Row {
            student: student.into(),
            key: student.into(),
            total: scores.iter().map(|s| s.1).sum(),
            max: scores.iter().map(|s| s.2).sum(),
            checks,
            not_graded: not_graded.map(String::from),
            grader_failed: Vec::new(),
        }
    }

    fn checks() -> Vec<String> {
        vec!["lab02: a".into(), "lab06: b, c".into()]
    }

    #[test]
    fn the_csv_has_one_column_per_check_and_is_safe_to_open() {
        let rows = vec![
            row(
                "ada",
                &[("lab02: a", 3.0, 3.0), ("lab06: b, c", 0.5, 1.0)],
                None,
            ),
            row("=HYPERLINK(\"x\")", &[("lab02: a", 0.0, 3.0)], None),
            row("nobody", &[], Some("the archive is not a valid zip")),
            row(
                "cpu-only",
                &[("lab02: a", 3.0, 3.0), ("lab06: b, c", 0.0, 0.0)],
                None,
            ),
        ];
        let text = csv(&checks(), &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "student,lab02: a,\"lab06: b, c\",total");
        assert_eq!(lines[1], "ada,3,0.5,3.5");
        assert_eq!(lines[2], "\"'=HYPERLINK(\"\"x\"\")\",0,,0");
        assert_eq!(lines[3], "nobody,,,0");
        assert_eq!(lines[4], "cpu-only,3,,3");
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(3.0), "3");
        assert_eq!(number(1.5), "1.5");
        assert_eq!(number(2.0 / 3.0), "0.67");
        assert_eq!(number(-0.0), "0");
    }

    #[test]
    fn the_summary_shows_the_spread_and_the_checks_failed_most() {
        let rows = vec![
            row(
                "a",
                &[("lab02: a", 3.0, 3.0), ("lab06: b, c", 1.0, 1.0)],
                None,
            ),
            row(
                "b",
                &[("lab02: a", 3.0, 3.0), ("lab06: b, c", 0.0, 1.0)],
                None,
            ),
            row(
                "c",
                &[("lab02: a", 0.0, 3.0), ("lab06: b, c", 0.0, 1.0)],
                None,
            ),
            row(
                "d|e",
                &[],
                Some("grading took longer than 5 s\nand was stopped"),
            ),
        ];
        let run = Run {
            layout: "one entry per student",
            submissions: 4,
            graded_now: 3,
            reused: 0,
            where_: "no GPU",
        };
        let text = summary(&checks(), &rows, &run);
        assert!(
            text.contains("4 submissions (one entry per student), 4 students"),
            "{text}"
        );
        assert!(text.contains("not graded: 1"), "{text}");
        assert!(
            text.contains("Out of 4 points (the checks graded here): mean 2.33, median 3, lowest 0, highest 4."),
            "{text}"
        );
        assert!(text.contains("| 0-9% | 1 |"), "{text}");
        assert!(text.contains("| 70-79% | 1 |"), "{text}");
        assert!(text.contains("| 100% | 1 |"), "{text}");
        let failing = text
            .split("## The checks most students fail")
            .nth(1)
            .expect("a section");
        let b = failing
            .find("| lab06: b, c | 2 | 3 |")
            .expect("lab06 first");
        let a = failing.find("| lab02: a | 1 | 3 |").expect("lab02 next");
        assert!(b < a, "{text}");
        assert!(
            text.contains(
                "- d\\|e (students/d\\|e): grading took longer than 5 s\\\\nand was stopped"
            ),
            "{text}"
        );
    }

    /// The grader's failure is neither a 0 in grades.csv nor a row in the score spread.
    #[test]
    fn a_row_the_grader_failed_at_has_no_total() {
        let mut failed = row("ada", &[("lab02: a", 3.0, 3.0)], None);
        failed.grader_failed = vec!["lab06: b, c: the reference lab06 failed".into()];
        let rows = vec![failed, row("bob", &[("lab02: a", 3.0, 3.0)], None)];
        let text = csv(&checks(), &rows);
        assert_eq!(text.lines().nth(1), Some("ada,3,,"), "{text}");
        assert_eq!(text.lines().nth(2), Some("bob,3,,3"), "{text}");
        let run = Run {
            layout: "one entry per student",
            submissions: 2,
            graded_now: 2,
            reused: 0,
            where_: "no GPU",
        };
        let text = summary(&checks(), &rows, &run);
        assert!(text.contains("mean 3, median 3"), "{text}");
        assert!(text.contains("## Not graded: the grader failed"), "{text}");
        assert!(
            text.contains("- ada (students/ada): lab06: b, c: the reference lab06 failed"),
            "{text}"
        );
    }

    /// Names and reasons reached summary.md raw: Markdown, HTML, escapes. And grades.csv
    /// kept bidi and control characters.
    #[test]
    fn names_are_inert_in_the_summary_and_the_csv() {
        let rows = vec![
            row(
                "<img src=x onerror=alert(1)>\u{1b}[2J",
                &[],
                Some("[click](http://x) \u{202e}gnp.exe"),
            ),
            row("-1+2\u{202e}", &[("lab02: a", 1.0, 3.0)], None),
        ];
        let run = Run {
            layout: "one entry per student",
            submissions: 2,
            graded_now: 2,
            reused: 0,
            where_: "no GPU",
        };
        let text = summary(&checks(), &rows, &run);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{202e}'),
            "{text}"
        );
        assert!(!text.contains("<img"), "{text}");
        assert!(
            text.contains("&lt;img src=x onerror=alert(1)&gt;\\\\u{1b}\\[2J"),
            "{text}"
        );
        assert!(
            text.contains("\\[click\\](http://x) \\\\u{202e}gnp.exe"),
            "{text}"
        );
        let csv = csv(&checks(), &rows);
        assert!(csv.contains("\n'-1+2,1,,1\n"), "{csv}");
        assert!(
            !csv.contains('\u{1b}') && !csv.contains('\u{202e}'),
            "{csv}"
        );
    }
}
