//! NVRTC on its own: CUDA C++ to a cubin or to PTX, with no driver and no GPU.
//!
//! The labs compile their kernels at start-up for the device they run on ([`crate::gpu`]);
//! the tests compile the same files with the same options for fixed architectures, so a
//! kernel that does not compile fails on any machine with NVRTC, GPU or not. Each GPU lab
//! describes its kernel files as [`KernelFile`]s, the one source of its NVRTC options.

use std::borrow::Cow;
use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};

use cudarc::nvrtc;

use crate::{Error, Result};

/// The architectures the tests compile every kernel for: Pascal (P100, Kaggle's free GPU),
/// Turing (T4, Colab's and Kaggle's), Ampere (A100) and Hopper (H100). sm_60 is the labs'
/// floor: every kernel keeps to what it has (`atomicAdd` on doubles is sm_60's, among them).
pub const CHECKED_ARCHES: [&str; 4] = ["sm_60", "sm_75", "sm_80", "sm_90"];

/// Those of [`CHECKED_ARCHES`] the NVRTC found compiles for: CUDA 13's has dropped sm_60
/// (measured on the H100 machine: "invalid value for --gpu-architecture"), which CUDA 12's
/// (`.ci/run`'s 12.9) still compiles, so Pascal is checked where the toolkit has it. All of
/// them where NVRTC cannot say (an NVRTC without `nvrtcGetSupportedArchs`).
pub fn checked_arches() -> Vec<&'static str> {
    let supported = supported_archs();
    CHECKED_ARCHES
        .into_iter()
        .filter(|arch| {
            let number = arch.trim_start_matches("sm_").parse::<i32>().unwrap_or(0);
            supported.is_empty() || supported.contains(&number)
        })
        .collect()
}

/// The SM versions NVRTC compiles for (60, 75, ...), or none where it cannot say.
fn supported_archs() -> Vec<i32> {
    if !is_present() {
        return Vec::new();
    }
    let mut count: std::ffi::c_int = 0;
    // SAFETY: NVRTC is loaded (just checked); `count` is a valid out-pointer.
    if unsafe { nvrtc::sys::nvrtcGetNumSupportedArchs(&mut count) }
        .result()
        .is_err()
    {
        return Vec::new();
    }
    let mut archs = vec![0; usize::try_from(count).unwrap_or(0)];
    // SAFETY: `archs` holds the `count` entries NVRTC said it writes.
    match unsafe { nvrtc::sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }.result() {
        Ok(()) => archs,
        Err(_) => Vec::new(),
    }
}

/// One kernel file of a lab, the headers it includes, and the NVRTC options the lab
/// compiles it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFile {
    /// The file's name in the lab's `kernels/` folder, e.g. `mandelbrot.cu`.
    pub name: &'static str,
    /// Its text: embedded with `include_str!`, or read from `--kernel FILE`.
    pub source: Cow<'static, str>,
    /// The headers of the lab's `kernels/` folder that it `#include`s, handed to NVRTC with
    /// the source: a lab runs from anywhere, with no folder of kernels beside it to search.
    pub headers: Vec<Header>,
    /// The lab's own options, without the architecture (added for each compilation).
    pub options: Vec<String>,
}

/// A header a kernel file includes by `name` (`#include "add.cuh"`), with its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub name: &'static str,
    pub text: Cow<'static, str>,
}

impl KernelFile {
    pub fn new(name: &'static str, source: &'static str, options: &[&str]) -> KernelFile {
        KernelFile {
            name,
            source: Cow::Borrowed(source),
            headers: Vec::new(),
            options: options.iter().map(|o| o.to_string()).collect(),
        }
    }

    /// The same file, including one more header of the lab's: `name` and its text.
    pub fn with_header(mut self, name: &'static str, text: &'static str) -> KernelFile {
        self.headers.push(Header {
            name,
            text: Cow::Borrowed(text),
        });
        self
    }

    /// The same file with one more option (a `-D` switch, say).
    pub fn with_option(mut self, option: impl Into<String>) -> KernelFile {
        self.options.push(option.into());
        self
    }

    /// The same options with another source: the text of `path`, if given (`--kernel FILE`),
    /// and each header from the file of its name in `path`'s folder where there is one (the
    /// lab's own where not), as a compiler reads a file's includes beside it.
    pub fn with_source_from(mut self, path: Option<&Path>) -> Result<KernelFile> {
        let Some(path) = path else {
            return Ok(self);
        };
        self.source = Cow::Owned(read_source(path, "--kernel")?);
        let folder = path.parent().unwrap_or(Path::new("."));
        for header in &mut self.headers {
            let beside = folder.join(header.name);
            if beside.exists() {
                let what = format!("the header beside --kernel {}:", path.display());
                header.text = Cow::Owned(read_source(&beside, &what)?);
            }
        }
        Ok(self)
    }

    /// Compile to a cubin for a real architecture such as `sm_90`.
    pub fn cubin(&self, arch: &str) -> Result<Vec<u8>> {
        compile_cubin(
            self.name,
            &self.source,
            &self.headers,
            &self.options_for(arch),
        )
    }

    /// Compile to PTX for a virtual architecture such as `compute_90`: the readable
    /// assembly, before the device's own instruction selection.
    pub fn ptx(&self, virtual_arch: &str) -> Result<String> {
        compile_ptx(
            self.name,
            &self.source,
            &self.headers,
            &self.options_for(virtual_arch),
        )
    }

    fn options_for(&self, arch: &str) -> Vec<String> {
        let mut all = self.options.clone();
        all.push(format!("--gpu-architecture={arch}"));
        all
    }
}

/// Whether NVRTC compiles with `options` so that a multiply and the add that reads it may
/// become one fused multiply-add (its default; one of its options turns it off, and NVRTC
/// hands the same choice to ptxas): asked of NVRTC itself, by compiling `a * b + c` with
/// them and looking for the `fma` in the PTX, so that every spelling of the options counts.
/// The CPU device, which sees only the PTX, needs it for the loose multiplies and adds a
/// kernel writes in inline PTX (`__hmul`, `__hadd`), which ptxas fuses where it may.
pub fn contracts(options: &[String]) -> Result<bool> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    // One compilation per set of options: a lab compiles the same file with the same options
    // each run, a test many times.
    static KNOWN: Mutex<Option<HashMap<Vec<String>, bool>>> = Mutex::new(None);
    if let Some(known) = KNOWN
        .lock()
        .ok()
        .and_then(|k| k.as_ref().and_then(|k| k.get(options).copied()))
    {
        return Ok(known);
    }
    let probe = "extern \"C\" __global__ void probe(double* x) { x[0] = x[1] * x[2] + x[3]; }";
    let contracts = compile_ptx("probe.cu", probe, &[], options)?.contains("fma.rn.f64");
    if let Ok(mut known) = KNOWN.lock() {
        known
            .get_or_insert_with(HashMap::new)
            .insert(options.to_vec(), contracts);
    }
    Ok(contracts)
}

/// `--kernel FILE`, shared by the GPU labs: compile FILE instead of the lab's own kernel
/// source, with the lab's own options. A variant can be tried without rebuilding the lab, a
/// broken kernel run under compute-sanitizer, and a grader can time a kernel with host code
/// it trusts.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KernelArg {
    /// Compile this CUDA C++ file instead of the lab's own kernel source (same options). A
    /// header the lab's kernels include (lab06's add.cuh) is read from FILE's folder where a
    /// file of its name is there, else the lab's own is used
    #[arg(long = "kernel", value_name = "FILE")]
    pub path: Option<PathBuf>,

    /// NVRTC options added after the lab's own (where two disagree, the later wins): a
    /// grader's, to compile a student's kernel as the student's own options would
    #[arg(
        long = "nvrtc-option",
        value_name = "OPTION",
        hide = true,
        allow_hyphen_values = true
    )]
    pub options: Vec<String>,
}

impl KernelArg {
    /// The command line that parses back to these flags, for a program that runs a lab (the
    /// grader): each flag spelt here once, beside its definition (`kernel_args_parse_back`).
    /// An option is joined to its flag with `=`: it starts with `-`.
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut args = Vec::new();
        if let Some(path) = &self.path {
            args.extend(["--kernel".into(), path.clone().into_os_string()]);
        }
        args.extend(
            self.options
                .iter()
                .map(|option| format!("--nvrtc-option={option}").into()),
        );
        args
    }

    /// `kernel` with its source replaced by `--kernel FILE`'s text, if given (and its headers
    /// by those beside FILE: [`KernelFile::with_source_from`]), and the `--nvrtc-option`s
    /// after its own.
    pub fn apply(&self, kernel: KernelFile) -> Result<KernelFile> {
        let kernel = kernel.with_source_from(self.path.as_deref())?;
        Ok(self
            .options
            .iter()
            .fold(kernel, |kernel, option| kernel.with_option(option.as_str())))
    }
}

/// A kernel source is text of a reasonable size: a larger file is a mistake, not a kernel.
const MAX_SOURCE_BYTES: u64 = 1 << 20;

/// The text of `path`, named in errors as `what` and the path (`--kernel FILE`).
fn read_source(path: &Path, what: &str) -> Result<String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| {
        // A folder is asked first: opened for reading, Linux answers "is a directory" and
        // Windows "permission denied" (seen under Wine), which would send the student to
        // the folder's rights.
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_string(),
            _ if path.is_dir() => "it is a folder".to_string(),
            _ => crate::error::explain(&e),
        };
        Error::Usage(format!("cannot read {what} {}: {why}", path.display()))
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_SOURCE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_SOURCE_BYTES {
        return Err(Error::Usage(format!(
            "{what} {} is larger than 1 MiB: give a CUDA C++ source file",
            path.display()
        )));
    }
    String::from_utf8(bytes).map_err(|_| {
        Error::Usage(format!(
            "{what} {} is not UTF-8 text: give a CUDA C++ source file",
            path.display()
        ))
    })
}

/// NVRTC 12's library, by the name cudarc loads it under on this system.
pub const LIBRARY: &str = if cfg!(windows) {
    "nvrtc64_120_0.dll"
} else {
    "libnvrtc.so.12"
};

/// Where pip's `nvidia-cuda-nvrtc-cu12` puts [`LIBRARY`], under its `--target` folder.
pub const PIP_FOLDER: &str = if cfg!(windows) {
    "nvidia/cuda_nvrtc/bin"
} else {
    "nvidia/cuda_nvrtc/lib"
};

/// The variable whose folders the loader searches for a library loaded by name.
pub const LOADER_PATH: &str = if cfg!(windows) {
    "PATH"
} else {
    "LD_LIBRARY_PATH"
};

/// Why NVRTC cannot be had on this system at all, where that is so: NVIDIA ships none for
/// macOS (pip's package installs an empty placeholder there), so no kernel compiles, and the
/// GPU labs run neither on a GPU nor on the CPU device.
pub const UNAVAILABLE: Option<&str> = if cfg!(target_os = "macos") {
    Some(
        "no NVRTC for macOS (NVIDIA ships none), so the GPU labs cannot run here, not even \
         on the CPU device: use the dev container, a Linux machine or Colab",
    )
} else {
    None
};

/// Whether the system's loader finds NVRTC by name, without the workspace's copy that
/// [`is_present`] also loads from beside the program: what another program started from
/// elsewhere (a sandboxed lab, a test) finds too.
pub fn on_the_loaders_path() -> bool {
    // SAFETY: only tries to dlopen the library by its usual names.
    unsafe { nvrtc::sys::is_culib_present() }
}

/// Whether NVRTC's library can be loaded (cudarc panics on first use where it cannot): by
/// the loader's own search, or from the workspace's `.nvrtc` ([`load_workspace_copy`]).
pub fn is_present() -> bool {
    load_workspace_copy();
    // SAFETY: only tries to dlopen the library by its usual names.
    unsafe { nvrtc::sys::is_culib_present() }
}

/// NVRTC as `cargo xtask install-nvrtc` (pip's `nvidia-cuda-nvrtc-cu12`) puts it in a
/// workspace: this path under the workspace's root.
pub const WORKSPACE_COPY: &str = if cfg!(windows) {
    ".nvrtc/nvidia/cuda_nvrtc/bin/nvrtc64_120_0.dll"
} else {
    ".nvrtc/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
};

/// What to do where NVRTC is not found: the one place the labs and the tests say it.
pub const INSTALL_HINT: &str = "`cargo xtask install-nvrtc` installs it into the workspace's \
                                .nvrtc folder, where the labs find it; or put the folder of \
                                libnvrtc.so.12 on LD_LIBRARY_PATH";

/// Where the loader finds no NVRTC by name, load the workspace's own copy, so that cudarc's
/// later look-up by name (`libnvrtc.so.12`, its soname) gets it: a lab run directly
/// (`target/release/lab04 --emulate`, `cargo run`) needs no `LD_LIBRARY_PATH`. Once per
/// process; NVRTC found by the loader (the system's, `LD_LIBRARY_PATH`) comes first.
fn load_workspace_copy() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: only tries to dlopen the library by its usual names.
        if unsafe { nvrtc::sys::is_culib_present() } {
            return;
        }
        let Some(path) = std::env::current_exe()
            .ok()
            .and_then(|exe| workspace_copy(&exe))
        else {
            return;
        };
        // SAFETY: NVRTC's own library, run-time compiler of the toolkit; loading it runs its
        // initialisers as cudarc's own load would. RTLD_GLOBAL keeps it for the loader's
        // later look-ups by soname.
        #[cfg(unix)]
        let loaded = unsafe {
            libloading::os::unix::Library::open(
                Some(&path),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
            )
        };
        // SAFETY: as above; Windows hands a later load by the same file name the module
        // already loaded.
        #[cfg(not(unix))]
        let loaded = unsafe { libloading::Library::new(&path) };
        // Kept loaded for the life of the process: cudarc holds its functions. One that does
        // not load is as good as none: the caller says NVRTC was not found.
        if let Ok(library) = loaded {
            std::mem::forget(library);
        }
    });
}

/// The workspace's NVRTC for the program `exe`: [`WORKSPACE_COPY`] under the program's
/// folder or one above it (`target/release/`, `target/debug/deps/` lie in the workspace),
/// and owned by the program's owner. Not under the current folder, nor one another user
/// could have put there (`/tmp/.nvrtc` above `/tmp/x/lab04`): what is found is loaded into
/// the lab, so where the lab is run from must not choose its code.
#[cfg(unix)]
fn workspace_copy(exe: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(exe).ok()?.uid();
    exe.ancestors()
        .skip(1)
        .map(|dir| dir.join(WORKSPACE_COPY))
        .find(|lib| std::fs::metadata(lib).is_ok_and(|m| m.is_file() && m.uid() == owner))
}

/// Elsewhere (Windows) no copy is loaded by itself: a file's owner is not in std's metadata
/// there, and the student puts NVRTC's folder on `PATH`, as the README's table says.
#[cfg(not(unix))]
fn workspace_copy(_exe: &Path) -> Option<PathBuf> {
    None
}

/// The loops of a PTX listing: the instructions from each label to the last branch back to
/// it, in the order the labels appear, where the code runs from the label down to that
/// branch (no `ret` or `exit` between: a shared return block placed early is no loop). A
/// kernel's hot loop is one of them; helper code inlined before it (`hypot`, say) is not,
/// unless it loops itself.
pub fn loops(ptx: &str) -> Vec<String> {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(label) = line.strip_suffix(':') else {
            continue;
        };
        let back_edge = lines
            .iter()
            .enumerate()
            .skip(start + 1)
            .rev()
            .find(|(_, l)| {
                l.split_whitespace()
                    .any(|w| w == "bra" || w.starts_with("bra."))
                    && l.trim_end_matches(';').split_whitespace().last() == Some(label)
            });
        if let Some((end, _)) = back_edge {
            let body = &lines[start..=end];
            if !body.iter().any(|l| matches!(*l, "ret;" | "exit;")) {
                found.push(body.join("\n"));
            }
        }
    }
    found
}

/// NVRTC: source to PTX, or the options and the compiler's log as the error.
pub(crate) fn compile_ptx(
    file_name: &str,
    source: &str,
    headers: &[Header],
    options: &[String],
) -> Result<String> {
    let program = Program::new(file_name, source, headers)?;
    program.compile(file_name, options)?;
    let mut size = 0usize;
    // SAFETY: `program` is live and compiled; `size` is a valid out-pointer.
    unsafe { nvrtc::sys::nvrtcGetPTXSize(program.0, &mut size) }
        .result()
        .map_err(|e| Error::Compile(format!("NVRTC produced no PTX: {e:?}")))?;
    let mut ptx = vec![0 as c_char; size];
    // SAFETY: `ptx` has the `size` bytes NVRTC asked for.
    unsafe { nvrtc::sys::nvrtcGetPTX(program.0, ptx.as_mut_ptr()) }
        .result()
        .map_err(|e| Error::Compile(format!("NVRTC produced no PTX: {e:?}")))?;
    Ok(c_chars_to_string(&ptx))
}

/// NVRTC: source to a cubin, or the options and the compiler's log as the error.
pub(crate) fn compile_cubin(
    file_name: &str,
    source: &str,
    headers: &[Header],
    options: &[String],
) -> Result<Vec<u8>> {
    let program = Program::new(file_name, source, headers)?;
    program.compile(file_name, options)?;
    let mut size = 0usize;
    // SAFETY: `program` is live and compiled; `size` is a valid out-pointer.
    unsafe { nvrtc::sys::nvrtcGetCUBINSize(program.0, &mut size) }
        .result()
        .map_err(|e| Error::Compile(format!("NVRTC produced no cubin: {e:?}")))?;
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` has the `size` bytes NVRTC asked for.
    unsafe { nvrtc::sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr().cast::<c_char>()) }
        .result()
        .map_err(|e| Error::Compile(format!("NVRTC produced no cubin: {e:?}")))?;
    Ok(cubin)
}

/// An NVRTC program, destroyed when dropped, whatever path the compilation took.
struct Program(nvrtc::sys::nvrtcProgram);

impl Program {
    /// A program of `source`, with `headers` in memory where its `#include`s find them.
    fn new(file_name: &str, source: &str, headers: &[Header]) -> Result<Program> {
        load_workspace_copy();
        let c_string = |name: &str, text: &str| {
            CString::new(text).map_err(|_| Error::Compile(format!("{name} contains a NUL byte")))
        };
        let c_source = c_string(file_name, source)?;
        let c_name = c_string(file_name, file_name)?;
        let mut texts = Vec::with_capacity(headers.len());
        let mut names = Vec::with_capacity(headers.len());
        for header in headers {
            texts.push(c_string(header.name, &header.text)?);
            names.push(c_string(header.name, header.name)?);
        }
        let pointers = |strings: &[CString]| -> Vec<*const c_char> {
            strings.iter().map(|s| s.as_ptr()).collect()
        };
        let (text_pointers, name_pointers) = (pointers(&texts), pointers(&names));
        let count = std::ffi::c_int::try_from(headers.len())
            .map_err(|_| Error::Compile(format!("{file_name}: too many headers")))?;
        let mut program = std::mem::MaybeUninit::uninit();
        // SAFETY: every pointer is to a NUL-terminated string alive until the call returns
        // (NVRTC copies them); the two arrays hold `count` entries each.
        unsafe {
            nvrtc::sys::nvrtcCreateProgram(
                program.as_mut_ptr(),
                c_source.as_ptr(),
                c_name.as_ptr(),
                count,
                text_pointers.as_ptr(),
                name_pointers.as_ptr(),
            )
        }
        .result()
        .map_err(|e| Error::Compile(format!("NVRTC could not create a program: {e:?}")))?;
        // SAFETY: NVRTC succeeded, so it wrote the program.
        Ok(Program(unsafe { program.assume_init() }))
    }

    /// Compile with `options`; on failure the error holds the options and NVRTC's log.
    fn compile(&self, file_name: &str, options: &[String]) -> Result<()> {
        let mut options = options.to_vec();
        if has_a_cache() {
            options.push("--no-cache".to_string());
        }
        // SAFETY: `self.0` is a live program created by `Program::new`.
        let compiled = unsafe { nvrtc::result::compile_program(self.0, &options) };
        if let Err(e) = compiled {
            // SAFETY: as above.
            let log = unsafe { nvrtc::result::get_program_log(self.0) }
                .map(|raw| c_chars_to_string(&raw))
                .unwrap_or_default();
            return Err(Error::Compile(format!(
                "kernels/{file_name} did not compile ({e:?}) with options: {}\n{}",
                options.join(" "),
                log.trim_end()
            )));
        }
        Ok(())
    }
}

/// Whether NVRTC keeps a cache of its own (12.9 and later, where a driver is loaded). On the
/// H100 machine (CUDA 13) it handed back the first compilation's code for a second of the same
/// file name and source with other options: `--ftz=true` after none ran without `.ftz`, so a
/// student comparing two sets of options would have measured one kernel twice.
/// Every compilation here is a fresh one (`--no-cache`; the labs' kernels compile in well
/// under a second).
fn has_a_cache() -> bool {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (a program was created); both are valid out-pointers.
    let known = unsafe { nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .is_ok();
    known && (major, minor) >= (12, 9)
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by `create_program` and destroyed only here. A failure to free a
        // compiler object at exit is not worth reporting.
        let _ = unsafe { nvrtc::result::destroy_program(self.0) };
    }
}

fn c_chars_to_string(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw.iter().map(|&c| c as u8).collect();
    CStr::from_bytes_until_nul(&bytes)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag comes back as it went: one renamed in the attributes and not in
    /// `to_args` fails here.
    #[test]
    fn kernel_args_parse_back() {
        use clap::Parser;
        #[derive(Parser)]
        struct Lab {
            #[command(flatten)]
            kernel: KernelArg,
        }
        let given = KernelArg {
            path: Some(PathBuf::from("/grade/kernel.cu")),
            options: vec!["-lineinfo".to_string(), "-DMODULUS=7".to_string()],
        };
        let argv = std::iter::once("lab".into()).chain(given.to_args());
        let back = Lab::try_parse_from(argv).expect("the flags parse").kernel;
        assert_eq!(format!("{back:?}"), format!("{given:?}"));
        assert!(KernelArg::default().to_args().is_empty());
    }

    #[test]
    fn the_libraries_are_named_as_cudarc_looks_for_them() {
        // NVRTC's file, looked for in .nvrtc and on the loader's path, is one cudarc loads.
        assert!(
            cudarc::get_lib_name_candidates("nvrtc").contains(&LIBRARY.to_string()),
            "{LIBRARY}"
        );
        // The CPU device answers to the first name cudarc asks for the driver by: its soname
        // on Linux (cpu-device's build.rs), its file's name on Windows (`shared::gpu`).
        let first = cudarc::get_lib_name_candidates("cuda").into_iter().next();
        let expected = if cfg!(windows) {
            "cuda.dll"
        } else {
            "libcuda.so"
        };
        assert_eq!(first.as_deref(), Some(expected));
    }

    const PTX: &str = "\
        mul.rn.f64 %fd1, %fd2, %fd3;\n\
        $L__BB0_1:\n\
        fma.rn.f64 %fd4, %fd5, %fd6, %fd7;\n\
        @%p1 bra $L__BB0_3;\n\
        add.rn.f64 %fd8, %fd8, %fd9;\n\
        setp.lt.f64 %p2, %fd8, 0d4010000000000000;\n\
        @%p2 bra $L__BB0_1;\n\
        $L__BB0_3:\n\
        ret;\n";

    #[test]
    fn a_loop_runs_from_its_label_to_the_branch_back() {
        let found = loops(PTX);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("$L__BB0_1:"));
        assert!(found[0].ends_with("@%p2 bra $L__BB0_1;"));
        assert!(found[0].contains("fma.rn.f64"));
        assert!(!found[0].contains("mul.rn.f64"), "code before the loop");
    }

    #[test]
    fn forward_branches_make_no_loop() {
        assert!(loops("@%p1 bra $L__BB0_2;\n$L__BB0_2:\nret;\n").is_empty());
        assert!(loops("bra.uni $L__BB0_2;\n$L__BB0_2:\nret;\n").is_empty());
        assert_eq!(
            loops("$L__BB0_2:\nadd.s32 %r1, %r1, 1;\nbra.uni $L__BB0_2;\n").len(),
            1
        );
    }

    #[test]
    fn a_return_block_placed_first_is_no_loop() {
        let ptx =
            "$L__BB0_9:\nret;\n$L__BB0_1:\nmul.rn.f64 %fd1, %fd1, %fd1;\nbra.uni $L__BB0_9;\n";
        assert!(loops(ptx).is_empty());
    }

    #[test]
    fn kernel_flag_replaces_the_source_and_keeps_the_options() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let file = dir.path().join("mine.cu");
        std::fs::write(&file, "__global__ void k() {}").expect("written");
        let given = KernelFile::new("k.cu", "built in", &["--std=c++17"]);
        let kernel = KernelArg {
            path: Some(file.clone()),
            options: Vec::new(),
        }
        .apply(given.clone())
        .expect("read");
        assert_eq!(kernel.source, "__global__ void k() {}");
        assert_eq!((kernel.name, &kernel.options), (given.name, &given.options));
        // Options given on the command line come after the lab's own.
        let added = KernelArg {
            path: None,
            options: vec!["-DLATER=1".to_string()],
        }
        .apply(given.clone())
        .expect("no file to read");
        assert_eq!(added.options, ["--std=c++17", "-DLATER=1"]);
        assert_eq!(
            KernelArg::default().apply(given.clone()).ok(),
            Some(given.clone())
        );

        let missing = KernelArg {
            path: Some(dir.path().join("none.cu")),
            options: Vec::new(),
        };
        let error = missing.apply(given.clone()).unwrap_err().to_string();
        assert!(error.ends_with("none.cu: no such file"), "{error}");
        std::fs::write(&file, [0xff, 0xfe]).expect("written");
        let error = KernelArg {
            path: Some(file),
            options: Vec::new(),
        }
        .apply(given)
        .unwrap_err()
        .to_string();
        assert!(
            error.ends_with("is not UTF-8 text: give a CUDA C++ source file"),
            "{error}"
        );
    }

    /// `--kernel FILE` reads each of the lab's headers from FILE's folder where a file of its
    /// name is there, and keeps the lab's own where not.
    #[test]
    fn kernel_flag_reads_the_headers_beside_the_file() {
        let dir = tempfile::tempdir().expect("a temp folder");
        let file = dir.path().join("mine.cu");
        std::fs::write(&file, "#include \"a.cuh\"\n#include \"b.cuh\"\n").expect("written");
        std::fs::write(dir.path().join("a.cuh"), "mine").expect("written");
        let given = KernelFile::new("k.cu", "built in", &[])
            .with_header("a.cuh", "the lab's a")
            .with_header("b.cuh", "the lab's b");
        let with = |path: &Path| KernelArg {
            path: Some(path.to_path_buf()),
            options: Vec::new(),
        };
        let kernel = with(&file).apply(given.clone()).expect("read");
        let texts: Vec<(&str, &str)> = kernel
            .headers
            .iter()
            .map(|h| (h.name, h.text.as_ref()))
            .collect();
        assert_eq!(texts, [("a.cuh", "mine"), ("b.cuh", "the lab's b")]);
        // Without --kernel the lab's own headers stay, whatever the current folder holds.
        assert_eq!(
            KernelArg::default().apply(given.clone()).ok(),
            Some(given.clone())
        );
        // A header beside the file that cannot be read fails, naming it.
        std::fs::write(dir.path().join("b.cuh"), [0xff, 0xfe]).expect("written");
        let error = with(&file).apply(given.clone()).unwrap_err().to_string();
        assert!(error.contains("b.cuh is not UTF-8 text"), "{error}");
        std::fs::remove_file(dir.path().join("b.cuh")).expect("removed");
        std::fs::create_dir(dir.path().join("b.cuh")).expect("a folder");
        let error = with(&file).apply(given).unwrap_err().to_string();
        assert!(error.contains("the header beside --kernel"), "{error}");
        assert!(error.ends_with("b.cuh: it is a folder"), "{error}");
    }

    /// NVRTC finds a header in memory by the name the source includes; without it the same
    /// source does not compile.
    #[test]
    #[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
    fn headers_are_handed_to_nvrtc_by_name() {
        let source = "#include \"value.cuh\"\n\
                      extern \"C\" __global__ void k(int* out) { *out = VALUE; }\n";
        let without = KernelFile::new("k.cu", source, &[]);
        let error = without.ptx("compute_90").unwrap_err().to_string();
        assert!(error.contains("value.cuh"), "{error}");
        let with = without.with_header("value.cuh", "#define VALUE 4242\n");
        let ptx = with.ptx("compute_90").expect("compiled with the header");
        assert!(ptx.contains("4242"), "{ptx}");
    }

    /// The floor is NVRTC's to enforce: a kernel that calls what only sm_70 has
    /// (`__nanosleep`) compiles for sm_75 and is refused for sm_60, so the kernel checks
    /// catch a lab kernel that raises the floor.
    #[test]
    #[ignore = "needs NVRTC (cargo xtask test runs it where NVRTC is found)"]
    fn a_kernel_beyond_sm60_is_refused_for_sm60() {
        let kernel = KernelFile::new(
            "sleeps.cu",
            "extern \"C\" __global__ void sleeps() { __nanosleep(100); }",
            &[],
        );
        assert_eq!(CHECKED_ARCHES[..2], ["sm_60", "sm_75"]);
        assert!(kernel.cubin("sm_75").is_ok());
        let refused = kernel.cubin("sm_60").map(drop).unwrap_err().to_string();
        // An NVRTC without sm_60 (CUDA 13's) refuses the architecture itself, and the
        // kernel checks leave it out.
        let why = match checked_arches().contains(&"sm_60") {
            true => "__nanosleep",
            false => "--gpu-architecture",
        };
        assert!(refused.contains(why), "{refused}");
    }

    /// A lab built in the workspace finds the workspace's NVRTC from its own folder
    /// (`target/release/`, `target/debug/deps/`); one built elsewhere finds none.
    #[test]
    #[cfg(unix)]
    fn a_lab_finds_the_nvrtc_of_the_workspace_it_lies_in() {
        let workspace = tempfile::tempdir().expect("a temp folder");
        let root = workspace.path();
        let deps = root.join("target/debug/deps");
        std::fs::create_dir_all(&deps).expect("folders");
        let (lab, test) = (root.join("target/release/lab04"), deps.join("cli-0123"));
        std::fs::create_dir_all(root.join("target/release")).expect("folders");
        for exe in [&lab, &test] {
            std::fs::write(exe, "").expect("a program");
        }
        assert_eq!(workspace_copy(&lab), None);
        let library = root.join(WORKSPACE_COPY);
        std::fs::create_dir_all(library.parent().expect("its folder")).expect("folders");
        std::fs::write(&library, "").expect("a library");
        assert_eq!(workspace_copy(&lab), Some(library.clone()));
        assert_eq!(workspace_copy(&test), Some(library));
    }

    #[test]
    fn options_get_the_architecture_last() {
        let kernel = KernelFile::new("k.cu", "", &["--std=c++17"]).with_option("-DX=1");
        assert_eq!(
            kernel.options_for("sm_90"),
            ["--std=c++17", "-DX=1", "--gpu-architecture=sm_90"]
        );
    }
}
