//! Where the lab binaries come from: a `cargo xtask dist` folder (`--bin-dir`), or a fresh
//! `cargo build --release` of this workspace.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use crate::labs::{Device, Lab, Program, REFERENCE};

/// The error type of `test` and `dist`: a message for the user. The other commands use
/// `anyhow`, whose context chain prints as one line.
pub type Result<T> = std::result::Result<T, String>;

/// The given C program, in the reference lab's folder and in a `dist --tests` folder (the
/// reference lab's tests compare with it; `test --bin-dir` tells them where it is).
pub const C_PROGRAM: &str = "reference/mandelbrot.c";

/// The given C program in this workspace.
pub fn c_program() -> PathBuf {
    workspace_root().join(REFERENCE.lab.package).join(C_PROGRAM)
}

/// A folder holding the lab binaries.
#[derive(Debug, Clone)]
pub struct Bins {
    dir: PathBuf,
}

impl Bins {
    /// Use `bin_dir` if given; otherwise build `labs` in release and use cargo's output folder.
    pub fn locate<'a>(
        bin_dir: Option<PathBuf>,
        labs: impl IntoIterator<Item = &'a Lab>,
    ) -> anyhow::Result<Bins> {
        let labs: Vec<&Lab> = labs.into_iter().collect();
        if let Some(dir) = bin_dir {
            for lab in labs {
                let path = dir.join(lab.name);
                if !path.is_file() {
                    bail!(
                        "{} not found; make the folder with `cargo xtask dist`",
                        path.display()
                    );
                }
            }
            return Ok(Bins { dir });
        }
        // Cargo's own progress goes to stderr (stdout stays for the tables): its "Compiling"
        // lines while the first build takes its minute or two, one "Finished" line when
        // nothing needs building.
        let mut cargo = cargo();
        cargo
            .args(["build", "--release"])
            .stdout(Stdio::from(std::io::stderr()));
        for lab in &labs {
            cargo.args(["--package", lab.package]);
        }
        // The CPU device, for the variants that run their kernels on it.
        let emulated = |lab: &&Lab| {
            lab.variants
                .iter()
                .any(|v| matches!(v.device, Device::Emulated(_)))
        };
        if labs.iter().any(emulated) {
            cargo.args(["--package", "cpu-device"]);
        }
        let status = cargo.status().context("cannot run cargo")?;
        if !status.success() {
            bail!("building the labs failed ({status}); cargo's messages above say why");
        }
        Ok(Bins {
            dir: target_dir().join("release"),
        })
    }

    /// The folder the binaries are in (the grader runs its reference binaries from it).
    pub fn dir(&self) -> &PathBuf {
        &self.dir
    }

    /// A command that runs `lab` with no flags.
    pub fn command(&self, lab: &Lab) -> Command {
        Command::new(self.path(lab.name))
    }

    /// A command that runs one variant of a lab: its binary and its flags (and, on the CPU
    /// device, the loader's path to NVRTC where it is the workspace's own copy).
    pub fn program(&self, program: Program) -> Command {
        let mut command = self.command(program.lab);
        command.args(program.variant.flags);
        if program.emulates().is_some() {
            if let Some((variable, path)) = crate::nvrtc::library_path() {
                command.env(variable, path);
            }
        }
        command
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

/// The `cargo xtask dist` folder this program runs from (the dist's stamp beside it), or
/// None. A program run from a dist reads nothing of the workspace it was built in, whose
/// path it was compiled with: the machine that runs it (a GPU machine without Rust) may
/// hold another checkout at that path, or nothing ([`workspace`]).
pub fn dist_folder() -> Option<PathBuf> {
    static FOLDER: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOLDER
        .get_or_init(|| {
            let exe = std::env::current_exe().ok()?;
            let dir = exe.parent()?;
            dir.join(crate::dist::STAMP)
                .is_file()
                .then(|| dir.to_path_buf())
        })
        .clone()
}

/// The workspace root, or None where this program runs from a dist folder
/// ([`dist_folder`]).
pub fn workspace() -> Option<PathBuf> {
    dist_folder().is_none().then(workspace_root)
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
pub fn run_status(command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{:?} failed ({status})", command.get_program()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labs::LABS;

    /// Cargo builds a dependency once per set of features: a feature one lab's manifest adds
    /// to a workspace dependency would make a build of one lab (`run`) recompile what a build
    /// of several (`verify`) left, so features are chosen once, in the workspace's manifest.
    #[test]
    fn no_lab_adds_features_to_a_dependency() {
        for lab in &LABS {
            let manifest = workspace_root().join(lab.package).join("Cargo.toml");
            let text = std::fs::read_to_string(&manifest).expect("a lab's manifest");
            let dependencies = text
                .split("\n[")
                .find(|table| table.starts_with("dependencies]"))
                .expect("a [dependencies] table");
            let featured: Vec<&str> = dependencies
                .lines()
                .filter(|line| line.contains("features"))
                .collect();
            assert!(featured.is_empty(), "{}: {featured:?}", manifest.display());
        }
    }
}
