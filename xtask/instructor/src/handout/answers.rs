//! The answers no hand-out may give away: `xtask/instructor/answers.toml` lists, per exercise, the
//! phrases that say what the exercise asks the student to find (the NVRTC option that makes
//! lab04 bit-exact, lab03's launch, lab06's conclusions). `cargo instructor handout` refuses to
//! write a hand-out where one of them appears in any file, a README, a test or a comment.
//!
//! A phrase matches whatever its case and however its words are spaced or broken over
//! lines, and only as whole words (`fmad` does not match `vfmadd`).

use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::files::File;

/// Where the list lives, from the workspace's root. Instructor-only.
pub const LIST: &str = "xtask/instructor/answers.toml";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct List {
    exercise: Vec<Exercise>,
}

/// One exercise's answer, in the phrases that would give it away.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exercise {
    lab: String,
    /// What the exercise asks the student to find, for the error message.
    asks: String,
    phrases: Vec<String>,
}

pub fn load(root: &Path) -> Result<Vec<Exercise>> {
    let path = root.join(LIST);
    let text = fs::read_to_string(&path).with_context(|| format!("cannot read {LIST}"))?;
    let list: List = toml::from_str(&text).with_context(|| format!("{LIST} is not valid"))?;
    for exercise in &list.exercise {
        if let Some(empty) = exercise.phrases.iter().find(|p| words(p).is_empty()) {
            bail!(
                "{LIST}: {} has an empty phrase ({empty:?}), which would match everything",
                exercise.lab
            );
        }
    }
    Ok(list.exercise)
}

/// Every place a hand-out file gives an answer away, as one error naming them all.
pub fn check(files: &[File], exercises: &[Exercise]) -> Result<()> {
    let mut found = Vec::new();
    for file in files {
        let Ok(text) = std::str::from_utf8(&file.bytes) else {
            continue;
        };
        let text = Text::new(text);
        for exercise in exercises {
            for phrase in &exercise.phrases {
                if let Some(line) = text.find(phrase) {
                    found.push(format!(
                        "{}:{line} says `{phrase}` ({}: {})",
                        file.path.display(),
                        exercise.lab,
                        exercise.asks
                    ));
                }
            }
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    bail!(
        "the hand-out would give away what an exercise asks: {}; reword it, or move it into a \
         solution region",
        found.join("; ")
    )
}

/// A file's text as lower-case words, each with its line number.
struct Text {
    words: Vec<(String, usize)>,
}

impl Text {
    fn new(text: &str) -> Text {
        let words = text
            .lines()
            .enumerate()
            .flat_map(|(n, line)| words(line).into_iter().map(move |w| (w, n + 1)))
            .collect();
        Text { words }
    }

    /// The line where `phrase`'s words start, in order and side by side.
    fn find(&self, phrase: &str) -> Option<usize> {
        let wanted = words(phrase);
        self.words
            .windows(wanted.len())
            .find(|window| window.iter().map(|(w, _)| w).eq(wanted.iter()))
            .map(|window| window[0].1)
    }
}

/// Lower-case words, where a word is a run of characters other than spaces and the
/// punctuation that separates words in prose and code; `--fmad=false` is the words `--fmad`,
/// `false`.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || "_-.:&".contains(c)))
        .map(|w| w.trim_matches(|c: char| ".:-".contains(c)).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regions::Keep;
    use xtask::bins::workspace_root;

    fn exercise(phrases: &[&str]) -> Exercise {
        Exercise {
            lab: "lab04".to_string(),
            asks: "the option".to_string(),
            phrases: phrases.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn a_phrase_is_found_whatever_its_case_spacing_and_line_breaks() {
        let exercises = [exercise(&["fmad", "grid_dim: (view.height, 1, 1)"])];
        for text in [
            "options: `--fmad=false`",
            "FMAD off",
            "let c = LaunchConfig {\n    grid_dim:  (view.height,\n 1, 1),",
        ] {
            let error = check(&[File::text("a/README.md", text)], &exercises).unwrap_err();
            assert!(error.to_string().contains("a/README.md:"), "{error}");
        }
    }

    #[test]
    fn a_phrase_matches_whole_words_only() {
        let exercises = [exercise(&["fmad"])];
        for text in ["the assembly has no `vfmadd`", "fmadness", "f mad"] {
            assert!(
                check(&[File::text("a.rs", text)], &exercises).is_ok(),
                "{text}"
            );
        }
    }

    /// The list as the course ships it: every phrase absent from the hand-out, and each one,
    /// planted in a README, refused with its file and line.
    #[test]
    fn the_hand_out_gives_no_answer_away_and_a_planted_one_is_refused() {
        let exercises = load(&workspace_root()).unwrap();
        assert!(exercises.len() >= 3);
        let (mut files, _) = crate::files::handout(Keep::Stub).unwrap();
        check(&files, &exercises).unwrap();
        let readme = files
            .iter()
            .position(|f| f.path == Path::new("lab01-cpu-baseline/README.md"))
            .unwrap();
        let given = files[readme].bytes.clone();
        for exercise in &exercises {
            for phrase in &exercise.phrases {
                files[readme].bytes = [&given[..], b"\nplanted: ", phrase.as_bytes()].concat();
                let error = check(&files, &exercises).unwrap_err().to_string();
                assert!(
                    error.contains("lab01-cpu-baseline/README.md:")
                        && error.contains(&exercise.lab),
                    "{phrase}: {error}"
                );
            }
        }
    }

    #[test]
    fn an_empty_phrase_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join(LIST);
        fs::create_dir_all(list.parent().unwrap()).unwrap();
        fs::write(
            &list,
            "[[exercise]]\nlab = \"lab04\"\nasks = \"x\"\nphrases = [\" `` \"]\n",
        )
        .unwrap();
        let error = load(dir.path()).err().unwrap().to_string();
        assert!(error.contains("empty phrase"), "{error}");
    }
}
