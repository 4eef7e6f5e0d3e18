//! The GPU plumbing every GPU lab shares: find the driver and NVRTC without panicking, open
//! the device, compile a kernel file for this device's own architecture, time with events.

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaModule, CudaStream};
use cudarc::nvrtc::{self, Ptx};

use crate::error::CudaResultExt;
use crate::nvrtc::compile_cubin;
use crate::{Error, Result};

/// An open GPU: its context, the stream the lab works on, and what it is.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// The device's own architecture, e.g. "sm_90": kernels are compiled for it.
    pub arch: String,
}

/// A compiled kernel file and the NVRTC options it was compiled with.
pub struct Kernels {
    pub module: Arc<CudaModule>,
    /// The options exactly as NVRTC received them, for the report.
    pub options: Vec<String>,
}

impl Gpu {
    /// Open device 0.
    ///
    /// cudarc loads `libcuda` and `libnvrtc` on first use and panics if either is missing,
    /// so both are probed first; a stub driver (present, but no GPU behind it) fails in
    /// `CudaContext::new`, which becomes the same clear error.
    pub fn open() -> Result<Gpu> {
        // SAFETY: only tries to dlopen the library by its usual names.
        if !unsafe { sys::is_culib_present() } {
            return Err(no_gpu(
                "the NVIDIA driver library (libcuda.so) was not found",
            ));
        }
        // SAFETY: as above.
        if !unsafe { nvrtc::sys::is_culib_present() } {
            return Err(no_gpu(
                "NVRTC, CUDA's run-time compiler (libnvrtc.so), was not found",
            ));
        }
        let ctx = CudaContext::new(0)
            .map_err(|e| no_gpu(&format!("the driver is installed but no GPU opened ({e})")))?;
        let (major, minor) = ctx
            .compute_capability()
            .cuda("reading the compute capability")?;
        let name = ctx.name().cuda("reading the device name")?;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            name,
            arch: format!("sm_{major}{minor}"),
        })
    }

    /// Compile `source` (the text of `kernels/<file_name>`) with NVRTC and load it.
    ///
    /// `options` are the lab's own NVRTC flags, passed through as written (cudarc's
    /// `use_fast_math` field would pass `--fmad=true` instead of `--use_fast_math`). The
    /// architecture is added here: compiling to a cubin for this device's own `sm_XX` uses
    /// every instruction it has, and avoids the PTX-version mismatch an NVRTC newer than the
    /// driver would cause.
    pub fn compile<S: AsRef<str>>(
        &self,
        file_name: &str,
        source: &str,
        options: &[S],
    ) -> Result<Kernels> {
        let mut all: Vec<String> = options.iter().map(|o| o.as_ref().to_string()).collect();
        all.push(format!("--gpu-architecture={}", self.arch));
        let cubin = compile_cubin(file_name, source, &all)?;
        let module = self
            .ctx
            .load_module(Ptx::from_binary(cubin))
            .cuda("loading the compiled kernels")?;
        Ok(Kernels {
            module,
            options: all,
        })
    }

    /// Free and total device memory, in bytes.
    pub fn memory(&self) -> Result<(usize, usize)> {
        self.ctx
            .mem_get_info()
            .cuda("reading the free device memory")
    }

    /// Fail with a clear message unless `bytes` fit in the device's free memory.
    pub fn check_fits(&self, bytes: usize, what: &str) -> Result<()> {
        let (free, total) = self.memory()?;
        if bytes > free {
            return Err(Error::OutOfMemory(format!(
                "{what} needs {} MiB of device memory, but {} has {} MiB free of {} MiB; try a smaller size",
                bytes.div_ceil(1 << 20),
                self.name,
                free >> 20,
                total >> 20
            )));
        }
        Ok(())
    }

    /// An event that records time (cudarc's default event does not).
    pub fn timing_event(&self) -> Result<CudaEvent> {
        self.ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .cuda("creating a timing event")
    }
}

impl Kernels {
    /// The options as one line, for reports.
    pub fn options_line(&self) -> String {
        self.options.join(" ")
    }

    /// Look up a kernel by its `extern "C"` name.
    pub fn function(&self, name: &str) -> Result<cudarc::driver::CudaFunction> {
        self.module
            .load_function(name)
            .cuda("looking up a kernel in the compiled module")
    }
}

/// Milliseconds between two recorded events, once the second has completed.
pub fn elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f64> {
    end.synchronize().cuda("waiting for the kernel")?;
    Ok(f64::from(
        start.elapsed_ms(end).cuda("reading the kernel time")?,
    ))
}

fn no_gpu(what: &str) -> Error {
    Error::NoGpu(format!(
        "no usable GPU: {what}. This lab needs an NVIDIA GPU with its driver and NVRTC \
         (CUDA 12.0 or newer; NVRTC ships with the CUDA toolkit: make sure libnvrtc.so is on \
         LD_LIBRARY_PATH). Labs lab01 and lab02 run on the CPU alone, and `cargo xtask dist` \
         packs the labs for a machine that has a GPU."
    ))
}
