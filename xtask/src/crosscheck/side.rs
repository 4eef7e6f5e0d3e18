//! One side of the crosscheck: a child process that runs the suite's kernels on one device,
//! the CPU device or the GPU (the driver library is chosen once per process), and records
//! each kernel's outcome and bytes ([`super::record`]).
//!
//! The side stops after a kernel that faulted or ran out of time: on a GPU such an error
//! spoils the context for every later launch, so the parent starts a fresh side from the
//! next kernel ([`EXIT_RESTART`]). Its stdout is a file the parent gave it, where the
//! kernels' printfs land; nothing else is printed there.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use cudarc::driver::{sys, DriverError, LaunchConfig, PushKernelArg};
use shared::gpu::Gpu;

use super::manifest::{Arg, Buffer, Kernel, Scalar, Suite};
use super::record::{self, Line, Outcome, Status, Stored};

/// The side stopped after a fault: start another from the next kernel.
pub const EXIT_RESTART: u8 = 3;
/// No device opened; the record says why.
pub const EXIT_UNAVAILABLE: u8 = 4;

/// The device a side runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Device {
    Cpu,
    Gpu,
}

impl Device {
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Gpu => "gpu",
        }
    }
}

/// `cargo xtask crosscheck-side DIR --device D ...`: run by `crosscheck`, not by hand.
#[derive(clap::Args, Debug)]
pub struct SideArgs {
    /// The suite's folder
    dir: PathBuf,
    #[arg(long, value_enum)]
    device: Device,
    /// The record file, appended to
    #[arg(long)]
    record: PathBuf,
    /// The data file, appended to
    #[arg(long)]
    data: PathBuf,
    /// The file this process's stdout is (where printf's output lands)
    #[arg(long)]
    printf: PathBuf,
    /// The first kernel to run (of those selected)
    #[arg(long, default_value_t = 0)]
    from: usize,
    /// Only the kernels whose names contain one of these
    #[arg(long)]
    only: Vec<String>,
    /// Folders NVRTC searches for the headers a kernel includes
    #[arg(long = "include-path")]
    include: Vec<PathBuf>,
}

impl SideArgs {
    pub fn new(
        dir: &Path,
        device: Device,
        files: &SideFiles,
        from: usize,
        only: &[String],
        include: &[PathBuf],
    ) -> Self {
        SideArgs {
            dir: dir.to_path_buf(),
            device,
            record: files.record.clone(),
            data: files.data.clone(),
            printf: files.printf.clone(),
            from,
            only: only.to_vec(),
            include: include.to_vec(),
        }
    }

    /// The command line that parses back to these arguments, after the subcommand's name.
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec![
            self.dir.clone().into(),
            "--device".into(),
            self.device.name().into(),
            "--record".into(),
            self.record.clone().into(),
            "--data".into(),
            self.data.clone().into(),
            "--printf".into(),
            self.printf.clone().into(),
            "--from".into(),
            self.from.to_string().into(),
        ];
        for only in &self.only {
            args.extend(["--only".into(), only.into()]);
        }
        for dir in &self.include {
            args.extend(["--include-path".into(), dir.clone().into()]);
        }
        args
    }
}

/// The files one side writes.
#[derive(Debug, Clone)]
pub struct SideFiles {
    pub record: PathBuf,
    pub data: PathBuf,
    pub printf: PathBuf,
}

impl SideFiles {
    /// The files of the side called `name` in `dir`.
    pub fn in_folder(dir: &Path, name: &str) -> SideFiles {
        SideFiles {
            record: dir.join(format!("{name}.jsonl")),
            data: dir.join(format!("{name}.data")),
            printf: dir.join(format!("{name}.printf")),
        }
    }
}

pub fn run(args: SideArgs) -> Result<ExitCode> {
    let suite = Suite::load(&args.dir)?;
    let kernels = suite.select(&args.only);
    let append = |path: &Path| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))
    };
    let mut records = append(&args.record)?;
    let mut data = append(&args.data)?;
    let opened = match args.device {
        Device::Cpu => shared::gpu::use_cpu_device().and_then(|()| Gpu::open()),
        Device::Gpu => Gpu::open(),
    };
    let gpu = match opened {
        Ok(gpu) => gpu,
        Err(e) => {
            let why = e.to_string();
            let why = why.split(". ").next().unwrap_or(&why).to_string();
            record::append(&mut records, &Line::Unavailable { why })?;
            return Ok(ExitCode::from(EXIT_UNAVAILABLE));
        }
    };
    record::append(
        &mut records,
        &Line::Device {
            name: gpu.name.clone(),
            arch: gpu.arch.clone(),
        },
    )?;
    for (index, kernel) in kernels.iter().enumerate().skip(args.from) {
        record::append(&mut records, &Line::Begin { index })?;
        let place = Place {
            dir: &suite.dir,
            include: &args.include,
            printf: &args.printf,
        };
        let outcome = match launch(&gpu, &place, kernel, index, &mut data) {
            Ok(outcome) => outcome,
            Err(Stop { status, line }) => Outcome::failed(index, status, line),
        };
        let spoilt = matches!(outcome.status, Status::Fault | Status::Timeout);
        record::append(&mut records, &Line::Done(outcome))?;
        if spoilt && index + 1 < kernels.len() {
            return Ok(ExitCode::from(EXIT_RESTART));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Why a kernel did not run to the end.
struct Stop {
    status: Status,
    line: String,
}

fn stop(status: Status, line: impl Into<String>) -> Stop {
    Stop {
        status,
        line: line.into(),
    }
}

/// A driver error as one line: its code and the driver's words (the CPU device's line).
fn driver_line(e: &DriverError) -> String {
    let words = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{:?}: {}", e.0, words.replace('\n', " "))
}

/// What a launch's error means: refused before it ran, stopped by the deadline, or a fault.
fn launch_status(e: &DriverError) -> Status {
    use sys::CUresult as R;
    match e.0 {
        R::CUDA_ERROR_LAUNCH_TIMEOUT => Status::Timeout,
        R::CUDA_ERROR_INVALID_VALUE
        | R::CUDA_ERROR_INVALID_HANDLE
        | R::CUDA_ERROR_NOT_FOUND
        | R::CUDA_ERROR_NOT_SUPPORTED
        | R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
        | R::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
        | R::CUDA_ERROR_INVALID_PTX
        | R::CUDA_ERROR_INVALID_IMAGE => Status::Refused,
        _ => Status::Fault,
    }
}

/// Whether the driver (or the CPU device in its place) has the function `name`.
fn has_driver_function(name: &str) -> bool {
    // SAFETY: the driver is loaded (the device opened); the symbol is only looked up.
    unsafe { sys::culib().get::<*const ()>(name.as_bytes()) }.is_ok()
}

/// Flush every C stdio stream (the driver prints a kernel's printf through one) and say how
/// long the printf file is.
fn printed_so_far(printf: &Path) -> u64 {
    // SAFETY: fflush(NULL) flushes every open output stream; it takes no pointer of ours.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    std::fs::metadata(printf).map_or(0, |m| m.len())
}

/// Where a kernel's files are, and where its printfs land.
struct Place<'a> {
    dir: &'a Path,
    include: &'a [PathBuf],
    printf: &'a Path,
}

fn launch(
    gpu: &Gpu,
    place: &Place,
    kernel: &Kernel,
    index: usize,
    data: &mut File,
) -> std::result::Result<Outcome, Stop> {
    let (dir, printf) = (place.dir, place.printf);
    let path = dir.join(&kernel.file);
    let source = std::fs::read_to_string(&path).map_err(|e| {
        stop(
            Status::Setup,
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    let folder = path.parent().unwrap_or(dir);
    let mut options = kernel.options.clone();
    options.push("-lineinfo".to_string());
    options.push(format!("--include-path={}", folder.display()));
    options.push(format!("--include-path={}", dir.display()));
    for include in place.include {
        options.push(format!("--include-path={}", include.display()));
    }
    let file_name = path
        .file_name()
        .map_or_else(|| "kernel.cu".into(), |n| n.to_string_lossy());
    let module = gpu
        .compile(&file_name, &source, &options)
        .map_err(|e| match e {
            shared::Error::Compile(message) => stop(Status::Compile, message),
            shared::Error::Cuda { source, .. } => stop(Status::Refused, driver_line(&source)),
            other => stop(Status::Setup, other.to_string()),
        })?;
    let function = module.function(&kernel.entry).map_err(|e| {
        stop(
            Status::Setup,
            format!(
                "no kernel named {} in {} ({e})",
                kernel.entry,
                kernel.file.display()
            ),
        )
    })?;
    if kernel.shared > 48 << 10 {
        function
            .set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                i32::try_from(kernel.shared).unwrap_or(i32::MAX),
            )
            .map_err(|e| stop(Status::Refused, driver_line(&e)))?;
    }
    if kernel.cooperative && !has_driver_function("cuLaunchCooperativeKernel") {
        return Err(stop(
            Status::Refused,
            "the driver has no cuLaunchCooperativeKernel: a cooperative launch (grid.sync())",
        ));
    }
    let stream = &gpu.stream;
    let mut slices = Vec::new();
    for (arg, buffer) in kernel.arg_buffers() {
        let bytes = buffer.initial(&kernel.name, arg);
        let slice = stream.clone_htod(&bytes).map_err(|e| {
            stop(
                Status::Setup,
                format!("copying argument {arg} to the device: {}", driver_line(&e)),
            )
        })?;
        slices.push((arg, slice));
    }
    let first_global = kernel.args.len();
    for (g, (name, buffer)) in kernel.globals.iter().enumerate() {
        let missing = |e: DriverError| {
            stop(
                Status::Setup,
                format!("no module variable {name}: {}", driver_line(&e)),
            )
        };
        let mut view = module.module.get_global(name, stream).map_err(missing)?;
        let size = view.len() / buffer.elem.size() * buffer.elem.size();
        let filled = Buffer {
            bytes: size,
            ..buffer.clone()
        };
        let bytes = filled.initial(&kernel.name, first_global + g);
        stream.memcpy_htod(&bytes, &mut view).map_err(|e| {
            stop(
                Status::Setup,
                format!("filling {name}: {}", driver_line(&e)),
            )
        })?;
    }
    let config = LaunchConfig {
        grid_dim: (kernel.grid[0], kernel.grid[1], kernel.grid[2]),
        block_dim: (kernel.block[0], kernel.block[1], kernel.block[2]),
        shared_mem_bytes: kernel.shared,
    };
    let before = printed_so_far(printf);
    let start = Instant::now();
    {
        let mut builder = stream.launch_builder(&function);
        let mut buffers = slices.iter();
        for arg in &kernel.args {
            match arg {
                Arg::Buffer(_) => {
                    if let Some((_, slice)) = buffers.next() {
                        builder.arg(slice);
                    }
                }
                Arg::Scalar(Scalar::I32(v)) => {
                    builder.arg(v);
                }
                Arg::Scalar(Scalar::U32(v)) => {
                    builder.arg(v);
                }
                Arg::Scalar(Scalar::I64(v)) => {
                    builder.arg(v);
                }
                Arg::Scalar(Scalar::U64(v)) => {
                    builder.arg(v);
                }
                Arg::Scalar(Scalar::F32(v)) => {
                    builder.arg(v);
                }
                Arg::Scalar(Scalar::F64(v)) => {
                    builder.arg(v);
                }
            }
        }
        // SAFETY: the manifest says what the kernel takes; a wrong manifest is the suite's
        // mistake, which the device reports as a fault (both sides alike) or a wrong answer.
        let launched = unsafe {
            if kernel.cooperative {
                builder.launch_cooperative(config)
            } else {
                builder.launch(config)
            }
        };
        launched.map_err(|e| stop(launch_status(&e), driver_line(&e)))?;
    }
    stream
        .synchronize()
        .map_err(|e| stop(launch_status(&e), driver_line(&e)))?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let after = printed_so_far(printf);
    let mut outcome = Outcome {
        ms,
        ..Outcome::failed(index, Status::Ok, "")
    };
    for (arg, slice) in &slices {
        let bytes = stream.clone_dtoh(slice).map_err(|e| {
            stop(
                Status::Fault,
                format!("copying argument {arg} back: {}", driver_line(&e)),
            )
        })?;
        outcome.buffers.push(keep(data, *arg, &bytes)?);
    }
    for (g, (name, _)) in kernel.globals.iter().enumerate() {
        let read = module
            .module
            .get_global(name, stream)
            .and_then(|view| stream.clone_dtoh(&view));
        let bytes = read.map_err(|e| {
            stop(
                Status::Fault,
                format!("copying {name} back: {}", driver_line(&e)),
            )
        })?;
        outcome.buffers.push(keep(data, first_global + g, &bytes)?);
    }
    if after > before {
        let printed = read_range(printf, before, after)
            .map_err(|e| stop(Status::Setup, format!("reading the printf output: {e:#}")))?;
        outcome.printf = Some(keep(data, 0, &printed)?);
    }
    Ok(outcome)
}

/// Append `bytes` to the data file; where they are.
fn keep(data: &mut File, arg: usize, bytes: &[u8]) -> std::result::Result<Stored, Stop> {
    use std::io::Write;
    let offset = data.metadata().map_or(0, |m| m.len());
    data.write_all(bytes)
        .and_then(|()| data.flush())
        .map_err(|e| stop(Status::Setup, format!("writing the data file: {e}")))?;
    Ok(Stored {
        arg,
        offset,
        len: bytes.len() as u64,
        digest: record::digest(bytes),
    })
}

/// Bytes `from..to` of a file.
pub fn read_range(path: &Path, from: u64, to: u64) -> Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = vec![0; usize::try_from(to.saturating_sub(from))?];
    file.read_exact(&mut bytes)
        .with_context(|| format!("{} is shorter than its record says", path.display()))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_side_arguments_parse_back() {
        use clap::Parser;
        #[derive(Parser)]
        struct Command {
            #[command(flatten)]
            side: SideArgs,
        }
        let files = SideFiles::in_folder(Path::new("/tmp/x"), "gpu");
        let given = SideArgs::new(
            Path::new("suite"),
            Device::Gpu,
            &files,
            7,
            &["a".into()],
            &[PathBuf::from("/usr/local/cuda/include")],
        );
        let argv = std::iter::once("side".into()).chain(given.to_args());
        let back = Command::try_parse_from(argv).unwrap().side;
        assert_eq!(format!("{back:?}"), format!("{given:?}"));
    }

    #[test]
    fn launch_errors_are_refusals_faults_or_timeouts() {
        use sys::CUresult as R;
        assert_eq!(
            launch_status(&DriverError(R::CUDA_ERROR_INVALID_VALUE)),
            Status::Refused
        );
        assert_eq!(
            launch_status(&DriverError(R::CUDA_ERROR_ILLEGAL_ADDRESS)),
            Status::Fault
        );
        assert_eq!(
            launch_status(&DriverError(R::CUDA_ERROR_LAUNCH_TIMEOUT)),
            Status::Timeout
        );
    }

    #[test]
    fn a_range_of_a_file_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_range(&path, 2, 5).unwrap(), b"234");
        assert!(read_range(&path, 8, 12).is_err());
    }
}
