//! What the workspace's own manifests say about its members, read with `cargo metadata`:
//! which packages are tested by a command of their own (`[package.metadata.xtask]
//! tested-by = "..."`), so that `cargo xtask test` and `dist --tests` leave them to it; and
//! which add files of their own to a dist folder (`dist-files = "COMMAND"`: `dist` runs
//! the package's binary, built, as `BINARY COMMAND DIR`, which writes them into DIR and
//! prints their names).
//!
//! The manifests say it, not xtask's code: a hand-out without such a package needs no
//! change here, and a package that moves its tests elsewhere says so where it is declared.

use serde_json::Value;

use crate::bins::{cargo, Result};

/// A workspace member whose tests another command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestedElsewhere {
    /// The package's name, for `--exclude`.
    pub package: String,
    /// The command that tests it, as its manifest says.
    pub by: String,
}

/// A workspace member whose binary adds files of its own to a dist folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistFiles {
    /// The package's binary (the first it declares).
    pub binary: String,
    /// The command that writes the files, given the folder.
    pub command: String,
}

/// Every member of this workspace that declares it is tested by another command.
pub fn tested_elsewhere() -> Result<Vec<TestedElsewhere>> {
    Ok(from_metadata(&metadata()?))
}

/// Every member of this workspace that adds files to a dist folder.
pub fn dist_files() -> Result<Vec<DistFiles>> {
    Ok(dist_files_from(&metadata()?))
}

/// The packages of `cargo metadata`'s output that add files to a dist folder.
fn dist_files_from(metadata: &Value) -> Vec<DistFiles> {
    let packages = metadata["packages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    packages
        .iter()
        .filter_map(|package| {
            let command = package["metadata"]["xtask"]["dist-files"].as_str()?;
            let binary = package["targets"].as_array()?.iter().find(|t| {
                t["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == "bin"))
            })?["name"]
                .as_str()?;
            Some(DistFiles {
                binary: binary.to_string(),
                command: command.to_string(),
            })
        })
        .collect()
}

/// `cargo metadata` of this workspace, its own packages alone.
fn metadata() -> Result<Value> {
    let output = cargo()
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo metadata failed ({})", output.status));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata's output is not JSON: {e}"))
}

/// The packages of `cargo metadata`'s output that name the command that tests them.
fn from_metadata(metadata: &Value) -> Vec<TestedElsewhere> {
    let packages = metadata["packages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    packages
        .iter()
        .filter_map(|package| {
            let by = package["metadata"]["xtask"]["tested-by"].as_str()?;
            Some(TestedElsewhere {
                package: package["name"].as_str()?.to_string(),
                by: by.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_packages_that_say_so_are_tested_elsewhere() {
        let metadata = serde_json::json!({"packages": [
            {"name": "lab01", "metadata": null},
            {"name": "tools", "metadata": {"xtask": {"tested-by": "cargo tools test"}}},
            {"name": "other", "metadata": {"docs": {"rs": true}}},
        ]});
        assert_eq!(
            from_metadata(&metadata),
            [TestedElsewhere {
                package: "tools".to_string(),
                by: "cargo tools test".to_string(),
            }]
        );
    }

    #[test]
    fn only_packages_that_say_so_add_dist_files() {
        let metadata = serde_json::json!({"packages": [
            {"name": "lab01", "metadata": null, "targets": [{"kind": ["bin"], "name": "lab01"}]},
            {"name": "tools", "metadata": {"xtask": {"dist-files": "manifest"}},
             "targets": [{"kind": ["lib"], "name": "tools"}, {"kind": ["bin"], "name": "tool"}]},
        ]});
        assert_eq!(
            dist_files_from(&metadata),
            [DistFiles {
                binary: "tool".to_string(),
                command: "manifest".to_string(),
            }]
        );
    }

    /// This workspace's own manifests read: xtask's tests are `cargo xtask test`'s.
    #[test]
    fn xtask_itself_is_tested_by_cargo_xtask_test() {
        let elsewhere = tested_elsewhere().expect("cargo metadata");
        assert!(elsewhere.iter().all(|member| member.package != "xtask"));
    }
}
