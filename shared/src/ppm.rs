//! Binary PPM (P6) files: the header. The pixels follow it, three bytes each, rows in file
//! order; [`crate::output::ImageFile`] writes both.

/// The PPM header: magic, size, maximum channel value.
pub fn header(width: u32, height: u32) -> String {
    format!("P6\n{width} {height}\n255\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_p6() {
        assert_eq!(header(3, 2), "P6\n3 2\n255\n");
    }
}
