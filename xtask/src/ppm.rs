//! Reading the labs' PPM files back, comparing them, and drawing where they differ.
//!
//! Images are streamed, a chunk at a time: at 20000x20000 each file is 1.2 GB, and holding
//! two of them whole would need more memory than the lab that made them.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Bytes compared per read: whole pixels, about 768 KiB.
const CHUNK: usize = 3 << 18;

/// An open binary PPM whose header has been read and whose length matches it.
pub struct Ppm {
    pub width: u32,
    pub height: u32,
    path: PathBuf,
    pixels: BufReader<File>,
}

/// Open a `P6` file with maximum value 255 and check that it holds exactly its pixels.
pub fn open(path: &Path) -> Result<Ppm> {
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let length = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    let mut reader = BufReader::with_capacity(CHUNK, file);
    let bad = || format!("{} is not a binary PPM with maxval 255", path.display());
    let mut header = Vec::new();
    let fields = read_header(&mut reader, &mut header).with_context(bad)?;
    if fields[0] != "P6" || fields[3] != "255" {
        bail!(bad());
    }
    let number = |s: &str| s.parse::<u32>().with_context(bad);
    let (width, height) = (number(&fields[1])?, number(&fields[2])?);
    let expected = u64::from(width) * u64::from(height) * 3;
    let held = length.saturating_sub(header.len() as u64);
    if held != expected {
        bail!(
            "{} holds {held} pixel bytes, expected {expected} for {width}x{height}",
            path.display()
        );
    }
    Ok(Ppm {
        width,
        height,
        path: path.to_path_buf(),
        pixels: reader,
    })
}

/// The four whitespace-separated header fields; one whitespace byte ends the header.
/// `consumed` gets every header byte read.
fn read_header(reader: &mut impl BufRead, consumed: &mut Vec<u8>) -> Result<Vec<String>> {
    let mut fields = Vec::new();
    let mut field = Vec::new();
    while fields.len() < 4 {
        let mut byte = [0u8];
        if reader.read(&mut byte)? == 0 || consumed.len() > 64 {
            bail!("the header ends early");
        }
        consumed.push(byte[0]);
        if byte[0].is_ascii_whitespace() {
            if !field.is_empty() {
                fields.push(String::from_utf8_lossy(&field).into_owned());
                field.clear();
            }
        } else {
            field.push(byte[0]);
        }
    }
    Ok(fields)
}

/// How two images of the same size differ.
#[derive(Debug, PartialEq, Eq)]
pub struct Diff {
    pub pixels: u64,
    /// The first differing pixel in file order: (file row, column, expected, got).
    pub first: Option<(u32, u32, [u8; 3], [u8; 3])>,
}

impl Ppm {
    /// Read the next chunk of pixel bytes into `buffer` (empty at the end).
    fn next_chunk(&mut self, buffer: &mut Vec<u8>) -> Result<()> {
        buffer.clear();
        (&mut self.pixels)
            .take(CHUNK as u64)
            .read_to_end(buffer)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        Ok(())
    }
}

/// Walk two images of the same size chunk by chunk, calling `pixel(index, expected, got)`
/// for every pixel.
fn walk(expected: &mut Ppm, got: &mut Ppm, mut pixel: impl FnMut(u64, &[u8], &[u8])) -> Result<()> {
    if (expected.width, expected.height) != (got.width, got.height) {
        bail!(
            "cannot compare a {}x{} image with a {}x{} one",
            expected.width,
            expected.height,
            got.width,
            got.height
        );
    }
    let (mut want, mut have) = (Vec::with_capacity(CHUNK), Vec::with_capacity(CHUNK));
    let mut index = 0u64;
    loop {
        expected.next_chunk(&mut want)?;
        got.next_chunk(&mut have)?;
        if want.len() != have.len() {
            bail!("{} changed while it was read", got.path.display());
        }
        if want.is_empty() {
            return Ok(());
        }
        for (e, g) in want.chunks_exact(3).zip(have.chunks_exact(3)) {
            pixel(index, e, g);
            index += 1;
        }
    }
}

/// Count the differing pixels and find the first.
pub fn diff(mut expected: Ppm, mut got: Ppm) -> Result<Diff> {
    let width = u64::from(expected.width);
    let mut result = Diff {
        pixels: 0,
        first: None,
    };
    walk(&mut expected, &mut got, |index, e, g| {
        if e != g {
            result.pixels += 1;
            if result.first.is_none() {
                let (row, column) = ((index / width) as u32, (index % width) as u32);
                result.first = Some((row, column, [e[0], e[1], e[2]], [g[0], g[1], g[2]]));
            }
        }
    })?;
    Ok(result)
}

/// Rings drawn at most: beyond this many differing pixels the red is easy enough to see.
const MAX_RINGS: usize = 256;

/// A PNG, as bytes, of the expected image in dim grey with every differing pixel in bright
/// red, each circled in yellow (a few red pixels in a large image are otherwise invisible).
pub fn marked_png(mut expected: Ppm, mut got: Ppm) -> Result<Vec<u8>> {
    use image::ImageEncoder;
    let (width, height) = (expected.width, expected.height);
    let mut marked = Vec::new();
    let bytes = width as usize * height as usize * 3;
    marked
        .try_reserve_exact(bytes)
        .with_context(|| format!("no memory for a {width}x{height} difference image"))?;
    let mut differing = Vec::new();
    walk(&mut expected, &mut got, |index, e, g| {
        if e == g {
            let grey = ((u16::from(e[0]) + u16::from(e[1]) + u16::from(e[2])) / 9) as u8;
            marked.extend_from_slice(&[grey, grey, grey]);
        } else {
            marked.extend_from_slice(&RED);
            if differing.len() < MAX_RINGS {
                differing.push(index);
            }
        }
    })?;
    for &index in &differing {
        circle(&mut marked, width, height, index);
    }
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&marked, width, height, image::ExtendedColorType::Rgb8)
        .context("cannot encode the difference image")?;
    Ok(png)
}

const RED: [u8; 3] = [255, 0, 0];
const YELLOW: [u8; 3] = [255, 255, 0];

/// A yellow ring, two pixels thick, around pixel `index` (in file order), leaving red alone.
/// Its radius grows with the image: 1/50 of the shorter side, at least 6 pixels.
fn circle(rgb: &mut [u8], width: u32, height: u32, index: u64) {
    let (w, h) = (i64::from(width), i64::from(height));
    let (cx, cy) = (index as i64 % w, index as i64 / w);
    let radius = (w.min(h) / 50).max(6);
    let (inner, outer) = ((radius - 1).pow(2), (radius + 1).pow(2));
    for y in (cy - radius - 1).max(0)..=(cy + radius + 1).min(h - 1) {
        for x in (cx - radius - 1).max(0)..=(cx + radius + 1).min(w - 1) {
            let d = (x - cx).pow(2) + (y - cy).pow(2);
            let at = 3 * (y * w + x) as usize;
            if (inner..=outer).contains(&d) && rgb[at..at + 3] != RED {
                rgb[at..at + 3].copy_from_slice(&YELLOW);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("written");
        path
    }

    fn image(width: u32, height: u32, pixels: &[u8]) -> Vec<u8> {
        let mut bytes = format!("P6\n{width} {height}\n255\n").into_bytes();
        bytes.extend_from_slice(pixels);
        bytes
    }

    #[test]
    fn finds_every_difference_and_the_first_in_file_order() {
        let dir = tempfile::tempdir().expect("a folder");
        let a = image(3, 2, &[0; 18]);
        let mut b = a.clone();
        let header = a.len() - 18;
        b[header + 3 * 4 + 1] = 7; // pixel 4: file row 1, column 1
        b[header + 3 * 5] = 9; // pixel 5
        let (pa, pb) = (
            write(dir.path(), "a.ppm", &a),
            write(dir.path(), "b.ppm", &b),
        );
        let open_both = || (open(&pa).expect("a"), open(&pb).expect("b"));
        let (ea, eb) = open_both();
        assert_eq!(
            diff(ea, eb).ok(),
            Some(Diff {
                pixels: 2,
                first: Some((1, 1, [0, 0, 0], [0, 7, 0]))
            })
        );
        let (ea, ea2) = (open(&pa).expect("a"), open(&pa).expect("a"));
        assert_eq!(
            diff(ea, ea2).ok(),
            Some(Diff {
                pixels: 0,
                first: None
            })
        );
        let (ea, eb) = open_both();
        let png = marked_png(ea, eb).expect("a PNG");
        let decoded = image::load_from_memory(&png).expect("decodes").to_rgb8();
        assert_eq!(decoded.get_pixel(1, 1).0, [255, 0, 0]);
        assert_eq!(decoded.get_pixel(0, 0).0, [0, 0, 0]);
    }

    #[test]
    fn streams_images_larger_than_a_chunk() {
        let dir = tempfile::tempdir().expect("a folder");
        let (width, height) = (1000, 700); // 2.1 MB of pixels, about three chunks
        let pixels = vec![5u8; width * height * 3];
        let mut other = pixels.clone();
        let last = other.len() - 1;
        other[last] = 6;
        let pa = write(
            dir.path(),
            "a.ppm",
            &image(width as u32, height as u32, &pixels),
        );
        let pb = write(
            dir.path(),
            "b.ppm",
            &image(width as u32, height as u32, &other),
        );
        let result = diff(open(&pa).expect("a"), open(&pb).expect("b")).expect("compared");
        assert_eq!(result.pixels, 1);
        assert_eq!(result.first, Some((699, 999, [5, 5, 5], [5, 5, 6])));
    }

    #[test]
    fn malformed_files_are_errors_that_name_them() {
        let dir = tempfile::tempdir().expect("a folder");
        let mut p3 = image(1, 1, &[0; 3]);
        p3[1] = b'3';
        for (name, bytes, message) in [
            ("text.ppm", b"hello".to_vec(), "is not a binary PPM"),
            ("p3.ppm", p3, "is not a binary PPM"),
            (
                "short.ppm",
                image(2, 2, &[0; 11]),
                "holds 11 pixel bytes, expected 12 for 2x2",
            ),
            ("long.ppm", image(1, 1, &[0; 4]), "holds 4 pixel bytes"),
            ("empty.ppm", Vec::new(), "is not a binary PPM"),
        ] {
            let path = write(dir.path(), name, &bytes);
            let err = open(&path)
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default();
            assert!(err.contains(name) && err.contains(message), "{name}: {err}");
        }
        let missing = open(&dir.path().join("none.ppm"))
            .err()
            .map(|e| format!("{e:#}"));
        assert!(missing.is_some_and(|e| e.starts_with("cannot read")));
    }

    #[test]
    fn a_differing_pixel_is_red_and_circled() {
        let dir = tempfile::tempdir().unwrap();
        let (width, height) = (64, 40);
        let a = image(width, height, &vec![90; 3 * 64 * 40]);
        let mut b = a.clone();
        let header = a.len() - 3 * 64 * 40;
        let (x, y) = (20, 10);
        b[header + 3 * (y * 64 + x)] = 0;
        let png = marked_png(
            open(&write(dir.path(), "a.ppm", &a)).unwrap(),
            open(&write(dir.path(), "b.ppm", &b)).unwrap(),
        )
        .unwrap();
        let marked = image::load_from_memory(&png).unwrap().to_rgb8();
        let at = |x: u32, y: u32| marked.get_pixel(x, y).0;
        assert_eq!(at(20, 10), RED);
        assert_eq!(at(21, 10), [30, 30, 30], "the same pixel, dimmed");
        // Radius 6 (the image is small): on the ring, left, right, above and below.
        for (x, y) in [(14, 10), (26, 10), (20, 4), (20, 16)] {
            assert_eq!(at(x, y), YELLOW, "({x}, {y})");
        }
        assert_eq!(at(20, 30), [30, 30, 30], "far from the ring");
    }

    #[test]
    fn images_of_different_sizes_are_not_compared() {
        let dir = tempfile::tempdir().expect("a folder");
        let pa = write(dir.path(), "a.ppm", &image(2, 1, &[0; 6]));
        let pb = write(dir.path(), "b.ppm", &image(1, 2, &[0; 6]));
        let err = diff(open(&pa).expect("a"), open(&pb).expect("b")).err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("cannot compare a 2x1 image with a 1x2 one")
        );
    }
}
