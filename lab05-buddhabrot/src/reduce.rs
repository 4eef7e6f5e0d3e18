//! Summing the canvases of several GPUs into one: with NCCL, GPU to GPU, or on the host.
//!
//! NCCL is loaded at run time, like the driver, through cudarc: a machine without it still
//! builds lab05, runs it on one GPU, and sums several GPUs' canvases on the host. Either way
//! the sum is exact: the counters are u32, and NCCL's sum of u32 is the same wrapping
//! integer addition as the kernel's `atomicAdd` and the CPU's `wrapping_add`, in whatever
//! order it adds.

use std::ffi::CStr;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use cudarc::nccl::result::{self, NcclError};
use cudarc::nccl::{sys, Comm, ReduceOp};
use shared::{Error, Result};

use crate::config::Reduce;

/// The NCCL functions lab05 calls. cudarc looks each one up when it is first called and
/// panics if it is missing, so they are all looked for first.
const NCCL_FUNCTIONS: &[&str] = &[
    "ncclGetVersion",
    "ncclGetErrorString",
    "ncclCommInitAll",
    "ncclGroupStart",
    "ncclReduce",
    "ncclGroupEnd",
    "ncclCommAbort",
];

/// How a run with several GPUs sums their canvases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// `ncclReduce` into the first GPU's canvas.
    Nccl,
    /// Every canvas copied back and added on the CPU; `why` NCCL was not used, when it was
    /// not asked for (`--reduce auto` on a machine without it).
    Host { why: Option<String> },
}

/// The method `--reduce` asks for, where it can run.
pub fn choose(reduce: Reduce) -> Result<Method> {
    if reduce == Reduce::Host {
        return Ok(Method::Host { why: None });
    }
    match (reduce, nccl_missing()) {
        (_, None) => Ok(Method::Nccl),
        (Reduce::Nccl, Some(why)) => Err(Error::NoGpu(format!(
            "--reduce nccl: {why}; or pass --reduce host to add the canvases on the CPU"
        ))),
        (_, Some(why)) => Ok(Method::Host { why: Some(why) }),
    }
}

/// Why NCCL cannot be used here, or `None` if it can.
pub fn nccl_missing() -> Option<String> {
    // SAFETY: only tries to dlopen the library by the names cudarc uses.
    if unsafe { sys::is_culib_present() } {
        // SAFETY: the library is present (just checked); this loads it as cudarc will.
        let library = unsafe { sys::culib() };
        return NCCL_FUNCTIONS
            .iter()
            // SAFETY: the symbol is only looked up, never called or read.
            .find(|name| unsafe { library.get::<*const ()>(name.as_bytes()) }.is_err())
            .map(|name| {
                format!("NCCL (libnccl.so) has no function {name}: it is incomplete or not NCCL 2")
            });
    }
    // cudarc asks for libnccl.so and never for the runtime package's libnccl.so.2.
    // SAFETY: only opens the library to see whether it is there; nothing in it is called.
    if unsafe { libloading::Library::new("libnccl.so.2") }.is_ok() {
        return Some(
            "NCCL is installed as libnccl.so.2 only, and cudarc opens it as libnccl.so: \
             install NCCL's development package (libnccl-dev), or put a link named \
             libnccl.so to libnccl.so.2 in a folder on LD_LIBRARY_PATH"
                .to_string(),
        );
    }
    Some(
        "NCCL (libnccl.so) was not found: install NCCL 2 (libnccl2 and libnccl-dev) and \
         check that it is on the library path"
            .to_string(),
    )
}

/// NCCL's communicators, one per GPU, all driven from this thread.
pub struct Nccl {
    comms: Vec<Comm>,
    /// NCCL's version, e.g. "2.28.3".
    pub version: String,
}

impl Nccl {
    /// Connect the GPUs whose streams these are, in this order: rank k is `streams[k]`'s
    /// GPU, and rank 0 receives the sum.
    pub fn connect(streams: Vec<Arc<CudaStream>>) -> Result<Nccl> {
        let code = result::get_nccl_version().map_err(|e| nccl_error("reading its version", e))?;
        let comms =
            Comm::from_devices(streams).map_err(|e| nccl_error("connecting the GPUs", e))?;
        Ok(Nccl {
            comms,
            version: format!("{}.{}.{}", code / 10000, code / 100 % 100, code % 100),
        })
    }

    /// Queue the sum of the canvases (rank k's canvas is the k-th) into the first.
    ///
    /// A reduce, not an all-reduce: only the first GPU's canvas is copied back, so only it
    /// needs the sum; an all-reduce would send the sum back to every GPU as well. One
    /// `ncclReduce` per GPU, inside one group: a thread that drives several GPUs must group
    /// their calls, or the first would wait for the others for ever.
    pub fn reduce<'a>(
        &self,
        canvases: impl IntoIterator<Item = &'a mut CudaSlice<u32>>,
    ) -> Result<()> {
        result::group_start().map_err(|e| nccl_error("starting a group of calls", e))?;
        let mut queued = Ok(());
        for (comm, canvas) in self.comms.iter().zip(canvases) {
            if let Err(e) = comm.reduce_in_place(canvas, &ReduceOp::Sum, 0) {
                queued = Err(nccl_error("queueing the reduce", e));
                break;
            }
        }
        // The group is closed whatever happened inside it.
        let ran = result::group_end().map_err(|e| nccl_error("launching the reduce", e));
        queued.and(ran.map(drop))
    }
}

/// NCCL's own words for `error`, and where to look further.
fn nccl_error(what: &'static str, error: NcclError) -> Error {
    // SAFETY: ncclGetErrorString returns a static, NUL-terminated string for any code.
    let text = unsafe { CStr::from_ptr(sys::ncclGetErrorString(error.0)) };
    Error::Nccl {
        what,
        detail: format!(
            "{} ({:?}); NCCL_DEBUG=WARN shows NCCL's own account, and --reduce host sums \
             without NCCL",
            text.to_string_lossy(),
            error.0
        ),
    }
}
