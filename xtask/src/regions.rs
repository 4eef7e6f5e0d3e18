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
//! and in Markdown `<!-- BEGIN SOLUTION -->` ... `<!-- END SOLUTION -->`. The hand-out
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
    begin: &'static str,
    end: &'static str,
    stub: &'static str,
    /// What closes a stub line (`-->` in Markdown).
    stub_close: &'static str,
}

const SLASHES: Syntax = Syntax {
    begin: "// BEGIN SOLUTION",
    end: "// END SOLUTION",
    stub: "// stub:",
    stub_close: "",
};

const HTML: Syntax = Syntax {
    begin: "<!-- BEGIN SOLUTION -->",
    end: "<!-- END SOLUTION -->",
    stub: "<!-- stub:",
    stub_close: "-->",
};

fn syntax(path: &Path) -> Option<&'static Syntax> {
    match path.extension()?.to_str()? {
        "rs" | "cu" | "cuh" | "c" | "h" => Some(&SLASHES),
        "md" => Some(&HTML),
        _ => None,
    }
}

/// What to put where a region stood.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The student's version: the stub.
    Stub,
    /// The finished version: the solution, without its markers.
    Solution,
}

/// `text` (the file at `path`) with every region replaced, and how many regions it had.
/// Files of a type without regions come back unchanged.
pub fn replace(path: &Path, text: &str, keep: Keep) -> Result<(String, usize)> {
    let Some(syntax) = syntax(path) else {
        return Ok((text.to_string(), 0));
    };
    let at = |number: usize, what: &str| format!("{}:{number}: {what}", path.display());
    let mut out = String::with_capacity(text.len());
    let mut open: Option<usize> = None;
    let mut in_stub = false;
    let mut regions = 0;
    // Where a region goes without a stub between two blank lines, one of them goes too.
    let mut emitted_at_open = 0;
    let mut skip_blank = false;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = index + 1;
        let trimmed = line.trim();
        let indent = &line[..line.len() - line.trim_start().len()];
        if trimmed == syntax.begin {
            if let Some(start) = open {
                bail!(at(
                    number,
                    &format!("BEGIN SOLUTION inside the region opened at line {start}"),
                ));
            }
            open = Some(number);
            in_stub = true;
            regions += 1;
            emitted_at_open = out.len();
        } else if trimmed == syntax.end {
            if open.take().is_none() {
                bail!(at(number, "END SOLUTION without a BEGIN SOLUTION"));
            }
            skip_blank = out.len() == emitted_at_open && (out.is_empty() || out.ends_with("\n\n"));
            continue;
        } else if trimmed.starts_with(syntax.begin) || trimmed.starts_with(syntax.end) {
            bail!(at(number, "a solution marker must be alone on its line"));
        } else if open.is_some() {
            let stub = trimmed
                .strip_prefix(syntax.stub)
                .and_then(|rest| rest.strip_suffix(syntax.stub_close).or(Some(rest)));
            match stub {
                Some(code) if in_stub => {
                    if keep == Keep::Stub {
                        let code = code.strip_prefix(' ').unwrap_or(code).trim_end();
                        out.push_str(indent);
                        out.push_str(code);
                        out.push('\n');
                    }
                }
                _ => {
                    in_stub = false;
                    if keep == Keep::Solution {
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
        Some(start) => bail!(at(start, "BEGIN SOLUTION is never closed")),
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
                "a.rs:1: a solution marker must be alone",
            ),
        ];
        for (text, expected) in cases {
            let error = replace(Path::new("a.rs"), text, Keep::Stub)
                .unwrap_err()
                .to_string();
            assert!(error.starts_with(expected), "{error}");
        }
    }

    #[test]
    fn other_files_are_left_alone() {
        let text = "// BEGIN SOLUTION\n";
        assert_eq!(
            replace(Path::new("a.toml"), text, Keep::Stub).unwrap(),
            (text.to_string(), 0)
        );
    }
}
