//! What `grade-class` reads of the folder Classroom 50's teacher tooling clones,
//! `gh teacher download ORG CLASSROOM ASSIGNMENT` (foundation50/classroom50,
//! `cli/gh-teacher/internal/download/download.go`): one clone per student,
//! `CLASSROOM-ASSIGNMENT-USERNAME/` (the name lowercased, as `cli/shared/contract/contract.go`'s
//! `AssignmentRepoName` makes it), in a folder named `CLASSROOM-ASSIGNMENT_submissions_TIMESTAMP`
//! unless `-d DIR` named it, with `scores.csv` beside the clones (one row per team member, its
//! first column the user name; not written by `--by-pattern`). Into each clone the tool also
//! writes `result.json` and `results.json`, the scores of the student's own runs: graded as the
//! student's files, never read as a grade.
//!
//! The class folder's name or its `scores.csv` say which user each clone is ([`Download`]),
//! never anything inside a clone (a student's repository may hold anything).

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The summary `gh teacher download` writes beside the clones.
pub const SCORES: &str = "scores.csv";

/// Its first line (download.go's `scoresCSVHeader`).
const SCORES_HEADER: &str = "username,first_name,last_name,email,section,score,max_score,\
                             datetime,submission_tag,submitted_by,review_url,late,override";

/// The longest `scores.csv` read: a row per student of a class of thousands is well under it.
const MAX_SCORES_BYTES: u64 = 16 << 20;

/// What the class folder says of its clones' students.
#[derive(Debug, Default)]
pub struct Download {
    /// `CLASSROOM-ASSIGNMENT-`, from the folder's default name.
    prefix: Option<String>,
    /// The user names `scores.csv` lists.
    users: Vec<String>,
}

impl Download {
    /// Whether the class folder `dir`, named `name`, is Classroom 50's download: its default
    /// name, or a `scores.csv` that begins with Classroom 50's header.
    pub fn recognise(dir: &Path, name: &str) -> bool {
        default_prefix(name).is_some() || scores_lines(dir).is_some()
    }

    /// Read the class folder `dir`, named `name`.
    pub fn read(dir: &Path, name: &str) -> Download {
        let users = scores_lines(dir)
            .map(|text| {
                text.lines()
                    .skip(1)
                    .filter_map(|line| line.split(',').next())
                    .filter(|user| is_login(user))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Download {
            prefix: default_prefix(name),
            users,
        }
    }

    /// The user whose clone is the entry of stem `stem`: the stem less the folder name's
    /// `CLASSROOM-ASSIGNMENT-`, else the longest user of `scores.csv` the stem ends with
    /// (`-USER`, in any case), else `None`.
    pub fn student(&self, stem: &str) -> Option<String> {
        if let Some(user) = self
            .prefix
            .as_deref()
            .and_then(|prefix| stem.strip_prefix(prefix))
            .filter(|user| !user.is_empty())
        {
            return Some(user.to_string());
        }
        let lower = stem.to_ascii_lowercase();
        self.users
            .iter()
            .filter(|user| {
                lower.len() > user.len() + 1
                    && lower.ends_with(&user.to_ascii_lowercase())
                    && lower.as_bytes()[lower.len() - user.len() - 1] == b'-'
            })
            .max_by_key(|user| user.len())
            .cloned()
    }
}

/// `CLASSROOM-ASSIGNMENT-` from a folder named as `gh teacher download` names it by default,
/// `CLASSROOM-ASSIGNMENT_submissions_YYYY_MM_DD_T_HH_MM_SS`.
fn default_prefix(name: &str) -> Option<String> {
    let (prefix, stamp) = name.rsplit_once("_submissions_")?;
    let shape = "dddd_dd_dd_T_dd_dd_dd";
    let stamped = stamp.len() == shape.len()
        && stamp.bytes().zip(shape.bytes()).all(|(c, s)| match s {
            b'd' => c.is_ascii_digit(),
            s => c == s,
        });
    (stamped && !prefix.is_empty()).then(|| format!("{prefix}-"))
}

/// A GitHub user name: letters, digits and hyphens, at most 39, not starting with a hyphen.
fn is_login(word: &str) -> bool {
    (1..=39).contains(&word.len())
        && !word.starts_with('-')
        && word.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
}

/// The text of the class folder's `scores.csv` when it is a regular file (never a link or a
/// FIFO), within [`MAX_SCORES_BYTES`], that begins with Classroom 50's header.
fn scores_lines(dir: &Path) -> Option<String> {
    let path = dir.join(SCORES);
    if !fs::symlink_metadata(&path).ok()?.is_file() {
        return None;
    }
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .ok()?;
    let mut text = String::new();
    file.take(MAX_SCORES_BYTES).read_to_string(&mut text).ok()?;
    let header = text
        .lines()
        .next()?
        .trim_start_matches('\u{feff}')
        .trim_end();
    (header == SCORES_HEADER).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_folder_name_gives_the_prefix() {
        let download = Download::read(
            Path::new("/nonexistent"),
            "gpu-mandelbrot_submissions_2026_11_27_T_01_02_03",
        );
        assert_eq!(
            download.student("gpu-mandelbrot-ada"),
            Some("ada".to_string())
        );
        assert_eq!(
            download.student("gpu-mandelbrot-two-part"),
            Some("two-part".to_string())
        );
        assert_eq!(download.student("other-ada"), None);
        assert_eq!(download.student("gpu-mandelbrot-"), None);
        for name in [
            "gpu-mandelbrot_submissions_2026_11_27_T_01_02",
            "gpu-mandelbrot_submissions_2026-11-27T01:02:03",
            "_submissions_2026_11_27_T_01_02_03",
            "mandelbrot-submissions",
        ] {
            assert_eq!(default_prefix(name), None, "{name}");
        }
    }

    #[test]
    fn scores_csv_names_the_users_of_a_folder_named_with_d() {
        let top = tempfile::tempdir().expect("a temp folder");
        let dir = top.path();
        assert!(!Download::recognise(dir, "grading"));
        fs::write(
            dir.join(SCORES),
            format!(
                "{SCORES_HEADER}\nAda,,,,,3,4,,,,,,\nb-ada,,,,,,,,,,,,\n\
                 '=HYPERLINK(x),,,,,,,,,,,,\nlinus,,,,,,,,,,,,\n"
            ),
        )
        .expect("written");
        assert!(Download::recognise(dir, "grading"));
        let download = Download::read(dir, "grading");
        assert_eq!(download.users, ["Ada", "b-ada", "linus"]);
        assert_eq!(download.student("c-hw1-ada"), Some("Ada".to_string()));
        // The longest user the name ends with: b-ada's clone is not Ada's.
        assert_eq!(download.student("c-hw1-b-ada"), Some("b-ada".to_string()));
        assert_eq!(download.student("c-hw1-grace"), None);
        assert_eq!(download.student("ada"), None);
        assert_eq!(download.student("c-hw1-xlinus"), None);
    }

    /// A scores.csv of another tool, a link or a FIFO says nothing (and never hangs).
    #[test]
    fn only_classroom_50s_scores_csv_is_read() {
        let top = tempfile::tempdir().expect("a temp folder");
        let dir = top.path();
        fs::write(dir.join(SCORES), "student,total\nada,3\n").expect("written");
        assert!(!Download::recognise(dir, "class"));
        fs::remove_file(dir.join(SCORES)).expect("removed");
        let made = std::process::Command::new("mkfifo")
            .arg(dir.join(SCORES))
            .status()
            .expect("mkfifo");
        assert!(made.success());
        assert!(!Download::recognise(dir, "class"));
        fs::remove_file(dir.join(SCORES)).expect("removed");
        let real = dir.join("real.csv");
        fs::write(&real, format!("{SCORES_HEADER}\nada\n")).expect("written");
        std::os::unix::fs::symlink(&real, dir.join(SCORES)).expect("a link");
        assert!(!Download::recognise(dir, "class"));
    }
}
