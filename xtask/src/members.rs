//! What the workspace's own manifests say about its members, read with `cargo metadata`:
//! which packages are tested by a command of their own (`[package.metadata.xtask]
//! tested-by = "..."`), so that `cargo xtask test` and `dist --tests` leave them to it.
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

/// Every member of this workspace that declares it is tested by another command.
pub fn tested_elsewhere() -> Result<Vec<TestedElsewhere>> {
    let output = cargo()
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo metadata failed ({})", output.status));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata's output is not JSON: {e}"))?;
    Ok(from_metadata(&metadata))
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

    /// This workspace's own manifests read: xtask's tests are `cargo xtask test`'s.
    #[test]
    fn xtask_itself_is_tested_by_cargo_xtask_test() {
        let elsewhere = tested_elsewhere().expect("cargo metadata");
        assert!(elsewhere.iter().all(|member| member.package != "xtask"));
    }
}
