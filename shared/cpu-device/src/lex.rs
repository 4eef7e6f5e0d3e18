//! PTX text as tokens: names (with their dots and `%`), numbers, strings and punctuation,
//! each with its line, comments dropped.

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A name, a directive (`.reg`), an opcode (`ld.global.u32`), a register (`%rd1`), a
    /// label (`$L__BB0_1`).
    Name(String),
    /// A number as written: `42`, `-1` is punctuation and a number, `0x1F`, `0d3FF0...`,
    /// `0f3F800000`, `1.5`.
    Num(String),
    Str(String),
    Punct(char),
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub line: u32,
}

/// Split `text` into tokens, or say which line holds a character PTX does not use.
pub fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1u32;
    let name_char = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'%' | b'.');
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    if bytes[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i += 2;
            }
            b'"' => {
                let start = i + 1;
                i = start;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Str(text[start..i.min(bytes.len())].to_string()),
                    line,
                });
                i += 1;
            }
            b'0'..=b'9' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Num(text[start..i].to_string()),
                    line,
                });
            }
            _ if name_char(c) => {
                let start = i;
                while i < bytes.len() && name_char(bytes[i]) {
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Name(text[start..i].to_string()),
                    line,
                });
            }
            b'(' | b')' | b'{' | b'}' | b'[' | b']' | b',' | b';' | b':' | b'@' | b'!' | b'+'
            | b'-' | b'=' | b'<' | b'>' | b'|' => {
                out.push(Token {
                    tok: Tok::Punct(c as char),
                    line,
                });
                i += 1;
            }
            _ => {
                return Err(format!(
                    "line {line}: the character {:?} is not PTX",
                    char::from(c)
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instruction_splits_into_its_parts_and_comments_go() {
        let t =
            tokens("@!%p1 ld.global.nc.v4.f32 {%f1, %f2}, [%rd4+-8]; // x\n/* y */ bra $L__BB0_1;")
                .unwrap();
        let words: Vec<String> = t
            .iter()
            .map(|t| match &t.tok {
                Tok::Name(s) | Tok::Num(s) | Tok::Str(s) => s.clone(),
                Tok::Punct(c) => c.to_string(),
            })
            .collect();
        assert_eq!(
            words.join(" "),
            "@ ! %p1 ld.global.nc.v4.f32 { %f1 , %f2 } , [ %rd4 + - 8 ] ; bra $L__BB0_1 ;"
        );
        assert_eq!(t.last().unwrap().line, 2);
    }
}
