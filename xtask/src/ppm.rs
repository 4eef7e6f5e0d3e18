//! Reading the labs' PPM files back, comparing them, and drawing where they differ.

use std::fs;
use std::path::Path;

/// A decoded binary PPM: rows in file order, RGB.
pub struct Ppm {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

/// Read a `P6` file with maximum value 255.
pub fn read(path: &Path) -> crate::Result<Ppm> {
    let bytes = fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let bad = || format!("{} is not a binary PPM with maxval 255", path.display());
    // The header is four whitespace-separated fields; one whitespace byte ends it.
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        let start = at;
        while at < bytes.len() && !bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if start == at {
            return Err(bad());
        }
        fields.push(String::from_utf8_lossy(&bytes[start..at]).into_owned());
    }
    let number = |s: &str| s.parse::<u32>().map_err(|_| bad());
    if fields[0] != "P6" || fields[3] != "255" {
        return Err(bad());
    }
    let (width, height) = (number(&fields[1])?, number(&fields[2])?);
    let pixels = bytes.get(at + 1..).ok_or_else(bad)?.to_vec();
    if pixels.len() != width as usize * height as usize * 3 {
        return Err(format!(
            "{} holds {} pixel bytes, expected {} for {width}x{height}",
            path.display(),
            pixels.len(),
            width as usize * height as usize * 3
        ));
    }
    Ok(Ppm {
        width,
        height,
        pixels,
    })
}

/// How two images of the same size differ.
pub struct Diff {
    pub pixels: u64,
    /// The first differing pixel in file order: (file row, column, expected, got).
    pub first: Option<(u32, u32, [u8; 3], [u8; 3])>,
}

pub fn diff(expected: &Ppm, got: &Ppm) -> Diff {
    let mut result = Diff {
        pixels: 0,
        first: None,
    };
    let pairs = expected
        .pixels
        .chunks_exact(3)
        .zip(got.pixels.chunks_exact(3));
    for (index, (e, g)) in pairs.enumerate() {
        if e != g {
            result.pixels += 1;
            if result.first.is_none() {
                let row = (index / expected.width as usize) as u32;
                let column = (index % expected.width as usize) as u32;
                result.first = Some((row, column, [e[0], e[1], e[2]], [g[0], g[1], g[2]]));
            }
        }
    }
    result
}

/// A PNG of the expected image in dim grey, with every differing pixel in bright red.
pub fn write_marked_png(expected: &Ppm, got: &Ppm, path: &Path) -> crate::Result<()> {
    let mut marked = Vec::with_capacity(expected.pixels.len());
    for (e, g) in expected
        .pixels
        .chunks_exact(3)
        .zip(got.pixels.chunks_exact(3))
    {
        if e == g {
            let grey = ((u16::from(e[0]) + u16::from(e[1]) + u16::from(e[2])) / 9) as u8;
            marked.extend_from_slice(&[grey, grey, grey]);
        } else {
            marked.extend_from_slice(&[255, 0, 0]);
        }
    }
    image::save_buffer(
        path,
        &marked,
        expected.width,
        expected.height,
        image::ColorType::Rgb8,
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
