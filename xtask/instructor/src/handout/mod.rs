//! `cargo instructor handout --out DIR`: the student's workspace, ready to commit.
//!
//! The hand-out's files ([`crate::files`]): every file git tracks here, each solution
//! region replaced by its stub, the instructor-only files left out, the lock file pruned.
//! With `--solved`, the regions keep their solutions instead: the same workspace as a
//! student who finished every exercise would have it (an answer key to publish after the
//! deadline, and what CI grades to prove that skeleton and solution fit together).
//!
//! Either way it is written only if every reference in it resolves (`references`), and,
//! without `--solved`, only if no file gives an exercise's answer away (`answers`).

mod answers;
mod references;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use xtask::bins::workspace_root;

use crate::files;
use crate::regions::Keep;

#[derive(clap::Args)]
pub struct Args {
    /// The folder to create (it must not exist, or be empty)
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Keep the solutions in place of the stubs
    #[arg(long)]
    solved: bool,
}

pub fn run(args: Args) -> Result<()> {
    refuse_non_empty(&args.out)?;
    let keep = if args.solved {
        Keep::Solution
    } else {
        Keep::Stub
    };
    let (files, regions) = files::handout(keep)?;
    references::check(&files)?;
    if !args.solved {
        answers::check(&files, &answers::load(&workspace_root())?)?;
    }
    for file in &files {
        let to = args.out.join(&file.path);
        if let Some(dir) = to.parent() {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        shared::output::write_file(&to, &file.bytes)?;
        // The same mode as the source: a script stays executable (.ci/run).
        fs::set_permissions(&to, fs::Permissions::from_mode(file.mode))
            .with_context(|| format!("cannot set the mode of {}", to.display()))?;
    }
    let what = if args.solved {
        "solved"
    } else {
        "replaced by stubs"
    };
    shared::cli::eprint_line(&format!(
        "xtask: hand-out written to {}: {} files tracked by git, {regions} solution regions {what}",
        args.out.display(),
        files.len()
    ));
    Ok(())
}

/// The hand-out goes into a new folder, never over someone's work.
fn refuse_non_empty(out: &Path) -> Result<()> {
    match fs::read_dir(out).map(|mut entries| entries.next().is_some()) {
        Ok(true) => bail!("{} is not empty; give a new or empty folder", out.display()),
        Ok(false) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot use {} for the hand-out", out.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `shared::exercise::check_kernel` stops at the first `UNFINISHED` mark: a stub kernel
    /// without one of its own would compile, run and give a wrong result, not a message.
    #[test]
    fn every_stub_kernel_says_it_is_not_written() {
        let root = workspace_root();
        let mut kernels = 0;
        for path in files::tracked_files(&root).unwrap() {
            if path.extension().is_none_or(|e| e != "cu") {
                continue;
            }
            let text = fs::read_to_string(root.join(&path)).unwrap();
            let stubs: String = text
                .lines()
                .filter_map(|line| line.trim_start().strip_prefix("// stub:"))
                .collect::<Vec<_>>()
                .join("\n");
            for kernel in stubs.split("__global__").skip(1) {
                kernels += 1;
                assert!(
                    kernel.contains("// UNFINISHED: "),
                    "{}: a stub kernel with no mark: {kernel}",
                    path.display()
                );
            }
        }
        assert!(kernels >= 7, "only {kernels} stub kernels found");
    }

    /// A student looks in vain for what the hand-out names but leaves out: no instructor-only
    /// file, and none of the instructor's commands.
    #[test]
    fn the_hand_out_names_nothing_it_leaves_out() {
        let (files, _) = files::handout(Keep::Stub).unwrap();
        let commands = ["handout", "grade", "autograder", "classroom", "test"]
            .map(|c| format!("instructor {c}"))
            .into_iter()
            .chain(["xtask grade", "xtask handout"].map(String::from));
        let left_out = files::INSTRUCTOR_ONLY
            .iter()
            .map(|path| path.trim_end_matches('/').to_string())
            .chain(commands);
        let names: Vec<String> = left_out.collect();
        let mut found = Vec::new();
        for file in &files {
            let text = String::from_utf8_lossy(&file.bytes);
            for name in names.iter().filter(|name| text.contains(name.as_str())) {
                found.push(format!("{} names {name}", file.path.display()));
            }
        }
        assert!(found.is_empty(), "{found:#?}");
    }

    /// cargo passes extra arguments to rustc for one target only: a README's `cargo rustc
    /// ... --` that names no `--bin` or `--lib` fails in a package that has both.
    #[test]
    fn every_cargo_rustc_in_a_readme_names_its_target() {
        let (files, _) = files::handout(Keep::Stub).unwrap();
        let mut commands = 0;
        for file in files
            .iter()
            .filter(|f| f.path.extension().is_some_and(|e| e == "md"))
        {
            let text = String::from_utf8_lossy(&file.bytes);
            for rest in text.split("cargo rustc ").skip(1) {
                let before_rustc_args = rest.split(" -- ").next().unwrap_or_default();
                commands += 1;
                assert!(
                    before_rustc_args.contains("--bin ") || before_rustc_args.contains("--lib"),
                    "{}: cargo rustc {before_rustc_args}",
                    file.path.display()
                );
            }
        }
        assert!(commands > 0, "no README shows cargo rustc");
    }

    #[test]
    fn a_non_empty_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(refuse_non_empty(dir.path()).is_ok());
        assert!(refuse_non_empty(&dir.path().join("new")).is_ok());
        fs::write(dir.path().join("work.rs"), "").unwrap();
        let error = refuse_non_empty(dir.path()).unwrap_err().to_string();
        assert!(
            error.ends_with("is not empty; give a new or empty folder"),
            "{error}"
        );
    }
}
