//! `cargo xtask dist --out DIR` never empties a folder it did not make, and says so before
//! building anything.

use std::fs;
use std::time::{Duration, Instant};

use xtask_test_support::xtask;

#[test]
fn a_folder_with_foreign_files_is_refused_untouched() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    fs::create_dir(dir.path().join(".git")).expect("a .git folder");
    fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").expect("a file");
    fs::write(dir.path().join("notes.txt"), "mine").expect("a file");
    for out in [dir.path().to_str().expect("a UTF-8 path"), "."] {
        let started = Instant::now();
        let output = xtask()
            .current_dir(dir.path())
            .args(["dist", "--out", out])
            .output()
            .expect("xtask starts");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("xtask: "), "{stderr}");
        assert!(
            stderr.contains("was not made by `cargo xtask dist`"),
            "{stderr}"
        );
        // Refused before the release build, which takes minutes.
        assert!(started.elapsed() < Duration::from_secs(5), "{stderr}");
        assert_eq!(
            fs::read_to_string(dir.path().join("notes.txt")).expect("kept"),
            "mine"
        );
        assert!(dir.path().join(".git/HEAD").is_file());
    }
}
