//! What a test needs beyond plain `cargo test`, declared on the test itself as the reason it
//! is ignored: `#[ignore = "needs a CUDA GPU"]`, word for word one of [`NEEDS`] (an attribute
//! takes a literal, not a constant).
//!
//! `cargo xtask test` reads the reasons back from libtest's own lines
//! (`test NAME ... ignored, REASON`, [`ignored`]), runs by name the tests whose needs this
//! machine meets, and counts the others as skipped in its summary, with why. No test is
//! chosen by its name's prefix. A reason that is no need's fails the run, and a unit test
//! reads every reason in the sources ([`declared`]): a typo cannot leave a test unrun.

use std::fs;
use std::path::{Path, PathBuf};

/// One need a test declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// The reason its `ignore` attribute gives, word for word.
    pub reason: &'static str,
    /// Whether the CPU device (`LABS_EMULATE=1`, where NVRTC is found) meets it too.
    pub on_cpu_device: bool,
}

/// A CUDA GPU: the labs' GPU variants and their faults.
pub const GPU: Need = Need {
    reason: "needs a CUDA GPU",
    on_cpu_device: true,
};

/// Two CUDA GPUs or more: lab05's canvas split over several GPUs.
pub const TWO_GPUS: Need = Need {
    reason: "needs two CUDA GPUs (cargo xtask test runs it where two open)",
    on_cpu_device: false,
};

/// NVRTC, to compile the kernels for real GPUs (sm_60 to sm_90) and read their PTX.
pub const NVRTC: Need = Need {
    reason: "needs NVRTC (cargo xtask test runs it where NVRTC is found)",
    on_cpu_device: true,
};

/// compute-sanitizer, which runs only on a GPU.
pub const COMPUTE_SANITIZER: Need = Need {
    reason: "needs compute-sanitizer and a CUDA GPU",
    on_cpu_device: false,
};

/// Every need of the workspace's tests that `cargo xtask test` runs. A command that tests a
/// package of its own adds its package's needs ([`crate::test::Plan::needs`]).
pub const NEEDS: &[Need] = &[GPU, TWO_GPUS, NVRTC, COMPUTE_SANITIZER];

/// An ignored test in libtest's output (`test NAME ... ignored` or
/// `test NAME ... ignored, REASON`): its name, and its reason if it gives one.
pub fn ignored(line: &str) -> Option<(&str, Option<&str>)> {
    let (name, outcome) = line.strip_prefix("test ")?.rsplit_once(" ... ")?;
    match outcome.strip_prefix("ignored")? {
        "" => Some((name, None)),
        rest => Some((name, Some(rest.strip_prefix(", ")?))),
    }
}

/// Every ignore reason declared in the Rust sources under `dir` (`None`: an ignore attribute
/// without one), with its file; folders for which `leave_out` is true are not read.
pub fn declared(dir: &Path, leave_out: &dyn Fn(&Path) -> bool) -> Vec<(PathBuf, Option<String>)> {
    // Spelt in two pieces, so that this file declares nothing itself.
    let attribute = concat!("#[", "ignore");
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = fs::read_dir(&folder) else {
            continue;
        };
        for path in entries.flatten().map(|entry| entry.path()) {
            if path.is_dir() {
                if !leave_out(&path) {
                    folders.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            for rest in text.split(attribute).skip(1) {
                let reason = rest
                    .strip_prefix(" = \"")
                    .and_then(|quoted| quoted.split('"').next());
                if rest.starts_with(']') || reason.is_some() {
                    found.push((path.clone(), reason.map(str::to_string)));
                }
            }
        }
    }
    found
}

/// Each declaration of `declared` whose reason is no need of `needs`, as `FILE: REASON`: a
/// test ignored for it would never run.
pub fn unknown(declared: &[(PathBuf, Option<String>)], needs: &[Need]) -> Vec<String> {
    declared
        .iter()
        .filter(|(_, reason)| !needs.iter().any(|n| Some(n.reason) == reason.as_deref()))
        .map(|(file, reason)| format!("{}: {reason:?}", file.display()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_lines_give_the_ignored_tests_and_their_reasons() {
        assert_eq!(
            ignored("test nvrtc_compiles ... ignored, needs NVRTC (x)"),
            Some(("nvrtc_compiles", Some("needs NVRTC (x)")))
        );
        assert_eq!(
            ignored("test src/lib.rs - f (line 3) ... ignored"),
            Some(("src/lib.rs - f (line 3)", None))
        );
        assert_eq!(ignored("test a::b ... ok"), None);
        assert_eq!(ignored("test result: ok. 1 passed; 0 ignored"), None);
    }

    /// Every reason declared in the packages `cargo xtask test` tests is a need of the table:
    /// a test whose reason is no need's would never run. A package tested by a command of
    /// its own (its manifest names it) is that command's to check.
    #[test]
    fn every_declared_reason_is_a_need() {
        let root = crate::bins::workspace_root();
        let leave_out = |dir: &Path| {
            let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with('.')
                || dir == crate::bins::target_dir()
                || fs::read_to_string(dir.join("Cargo.toml")).is_ok_and(|m| m.contains("tested-by"))
        };
        let declared = declared(&root, &leave_out);
        let gpu_tests = declared
            .iter()
            .filter(|(_, r)| r.as_deref() == Some(GPU.reason));
        assert!(gpu_tests.count() > 10, "{declared:?}");
        assert_eq!(unknown(&declared, NEEDS), Vec::<String>::new());
        // A misspelt need is caught.
        let misspelt = [(PathBuf::from("t.rs"), Some("needs a CUDA GUP".to_string()))];
        assert_eq!(unknown(&misspelt, NEEDS).len(), 1);
    }
}
