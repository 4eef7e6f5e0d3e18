//! What `grade-class` reads of Gradescope's "Export Submissions" download:
//! `submission_metadata.yml` says which students each `submission_ID/` folder belongs to
//! ([`export_students`]). (The `autograder` command writes Gradescope's autograder.)

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use yaml_rust2::parser::{Event, EventReceiver, Parser};
use yaml_rust2::{Yaml, YamlLoader};

/// The export's list of submissions and their students.
pub const METADATA: &str = "submission_metadata.yml";

/// The largest metadata file read: a class of 500 takes about 200 KB.
const MAX_METADATA_BYTES: u64 = 4 << 20;

/// For each submission folder of a Gradescope export, its students (SID, else email, else
/// name); `None` where `dir` has no `submission_metadata.yml`.
pub fn export_students(dir: &Path) -> Result<Option<BTreeMap<String, Vec<String>>>> {
    let path = dir.join(METADATA);
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("cannot read {} ({e})", path.display()),
    };
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() || meta.len() > MAX_METADATA_BYTES {
        bail!(
            "{} is not a regular file of at most 4 MiB; give the folder Gradescope's export unpacks to",
            path.display()
        );
    }
    let mut text = String::new();
    file.take(MAX_METADATA_BYTES)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {} as UTF-8 text", path.display()))?;
    parse_metadata(&text)
        .map(Some)
        .with_context(|| format!("{} is not Gradescope's export metadata", path.display()))
}

/// Counts the aliases of a YAML text: the loader copies what an alias names, so a few lines
/// of aliases to aliases would fill the memory. Gradescope writes none.
struct Aliases(usize);

impl EventReceiver for Aliases {
    fn on_event(&mut self, event: Event) {
        if matches!(event, Event::Alias(_)) {
            self.0 += 1;
        }
    }
}

fn parse_metadata(text: &str) -> Result<BTreeMap<String, Vec<String>>> {
    let mut aliases = Aliases(0);
    Parser::new_from_str(text)
        .load(&mut aliases, true)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if aliases.0 > 0 {
        bail!("it uses YAML aliases, which Gradescope's export never does");
    }
    let docs = YamlLoader::load_from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
    let Some(Yaml::Hash(top)) = docs.first() else {
        bail!("it is not a mapping of submission folders");
    };
    let mut students = BTreeMap::new();
    for (folder, record) in top {
        let Some(folder) = folder.as_str() else {
            continue;
        };
        let mut ids = Vec::new();
        if let Yaml::Array(submitters) = &record[":submitters"] {
            for submitter in submitters {
                let id = [":sid", ":email", ":name"]
                    .into_iter()
                    .filter_map(|key| scalar(&submitter[key]))
                    .find(|value| !value.trim().is_empty());
                if let Some(id) = id {
                    // One line of text: a name is the student's own to choose.
                    let id: String = id
                        .trim()
                        .chars()
                        .map(|c| if c.is_control() { ' ' } else { c })
                        .collect();
                    ids.push(id);
                }
            }
        }
        students.insert(folder.to_string(), ids);
    }
    Ok(students)
}

/// A scalar as text: SIDs may be written as numbers.
fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The form of Gradescope's export (Ruby symbols as keys), with a group submission.
    const EXPORT: &str = "\
submission_1001:
  :submitters:
  - :name: Ada Lovelace
    :sid: '2001'
    :email: ada@example.edu
  :created_at: 2026-03-01 10:00:00.000000000 -08:00
  :score: 14.0
submission_1002:
  :submitters:
  - :name: Pair One
    :sid: 2002
    :email: one@example.edu
  - :name: Pair Two
    :sid: ''
    :email: two@example.edu
submission_1003:
  :submitters:
  - :name: Only A Name
";

    #[test]
    fn the_export_names_each_folders_students() {
        let students = parse_metadata(EXPORT).expect("parsed");
        assert_eq!(students["submission_1001"], ["2001"]);
        assert_eq!(students["submission_1002"], ["2002", "two@example.edu"]);
        assert_eq!(students["submission_1003"], ["Only A Name"]);
    }

    #[test]
    fn aliases_and_other_shapes_are_refused() {
        let bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\n";
        let error = parse_metadata(bomb).expect_err("aliases").to_string();
        assert!(error.contains("aliases"), "{error}");
        assert!(parse_metadata("- just\n- a list\n").is_err());
        assert!(parse_metadata("a: [unclosed\n").is_err());
    }

    #[test]
    fn a_folder_without_metadata_is_no_export() {
        let dir = tempfile::tempdir().expect("a temp folder");
        assert!(export_students(dir.path()).expect("read").is_none());
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join(METADATA)).expect("a link");
        assert!(export_students(dir.path()).is_err(), "a link is refused");
    }
}
