//! Text from a submission, made inert wherever the grader shows it.
//!
//! Every string a submission controls (an entry's or archive member's name, the student's
//! last line on stderr, a name in the metadata) is hostile: an ANSI escape recolours or
//! rewrites the instructor's terminal (a forged "total: 14 of 14 points", the real one
//! black on black), a carriage return or a newline forges a line of the table, a bidi
//! override reverses what is read, Markdown or HTML restyles feedback.md and summary.md, a
//! leading `=` is a formula in the spreadsheet grades.csv is opened in. The writers all go
//! through this module: [`line`] for the terminal and the log, [`markdown`] for the
//! Markdown files, [`csv_name`] for names in grades.csv.

use std::fmt::Write as _;

/// Whether `c` changes how the text around it is shown rather than showing itself: a
/// control character (C0, DEL, C1: escapes, CR, newline, backspace), a bidi override,
/// embedding, isolate or mark, a zero-width or other format character, a line or
/// paragraph separator, a tag character.
pub fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{0600}'..='\u{0605}'
                | '\u{06DD}'
                | '\u{070F}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// One line for the terminal or the log: every invisible character written out as its
/// escape (`\u{1b}`, `\n`, `\r`, `\t`), so the text shows exactly what it is and no more.
pub fn line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_invisible(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// Text for a Markdown file (a table cell, a list item, a sentence): [`line`], then every
/// character Markdown or HTML reads as markup escaped (`<`, `>` and `&` as HTML entities,
/// which GitHub, Gradescope and every CommonMark reader show as the character), so it reads
/// as the characters it is and cannot open a link, an image, a heading, a code span or a
/// table column.
pub fn markdown(text: &str) -> String {
    let text = line(text);
    let mut out = String::with_capacity(text.len() + 8);
    for (i, c) in text.chars().enumerate() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' | '!' | '^' | '$' => {
                out.push('\\');
                out.push(c);
            }
            // A list or heading marker only at the start of the text (`- x`, `+ x`, `= x`
            // under a line); the rest of the text never starts a line.
            '-' | '+' | '=' if i == 0 => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    // `1. x` or `1) x` at the start is an ordered list.
    let digits = out.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && matches!(out[digits..].chars().next(), Some('.' | ')')) {
        out.insert(digits, '\\');
    }
    out
}

/// A name for grades.csv: invisible characters (controls, bidi, zero-width) dropped, one
/// line, and never read as a formula by a spreadsheet (a leading `=`, `+`, `-`, `@`, even
/// after spaces, gets a `'` before it). The field's quoting is the CSV writer's.
pub fn csv_name(text: &str) -> String {
    let mut name: String = text.chars().filter(|&c| !is_invisible(c)).collect();
    if name.trim_start().starts_with(['=', '+', '-', '@']) {
        name.insert(0, '\'');
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_escapes_are_shown_not_obeyed() {
        let forged = "\u{1b}[30;40mtotal\u{1b}[0m";
        assert_eq!(line(forged), "\\u{1b}[30;40mtotal\\u{1b}[0m");
        assert!(!line(forged).contains('\u{1b}'));
        assert!(!markdown(forged).contains('\u{1b}'));
        // C1's single-byte CSI too.
        assert_eq!(line("a\u{9b}2J"), "a\\u{9b}2J");
    }

    #[test]
    fn carriage_returns_and_newlines_forge_no_line() {
        assert_eq!(
            line("1/1 identical\r| lab02 | 4/4 |\ntotal: 14 of 14 points"),
            "1/1 identical\\r| lab02 | 4/4 |\\ntotal: 14 of 14 points"
        );
        assert_eq!(line("a\tb\u{8}c"), "a\\tb\\u{8}c");
        assert!(!markdown("x\ny").contains('\n'));
    }

    #[test]
    fn bidi_and_zero_width_characters_are_shown() {
        assert_eq!(line("evil\u{202e}txt.rs"), "evil\\u{202e}txt.rs");
        assert_eq!(line("\u{2066}a\u{2069}"), "\\u{2066}a\\u{2069}");
        assert_eq!(line("a\u{200b}b\u{feff}"), "a\\u{200b}b\\u{feff}");
        assert_eq!(line("a\u{2028}b"), "a\\u{2028}b");
        assert_eq!(line("tag\u{e0041}"), "tag\\u{e0041}");
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        let text = "Ana María Núñez, 陈, lab02: 3 of 4 (75%)";
        assert_eq!(line(text), text);
        assert_eq!(csv_name(text), text);
    }

    #[test]
    fn markdown_and_html_are_escaped() {
        assert_eq!(
            markdown("<img src=x onerror=alert(1)>"),
            "&lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(markdown("[click](http://x)"), "\\[click\\](http://x)");
        assert_eq!(markdown("![i](x)"), "\\!\\[i\\](x)");
        assert_eq!(markdown("a | b"), "a \\| b");
        assert_eq!(
            markdown("`code` **bold** _it_"),
            "\\`code\\` \\*\\*bold\\*\\* \\_it\\_"
        );
        assert_eq!(markdown("# heading"), "\\# heading");
        assert_eq!(markdown("- item"), "\\- item");
        assert_eq!(markdown("1. item"), "1\\. item");
        assert_eq!(markdown("a & b"), "a &amp; b");
        assert_eq!(markdown("a\\b"), "a\\\\b");
        // Inside the text, a hyphen is only a hyphen.
        assert_eq!(markdown("lab02-rayon"), "lab02-rayon");
    }

    #[test]
    fn csv_names_hold_no_formula_bidi_or_control() {
        assert_eq!(csv_name("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(csv_name("+1"), "'+1");
        assert_eq!(csv_name("-2+3"), "'-2+3");
        assert_eq!(csv_name("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_name("  =1+1"), "'  =1+1");
        assert_eq!(csv_name("\t=1"), "'=1");
        assert_eq!(csv_name("ada\u{202e}cba"), "adacba");
        assert_eq!(csv_name("a\r\nb\u{1b}[31m"), "ab[31m");
        assert_eq!(csv_name("\u{200b}=1"), "'=1");
    }
}
