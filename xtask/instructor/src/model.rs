//! `cargo instructor model`: `cargo xtask model` with the runs the hand-out leaves out, each
//! of which would give away an exercise's answer: lab03's kernel in lab04's place and lab04's
//! multiply-adds fused (lab04's exercise is the kernel and the option that keeps every pixel
//! lab01's), and lab06's variants side by side (lab06's exercise is what each costs). Its
//! table, `xtask/instructor/model-h100.csv`, is the whole validation; `docs/model-h100.csv`
//! holds the hand-out's part.

use anyhow::Result;
use xtask::labs::{self, Lab, ModelRun};

/// A lab06 run: one variant at one launch shape (threads per block, blocks per SM).
macro_rules! lab06 {
    ($name:literal, $variant:literal, $threads:literal, $per_sm:literal) => {
        (
            "lab06",
            ModelRun {
                name: $name,
                args: &[
                    "--variants",
                    $variant,
                    "--threads-per-block",
                    $threads,
                    "--blocks-per-sm",
                    $per_sm,
                    "--reps",
                    "1",
                ],
            },
        )
    };
}

/// The runs added to the labs' own, by lab. lab06's time one launch shape each (256 threads
/// x 8 blocks per multiprocessor, every thread slot of an H100's SM, and one slow shape),
/// `--reps 1` so that the CPU device predicts the one launch the GPU's median is of.
const MORE: &[(&str, ModelRun)] = &[
    (
        "lab04",
        ModelRun {
            name: "lab03's kernel",
            args: &[
                "4096",
                "4096",
                "--kernel",
                "xtask/instructor/tests/submissions/lab04-naive-kernel.cu",
            ],
        },
    ),
    (
        "lab04",
        ModelRun {
            name: "multiply-adds fused",
            args: &["4096", "4096", "--nvrtc-option=--fmad=true"],
        },
    ),
    lab06!("plain", "gpu-plain", "256", "8"),
    lab06!("generic", "gpu-generic", "256", "8"),
    lab06!("virtual", "gpu-virtual", "256", "8"),
    lab06!(
        "function pointer in the loop",
        "gpu-fn-ptr-loop",
        "256",
        "8"
    ),
    lab06!("function pointer hoisted", "gpu-fn-ptr-hoisted", "256", "8"),
    lab06!("plain, 128 x 1 per SM", "gpu-plain", "128", "1"),
];

pub fn run(args: xtask::model::Args) -> Result<()> {
    xtask::model::run_with(args, &more()?)
}

fn more() -> Result<Vec<(&'static Lab, &'static ModelRun)>> {
    MORE.iter()
        .map(|(lab, run)| Ok((labs::find(lab)?, run)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every run names a lab the table has, a kernel file that exists, and a name its lab's
    /// own runs do not use (the table is keyed by lab and name).
    #[test]
    fn the_runs_are_the_tables_labs_and_files() {
        let more = more().expect("the labs exist");
        let root = xtask::bins::workspace_root();
        for (lab, run) in more {
            let own = lab.kernels.as_ref().expect("a lab with kernels").model;
            assert!(own.iter().all(|r| r.name != run.name), "{}", run.name);
            if let Some(at) = run.args.iter().position(|a| *a == "--kernel") {
                assert!(root.join(run.args[at + 1]).is_file(), "{}", run.name);
            }
        }
    }
}
