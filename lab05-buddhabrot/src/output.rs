//! What a run leaves behind: the PNG, the raw canvas, and the review's statistics.

use std::io::{BufWriter, Write};

use image::codecs::png::PngEncoder;
use image::{ExtendedColorType, ImageEncoder};
use rayon::prelude::*;
use shared::ppm::AtomicFile;
use shared::{Error, Result};

/// The first bytes of a `--raw` file.
pub const RAW_MAGIC: &[u8; 8] = b"LAB05RAW";

/// The statistics the review printed after each run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Counts on the canvas (the review's "total iterations").
    pub total: u64,
    pub max: u32,
    pub min: u32,
}

impl Stats {
    pub fn of(canvas: &[u32]) -> Stats {
        let total = canvas.par_iter().map(|&c| u64::from(c)).sum();
        let max = canvas.par_iter().copied().max().unwrap_or(0);
        let min = canvas.par_iter().copied().min().unwrap_or(0);
        Stats { total, max, min }
    }
}

/// The canvas as 8-bit grey: each count divided by the largest, then brightened with the
/// review's curve min(2.5 v, 0.2 v + 0.8), which lifts the faint outer orbits without
/// flattening the bright core.
pub fn tone(canvas: &[u32], max: u32) -> Vec<u8> {
    let max = f64::from(max.max(1));
    canvas
        .par_iter()
        .map(|&count| {
            let v = f64::from(count) / max;
            ((2.5 * v).min(0.2 * v + 0.8) * 255.0).round() as u8
        })
        .collect()
}

/// Encode `grey` as a PNG into `file` and move it into place.
pub fn write_png(mut file: AtomicFile, grey: &[u8], width: u32, height: u32) -> Result<()> {
    let path = file.path().to_path_buf();
    let mut writer = BufWriter::new(file.file());
    PngEncoder::new(&mut writer)
        .write_image(grey, width, height, ExtendedColorType::L8)
        .map_err(|e| Error::output(&path, std::io::Error::other(e)))?;
    writer.flush().map_err(|e| Error::output(&path, e))?;
    drop(writer);
    file.commit()
}

/// Write the raw canvas into `file` and move it into place. Layout, all little-endian:
/// `LAB05RAW`, width (u32), height (u32), then width x height u32 counts, row by row from
/// the top (Re = re_min).
pub fn write_raw(mut file: AtomicFile, canvas: &[u32], width: u32, height: u32) -> Result<()> {
    let path = file.path().to_path_buf();
    let mut writer = BufWriter::new(file.file());
    let mut write = |bytes: &[u8]| writer.write_all(bytes).map_err(|e| Error::output(&path, e));
    write(RAW_MAGIC)?;
    write(&width.to_le_bytes())?;
    write(&height.to_le_bytes())?;
    for count in canvas {
        write(&count.to_le_bytes())?;
    }
    writer.flush().map_err(|e| Error::output(&path, e))?;
    drop(writer);
    file.commit()
}
