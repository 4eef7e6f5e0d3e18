//! Where the lab binaries come from: a `cargo xtask dist` folder (`--bin-dir`), or a fresh
//! `cargo build --release` of this workspace.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::labs::Lab;

/// A folder holding the lab binaries.
#[derive(Debug, Clone)]
pub struct Bins {
    dir: PathBuf,
}

impl Bins {
    /// Use `bin_dir` if given; otherwise build `labs` in release and use cargo's output folder.
    pub fn locate(bin_dir: Option<PathBuf>, labs: &[Lab]) -> crate::Result<Bins> {
        if let Some(dir) = bin_dir {
            for lab in labs {
                let path = dir.join(lab.name);
                if !path.is_file() {
                    return Err(format!(
                        "{} not found; make the folder with `cargo xtask dist`",
                        path.display()
                    ));
                }
            }
            return Ok(Bins { dir });
        }
        let mut cargo = cargo();
        cargo.args(["build", "--release", "--quiet"]);
        for lab in labs {
            cargo.args(["--package", lab.package]);
        }
        run_status(&mut cargo)?;
        Ok(Bins {
            dir: target_dir().join("release"),
        })
    }

    /// The binaries in `dir`, as they are (a lab missing there fails when it is run).
    pub fn at(dir: PathBuf) -> Bins {
        Bins { dir }
    }

    /// A command that runs `lab`.
    pub fn command(&self, lab: &Lab) -> Command {
        Command::new(self.path(lab.name))
    }

    /// The path of the binary `name` in this folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// The `cargo` that runs this xtask (or plain `cargo`).
pub fn cargo() -> Command {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.current_dir(workspace_root());
    cargo
}

/// The workspace root: xtask lives one level below it.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Cargo's target folder (`CARGO_TARGET_DIR` if set).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// Run a command that prints its own output; fail if it fails.
pub fn run_status(command: &mut Command) -> crate::Result<()> {
    let status = command
        .status()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{:?} failed ({status})", command.get_program()))
    }
}
