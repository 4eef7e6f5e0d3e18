//! Where NVRTC is: the kernels are compiled by it, on a GPU machine and on the CPU device
//! alike, so the kernel checks, the CPU device and the tests need it found.

use std::ffi::OsString;
use std::path::PathBuf;

/// Where `.ci/run` installs NVRTC (pip's `nvidia-cuda-nvrtc-cu12`), in the workspace root.
const NVRTC_FOLDER: &str = ".nvrtc/nvidia/cuda_nvrtc/lib";

/// The command that puts NVRTC in [`NVRTC_FOLDER`], as `.ci/run` does: a skip line says
/// what to type, not where to read it.
const NVRTC_INSTALL: &str =
    "python3 -m pip install --no-deps --target .nvrtc nvidia-cuda-nvrtc-cu12==12.9.86";

/// Where NVRTC was found.
pub enum Nvrtc {
    /// The pip package's library folder (added to the tests' `LD_LIBRARY_PATH`).
    Folder(PathBuf),
    /// Where the system's dynamic loader finds it.
    System,
}

/// NVRTC in the workspace's `.nvrtc/` folder (not from a dist folder, which reads nothing
/// of the workspace: [`crate::bins::dist_folder`]), else on the system; or why not.
///
/// cudarc 0.19 (with `cuda-12000`) loads `libnvrtc.so`, `libnvrtc.so.12`, `.11`, ... by
/// name: the folder must be on `LD_LIBRARY_PATH` when a test process starts, so it is
/// looked for here and passed down, not loaded in this process.
pub fn find() -> Result<Nvrtc, String> {
    if let Some(root) = crate::bins::workspace() {
        let folder = root.join(NVRTC_FOLDER);
        if folder.join("libnvrtc.so.12").is_file() {
            return Ok(Nvrtc::Folder(folder));
        }
    }
    // A folder on the loader's path: named, so that a sandboxed lab can be given it too.
    let path = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
    if let Some(dir) = std::env::split_paths(&path).find(|d| d.join("libnvrtc.so.12").is_file()) {
        return Ok(Nvrtc::Folder(dir));
    }
    if shared::nvrtc::is_present() {
        return Ok(Nvrtc::System);
    }
    Err(format!(
        "NVRTC not found (no libnvrtc.so.12 on the loader's path or in {NVRTC_FOLDER}); \
         `{NVRTC_INSTALL}` installs it there"
    ))
}

/// `LD_LIBRARY_PATH` with the pip package's folder first, where that is where NVRTC is; the
/// labs load NVRTC by name, through the loader.
pub fn library_path() -> Option<OsString> {
    let Ok(Nvrtc::Folder(dir)) = find() else {
        return None;
    };
    let mut paths = vec![dir];
    paths.extend(std::env::split_paths(
        &std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).ok()
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
        assert!(NVRTC_INSTALL.contains(".nvrtc") && NVRTC_FOLDER.starts_with(".nvrtc/"));
    }
}
