//! What a run leaves behind: the PNG, the raw canvas, and the statistics that a Code Review
//! answer on a PyCUDA Buddhabrot ("Packaging floats") printed.

use std::io::{BufWriter, Write};
use std::path::Path;

use image::codecs::png::PngEncoder;
use image::{ExtendedColorType, ImageEncoder};
use rayon::prelude::*;
use shared::error::try_with_capacity;
use shared::output::{check_distinct, commit_all, Output};
use shared::Result;

/// The first bytes of a `--raw` file.
pub const RAW_MAGIC: &[u8; 8] = b"LAB05RAW";

/// The statistics that answer's program printed after each run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Counts on the canvas (its "total iterations").
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
/// answer's curve min(2.5 v, 0.2 v + 0.8), which lifts the faint outer orbits without
/// flattening the bright core.
pub fn tone(canvas: &[u32], max: u32) -> Result<Vec<u8>> {
    let max = f64::from(max.max(1));
    let mut grey = try_with_capacity(canvas.len(), "the image")?;
    grey.par_extend(canvas.par_iter().map(|&count| {
        let v = f64::from(count) / max;
        ((2.5 * v).min(0.2 * v + 0.8) * 255.0).round() as u8
    }));
    Ok(grey)
}

/// The files a run writes: the PNG and, if asked for, the raw canvas. Both are opened before
/// the work and committed together: if one cannot be written, neither replaces an old file.
pub struct Files {
    png: Output,
    raw: Option<Output>,
}

impl Files {
    /// Check both paths (and that they differ) and open the files.
    pub fn create(png: &Path, raw: Option<&Path>) -> Result<Files> {
        if let Some(raw) = raw {
            check_distinct(&[("-o", png), ("--raw", raw)])?;
        }
        Ok(Files {
            png: Output::create(png)?,
            raw: raw.map(Output::create).transpose()?,
        })
    }

    /// Write the grey image as a PNG and the canvas as raw counts, then commit both.
    pub fn write(mut self, grey: &[u8], canvas: &[u32], width: u32, height: u32) -> Result<()> {
        self.png.set_size(width, height);
        write_png(&mut self.png, grey, width, height)?;
        if let Some(raw) = &mut self.raw {
            raw.set_size(width, height);
            write_raw(raw, canvas, width, height)?;
        }
        commit_all(std::iter::once(self.png).chain(self.raw).collect())
    }
}

/// Encode `grey` as a PNG into `file`.
fn write_png(file: &mut Output, grey: &[u8], width: u32, height: u32) -> Result<()> {
    let mut writer = BufWriter::new(&mut *file);
    let written = PngEncoder::new(&mut writer)
        .write_image(grey, width, height, ExtendedColorType::L8)
        .map_err(|e| match e {
            image::ImageError::IoError(e) => e,
            other => std::io::Error::other(other),
        })
        .and_then(|()| writer.flush());
    drop(writer);
    written.map_err(|e| file.error(e))
}

/// Write the raw canvas into `file`. Layout, all little-endian: `LAB05RAW`, width (u32),
/// height (u32), then width x height u32 counts, row by row from the top (Re = re_min).
fn write_raw(file: &mut Output, canvas: &[u32], width: u32, height: u32) -> Result<()> {
    let mut writer = BufWriter::new(&mut *file);
    let written = (|| {
        writer.write_all(RAW_MAGIC)?;
        writer.write_all(&width.to_le_bytes())?;
        writer.write_all(&height.to_le_bytes())?;
        for count in canvas {
            writer.write_all(&count.to_le_bytes())?;
        }
        writer.flush()
    })();
    drop(writer);
    written.map_err(|e| file.error(e))
}
