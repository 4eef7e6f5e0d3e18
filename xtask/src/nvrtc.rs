//! Where NVRTC is: the kernels are compiled by it, on a GPU machine and on the CPU device
//! alike, so the kernel checks, the CPU device and the tests need it found.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use shared::nvrtc::{LIBRARY, LOADER_PATH, PIP_FOLDER};

/// Where `.ci/run` and `cargo xtask install-nvrtc` install NVRTC (pip's
/// `nvidia-cuda-nvrtc-cu12`), in the workspace root; the library lies in its [`PIP_FOLDER`].
pub const NVRTC_FOLDER: &str = ".nvrtc";

/// The command that puts NVRTC in [`NVRTC_FOLDER`], as `.ci/run` does: what
/// `install-nvrtc` runs, and what the message saying NVRTC is missing gives to type.
pub const NVRTC_INSTALL: &str =
    "python3 -m pip install --no-deps --target .nvrtc nvidia-cuda-nvrtc-cu12==12.9.86";

/// What to type where NVRTC is missing, said once by the commands that need it.
pub fn install_hint() -> String {
    format!("`cargo xtask install-nvrtc` installs it into .nvrtc (it runs `{NVRTC_INSTALL}`)")
}

/// `cargo xtask install-nvrtc`.
#[derive(clap::Args)]
pub struct Args {}

/// Install NVRTC into the workspace's `.nvrtc` with pip, unless it is there already; fail
/// unless the library is there afterwards (pip installs an empty placeholder where NVIDIA
/// ships no NVRTC, as on macOS).
pub fn install(_: Args) -> anyhow::Result<()> {
    let root = crate::bins::workspace_root();
    let library = root.join(shared::nvrtc::WORKSPACE_COPY);
    if !library.is_file() {
        shared::cli::eprint_line(&format!("xtask: running {NVRTC_INSTALL}"));
        let mut words = NVRTC_INSTALL.split(' ');
        let mut pip = std::process::Command::new(words.next().unwrap_or("python3"));
        pip.args(words).current_dir(&root);
        let status = pip.status().map_err(|e| {
            anyhow::anyhow!(
                "cannot run python3 ({e}): install Python 3 with pip, then run \
                 `cargo xtask install-nvrtc` again"
            )
        })?;
        if !status.success() {
            anyhow::bail!("pip failed ({status}); its messages above say why");
        }
        if !library.is_file() {
            anyhow::bail!(
                "pip ran, but {} is not there: NVIDIA ships NVRTC for Linux (x86-64 and Arm) \
                 and Windows only; on this machine the GPU labs need a Linux container \
                 (README: the dev container)",
                library.display()
            );
        }
    }
    shared::cli::print_line(&format!(
        "NVRTC: {} (the CPU device and the kernel checks use it)",
        library.display()
    ))?;
    Ok(())
}

/// Where NVRTC was found.
pub enum Nvrtc {
    /// The pip package's library folder (added to the tests' `LD_LIBRARY_PATH`, or `PATH` on
    /// Windows).
    Folder(PathBuf),
    /// Where the system's dynamic loader finds it.
    System,
}

/// NVRTC in the workspace's `.nvrtc/` folder (not from a dist folder, which reads nothing
/// of the workspace: [`crate::bins::dist_folder`]), else on the system; or why not.
///
/// cudarc 0.19 (with `cuda-12000`) loads `libnvrtc.so`, `libnvrtc.so.12`, `.11`, ... (on
/// Windows `nvrtc64_120_0.dll`) by name: the folder must be on the loader's path when a test
/// process starts, so it is looked for here and passed down, not loaded in this process.
pub fn find() -> Result<Nvrtc, String> {
    if let Some(why) = shared::nvrtc::UNAVAILABLE {
        return Err(why.to_string());
    }
    // Not from a dist folder, which reads nothing of the workspace it was built in.
    if let Some(root) = crate::bins::workspace() {
        let folder = root.join(NVRTC_FOLDER).join(PIP_FOLDER);
        if folder.join(LIBRARY).is_file() {
            return Ok(Nvrtc::Folder(folder));
        }
    }
    // A folder on the loader's path: named, so that a sandboxed lab can be given it too.
    let path = std::env::var_os(LOADER_PATH).unwrap_or_default();
    if let Some(dir) = std::env::split_paths(&path).find(|d| d.join(LIBRARY).is_file()) {
        return Ok(Nvrtc::Folder(dir));
    }
    // The loader's own: a copy found beside this program (`is_present`) is not one a lab
    // started elsewhere finds.
    if shared::nvrtc::on_the_loaders_path() {
        return Ok(Nvrtc::System);
    }
    Err(format!(
        "NVRTC not found (no {LIBRARY} on the loader's path or in {NVRTC_FOLDER}/{PIP_FOLDER}); {}",
        install_hint()
    ))
}

/// The loader's path with `dir` first: the variable's name and its value.
pub fn path_with(dir: &Path) -> Result<(&'static str, OsString), String> {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os(LOADER_PATH).unwrap_or_default(),
    ));
    let joined = std::env::join_paths(paths)
        .map_err(|e| format!("cannot set {LOADER_PATH} for {}: {e}", dir.display()))?;
    Ok((LOADER_PATH, joined))
}

/// The loader's path with the pip package's folder first, where that is where NVRTC is;
/// the labs load NVRTC by name, through the loader.
pub fn library_path() -> Option<(&'static str, OsString)> {
    let Ok(Nvrtc::Folder(dir)) = find() else {
        return None;
    };
    path_with(&dir).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nvrtc_skip_line_gives_the_package_ci_installs() {
        // The workspace's folder from cargo, not from `bins`, which builds on this module.
        let ci = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../.ci/run"))
            .expect(".ci/run");
        let package = NVRTC_INSTALL.rsplit(' ').next().unwrap_or_default();
        assert!(
            ci.contains(&format!("NVRTC_PACKAGE={package}\n")),
            "{package}"
        );
        assert!(NVRTC_INSTALL.contains(&format!("--target {NVRTC_FOLDER} ")));
    }
}
