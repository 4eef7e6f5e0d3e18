//! Phase timing: every lab reports where its time went, as a short table on stderr for a
//! person and, with `--json`, as one JSON object on stdout for `cargo xtask bench`.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::cli::{eprint_line, print_line};
use crate::Result;

/// The phases a lab can report, in the order work happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Creating the CUDA context (driver initialisation included).
    Context,
    /// Compiling the kernels with NVRTC and loading them.
    Compile,
    /// Allocating host and device buffers.
    Allocate,
    /// Computing the pixels (or samples) on the CPU.
    Compute,
    /// The separate colouring pass of lab01.
    Colour,
    /// Connecting several GPUs for a collective (NCCL's communicators, lab05).
    Connect,
    /// Kernel time, from CUDA events around the launch.
    Kernel,
    /// Summing the canvases of several GPUs into one (lab05).
    Reduce,
    /// Copying results from the device to the host.
    CopyBack,
    /// Writing the output file.
    Write,
    /// Copying results back and writing them, overlapped chunk by chunk (lab04).
    CopyAndWrite,
    /// The whole run, from the start of `main` to the end of the report.
    Total,
}

impl Phase {
    /// The name used in the table and as the JSON key.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Context => "context",
            Phase::Compile => "compile",
            Phase::Allocate => "allocate",
            Phase::Compute => "compute",
            Phase::Colour => "colour",
            Phase::Connect => "connect",
            Phase::Kernel => "kernel",
            Phase::Reduce => "reduce",
            Phase::CopyBack => "copy_back",
            Phase::Write => "write",
            Phase::CopyAndWrite => "copy_and_write",
            Phase::Total => "total",
        }
    }
}

/// What a lab prints with `--json`, and what `xtask bench` reads back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabReport {
    pub lab: String,
    pub width: u32,
    pub height: u32,
    /// The GPU's name for GPU runs, the CPU thread count for CPU runs.
    pub device: String,
    /// Milliseconds per phase, keyed by [`Phase::name`].
    pub phases_ms: BTreeMap<String, f64>,
    /// Lab-specific figures (GB/s, counts per second, ...).
    #[serde(default)]
    pub metrics: BTreeMap<String, serde_json::Value>,
    /// With `--emulate --profile`: each launch's counts and the H100 model's prediction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<serde_json::Value>,
}

/// Collects phase times while a lab runs; [`Timer::finish`] prints them.
pub struct Timer {
    started: Instant,
    report: LabReport,
    order: Vec<&'static str>,
}

impl Timer {
    /// Start the clock. Call this first thing in `main`, so `total` is the whole run.
    pub fn start(lab: &str, width: u32, height: u32) -> Self {
        crate::output::note_commits();
        Timer {
            started: Instant::now(),
            report: LabReport {
                lab: lab.to_string(),
                width,
                height,
                device: format!("a CPU with {} hardware threads", cpu_threads()),
                phases_ms: BTreeMap::new(),
                metrics: BTreeMap::new(),
                profile: None,
            },
            order: Vec::new(),
        }
    }

    /// Run `work` and record its wall-clock time under `phase`.
    pub fn time<T>(&mut self, phase: Phase, work: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let result = work();
        self.record(phase, start.elapsed().as_secs_f64() * 1e3);
        result
    }

    /// Record a time measured elsewhere (a CUDA event pair, say). Recording a phase twice adds.
    pub fn record(&mut self, phase: Phase, ms: f64) {
        let name = phase.name();
        if !self.order.contains(&name) {
            self.order.push(name);
        }
        *self.report.phases_ms.entry(name.to_string()).or_insert(0.0) += ms;
    }

    /// Name the device the run used.
    pub fn device(&mut self, name: impl Into<String>) {
        self.report.device = name.into();
    }

    /// Add a lab-specific figure to the report.
    pub fn metric(&mut self, key: &str, value: impl Into<serde_json::Value>) {
        self.report.metrics.insert(key.to_string(), value.into());
    }

    /// Stop the clock, print the table on stderr and, if `json`, the report on stdout; then,
    /// on stderr, one line for each file the run committed (`lab01: wrote FILE (WxH)`).
    pub fn finish(mut self, json: bool) -> Result<LabReport> {
        self.record(Phase::Total, self.started.elapsed().as_secs_f64() * 1e3);
        let r = &self.report;
        let mut table = format!("{} {}x{} on {}", r.lab, r.width, r.height, r.device);
        for name in &self.order {
            table += &format!("\n  {name:<10} {:>10.3} ms", r.phases_ms[*name]);
        }
        for (key, value) in &r.metrics {
            table += &format!("\n  {key}: {value}");
        }
        crate::profile::draw()?;
        let size = (self.report.width, self.report.height);
        if let Some(profile) = crate::profile::take(&self.report.lab, size, json) {
            if json {
                self.report.profile = serde_json::from_str(&profile).ok();
            } else {
                table += "\n";
                table += &profile;
            }
        }
        let r = &self.report;
        if json {
            // A map of strings and numbers always encodes. Printed before the table, so that
            // a stdout that cannot be written ends the run with one error line.
            let line = serde_json::to_string(r).unwrap_or_default();
            print_line(&line)?;
        }
        eprint_line(&table);
        for committed in crate::output::take_committed() {
            eprint_line(&format!("{}: wrote {committed}", r.lab));
        }
        Ok(self.report)
    }
}

/// The machine's hardware threads (what rayon uses by default; lab01 uses one).
fn cpu_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
