//! The GPU plumbing every GPU lab shares: find the driver and NVRTC without panicking, open
//! the device, compile a kernel file for this device's own architecture, time with events.
//!
//! `--emulate` ([`DeviceArg`]) swaps the driver for the CPU device (the `cpu-device` crate):
//! a library that answers the same driver calls on the CPU, running the kernel's PTX in an
//! interpreter. The lab's code does not change; only the compile step does, to PTX.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaModule, CudaStream};
use cudarc::nvrtc::{self, Ptx};

use crate::error::CudaResultExt;
use crate::nvrtc::{compile_cubin, compile_ptx};
use crate::{Error, Result};

/// The driver functions cudarc calls for the labs, in CUDA 12.0's names (found by running
/// the labs on a stub library that has only these). Each is loaded only when first called,
/// and a missing one would panic then, mid-run; `shared::cli::run` turns any that is still
/// missed into one error line.
const DRIVER_FUNCTIONS: &[&str] = &[
    "cuInit",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetAttribute",
    "cuDeviceGetName",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuGetErrorString",
    "cuMemGetInfo_v2",
    "cuMemAlloc_v2",
    "cuMemAllocAsync",
    "cuMemFree_v2",
    "cuMemFreeAsync",
    "cuMemsetD8Async",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuModuleGetGlobal_v2",
    "cuModuleUnload",
    "cuFuncGetAttribute",
    "cuLaunchKernel",
    "cuOccupancyMaxPotentialBlockSizeWithFlags",
    "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuEventDestroy_v2",
];

/// The NVRTC functions the labs call (lab06's PTX dump included).
const NVRTC_FUNCTIONS: &[&str] = &[
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcDestroyProgram",
];

/// An open GPU: its context, the stream the lab works on, and what it is.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// The device's own architecture, e.g. "sm_90": kernels are compiled for it.
    pub arch: String,
    /// Whether this is the CPU device (`--emulate`): its times are the CPU's, not a GPU's.
    pub emulated: bool,
}

/// A compiled kernel file and the NVRTC options it was compiled with.
pub struct Kernels {
    pub module: Arc<CudaModule>,
    /// The options exactly as NVRTC received them, for the report.
    pub options: Vec<String>,
}

impl Gpu {
    /// Open device 0.
    pub fn open() -> Result<Gpu> {
        Gpu::open_device(0)
    }

    /// Open device `ordinal`, counted as the driver counts them (from 0, after
    /// `CUDA_VISIBLE_DEVICES`; [`device_count`] says how many there are).
    ///
    /// The libraries are looked for first. A stub driver (present, but no GPU behind it)
    /// fails in `CudaContext::new`, which becomes the same clear error.
    pub fn open_device(ordinal: usize) -> Result<Gpu> {
        load_libraries()?;
        let ctx = CudaContext::new(ordinal).map_err(|e| {
            let what = if ordinal == 0 {
                format!("the driver is installed but no GPU opened ({e})")
            } else {
                format!("the driver is installed but GPU {ordinal} did not open ({e})")
            };
            no_gpu(&what, VISIBLE)
        })?;
        let (major, minor) = ctx
            .compute_capability()
            .cuda("reading the compute capability")?;
        let name = ctx.name().cuda("reading the device name")?;
        let stream = ctx.default_stream();
        let emulated = EMULATED.load(Ordering::Relaxed);
        Ok(Gpu {
            ctx,
            stream,
            name,
            arch: if emulated {
                format!("compute_{major}{minor}")
            } else {
                format!("sm_{major}{minor}")
            },
            emulated,
        })
    }

    /// Compile `source` (the text of `kernels/<file_name>`) with NVRTC and load it.
    ///
    /// A hand-out's kernel stub is refused first, with its place (`exercise::check_kernel`).
    /// `options` are the lab's own NVRTC flags, passed through as written (cudarc's
    /// `use_fast_math` field does not pass `--use_fast_math` itself). The
    /// architecture is added here: compiling to a cubin for this device's own `sm_XX` uses
    /// every instruction it has, and avoids the PTX-version mismatch an NVRTC newer than the
    /// driver would cause.
    pub fn compile<S: AsRef<str>>(
        &self,
        file_name: &str,
        source: &str,
        options: &[S],
    ) -> Result<Kernels> {
        self.compile_with_headers(file_name, source, &[], options)
    }

    /// Compile a lab's kernel file as [`Gpu::compile`] does, with the headers it includes.
    pub fn compile_file(&self, kernel: &crate::nvrtc::KernelFile) -> Result<Kernels> {
        self.compile_with_headers(
            kernel.name,
            &kernel.source,
            &kernel.headers,
            &kernel.options,
        )
    }

    fn compile_with_headers<S: AsRef<str>>(
        &self,
        file_name: &str,
        source: &str,
        headers: &[crate::nvrtc::Header],
        options: &[S],
    ) -> Result<Kernels> {
        crate::exercise::check_kernel(file_name, source)?;
        let mut all: Vec<String> = options.iter().map(|o| o.as_ref().to_string()).collect();
        all.push(format!("--gpu-architecture={}", self.arch));
        if !self.emulated {
            let cubin = compile_cubin(file_name, source, headers, &all)?;
            return self.load(Ptx::from_binary(cubin), all);
        }
        // The CPU device runs PTX: the same compilation, to the virtual architecture of the
        // same name (`compute_90` for `sm_90`), stopped before ptxas.
        if let (true, Some(library)) = (PROFILING.load(Ordering::Relaxed), cpu_device_library()) {
            // The registers ptxas gives each kernel on this architecture's GPU (`sm_90` for
            // `compute_90`): what the H100's occupancy depends on.
            let mut real = all.clone();
            real.pop();
            real.push(format!(
                "--gpu-architecture={}",
                self.arch.replace("compute_", "sm_")
            ));
            crate::profile::set_registers(
                library,
                &compile_cubin(file_name, source, headers, &real)?,
            )?;
        }
        // ptxas's choice, which the PTX does not carry: whether it fuses the loose multiplies
        // and adds a kernel writes in inline PTX.
        let contract = crate::nvrtc::contracts(&all)?;
        // With its line information, whose `.loc` lines the CPU device reads to name the
        // `.cu` line of a fault or a refusal (the code itself is the same).
        all.push("--generate-line-info".to_string());
        let ptx = Ptx::from_src(compile_ptx(file_name, source, headers, &all)?);
        // The choice holds for the next module the CPU device loads: held with that load, so
        // that no other thread's slips in between (the differential test loads its kernels
        // from every core).
        static LOADING: Mutex<()> = Mutex::new(());
        let _loading = LOADING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(library) = cpu_device_library() {
            set_contraction(library, contract)?;
        }
        self.load(ptx, all)
    }

    /// Load a compiled module, keeping the options it was compiled with.
    fn load(&self, image: Ptx, options: Vec<String>) -> Result<Kernels> {
        let module = self
            .ctx
            .load_module(image)
            .cuda("loading the compiled kernels")?;
        Ok(Kernels { module, options })
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

/// What to check when the driver loads but no GPU opens.
const VISIBLE: &str =
    "check that `nvidia-smi` lists a GPU and that CUDA_VISIBLE_DEVICES does not hide it";

/// How many GPUs the driver shows this process (after `CUDA_VISIBLE_DEVICES`): at least
/// one, or the same clear error as [`Gpu::open`].
pub fn device_count() -> Result<usize> {
    load_libraries()?;
    match CudaContext::device_count() {
        Ok(count) if count > 0 => Ok(count.unsigned_abs() as usize),
        Ok(_) => Err(no_gpu("the driver is installed but lists no GPU", VISIBLE)),
        Err(e) => Err(no_gpu(
            &format!("the driver is installed but no GPU opened ({e})"),
            VISIBLE,
        )),
    }
}

/// Find the driver and NVRTC, and every function the labs call in them.
///
/// cudarc loads `libcuda` and `libnvrtc` on first use and panics if either is missing, or
/// lacks a function when it is first called; so both libraries, and every function the
/// labs call, are looked for first.
fn load_libraries() -> Result<()> {
    if let Some(why) = crate::nvrtc::UNAVAILABLE {
        return Err(Error::NoGpu(why.to_string()));
    }
    // SAFETY: only tries to dlopen the library by its usual names.
    if !unsafe { sys::is_culib_present() } {
        return Err(no_gpu(
            &format!("the NVIDIA driver library ({DRIVER_LIBRARY}) was not found"),
            DRIVER_FIX,
        ));
    }
    // SAFETY: the library is present (just checked); this loads it as cudarc will.
    let driver = unsafe { sys::culib() };
    if let Some(name) = missing_symbol(driver, DRIVER_FUNCTIONS) {
        return Err(no_gpu(
            &format!(
                "the driver library ({DRIVER_LIBRARY}) has no function {name}: it is not a \
                 real driver, or older than CUDA 12.0"
            ),
            DRIVER_FIX,
        ));
    }
    if !crate::nvrtc::is_present() {
        return Err(no_nvrtc(
            &format!(
                "NVRTC, CUDA's run-time compiler ({}), was not found",
                crate::nvrtc::LIBRARY
            ),
            EMULATED.load(Ordering::Relaxed),
        ));
    }
    // SAFETY: the library is present (just checked); this loads it as cudarc will.
    let compiler = unsafe { nvrtc::sys::culib() };
    if let Some(name) = missing_symbol(compiler, NVRTC_FUNCTIONS) {
        return Err(no_nvrtc(
            &format!(
                "NVRTC ({}) has no function {name}: it is incomplete or too old",
                crate::nvrtc::LIBRARY
            ),
            EMULATED.load(Ordering::Relaxed),
        ));
    }
    Ok(())
}

/// What is wrong with NVRTC and what to do. The CPU device (`emulated`) needs it as a GPU
/// does: the message never offers `--emulate` as the way out.
fn no_nvrtc(what: &str, emulated: bool) -> Error {
    let fix = crate::nvrtc::INSTALL_HINT;
    match emulated {
        true => Error::NoGpu(format!(
            "the CPU device compiles the kernels with NVRTC, as a GPU does: {what}; {fix}"
        )),
        // Not "add --emulate": the CPU device would miss NVRTC as well.
        false => Error::NoGpu(format!(
            "no usable GPU: {what}; {fix} (the CPU device, --emulate, needs it too)"
        )),
    }
}

/// The NVIDIA driver's library, as the messages name it, and what to do where it is missing.
#[cfg(windows)]
const DRIVER_LIBRARY: &str = "nvcuda.dll";
#[cfg(windows)]
const DRIVER_FIX: &str = "install the NVIDIA driver (CUDA 12.0 or newer), which puts nvcuda.dll \
                          in the system folder";
#[cfg(not(windows))]
const DRIVER_LIBRARY: &str = "libcuda.so";
#[cfg(not(windows))]
const DRIVER_FIX: &str = "install the NVIDIA driver (CUDA 12.0 or newer) and check that \
                          libcuda.so.1 is on the library path";

/// Milliseconds between two recorded events, once the second has completed.
pub fn elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f64> {
    end.synchronize().cuda("waiting for the kernel")?;
    Ok(f64::from(
        start.elapsed_ms(end).cuda("reading the kernel time")?,
    ))
}

/// What is missing, what to do about it, and what runs without a GPU.
fn no_gpu(what: &str, fix: &str) -> Error {
    Error::NoGpu(format!(
        "no usable GPU: {what}; {fix}. Without a GPU, add --emulate to run the kernels on the \
         CPU device (same PTX, same output, slower); `cargo xtask dist` packs the labs for a \
         machine that has a GPU."
    ))
}

/// The first of `names` that `library` lacks.
fn missing_symbol(library: &libloading::Library, names: &[&str]) -> Option<String> {
    names
        .iter()
        // SAFETY: the symbol is only looked up, never called or read.
        .find(|name| unsafe { library.get::<*const ()>(name.as_bytes()) }.is_err())
        .map(|name| name.to_string())
}

/// `--emulate`, shared by the GPU labs.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DeviceArg {
    /// Run the kernels on the CPU device instead of a GPU: NVRTC's PTX, interpreted on every
    /// core, to the same output (its times are the CPU's, not a GPU's)
    #[arg(long, env = EMULATE_VARIABLE, value_parser = clap::builder::FalseyValueParser::new())]
    pub emulate: bool,

    /// With --emulate: count what each kernel launch does (instructions, lanes, memory
    /// sectors) and predict its time on an H100 from the counts (a model, not a
    /// measurement), printed after the lab's report
    #[arg(long)]
    pub profile: bool,

    /// With --profile: also draw the first launch's threads as a PNG, each where its grid
    /// puts it (lab05: each sample where its point c lies), bright where its warp issued
    /// much, green to red as its warp's lanes were busy or idle
    #[arg(long, value_name = "FILE.png")]
    pub profile_png: Option<PathBuf>,
}

/// Set to 1, every GPU lab runs on the CPU device, as if given `--emulate` (`cargo xtask
/// test` runs the GPU tests so where no GPU opens).
pub const EMULATE_VARIABLE: &str = "LABS_EMULATE";

/// Set to a number of seconds, the CPU device stops any launch still running then, with a
/// line saying so (the grader sets it from the solution's own time on the CPU device).
pub const EMULATE_DEADLINE_VARIABLE: &str = "LABS_EMULATE_DEADLINE";

/// Set to 1, the CPU device stops at an access to shared memory that races with another
/// warp's (`cargo xtask sanitize --emulate` sets it for racecheck).
pub const EMULATE_RACECHECK_VARIABLE: &str = "LABS_EMULATE_RACECHECK";

/// Set once the CPU device is loaded in place of the driver.
static EMULATED: AtomicBool = AtomicBool::new(false);

/// Set once the CPU device counts the launches (`--profile`).
static PROFILING: AtomicBool = AtomicBool::new(false);

/// The CPU device, once loaded: kept for the life of the process (cudarc holds its
/// functions), and for its own calls beside the driver's ([`crate::profile`]).
static CPU_DEVICE: OnceLock<libloading::Library> = OnceLock::new();

/// The CPU device's library, if it is loaded.
pub(crate) fn cpu_device_library() -> Option<&'static libloading::Library> {
    CPU_DEVICE.get()
}

/// Tell the CPU device whether ptxas would fuse multiplies into adds in the modules it loads
/// next ([`crate::nvrtc::contracts`]).
fn set_contraction(library: &libloading::Library, contract: bool) -> Result<()> {
    // SAFETY: the CPU device's function of this name, with its signature.
    let set = unsafe {
        library.get::<extern "C" fn(std::ffi::c_int)>(b"cpuDeviceSetContraction")
    }
        .map_err(|e| {
            Error::NoGpu(format!(
                "the CPU device is older than this lab ({e}); rebuild it with `cargo build --release -p cpu-device`"
            ))
        })?;
    set(contract.into());
    Ok(())
}

/// The CPU device's library, as cargo names it on this system (`libcpu_device.so`,
/// `cpu_device.dll`).
pub fn cpu_device_file() -> String {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    format!("{DLL_PREFIX}cpu_device{DLL_SUFFIX}")
}

impl DeviceArg {
    /// The command line that parses back to these flags, for a program that runs a lab (the
    /// grader): each flag spelt here once, beside its definition (`device_args_parse_back`).
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut args = Vec::new();
        if self.emulate {
            args.push("--emulate".into());
        }
        if self.profile {
            args.push("--profile".into());
        }
        if let Some(png) = &self.profile_png {
            args.extend(["--profile-png".into(), png.clone().into_os_string()]);
        }
        args
    }

    /// With `--emulate`, load the CPU device so that every driver call from here on goes to
    /// it; without, nothing. Call it before anything opens the GPU.
    pub fn select(&self) -> Result<()> {
        if self.profile && !self.emulate {
            return Err(Error::Usage(
                "--profile counts on the CPU device: add --emulate (on a GPU, Nsight Compute \
                 measures instead: `cargo xtask profile LAB`)"
                    .to_string(),
            ));
        }
        if self.profile_png.is_some() && !self.profile {
            return Err(Error::Usage(
                "--profile-png draws what --profile counts: add --profile".to_string(),
            ));
        }
        // The picture's path is checked before anything else is done, the CPU device's
        // loading included.
        if let Some(path) = &self.profile_png {
            crate::profile::draw_to(path)?;
        }
        if self.emulate {
            use_cpu_device()?;
        }
        if let (true, Some(library)) = (self.profile, cpu_device_library()) {
            crate::profile::start(library)?;
            PROFILING.store(true, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Load the CPU device in place of the NVIDIA driver: cudarc, and the lab, talk to it
/// unchanged. `CPU_DEVICE_LIBRARY` names the file; otherwise it is looked for beside the
/// program, where cargo builds it.
pub fn use_cpu_device() -> Result<()> {
    if let Some(why) = crate::nvrtc::UNAVAILABLE {
        return Err(Error::NoGpu(why.to_string()));
    }
    let path = match std::env::var_os("CPU_DEVICE_LIBRARY") {
        Some(path) => PathBuf::from(path),
        None => find_cpu_device()?,
    };
    let library = load_as_driver(&path).map_err(|e| {
        Error::NoGpu(format!(
            "the CPU device ({}) did not load: {e}; rebuild it with `cargo build --release -p cpu-device`",
            path.display()
        ))
    })?;
    // Loaded once: a second call's library is the same one, and is dropped.
    let _ = CPU_DEVICE.set(library);
    EMULATED.store(true, Ordering::Relaxed);
    Ok(())
}

/// Load the library at `path` so that cudarc's own look-up of the driver finds it.
///
/// The library names itself `libcuda.so` (its soname), so once it is loaded the dynamic
/// loader hands it out to cudarc's `dlopen("libcuda.so")` instead of looking for the driver.
#[cfg(unix)]
fn load_as_driver(path: &Path) -> std::result::Result<libloading::Library, String> {
    // SAFETY: loading the CPU device runs no initialisation code of its own (no
    // constructors); RTLD_GLOBAL keeps it for the loader's later look-ups by soname.
    let library = unsafe {
        libloading::os::unix::Library::open(
            Some(path),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
        )
    }
    .map_err(|e| e.to_string())?;
    Ok(library.into())
}

/// Load the library at `path` so that cudarc's own look-up of the driver finds it.
///
/// Windows hands out a loaded library to a later `LoadLibrary` of the same file name, and
/// `cuda.dll` is the first name cudarc asks for (before `nvcuda.dll`, the driver's). Cargo
/// names the CPU device `cpu_device.dll`, so a copy named `cuda.dll` is kept in a folder
/// beside it and loaded from there; it is rewritten only when it differs, since a library
/// that another lab has loaded cannot be replaced.
#[cfg(windows)]
fn load_as_driver(path: &Path) -> std::result::Result<libloading::Library, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let copy = path.with_file_name("cpu-device-as-driver").join("cuda.dll");
    let current = |copy: &Path| std::fs::read(copy).is_ok_and(|old| old == bytes);
    if !current(&copy) {
        if let Some(folder) = copy.parent() {
            std::fs::create_dir_all(folder).map_err(|e| e.to_string())?;
        }
        let written = crate::output::write_file(&copy, &bytes);
        // Another lab may have written the same bytes meanwhile, and holds them loaded.
        if let Err(e) = written {
            if !current(&copy) {
                return Err(e.to_string());
            }
        }
    }
    // SAFETY: as on Unix, the CPU device runs no initialisation code of its own.
    unsafe { libloading::Library::new(&copy) }.map_err(|e| e.to_string())
}

/// Where cargo leaves the CPU device: beside the program (`target/release/`), or one folder
/// up for a test binary (`target/release/deps/`).
fn find_cpu_device() -> Result<PathBuf> {
    let exe = std::env::current_exe().map_err(|e| {
        Error::NoGpu(format!(
            "cannot find the CPU device: where is this program? ({e})"
        ))
    })?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let file = cpu_device_file();
    [dir.join(&file), dir.join("..").join(&file)]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::NoGpu(format!(
                "the CPU device ({file}) is not built beside {}: build it with \
                 `cargo build --release -p cpu-device` (`cargo xtask` builds it with the labs), \
                 or name it with CPU_DEVICE_LIBRARY",
                dir.display()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag comes back as it went: one renamed in the attributes and not in
    /// `to_args` fails here. (Set, not left out: `--emulate` also reads LABS_EMULATE.)
    #[test]
    fn device_args_parse_back() {
        use clap::Parser;
        #[derive(Parser)]
        struct Lab {
            #[command(flatten)]
            device: DeviceArg,
        }
        let given = DeviceArg {
            emulate: true,
            profile: true,
            profile_png: Some(PathBuf::from("threads.png")),
        };
        let argv = std::iter::once("lab".into()).chain(given.to_args());
        let back = Lab::try_parse_from(argv).expect("the flags parse").device;
        assert_eq!(format!("{back:?}"), format!("{given:?}"));
        assert!(DeviceArg::default().to_args().is_empty());
    }

    /// A lab given `--emulate` is told what the CPU device lacks and where to put it, never
    /// to add the flag it was given; without it, that the CPU device needs NVRTC too.
    #[test]
    fn missing_nvrtc_says_what_to_set_and_offers_emulate_only_without_it() {
        let emulated = no_nvrtc("NVRTC was not found", true).to_string();
        assert!(
            emulated.starts_with("the CPU device compiles the kernels with NVRTC"),
            "{emulated}"
        );
        for says in ["cargo xtask install-nvrtc", ".nvrtc", "LD_LIBRARY_PATH"] {
            assert!(emulated.contains(says), "{says}: {emulated}");
        }
        assert!(!emulated.contains("--emulate"), "{emulated}");
        let on_gpu = no_nvrtc("NVRTC was not found", false).to_string();
        assert!(
            on_gpu.starts_with("no usable GPU: NVRTC was not found"),
            "{on_gpu}"
        );
        assert!(
            on_gpu.ends_with("(the CPU device, --emulate, needs it too)"),
            "{on_gpu}"
        );
        assert!(!on_gpu.contains("add --emulate"), "{on_gpu}");
    }
}
