//! One CSV line as fields: the recorded runs in `docs/` (read by `docs`), Nsight Compute's
//! `--csv` output (read by `profile`), and the files the integration tests read back
//! (`bench.csv`, a class's `grades.csv`).

/// The fields of one CSV line. A field in double quotes may hold commas
/// (`"CPU, 2 threads"`) and doubled quotes (`"say ""x"""` is `say "x"`); `None` if a quote
/// is left open.
pub fn fields(line: &str) -> Option<Vec<String>> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut()?.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            (c, _) => fields.last_mut()?.push(c),
        }
    }
    (!quoted).then_some(fields)
}

#[cfg(test)]
mod tests {
    use super::fields;

    #[test]
    fn quoted_fields_keep_their_commas_and_quotes() {
        assert_eq!(
            fields("lab01,\"CPU, 2 threads\",5").as_deref(),
            Some(&["lab01", "CPU, 2 threads", "5"].map(String::from)[..])
        );
        assert_eq!(
            fields("\"a\",\"1,234.5\",\"say \"\"x\"\"\"").as_deref(),
            Some(&["a", "1,234.5", "say \"x\""].map(String::from)[..])
        );
        assert_eq!(fields("").as_deref(), Some(&[String::new()][..]));
    }

    #[test]
    fn an_open_quote_is_no_line() {
        assert_eq!(fields("lab01,\"CPU, 2 threads,5"), None);
    }
}
