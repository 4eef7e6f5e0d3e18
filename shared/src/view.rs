//! The command-line arguments every Mandelbrot lab shares, and the pixel-to-plane mapping.

use std::path::PathBuf;

use clap::Args;

use crate::number;

/// The largest width or height a lab accepts. 65536 x 65536 pixels is 12 GiB of RGB: beyond
/// that the request is a typo, not an image.
pub const MAX_SIDE: u32 = 65536;

// `labNN [WIDTH] [HEIGHT] [-o FILE] [--json] [--cx X] [--cy Y] [--scale S]`
//
// Flatten this into a lab's `Parser` with `#[command(flatten)]`; the lab's own struct gives
// the default output file name. (A plain comment, not a doc comment: clap would show a doc
// comment here as the lab's `--help` text, over the lab's own.)
#[derive(Args, Debug, Clone)]
pub struct MandelbrotArgs {
    /// Image width in pixels
    #[arg(default_value_t = 1024, value_parser = parse_width)]
    pub width: u32,

    /// Image height in pixels
    #[arg(default_value_t = 1024, value_parser = parse_height)]
    pub height: u32,

    /// Output file: binary PPM, or PNG if the name ends in .png [default: the lab's own name]
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Print the phase timings as one JSON object on stdout
    #[arg(long)]
    pub json: bool,

    /// Real part of the image centre
    #[arg(long, default_value_t = -0.6, allow_hyphen_values = true, value_parser = number::finite)]
    pub cx: f64,

    /// Imaginary part of the image centre
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true, value_parser = number::finite)]
    pub cy: f64,

    /// Distance between two pixels in the plane [default: 4.0 / WIDTH]
    #[arg(long, allow_hyphen_values = true, value_parser = number::positive)]
    pub scale: Option<f64>,
}

impl MandelbrotArgs {
    /// The region of the plane this run renders.
    pub fn view(&self) -> View {
        View {
            width: self.width,
            height: self.height,
            cx: self.cx,
            cy: self.cy,
            scale: self.scale.unwrap_or(4.0 / f64::from(self.width)),
        }
    }

    /// The output path: `-o FILE` if given, else the lab's default name.
    pub fn output_or(&self, default: &str) -> PathBuf {
        self.output
            .clone()
            .unwrap_or_else(|| PathBuf::from(default))
    }
}

/// Which point of the plane each pixel stands for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    pub width: u32,
    pub height: u32,
    pub cx: f64,
    pub cy: f64,
    pub scale: f64,
}

impl View {
    /// Real part of column `j`: integer subtraction and division first, as in C, then one
    /// multiply and one add (never fused).
    pub fn x(&self, j: u32) -> f64 {
        (i64::from(j) - i64::from(self.width / 2)) as f64 * self.scale + self.cx
    }

    /// Imaginary part of row `i`, the same way.
    pub fn y(&self, i: u32) -> f64 {
        (i64::from(i) - i64::from(self.height / 2)) as f64 * self.scale + self.cy
    }

    /// Bytes of RGB pixel data (no header).
    pub fn rgb_bytes(&self) -> usize {
        self.width as usize * self.height as usize * 3
    }
}

fn parse_side(what: &str, s: &str) -> Result<u32, String> {
    number::whole(what, s, 1, MAX_SIDE.into()).map(|n| n as u32)
}

fn parse_width(s: &str) -> Result<u32, String> {
    parse_side("the width", s)
}

fn parse_height(s: &str) -> Result<u32, String> {
    parse_side("the height", s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centre_pixel_maps_to_the_centre() {
        let view = View {
            width: 4,
            height: 3,
            cx: -0.6,
            cy: 0.0,
            scale: 1.0,
        };
        assert_eq!(view.x(2), -0.6);
        assert_eq!(view.y(1), 0.0);
        assert_eq!(view.x(0), -2.6);
        assert_eq!(view.y(0), -1.0);
    }

    #[test]
    fn sides_are_checked() {
        assert_eq!(parse_width("16"), Ok(16));
        assert!(parse_width("0").is_err());
        assert!(parse_width("-3").is_err());
        assert!(parse_width("abc").is_err());
        assert!(parse_height("65537").is_err());
        assert!(parse_height("99999999999999999999999").is_err());
    }
}
