//! The labs' task runner as a library: one module per command of `cargo xtask`
//! (rust-analyzer's pattern), and the pieces every command shares.
//!
//! A library, not only a binary: other tools of a workspace (a grader, say) run the
//! labs with the same table, runner and comparisons as these commands, without this crate
//! compiling what only they need.
//!
//! Every command that runs labs can use binaries from a `cargo xtask dist` folder instead of
//! cargo (`--bin-dir DIR`), so the same commands work on a GPU machine with no Rust toolchain.
//! What the labs are comes from one table ([`labs`]); each lab process is run through one
//! runner ([`runner`]); each file xtask writes goes through `shared::output`, each line
//! through `shared::cli`'s printers (a closed stdout is no panic).

pub mod bench;
pub mod bins;
pub mod cli;
pub mod crosscheck;
pub mod csv;
pub mod dist;
pub mod docs;
pub mod format;
pub mod gpu;
pub mod labs;
pub mod members;
pub mod model;
pub mod needs;
pub mod nvrtc;
pub mod ppm;
pub mod predict;
pub mod profile;
pub mod recorded;
pub mod run;
pub mod runner;
pub mod sanitize;
pub mod test;
pub mod values;
pub mod verify;
