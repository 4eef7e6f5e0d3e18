//! The command-line arguments every Mandelbrot lab shares, and the pixel-to-plane mapping.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use crate::number;

/// The largest width or height a lab accepts. 65536 x 65536 pixels is 12 GiB of RGB: beyond
/// that the request is a typo, not an image.
pub const MAX_SIDE: u32 = 65536;

/// The centre every lab draws where `--cx` and `--cy` are not given.
pub const DEFAULT_CX: f64 = -0.6;
pub const DEFAULT_CY: f64 = 0.0;

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
    #[arg(long, default_value_t = DEFAULT_CX, allow_hyphen_values = true, value_parser = number::finite)]
    pub cx: f64,

    /// Imaginary part of the image centre
    #[arg(long, default_value_t = DEFAULT_CY, allow_hyphen_values = true, value_parser = number::finite)]
    pub cy: f64,

    /// Distance between two pixels in the plane [default: 4.0 / WIDTH]
    #[arg(long, allow_hyphen_values = true, value_parser = number::positive)]
    pub scale: Option<f64>,
}

impl MandelbrotArgs {
    /// A `width` x `height` image of the default view, to the lab's default file, with no
    /// report.
    pub fn new(width: u32, height: u32) -> MandelbrotArgs {
        MandelbrotArgs {
            width,
            height,
            output: None,
            json: false,
            cx: DEFAULT_CX,
            cy: DEFAULT_CY,
            scale: None,
        }
    }

    /// The command line that parses back to these arguments, for a program that runs a lab
    /// (the grader, a test): `WIDTH HEIGHT`, the view's flags, then `-o FILE` and `--json`
    /// where given. Written here, beside the flags, so that each flag is spelt once in the
    /// workspace: a flag renamed above and not here fails `to_args_parse_back`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            self.width.to_string().into(),
            self.height.to_string().into(),
        ];
        args.extend(self.view_args().into_iter().map(OsString::from));
        if let Some(output) = &self.output {
            args.extend(["-o".into(), output.clone().into_os_string()]);
        }
        if self.json {
            args.push("--json".into());
        }
        args
    }

    /// The view's flags, `--cx`, `--cy` and `--scale`, each only where it is not the
    /// default. A number is written as Rust's `{:?}` writes it: the shortest text that
    /// parses back to the same double (`1e-5`, `-0.74364`), so the lab draws exactly this
    /// view. Bits, not values, are compared with the default: `-0.0` is not `0.0` to a lab.
    pub fn view_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for (flag, value, default) in [("--cx", self.cx, DEFAULT_CX), ("--cy", self.cy, DEFAULT_CY)]
        {
            if value.to_bits() != default.to_bits() {
                args.extend([flag.to_string(), format!("{value:?}")]);
            }
        }
        if let Some(scale) = self.scale {
            args.extend(["--scale".to_string(), format!("{scale:?}")]);
        }
        args
    }

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
    use clap::Parser;

    /// A lab's command line as the labs flatten it.
    #[derive(Parser)]
    #[command(allow_negative_numbers = true)]
    struct Lab {
        #[command(flatten)]
        mandelbrot: MandelbrotArgs,
    }

    fn parsed(args: &MandelbrotArgs) -> MandelbrotArgs {
        let argv = std::iter::once(OsString::from("lab")).chain(args.to_args());
        match Lab::try_parse_from(argv) {
            Ok(lab) => lab.mandelbrot,
            Err(e) => panic!("{:?} does not parse: {e}", args.to_args()),
        }
    }

    /// Every field, given and left out, comes back as it went: a flag renamed in the
    /// struct's attributes and not in `to_args`, or a field `to_args` forgets, fails here.
    #[test]
    fn to_args_parse_back() {
        let given = MandelbrotArgs {
            width: 333,
            height: 517,
            output: Some(PathBuf::from("out dir/image.ppm")),
            json: true,
            cx: -0.74364,
            cy: -1e-5,
            scale: Some(2e-6),
        };
        let back = parsed(&given);
        assert_eq!(format!("{back:?}"), format!("{given:?}"));
        let sparse = MandelbrotArgs::new(8, 3);
        assert_eq!(sparse.to_args(), ["8", "3"]);
        assert_eq!(format!("{:?}", parsed(&sparse)), format!("{sparse:?}"));
        // A centre of -0.0 is not the default's 0.0, and says so.
        let negative_zero = MandelbrotArgs {
            cy: -0.0,
            ..MandelbrotArgs::new(8, 3)
        };
        assert_eq!(negative_zero.view_args(), ["--cy", "-0.0"]);
        assert!(parsed(&negative_zero).cy.is_sign_negative());
    }

    /// The view is written as the rubric and a person write it, not in 17 digits.
    #[test]
    fn view_args_are_short() {
        let args = MandelbrotArgs {
            cx: -0.74364,
            cy: 0.13182,
            scale: Some(1e-5),
            ..MandelbrotArgs::new(257, 1999)
        };
        assert_eq!(
            args.view_args(),
            ["--cx", "-0.74364", "--cy", "0.13182", "--scale", "1e-5"]
        );
    }

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
