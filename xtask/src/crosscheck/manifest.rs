//! A suite's manifest, `crosscheck.toml` in the suite's folder: each kernel's file, entry,
//! NVRTC options, grid, block, dynamic shared memory and arguments, and the bytes each buffer
//! starts with, made here the same way in every process (a seeded generator, no clock, no
//! platform's `rand`), so that the CPU device and the GPU are handed identical inputs.
//!
//! ```toml
//! options = ["-DSUITE=1"]            # for every kernel (optional)
//!
//! [[kernel]]
//! name = "cuda-samples/vectorAdd"     # unique; the entry defaults to its last part
//! file = "cuda-samples/vectorAdd_kernel.cu"
//! entry = "vectorAdd"                 # the symbol: an extern "C" name or a mangled one
//! options = ["--use_fast_math"]       # NVRTC options of this kernel (optional)
//! grid = [4, 1, 1]                    # or one number
//! block = 256
//! shared = 0                          # dynamic shared memory, bytes (optional)
//! order_dependent = false             # buffers compared as sorted elements (optional)
//! args = [
//!   { bytes = 4096, fill = "random", type = "f32", lo = -1.0, hi = 1.0 },
//!   { bytes = 4096, fill = "iota", type = "u32" },
//!   { bytes = 4096, type = "f32" },   # zeroed; `type` says how to show its elements
//!   { i32 = 1024 },
//! ]
//! globals = [                         # __device__ / __constant__ variables (optional):
//!   { name = "c_Table", fill = "random", type = "u32" },  # filled before the launch, their
//! ]                                   # size the module's; digested after it like buffers
//! ```

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// The manifest's name in a suite's folder.
pub const MANIFEST: &str = "crosscheck.toml";

/// The largest buffer a manifest may ask for: the suite is meant to run in seconds on the
/// CPU device, and both sides' copies are kept for the comparison.
const MAX_BUFFER: u64 = 256 << 20;

/// A suite: its folder and its kernels, in the manifest's order.
#[derive(Debug, Clone)]
pub struct Suite {
    pub dir: PathBuf,
    pub kernels: Vec<Kernel>,
}

/// One launch of one kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    pub name: String,
    /// The source file, relative to the suite's folder.
    pub file: PathBuf,
    pub entry: String,
    /// The suite's options, then the kernel's own.
    pub options: Vec<String>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    pub order_dependent: bool,
    pub cooperative: bool,
    pub args: Vec<Arg>,
    /// Module variables filled before the launch (their `bytes` is 0: the variable's size).
    pub globals: Vec<(String, Buffer)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Buffer(Buffer),
    Scalar(Scalar),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Buffer {
    pub bytes: usize,
    pub fill: Fill,
    /// The element type the fill writes and the comparison shows.
    pub elem: Elem,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fill {
    Zero,
    Iota {
        start: f64,
        step: f64,
    },
    /// Integers in `lo..=hi`; floats in `lo..hi`.
    Random {
        lo: f64,
        hi: f64,
    },
    Value(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F16,
    Bf16,
    F32,
    F64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    #[serde(default)]
    options: Vec<String>,
    #[serde(default)]
    kernel: Vec<RawKernel>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKernel {
    name: String,
    file: String,
    entry: Option<String>,
    #[serde(default)]
    options: Vec<String>,
    grid: Dim,
    block: Dim,
    #[serde(default)]
    shared: u32,
    #[serde(default)]
    order_dependent: bool,
    #[serde(default)]
    cooperative: bool,
    #[serde(default)]
    args: Vec<RawArg>,
    #[serde(default)]
    globals: Vec<RawGlobal>,
    /// Free text for the reader (where the kernel comes from, why these arguments).
    #[serde(default)]
    #[allow(dead_code)]
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGlobal {
    name: String,
    fill: Option<String>,
    #[serde(rename = "type")]
    elem: Option<String>,
    lo: Option<f64>,
    hi: Option<f64>,
    value: Option<f64>,
    start: Option<f64>,
    step: Option<f64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Dim {
    One(u32),
    Many(Vec<u32>),
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawArg {
    bytes: Option<u64>,
    fill: Option<String>,
    #[serde(rename = "type")]
    elem: Option<String>,
    lo: Option<f64>,
    hi: Option<f64>,
    value: Option<f64>,
    start: Option<f64>,
    step: Option<f64>,
    i32: Option<i64>,
    u32: Option<i64>,
    i64: Option<i64>,
    u64: Option<i64>,
    f32: Option<f64>,
    f64: Option<f64>,
}

impl Suite {
    /// Read `DIR/crosscheck.toml` and check every kernel's entry (its file too).
    pub fn load(dir: &Path) -> Result<Suite> {
        if !dir.is_dir() {
            bail!(
                "{} is not a folder (give the suite's folder)",
                dir.display()
            );
        }
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read the suite's manifest {}", path.display()))?;
        let suite =
            Suite::parse(dir, &text).map_err(|e| anyhow::anyhow!("{}{e:#}", path.display()))?;
        for kernel in &suite.kernels {
            let file = dir.join(&kernel.file);
            if !file.is_file() {
                bail!(
                    "{}: kernel {}: its file {} is not there",
                    path.display(),
                    kernel.name,
                    file.display()
                );
            }
        }
        Ok(suite)
    }

    /// The manifest's text, read: an error begins with `:LINE: ` where toml knows the line.
    pub fn parse(dir: &Path, text: &str) -> Result<Suite> {
        let raw: RawSuite = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .and_then(|span| text.get(..span.start))
                .map(|before| before.matches('\n').count() + 1);
            let at = line.map_or(String::new(), |line| format!(":{line}"));
            anyhow::anyhow!("{at}: {}", e.message().trim().replace('\n', " "))
        })?;
        if raw.kernel.is_empty() {
            bail!(": no [[kernel]] in the manifest");
        }
        let mut names = HashSet::new();
        let mut kernels = Vec::new();
        for raw_kernel in raw.kernel {
            let name = raw_kernel.name.clone();
            if !names.insert(name.clone()) {
                bail!(": kernel {name} is named twice");
            }
            let kernel = Kernel::from_raw(raw_kernel, &raw.options)
                .map_err(|e| anyhow::anyhow!(": kernel {name}: {e:#}"))?;
            kernels.push(kernel);
        }
        Ok(Suite {
            dir: dir.to_path_buf(),
            kernels,
        })
    }

    /// The kernels whose names contain one of `only` (all where it is empty).
    pub fn select(&self, only: &[String]) -> Vec<Kernel> {
        self.kernels
            .iter()
            .filter(|k| only.is_empty() || only.iter().any(|o| k.name.contains(o.as_str())))
            .cloned()
            .collect()
    }
}

impl Kernel {
    fn from_raw(raw: RawKernel, suite_options: &[String]) -> Result<Kernel> {
        let file = PathBuf::from(&raw.file);
        let plain = file.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain || raw.file.is_empty() {
            bail!(
                "file = {:?} must be a path inside the suite's folder",
                raw.file
            );
        }
        let entry = match raw.entry {
            Some(entry) => entry,
            None => raw.name.rsplit('/').next().unwrap_or(&raw.name).to_string(),
        };
        if entry.is_empty() {
            bail!("its entry is empty");
        }
        let args = raw
            .args
            .into_iter()
            .enumerate()
            .map(|(i, arg)| Arg::from_raw(arg).with_context(|| format!("argument {i}")))
            .collect::<Result<Vec<_>>>()?;
        let globals = raw
            .globals
            .into_iter()
            .map(|g| {
                let fill = RawArg {
                    fill: g.fill,
                    elem: g.elem,
                    lo: g.lo,
                    hi: g.hi,
                    value: g.value,
                    start: g.start,
                    step: g.step,
                    ..RawArg::default()
                };
                // Any whole number of elements will do here: the size is the variable's.
                let mut buffer =
                    Buffer::from_raw(8, &fill).with_context(|| format!("global {}", g.name))?;
                buffer.bytes = 0;
                Ok((g.name, buffer))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Kernel {
            name: raw.name,
            file,
            entry,
            options: suite_options.iter().chain(&raw.options).cloned().collect(),
            grid: dim(raw.grid).context("grid")?,
            block: dim(raw.block).context("block")?,
            shared: raw.shared,
            order_dependent: raw.order_dependent,
            cooperative: raw.cooperative,
            args,
            globals,
        })
    }

    /// The buffer arguments' numbers and shapes, in order.
    pub fn arg_buffers(&self) -> impl Iterator<Item = (usize, &Buffer)> {
        self.args
            .iter()
            .enumerate()
            .filter_map(|(i, arg)| match arg {
                Arg::Buffer(buffer) => Some((i, buffer)),
                Arg::Scalar(_) => None,
            })
    }

    /// Every buffer a launch leaves: the arguments', then the globals' (numbered after the
    /// arguments), in order.
    pub fn buffers(&self) -> impl Iterator<Item = (usize, &Buffer)> {
        let after = self.args.len();
        self.arg_buffers().chain(
            self.globals
                .iter()
                .enumerate()
                .map(move |(g, (_, buffer))| (after + g, buffer)),
        )
    }
}

fn dim(dim: Dim) -> Result<[u32; 3]> {
    let values = match dim {
        Dim::One(x) => vec![x],
        Dim::Many(values) => values,
    };
    if values.is_empty() || values.len() > 3 || values.contains(&0) {
        bail!("give 1 to 3 sizes, each at least 1, not {values:?}");
    }
    let mut out = [1; 3];
    out[..values.len()].copy_from_slice(&values);
    Ok(out)
}

impl Arg {
    fn from_raw(raw: RawArg) -> Result<Arg> {
        let scalars = [
            raw.i32.map(|v| int(v, "i32").map(Scalar::I32)),
            raw.u32.map(|v| int(v, "u32").map(Scalar::U32)),
            raw.i64.map(|v| Ok(Scalar::I64(v))),
            raw.u64.map(|v| int(v, "u64").map(Scalar::U64)),
            // As written, rounded once to the nearest f32.
            raw.f32.map(|v| Ok(Scalar::F32(v as f32))),
            raw.f64.map(|v| Ok(Scalar::F64(v))),
        ];
        let given: Vec<Result<Scalar>> = scalars.into_iter().flatten().collect();
        let buffer_fields = raw.fill.is_some()
            || raw.elem.is_some()
            || raw.lo.is_some()
            || raw.hi.is_some()
            || raw.value.is_some()
            || raw.start.is_some()
            || raw.step.is_some();
        match (raw.bytes, given.len()) {
            (None, 1) if !buffer_fields => {
                let scalar = given.into_iter().next().context("a scalar")??;
                Ok(Arg::Scalar(scalar))
            }
            (Some(bytes), 0) => Ok(Arg::Buffer(Buffer::from_raw(bytes, &raw)?)),
            _ => bail!(
                "give either a buffer (bytes = N, with fill, type, lo, hi, value, start, \
                 step as needed) or one scalar (i32, u32, i64, u64, f32 or f64 = value)"
            ),
        }
    }
}

fn int<T: TryFrom<i64>>(value: i64, what: &str) -> Result<T> {
    T::try_from(value).map_err(|_| anyhow::anyhow!("{value} does not fit in {what}"))
}

impl Buffer {
    fn from_raw(bytes: u64, raw: &RawArg) -> Result<Buffer> {
        let elem = match &raw.elem {
            Some(name) => Elem::parse(name)?,
            None => Elem::U32,
        };
        if bytes == 0 || bytes > MAX_BUFFER {
            bail!(
                "bytes = {bytes}: a buffer holds 1 byte to {} MiB",
                MAX_BUFFER >> 20
            );
        }
        if !bytes.is_multiple_of(elem.size() as u64) {
            bail!("bytes = {bytes} is not a whole number of {}", elem.name());
        }
        let only = |allowed: &[&str], fill: &str| -> Result<()> {
            let fields = [
                ("lo", raw.lo.is_some()),
                ("hi", raw.hi.is_some()),
                ("value", raw.value.is_some()),
                ("start", raw.start.is_some()),
                ("step", raw.step.is_some()),
            ];
            for (field, present) in fields {
                if present && !allowed.contains(&field) {
                    bail!("{field} does not apply to fill = \"{fill}\"");
                }
            }
            Ok(())
        };
        let fill = match raw.fill.as_deref().unwrap_or("zero") {
            "zero" => {
                only(&[], "zero")?;
                Fill::Zero
            }
            "iota" => {
                only(&["start", "step"], "iota")?;
                Fill::Iota {
                    start: raw.start.unwrap_or(0.0),
                    step: raw.step.unwrap_or(1.0),
                }
            }
            "random" => {
                only(&["lo", "hi"], "random")?;
                let (lo, hi) = elem.default_range();
                let (lo, hi) = (raw.lo.unwrap_or(lo), raw.hi.unwrap_or(hi));
                if lo > hi || !lo.is_finite() || !hi.is_finite() {
                    bail!("lo = {lo}, hi = {hi}: give finite lo <= hi");
                }
                Fill::Random { lo, hi }
            }
            "value" => {
                only(&["value"], "value")?;
                Fill::Value(raw.value.context("fill = \"value\" needs value = X")?)
            }
            other => bail!("fill = {other:?}: give zero, iota, random or value"),
        };
        Ok(Buffer {
            bytes: usize::try_from(bytes)?,
            fill,
            elem,
        })
    }

    /// The buffer's first contents, the same in every process: the generator is seeded by
    /// the kernel's name and the argument's number.
    pub fn initial(&self, kernel: &str, arg: usize) -> Vec<u8> {
        let count = self.bytes / self.elem.size();
        let mut out = Vec::with_capacity(self.bytes);
        let mut random = shared::random::SplitMix64(seed(kernel, arg));
        for i in 0..count {
            let value = match self.fill {
                Fill::Zero => 0.0,
                Fill::Value(v) => v,
                Fill::Iota { start, step } => start + step * i as f64,
                Fill::Random { lo, hi } => {
                    let r = random.next_u64();
                    if self.elem.is_float() {
                        // 53 bits in [0, 1): exact in f64, then rounded once to the type.
                        lo + (hi - lo) * ((r >> 11) as f64 / (1u64 << 53) as f64)
                    } else {
                        let span = (hi.floor() - lo.ceil()) as u64 + 1;
                        lo.ceil() + (r % span.max(1)) as f64
                    }
                }
            };
            self.elem.push(value, &mut out);
        }
        out
    }
}

impl Elem {
    pub fn parse(name: &str) -> Result<Elem> {
        Ok(match name {
            "u8" => Elem::U8,
            "i8" => Elem::I8,
            "u16" => Elem::U16,
            "i16" => Elem::I16,
            "u32" => Elem::U32,
            "i32" => Elem::I32,
            "u64" => Elem::U64,
            "i64" => Elem::I64,
            "f16" => Elem::F16,
            "bf16" => Elem::Bf16,
            "f32" => Elem::F32,
            "f64" => Elem::F64,
            other => bail!(
                "type = {other:?}: give u8, i8, u16, i16, u32, i32, u64, i64, f16, bf16, f32 \
                 or f64"
            ),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Elem::U8 => "u8",
            Elem::I8 => "i8",
            Elem::U16 => "u16",
            Elem::I16 => "i16",
            Elem::U32 => "u32",
            Elem::I32 => "i32",
            Elem::U64 => "u64",
            Elem::I64 => "i64",
            Elem::F16 => "f16",
            Elem::Bf16 => "bf16",
            Elem::F32 => "f32",
            Elem::F64 => "f64",
        }
    }

    pub fn size(self) -> usize {
        match self {
            Elem::U8 | Elem::I8 => 1,
            Elem::U16 | Elem::I16 | Elem::F16 | Elem::Bf16 => 2,
            Elem::U32 | Elem::I32 | Elem::F32 => 4,
            Elem::U64 | Elem::I64 | Elem::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Elem::F16 | Elem::Bf16 | Elem::F32 | Elem::F64)
    }

    fn default_range(self) -> (f64, f64) {
        match self {
            Elem::U8 => (0.0, 255.0),
            Elem::I8 => (-128.0, 127.0),
            Elem::U16 => (0.0, 65535.0),
            Elem::I16 => (-32768.0, 32767.0),
            Elem::U32 | Elem::U64 => (0.0, 4294967295.0),
            Elem::I32 | Elem::I64 => (-2147483648.0, 2147483647.0),
            _ => (0.0, 1.0),
        }
    }

    /// `value`, converted as `as` converts (saturating for integers), little-endian.
    fn push(self, value: f64, out: &mut Vec<u8>) {
        match self {
            Elem::U8 => out.push(value as u8),
            Elem::I8 => out.extend((value as i8).to_le_bytes()),
            Elem::U16 => out.extend((value as u16).to_le_bytes()),
            Elem::I16 => out.extend((value as i16).to_le_bytes()),
            Elem::U32 => out.extend((value as u32).to_le_bytes()),
            Elem::I32 => out.extend((value as i32).to_le_bytes()),
            Elem::U64 => out.extend((value as u64).to_le_bytes()),
            Elem::I64 => out.extend((value as i64).to_le_bytes()),
            Elem::F16 => out.extend(f32_to_f16(value as f32).to_le_bytes()),
            Elem::Bf16 => out.extend(f32_to_bf16(value as f32).to_le_bytes()),
            Elem::F32 => out.extend((value as f32).to_le_bytes()),
            Elem::F64 => out.extend(value.to_le_bytes()),
        }
    }

    /// Element `bytes` (little-endian, `size()` of them) as the kernel's type reads it.
    pub fn show(self, bytes: &[u8]) -> String {
        let mut word = [0u8; 8];
        let n = bytes.len().min(8);
        word[..n].copy_from_slice(&bytes[..n]);
        let bits = u64::from_le_bytes(word);
        let hex = format!("0x{bits:0width$x}", width = self.size() * 2);
        let value = match self {
            Elem::U8 | Elem::U16 | Elem::U32 | Elem::U64 => bits.to_string(),
            Elem::I8 => (bits as u8 as i8).to_string(),
            Elem::I16 => (bits as u16 as i16).to_string(),
            Elem::I32 => (bits as u32 as i32).to_string(),
            Elem::I64 => (bits as i64).to_string(),
            Elem::F16 => format!("{:e}", f16_to_f32(bits as u16)),
            Elem::Bf16 => format!("{:e}", f32::from_bits((bits as u32) << 16)),
            Elem::F32 => format!("{:e}", f32::from_bits(bits as u32)),
            Elem::F64 => format!("{:e}", f64::from_bits(bits)),
        };
        format!("{hex} ({value})")
    }
}

/// f32 to IEEE half, rounded to nearest even; NaN stays NaN.
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // Subnormal: the implicit bit made explicit, shifted into place, rounded.
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = m >> shift;
        let rest = m & ((1 << shift) - 1);
        let mid = 1 << (shift - 1);
        let up = rest > mid || (rest == mid && half & 1 == 1);
        return sign | (half + u32::from(up)) as u16;
    }
    let half = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    let up = rest > 0x1000 || (rest == 0x1000 && half & 1 == 1);
    // A carry out of the mantissa moves into the exponent, as it should (up to infinity).
    sign | (half + u32::from(up)) as u16
}

/// IEEE half to f32, exactly.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: normalise.
            let shift = man.leading_zeros() - 21;
            let man = (man << shift) & 0x3ff;
            sign | ((113 - shift) << 23) | (man << 13)
        }
        (0x1f, _) => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// f32 to bfloat16, rounded to nearest even; NaN stays NaN.
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

/// FNV-1a of the kernel's name and the argument's number.
fn seed(kernel: &str, arg: usize) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in kernel.bytes().chain((arg as u64).to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Suite> {
        Suite::parse(Path::new("suite"), text)
    }

    const ONE: &str = r#"
        options = ["-DA=1"]
        [[kernel]]
        name = "samples/vectorAdd"
        file = "samples/vectorAdd.cu"
        grid = 4
        block = [32, 2]
        options = ["--use_fast_math"]
        args = [
          { bytes = 64, fill = "random", type = "f32", lo = -1.0, hi = 1.0 },
          { bytes = 16, fill = "iota", type = "u32", start = 5, step = 2 },
          { bytes = 8, type = "f16" },
          { i32 = -3 }, { u64 = 7 }, { f32 = 0.1 },
        ]
        globals = [{ name = "lut", fill = "iota", type = "u8" }]
    "#;

    #[test]
    fn a_kernel_reads_with_its_defaults() {
        let suite = parse(ONE).unwrap();
        let k = &suite.kernels[0];
        assert_eq!(k.entry, "vectorAdd");
        assert_eq!(k.grid, [4, 1, 1]);
        assert_eq!(k.block, [32, 2, 1]);
        assert_eq!(k.options, ["-DA=1", "--use_fast_math"]);
        assert_eq!(k.args[3], Arg::Scalar(Scalar::I32(-3)));
        assert_eq!(k.args[5], Arg::Scalar(Scalar::F32(0.1)));
        let Arg::Buffer(iota) = &k.args[1] else {
            panic!("a buffer")
        };
        let words: Vec<u32> = iota
            .initial("x", 1)
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(words, [5, 7, 9, 11]);
        assert_eq!(
            k.buffers().map(|(i, _)| i).collect::<Vec<_>>(),
            [0, 1, 2, 6]
        );
        assert_eq!(k.globals[0].0, "lut");
        assert_eq!(k.globals[0].1.elem, Elem::U8);
    }

    #[test]
    fn random_contents_are_the_same_each_time_and_in_range() {
        let suite = parse(ONE).unwrap();
        let Arg::Buffer(b) = &suite.kernels[0].args[0] else {
            panic!("a buffer")
        };
        let first = b.initial("samples/vectorAdd", 0);
        assert_eq!(first, b.initial("samples/vectorAdd", 0));
        assert_ne!(first, b.initial("samples/vectorAdd", 1));
        for chunk in first.chunks(4) {
            let x = f32::from_le_bytes(chunk.try_into().unwrap());
            assert!((-1.0..=1.0).contains(&x), "{x}");
        }
        let bytes = Buffer {
            bytes: 1000,
            fill: Fill::Random { lo: 3.0, hi: 5.0 },
            elem: Elem::U8,
        }
        .initial("k", 0);
        assert!(bytes.iter().all(|b| (3..=5).contains(b)));
        assert!([3, 4, 5].iter().all(|v| bytes.contains(v)));
    }

    #[test]
    fn mistakes_are_one_line_with_the_kernel_and_argument() {
        let cases = [
            ("name = \"a\"\nfile = \"a.cu\"\ngrid = 1\nblock = 1\nargs = [{ bytes = 6, type = \"f32\" }]", "kernel a: argument 0: bytes = 6 is not a whole number of f32"),
            ("name = \"a\"\nfile = \"a.cu\"\ngrid = 1\nblock = 1\nargs = [{ i32 = 1, f32 = 2.0 }]", "kernel a: argument 0: give either a buffer"),
            ("name = \"a\"\nfile = \"a.cu\"\ngrid = 1\nblock = 1\nargs = [{ u32 = -1 }]", "-1 does not fit in u32"),
            ("name = \"a\"\nfile = \"../a.cu\"\ngrid = 1\nblock = 1", "must be a path inside"),
            ("name = \"a\"\nfile = \"a.cu\"\ngrid = [1, 0]\nblock = 1", "grid: give 1 to 3 sizes"),
            ("name = \"a\"\nfile = \"a.cu\"\ngrid = 1\nblock = 1\nargs = [{ bytes = 4, fill = \"iota\", lo = 1 }]", "lo does not apply to fill = \"iota\""),
            ("name = \"a\"\nfile = \"a.cu\"\ngrid = 1\nblock = 1\ncolour = 3", ":6: unknown field `colour`"),
            ("name = \"a\"\nfile = \"a.cu\"\ngrid = 1\nblock = 1\nargs = [{ bytes = 4, fill = \"random\", type = \"f33\" }]", "type = \"f33\""),
        ];
        for (kernel, expected) in cases {
            let text = format!("[[kernel]]\n{kernel}\n");
            let message = format!("{:#}", parse(&text).unwrap_err());
            assert!(message.contains(expected), "{expected}: {message}");
            assert!(!message.contains('\n'), "{message}");
        }
        let twice = "[[kernel]]\nname=\"a\"\nfile=\"a.cu\"\ngrid=1\nblock=1\n".repeat(2);
        assert!(format!("{:#}", parse(&twice).unwrap_err()).contains("named twice"));
        assert!(format!("{:#}", parse("").unwrap_err()).contains("no [[kernel]]"));
    }

    #[test]
    fn a_missing_folder_or_file_is_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let message = format!("{:#}", Suite::load(&dir.path().join("nope")).unwrap_err());
        assert!(message.contains("is not a folder"), "{message}");
        let message = format!("{:#}", Suite::load(dir.path()).unwrap_err());
        assert!(
            message.contains("cannot read the suite's manifest"),
            "{message}"
        );
        std::fs::write(
            dir.path().join(MANIFEST),
            "[[kernel]]\nname=\"a\"\nfile=\"a.cu\"\ngrid=1\nblock=1\n",
        )
        .unwrap();
        let message = format!("{:#}", Suite::load(dir.path()).unwrap_err());
        assert!(message.contains("kernel a: its file"), "{message}");
    }

    #[test]
    fn halves_round_to_nearest_even_and_back_exactly() {
        for (x, h) in [
            (1.0f32, 0x3c00u16),
            (-2.0, 0xc000),
            (65504.0, 0x7bff),
            (65520.0, 0x7c00),
            (5.960_464_5e-8, 0x0001),
            (1.0 + 1.0 / 2048.0, 0x3c00),
            (1.0 + 3.0 / 2048.0, 0x3c02),
            (0.0, 0),
        ] {
            assert_eq!(f32_to_f16(x), h, "{x}");
        }
        for h in 0..0x7c00u16 {
            assert_eq!(f32_to_f16(f16_to_f32(h)), h, "{h:#x}");
        }
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82);
    }

    #[test]
    fn elements_show_their_bits_and_value() {
        assert_eq!(Elem::F32.show(&1.5f32.to_le_bytes()), "0x3fc00000 (1.5e0)");
        assert_eq!(Elem::I32.show(&(-2i32).to_le_bytes()), "0xfffffffe (-2)");
        assert_eq!(Elem::U8.show(&[7]), "0x07 (7)");
    }
}
