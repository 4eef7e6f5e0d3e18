//! Solution regions: the parts of the instructor's sources that the hand-out leaves out.
//!
//! One convention for every language, as nbgrader and otter mark theirs. In Rust and CUDA:
//!
//! ```text
//! // BEGIN SOLUTION
//! // stub: shared::unfinished!("the rows, in parallel", image)
//! ...the instructor's code...
//! // END SOLUTION
//! ```
//!
//! in Markdown `<!-- BEGIN SOLUTION -->` ... `<!-- END SOLUTION -->`, and in TOML (the
//! workspace's manifest and cargo's configuration, for the instructor's crate) `# BEGIN
//! INSTRUCTOR` ... `# END INSTRUCTOR`. The hand-out
//! replaces a region by its stub: the `stub:` lines right after `BEGIN`, with the comment
//! and one space taken off, at their own indentation plus any spaces after that one (so a
//! stub can be written as rustfmt would format it). No stub lines: the region just goes. The markers sit on
//! lines of their own; a line that starts like a marker but is not exactly one is an error,
//! so a typo cannot leak a solution. Rust stubs call `shared::unfinished!`, CUDA stubs hold
//! a `// UNFINISHED: what` comment (see `shared::exercise`).

use std::path::Path;

use anyhow::{bail, Result};

/// How a file type writes its comments.
struct Syntax {
    /// What opens and closes a comment on a line of its own.
    open: &'static str,
    close: &'static str,
}

const SLASHES: Syntax = Syntax {
    open: "// ",
    close: "",
};

const HTML: Syntax = Syntax {
    open: "<!-- ",
    close: " -->",
};

const HASH: Syntax = Syntax {
    open: "# ",
    close: "",
};

fn syntax(path: &Path) -> Option<&'static Syntax> {
    match path.extension()?.to_str()? {
        "rs" | "cu" | "cuh" | "c" | "h" => Some(&SLASHES),
        "md" => Some(&HTML),
        "toml" => Some(&HASH),
        _ => None,
    }
}

/// What a region holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// The student's work: `BEGIN SOLUTION` ... `END SOLUTION`.
    Solution,
    /// What only the instructor sees, solved or not (the grader's commands, the section on
    /// grading): `BEGIN INSTRUCTOR` ... `END INSTRUCTOR`.
    Instructor,
}

impl Kind {
    const ALL: [Kind; 2] = [Kind::Solution, Kind::Instructor];

    fn word(self) -> &'static str {
        match self {
            Kind::Solution => "SOLUTION",
            Kind::Instructor => "INSTRUCTOR",
        }
    }
}

impl Syntax {
    fn marker(&self, edge: &str, kind: Kind) -> String {
        format!("{}{edge} {}{}", self.open, kind.word(), self.close)
    }

    /// The kind of the `edge` ("BEGIN" or "END") marker `line` is, if it is one.
    fn find(&self, edge: &str, line: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|&kind| line == self.marker(edge, kind))
    }

    /// A line that starts like a marker but is not exactly one.
    fn looks_like_a_marker(&self, line: &str) -> bool {
        let start = |edge, kind: Kind| format!("{}{edge} {}", self.open, kind.word());
        Kind::ALL.into_iter().any(|kind| {
            ["BEGIN", "END"]
                .iter()
                .any(|edge| line.starts_with(&start(edge, kind)))
        })
    }

    fn stub<'a>(&self, line: &'a str) -> Option<&'a str> {
        let rest = line.strip_prefix(self.open)?.strip_prefix("stub:")?;
        Some(rest.strip_suffix(self.close.trim_start()).unwrap_or(rest))
    }
}

/// What to put where a region stood.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The student's version: the stub.
    Stub,
    /// The finished version: the solution, without its markers. Instructor regions still
    /// give way to their stubs.
    Solution,
}

/// Whether `text` (the file at `path`) holds a solution region: a file the student writes in.
pub fn has_solution(path: &Path, text: &str) -> bool {
    syntax(path).is_some_and(|syntax| {
        text.lines()
            .any(|line| syntax.find("BEGIN", line.trim()) == Some(Kind::Solution))
    })
}

/// `text` (the file at `path`) with every region replaced, and how many regions it had.
/// Files of a type without regions come back unchanged.
pub fn replace(path: &Path, text: &str, keep: Keep) -> Result<(String, usize)> {
    let Some(syntax) = syntax(path) else {
        return Ok((text.to_string(), 0));
    };
    let at = |number: usize, what: &str| format!("{}:{number}: {what}", path.display());
    let mut out = String::with_capacity(text.len());
    let mut open: Option<(usize, Kind)> = None;
    let mut solved = false;
    let mut in_stub = false;
    let mut regions = 0;
    // Where a region goes without a stub between two blank lines, one of them goes too.
    let mut emitted_at_open = 0;
    let mut skip_blank = false;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = index + 1;
        let trimmed = line.trim();
        let indent = &line[..line.len() - line.trim_start().len()];
        if let Some(kind) = syntax.find("BEGIN", trimmed) {
            if let Some((start, _)) = open {
                bail!(at(
                    number,
                    &format!(
                        "BEGIN {} inside the region opened at line {start}",
                        kind.word()
                    ),
                ));
            }
            open = Some((number, kind));
            solved = keep == Keep::Solution && kind == Kind::Solution;
            in_stub = true;
            regions += 1;
            emitted_at_open = out.len();
        } else if let Some(kind) = syntax.find("END", trimmed) {
            match open.take() {
                Some((_, opened)) if opened == kind => {}
                Some((start, opened)) => bail!(at(
                    number,
                    &format!(
                        "END {} closes the {} region opened at line {start}",
                        kind.word(),
                        opened.word()
                    ),
                )),
                None => bail!(at(
                    number,
                    &format!("END {} without a BEGIN {0}", kind.word())
                )),
            }
            skip_blank = out.len() == emitted_at_open && (out.is_empty() || out.ends_with("\n\n"));
            continue;
        } else if syntax.looks_like_a_marker(trimmed) {
            bail!(at(number, "a region marker must be alone on its line"));
        } else if open.is_some() {
            match syntax.stub(trimmed) {
                Some(code) if in_stub => {
                    if !solved {
                        let code = code.strip_prefix(' ').unwrap_or(code).trim_end();
                        out.push_str(indent);
                        out.push_str(code);
                        out.push('\n');
                    }
                }
                _ => {
                    in_stub = false;
                    if solved {
                        out.push_str(line);
                    }
                }
            }
        } else if !(skip_blank && trimmed.is_empty()) {
            out.push_str(line);
        }
        skip_blank = false;
    }
    // A region that ends the file takes the blank line before it instead.
    if skip_blank && out.ends_with("\n\n") {
        out.pop();
    }
    match open {
        Some((start, kind)) => bail!(at(start, &format!("BEGIN {} is never closed", kind.word()))),
        None => Ok((out, regions)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "fn f() -> u8 {\n    // BEGIN SOLUTION\n    // stub: shared::unfinished!(\"f\")\n    1 + 1\n    // END SOLUTION\n}\n";

    #[test]
    fn a_region_becomes_its_stub_or_its_solution() {
        let path = Path::new("a.rs");
        let (stub, n) = replace(path, SOURCE, Keep::Stub).unwrap();
        assert_eq!(n, 1);
        assert_eq!(stub, "fn f() -> u8 {\n    shared::unfinished!(\"f\")\n}\n");
        let (solution, _) = replace(path, SOURCE, Keep::Solution).unwrap();
        assert_eq!(solution, "fn f() -> u8 {\n    1 + 1\n}\n");
    }

    #[test]
    fn a_region_without_a_stub_goes_and_markdown_works_alike() {
        let text = "intro\n<!-- BEGIN SOLUTION -->\nthe answer\n<!-- END SOLUTION -->\nend\n";
        let (out, n) = replace(Path::new("README.md"), text, Keep::Stub).unwrap();
        assert_eq!((out.as_str(), n), ("intro\nend\n", 1));
        // Between blank lines, the region takes one of them with it.
        let text = "a\n\n<!-- BEGIN SOLUTION -->\nb\n<!-- END SOLUTION -->\n\nc\n";
        let (out, _) = replace(Path::new("README.md"), text, Keep::Stub).unwrap();
        assert_eq!(out, "a\n\nc\n");
        // At the end of the file, it takes the blank line before it.
        let text = "a\n\n<!-- BEGIN SOLUTION -->\nb\n<!-- END SOLUTION -->\n";
        let (out, _) = replace(Path::new("README.md"), text, Keep::Stub).unwrap();
        assert_eq!(out, "a\n");
    }

    #[test]
    fn stub_lines_only_count_right_after_begin() {
        let text = "// BEGIN SOLUTION\n  // stub: f(\n  // stub:     1,\n  // stub: )\nx();\n// stub: y();\n// END SOLUTION\n";
        let (out, _) = replace(Path::new("a.cu"), text, Keep::Stub).unwrap();
        assert_eq!(out, "  f(\n      1,\n  )\n");
        let (out, _) = replace(Path::new("a.cu"), text, Keep::Solution).unwrap();
        assert_eq!(out, "x();\n// stub: y();\n");
    }

    #[test]
    fn broken_markers_are_errors_with_their_place() {
        let cases = [
            (
                "// BEGIN SOLUTION\n",
                "a.rs:1: BEGIN SOLUTION is never closed",
            ),
            ("x\n// END SOLUTION\n", "a.rs:2: END SOLUTION without"),
            (
                "// BEGIN SOLUTION\n// BEGIN SOLUTION\n",
                "a.rs:2: BEGIN SOLUTION inside",
            ),
            (
                "// BEGIN SOLUTION: x\n",
                "a.rs:1: a region marker must be alone",
            ),
            (
                "// BEGIN INSTRUCTOR\n// END SOLUTION\n",
                "a.rs:2: END SOLUTION closes the INSTRUCTOR region opened at line 1",
            ),
        ];
        for (text, expected) in cases {
            let error = replace(Path::new("a.rs"), text, Keep::Stub)
                .unwrap_err()
                .to_string();
            assert!(error.starts_with(expected), "{error}");
        }
    }

    /// A solved hand-out is published to students: the instructor's parts go from it too.
    #[test]
    fn instructor_regions_go_from_both_versions() {
        let text = "mod labs;\n// BEGIN INSTRUCTOR\n// stub: // graded elsewhere\nmod grade;\n// END INSTRUCTOR\n// BEGIN SOLUTION\nmod answer;\n// END SOLUTION\n";
        let (out, n) = replace(Path::new("main.rs"), text, Keep::Stub).unwrap();
        assert_eq!((out.as_str(), n), ("mod labs;\n// graded elsewhere\n", 2));
        let (out, _) = replace(Path::new("main.rs"), text, Keep::Solution).unwrap();
        assert_eq!(out, "mod labs;\n// graded elsewhere\nmod answer;\n");
        let text = "a\n\n<!-- BEGIN INSTRUCTOR -->\n## Grading\n<!-- END INSTRUCTOR -->\n\nb\n";
        let (out, _) = replace(Path::new("README.md"), text, Keep::Solution).unwrap();
        assert_eq!(out, "a\n\nb\n");
    }

    /// The workspace's manifest lists the instructor's crate, which the hand-out leaves out.
    #[test]
    fn toml_regions_go_too() {
        let text = "members = [\n    \"xtask\",\n    # BEGIN INSTRUCTOR\n    \"xtask/instructor\",\n    # END INSTRUCTOR\n]\n";
        let (out, n) = replace(Path::new("Cargo.toml"), text, Keep::Solution).unwrap();
        assert_eq!((out.as_str(), n), ("members = [\n    \"xtask\",\n]\n", 1));
    }

    #[test]
    fn other_files_are_left_alone() {
        let text = "// BEGIN SOLUTION\n";
        assert_eq!(
            replace(Path::new("a.json"), text, Keep::Stub).unwrap(),
            (text.to_string(), 0)
        );
    }
}
