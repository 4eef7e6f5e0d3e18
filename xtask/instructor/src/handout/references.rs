//! Every reference in the hand-out resolves once its solution regions are gone: a README that
//! says "the table below" has a table below, a link reaches a file and a heading that the
//! hand-out holds, a file named in backticks exists, a name in backticks is one the code
//! defines (or links to where it is documented), and a comment that sends the reader to a
//! README names a section that README still has.
//!
//! What is checked, in Markdown (outside fenced code):
//! - links `[text](target)`: a file or folder of the hand-out, and `#anchor` one of the
//!   target's headings (GitHub's anchors);
//! - code spans that are file names (`src/lib.rs`, `lanes.rs`): the file, from the README's
//!   folder, the workspace's root, or anywhere in the same lab;
//! - code spans that are code names with `_` or `::` in them (`NVRTC_OPTIONS`,
//!   `shared::view`): a word of the hand-out's code, unless the span is a link's text;
//! - a line that points at a table, figure or chart "below" (or "above"): one follows (or
//!   precedes) in the same file;
//! - a quoted section, `the "Exercise" section`: a heading of the same file;
//!
//! - a word of the glossary (`docs/GLOSSARY.md`, one heading per entry, its forms separated
//!   by commas) is linked to its entry where a README first uses it in prose;
//!
//! and in comments of Rust and CUDA files: file names in backticks, as above, and a mention of
//! a README names a section (`README, "Exercise"` or `the Exercise section`) that the lab's
//! README has.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Result};

use crate::files::File;

/// File names worth resolving, by their extension: sources, READMEs and recorded data. (An
/// image or a PPM in backticks is usually one the reader's command writes.)
const FILE_EXTENSIONS: &[&str] = &["rs", "cu", "cuh", "md", "toml", "csv", "sh"];

/// Words on a line that say it points at a figure of some kind.
const FIGURE_WORDS: &[&str] = &["table", "tables", "figure", "figures", "chart", "picture"];

pub fn check(files: &[File]) -> Result<()> {
    let hand_out = HandOut::new(files);
    let mut dangling = Vec::new();
    for file in files {
        let Ok(text) = std::str::from_utf8(&file.bytes) else {
            continue;
        };
        let mut say = |line: usize, what: String| {
            dangling.push(format!("{}:{line}: {what}", file.path.display()))
        };
        match file.path.extension().and_then(|e| e.to_str()) {
            Some("md") => hand_out.markdown(&file.path, text, &mut say),
            Some("rs" | "cu" | "cuh") => hand_out.comments(&file.path, text, &mut say),
            _ => {}
        }
    }
    dangling.extend(hand_out.unlinked_glossary_words());
    if dangling.is_empty() {
        return Ok(());
    }
    bail!(
        "the hand-out points at what it does not hold: {}",
        dangling.join("; ")
    )
}

/// What references can resolve to.
struct HandOut<'a> {
    paths: BTreeSet<PathBuf>,
    /// Every word of the hand-out's code (Rust, CUDA, TOML, scripts).
    code_words: BTreeSet<&'a str>,
    files: &'a [File],
}

impl<'a> HandOut<'a> {
    fn new(files: &'a [File]) -> HandOut<'a> {
        let code_words = files
            .iter()
            .filter(|f| f.path.extension().is_none_or(|e| e != "md"))
            .filter_map(|f| std::str::from_utf8(&f.bytes).ok())
            .flat_map(|text| text.split(|c: char| !(c.is_alphanumeric() || c == '_')))
            .collect();
        HandOut {
            paths: files.iter().map(|f| f.path.clone()).collect(),
            code_words,
            files,
        }
    }

    fn text(&self, path: &Path) -> Option<&'a str> {
        let file = self.files.iter().find(|f| f.path == path)?;
        std::str::from_utf8(&file.bytes).ok()
    }

    /// The READMEs' first uses of a glossary word that do not link to its entry.
    fn unlinked_glossary_words(&self) -> Vec<String> {
        let Some(glossary) = self.text(Path::new(GLOSSARY)) else {
            return Vec::new();
        };
        let entries: Vec<(String, Vec<String>)> = headings(glossary)
            .into_iter()
            .skip(1)
            .map(|h| (anchor_of(&h), h.split(", ").map(str::to_string).collect()))
            .collect();
        let mut out = Vec::new();
        for file in self.files.iter().filter(|f| is_lab_readme(&f.path)) {
            let Ok(text) = std::str::from_utf8(&file.bytes) else {
                continue;
            };
            let lines: Vec<(usize, String)> = prose_lines(text)
                .into_iter()
                .filter(|(_, l)| {
                    let l = l.trim_start();
                    !(l.starts_with('#') || l.starts_with('|') || l.starts_with("<!--"))
                })
                .collect();
            for (anchor, forms) in &entries {
                let first = lines
                    .iter()
                    .find(|(_, l)| forms.iter().any(|f| uses(&masked(l), f)));
                if let Some((n, line)) = first {
                    if !line.contains(&format!("GLOSSARY.md#{anchor})")) {
                        out.push(format!(
                            "{}:{n}: the first \"{}\" links to {GLOSSARY}#{anchor}",
                            file.path.display(),
                            forms.join(", ")
                        ));
                    }
                }
            }
        }
        out
    }

    /// A file or a folder of the hand-out.
    fn holds(&self, path: &Path) -> bool {
        self.paths.contains(path) || self.paths.iter().any(|p| p.starts_with(path))
    }

    fn markdown(&self, path: &Path, text: &str, say: &mut impl FnMut(usize, String)) {
        let lines = prose_lines(text);
        let headings = headings(text);
        for (index, (n, line)) in lines.iter().enumerate() {
            let (n, line) = (*n, line.as_str());
            for target in link_targets(line) {
                if let Err(what) = self.resolve_link(path, &target) {
                    say(n, what);
                }
            }
            for (span, is_link_text) in code_spans(line) {
                if is_file_name(&span) && !self.file_exists(path, &span) {
                    say(n, format!("`{span}` is no file of the hand-out"));
                } else if is_code_name(&span) && !is_link_text {
                    let name = span.trim_end_matches("()");
                    let last = name.rsplit("::").next().unwrap_or(name);
                    if !self.code_words.contains(last) {
                        say(
                            n,
                            format!(
                                "`{span}` is named nowhere in the hand-out's code (link it to \
                                 where it is documented, or say where it is)"
                            ),
                        );
                    }
                }
            }
            let lower = line.to_lowercase();
            let points = |direction: &str| {
                lower
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| w == direction)
                    && FIGURE_WORDS
                        .iter()
                        .any(|f| lower.split(|c: char| !c.is_alphanumeric()).any(|w| w == *f))
            };
            let is_figure = |(_, l): &&(usize, String)| {
                let l = l.trim_start();
                l.starts_with('|') || l.starts_with("![") || l.starts_with("<!-- table:")
            };
            if points("below") && !lines[index + 1..].iter().any(|l| is_figure(&l)) {
                say(n, "points at a figure below, and none follows".to_string());
            }
            if points("above") && !lines[..index].iter().any(|l| is_figure(&l)) {
                say(n, "points at a figure above, and none precedes".to_string());
            }
            for section in quoted_sections(line) {
                if !headings.iter().any(|h| h.starts_with(&section)) {
                    say(n, format!("no section \"{section}\" in this file"));
                }
            }
        }
    }

    /// The labs' comments only: those of `shared` and `xtask` speak of READMEs and files in
    /// general (the README that `docs` rewrites, the CSV that `bench` writes).
    fn comments(&self, path: &Path, text: &str, say: &mut impl FnMut(usize, String)) {
        let Some(lab) = lab_folder(path).filter(|f| f.to_string_lossy().starts_with("lab")) else {
            return;
        };
        let readme = lab.join("README.md");
        let readme_headings = self.text(&readme).map(headings).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let Some(comment) = line.trim_start().strip_prefix("//") else {
                continue;
            };
            let n = n + 1;
            for (span, _) in code_spans(comment) {
                if is_file_name(&span) && !self.file_exists(path, &span) {
                    say(n, format!("`{span}` is no file of the hand-out"));
                }
            }
            if !comment.contains("README") {
                continue;
            }
            let named = comment
                .split('"')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .chain(section_word(comment))
                .collect::<Vec<_>>();
            if named.is_empty() {
                say(
                    n,
                    "mentions the README without naming a section of it".to_string(),
                );
            }
            for section in named {
                if !readme_headings.iter().any(|h| h.starts_with(&section)) {
                    say(n, format!("the lab's README has no section \"{section}\""));
                }
            }
        }
    }

    fn resolve_link(&self, from: &Path, target: &str) -> std::result::Result<(), String> {
        if target.contains("://") || target.starts_with("mailto:") {
            return Ok(());
        }
        let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
        let path = if file.is_empty() {
            from.to_path_buf()
        } else {
            normalise(&from.parent().unwrap_or(Path::new("")).join(file))
        };
        if !self.holds(&path) {
            return Err(format!("links to {target}, which is not in the hand-out"));
        }
        if anchor.is_empty() {
            return Ok(());
        }
        let found = self
            .text(&path)
            .is_some_and(|text| headings(text).iter().any(|h| anchor_of(h) == anchor));
        if found {
            Ok(())
        } else {
            Err(format!("links to {target}, a heading that is not there"))
        }
    }

    /// A file name resolves from the file's folder, the root, or anywhere in the same lab.
    /// A name whose folder is nowhere in the hand-out (`bench-out/bench.csv`) is one that a
    /// command writes, and passes.
    fn file_exists(&self, from: &Path, name: &str) -> bool {
        let name = name.trim_start_matches("./");
        let folder = from.parent().unwrap_or(Path::new(""));
        if let Some((first, _)) = name.split_once('/') {
            let anywhere = self
                .paths
                .iter()
                .any(|p| p.components().any(|c| c.as_os_str() == first));
            if !anywhere && first != ".." {
                return true;
            }
        }
        if self.holds(&normalise(&folder.join(name))) || self.holds(Path::new(name)) {
            return true;
        }
        let lab = lab_folder(from).unwrap_or_default();
        self.paths
            .iter()
            .any(|p| p.starts_with(&lab) && p.ends_with(name))
    }
}

/// The glossary, from the workspace's root.
const GLOSSARY: &str = "docs/GLOSSARY.md";

/// The top README and each lab's.
fn is_lab_readme(path: &Path) -> bool {
    path == Path::new("README.md")
        || (path.file_name().is_some_and(|n| n == "README.md")
            && lab_folder(path).is_some_and(|f| f.to_string_lossy().starts_with("lab")))
}

/// A line with its code spans, link targets and HTML blanked out: what remains is prose.
fn masked(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    let mut closing: Option<char> = None;
    while let Some(c) = chars.next() {
        match closing {
            Some(end) => {
                if c == end {
                    closing = None;
                }
                out.push(' ');
            }
            None => {
                let opens = match c {
                    '`' => Some('`'),
                    '<' => Some('>'),
                    ']' if chars.peek() == Some(&'(') => Some(')'),
                    _ => None,
                };
                closing = opens;
                out.push(if opens.is_some() { ' ' } else { c });
            }
        }
    }
    out
}

/// Whether `prose` uses the word or phrase `form` (or its plural), as whole words: matched
/// in any case unless `form` has capitals (`NVRTC`, `L2`, `SM`).
fn uses(prose: &str, form: &str) -> bool {
    let exact = form.chars().any(char::is_uppercase);
    let (prose, form) = if exact {
        (prose.to_string(), form.to_string())
    } else {
        (prose.to_lowercase(), form.to_lowercase())
    };
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || "-_/#".contains(c));
    prose.match_indices(&form).any(|(at, _)| {
        let rest = &prose[at + form.len()..];
        let rest = rest.strip_prefix('s').unwrap_or(rest);
        !word(prose[..at].chars().next_back()) && !word(rest.chars().next())
    })
}

/// The top folder of a path inside the workspace (`lab04-cuda-optimized`), if it is below one.
fn lab_folder(path: &Path) -> Option<PathBuf> {
    let mut components = path.components();
    let first = components.next()?;
    components.next()?;
    Some(PathBuf::from(first.as_os_str()))
}

/// `a/b/../c` as `a/c`.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The lines outside fenced code blocks, numbered from 1. A code span broken over two lines
/// is closed at the end of the first and opened again at the start of the next, so that
/// each line can be read on its own.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut in_span = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if line.trim().is_empty() {
            in_span = false;
        }
        let mut prose = String::with_capacity(line.len() + 2);
        if in_span {
            prose.push('`');
        }
        prose.push_str(line);
        if line.matches('`').count() % 2 == 1 {
            in_span = !in_span;
        }
        if in_span {
            prose.push('`');
        }
        out.push((n + 1, prose));
    }
    out
}

/// The text of every heading outside fenced code.
fn headings(text: &str) -> Vec<String> {
    prose_lines(text)
        .into_iter()
        .filter_map(|(_, line)| {
            let rest = line.trim_start_matches('#');
            (rest.len() < line.len() && rest.starts_with(' ')).then(|| rest.trim().to_string())
        })
        .collect()
}

/// GitHub's anchor for a heading: lower case, spaces as `-`, punctuation other than `-` and
/// `_` dropped.
fn anchor_of(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The targets of a line's `[text](target)` links (images included).
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        if !target.is_empty() {
            out.push(target.to_string());
        }
        rest = &after[end..];
    }
    out
}

/// A line's code spans, each with whether it is a link's text (`` [`name`](url) ``).
fn code_spans(line: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let pieces: Vec<&str> = line.split('`').collect();
    // Odd pieces are inside backticks; a last odd piece has no closing tick.
    for i in (1..pieces.len().saturating_sub(1)).step_by(2) {
        let is_link_text = pieces[i - 1].ends_with('[') && pieces[i + 1].starts_with("](");
        out.push((pieces[i].to_string(), is_link_text));
    }
    out
}

fn is_file_name(span: &str) -> bool {
    let plain = span
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    let extension = span.rsplit_once('.').map(|(_, e)| e);
    plain && extension.is_some_and(|e| FILE_EXTENSIONS.contains(&e))
}

/// `NVRTC_OPTIONS`, `shared::view`, `early_exits()`: names that only code defines.
fn is_code_name(span: &str) -> bool {
    let name = span.trim_end_matches("()");
    let mut segments = name.split("::");
    let well_formed = segments.all(|s| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_alphanumeric() || c == '_')
    });
    well_formed && (name.contains("::") || name.trim_matches('_').contains('_'))
}

/// Sections named in quotes: `the "Exercise" section`, `see "What to try next"`.
fn quoted_sections(line: &str) -> Vec<String> {
    let pieces: Vec<&str> = line.split('"').collect();
    let mut out = Vec::new();
    for i in (1..pieces.len().saturating_sub(1)).step_by(2) {
        let before = pieces[i - 1].trim_end().to_lowercase();
        let after = pieces[i + 1].trim_start().to_lowercase();
        if before.ends_with("section") || after.starts_with("section") {
            out.push(pieces[i].to_string());
        }
    }
    out
}

/// `the Exercise section` in a comment: the word before "section".
fn section_word(comment: &str) -> Option<String> {
    let words: Vec<&str> = comment.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "section")?;
    let word = words.get(at.checked_sub(1)?)?;
    Some(
        word.trim_matches(|c: char| !c.is_alphanumeric())
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regions::Keep;

    fn errors(files: &[File]) -> String {
        check(files)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    fn lab(readme: &str) -> Vec<File> {
        vec![
            File::text("lab04/README.md", readme),
            File::text(
                "lab04/src/main.rs",
                "// See the README, \"Exercise\".\nconst CHUNK_BUFFERS: usize = 4;\n",
            ),
            File::text("README.md", "# Top\n\n## The journey\n"),
        ]
    }

    #[test]
    fn references_that_resolve_pass() {
        let readme = "# lab04\n\n## Exercise\n\nRead `src/main.rs` and `main.rs`, \
                      [the journey](../README.md#the-journey), `CHUNK_BUFFERS`, \
                      [`launch_builder`](https://docs.rs/cudarc) and the [Exercise](#exercise); \
                      the \"Exercise\" section. The table below:\n\n| a |\n|---|\n";
        assert_eq!(errors(&lab(readme)), "");
    }

    #[test]
    fn each_kind_of_dangling_reference_is_named_with_its_line() {
        for (body, expected) in [
            (
                "the tables below are the second\n",
                "lab04/README.md:5: points at a figure below",
            ),
            ("| a |\n\n(figures above)\n", ""),
            ("(figures above)\n", "points at a figure above"),
            ("[x](../docs/gone.md)\n", "links to ../docs/gone.md"),
            (
                "[x](../README.md#what-it-measured)\n",
                "a heading that is not there",
            ),
            ("[x](#sources)\n", "#sources, a heading"),
            (
                "`NVRTC_OPTIONS` in `src/main.rs`\n",
                "`NVRTC_OPTIONS` is named nowhere",
            ),
            ("see `src/lanes.rs`\n", "`src/lanes.rs` is no file"),
            ("`bench-out/bench.csv`\n", ""),
            (
                "see the \"What the figures say\" section\n",
                "no section \"What the figures say\"",
            ),
        ] {
            let readme = format!("# lab04\n\n## Exercise\n\n{body}");
            let found = errors(&lab(&readme));
            if expected.is_empty() {
                assert_eq!(found, "", "{readme}");
            } else {
                assert!(found.contains(expected), "{readme}: {found}");
            }
        }
    }

    #[test]
    fn a_comment_that_sends_the_reader_to_a_readme_names_a_section_it_has() {
        let readme = "# lab04\n\n## Exercise\n";
        for (comment, expected) in [
            (
                "// see the README for why it does not pay here\n",
                "without naming a section",
            ),
            ("// (README, \"black_box\")\n", "no section \"black_box\""),
            ("// the Exercise section of lab04's README lists it\n", ""),
            (
                "// the Sources section of the README\n",
                "no section \"Sources\"",
            ),
            ("/// as `src/gone.rs` does\n", "`src/gone.rs` is no file"),
            ("/// as `src/main.rs` does\n", ""),
        ] {
            let files = [
                File::text("lab04/README.md", readme),
                File::text("lab04/kernels/k.cu", comment),
                File::text("lab04/src/main.rs", ""),
            ];
            let found = errors(&files);
            if expected.is_empty() {
                assert_eq!(found, "", "{comment}");
            } else {
                assert!(found.contains(expected), "{comment}: {found}");
            }
        }
    }

    /// The hand-out as the course ships it, and its answer key: every reference resolves;
    /// and a dangling one planted in a README is refused with its line.
    #[test]
    fn every_reference_in_the_hand_out_resolves_and_a_planted_one_is_refused() {
        for keep in [Keep::Stub, Keep::Solution] {
            let (mut files, _) = crate::files::handout(keep).unwrap();
            check(&files).unwrap();
            let readme = files
                .iter()
                .position(|f| f.path == Path::new("lab02-rayon/README.md"))
                .unwrap();
            let given = files[readme].bytes.clone();
            for planted in [
                "The figures below say so.",
                "See `src/gone.rs`.",
                "See [the key](#the-answer-key).",
                "Set `NVRTC_OPTIONS`.",
            ] {
                files[readme].bytes = [&given[..], b"\n", planted.as_bytes(), b"\n"].concat();
                let error = check(&files).unwrap_err().to_string();
                assert!(
                    error.contains("lab02-rayon/README.md:"),
                    "{planted}: {error}"
                );
            }
        }
    }

    #[test]
    fn a_glossary_word_is_linked_where_a_readme_first_uses_it() {
        let glossary = || {
            File::text(
                "docs/GLOSSARY.md",
                "# Glossary\n\n## NVRTC\n\n## grid-stride loop\n",
            )
        };
        for (readme, expected) in [
            (
                "Kernels go through NVRTC.\n",
                "lab04/README.md:1: the first \"NVRTC\"",
            ),
            (
                "Through [NVRTC](../docs/GLOSSARY.md#nvrtc), then NVRTC again.\n",
                "",
            ),
            (
                "`NVRTC` in code, then\nNVRTC in prose\n",
                "lab04/README.md:2:",
            ),
            ("two grid-stride loops\n", "the first \"grid-stride loop\""),
            (
                "nvrtc, lower case, is a file name; a strided loop is not one\n",
                "",
            ),
        ] {
            let files = [glossary(), File::text("lab04/README.md", readme)];
            let found = errors(&files);
            if expected.is_empty() {
                assert_eq!(found, "", "{readme}");
            } else {
                assert!(found.contains(expected), "{readme}: {found}");
            }
        }
    }

    #[test]
    fn anchors_are_githubs() {
        assert_eq!(
            anchor_of("What changed since lab03, and why"),
            "what-changed-since-lab03-and-why"
        );
        assert_eq!(anchor_of("Exercise: find a bug"), "exercise-find-a-bug");
    }
}
