//! The labs, as the tasks see them.

/// One lab: its binary, its package, and what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lab {
    /// Binary name, e.g. "lab04".
    pub name: &'static str,
    /// Cargo package, e.g. "lab04-cuda-optimized".
    pub package: &'static str,
    /// Needs a CUDA GPU to run.
    pub gpu: bool,
    /// Renders the Mandelbrot image of labs 01-04 (`labNN W H -o FILE --json`).
    pub mandelbrot: bool,
}

pub const LABS: [Lab; 6] = [
    Lab {
        name: "lab01",
        package: "lab01-cpu-baseline",
        gpu: false,
        mandelbrot: true,
    },
    Lab {
        name: "lab02",
        package: "lab02-rayon",
        gpu: false,
        mandelbrot: true,
    },
    Lab {
        name: "lab03",
        package: "lab03-cuda-naive",
        gpu: true,
        mandelbrot: true,
    },
    Lab {
        name: "lab04",
        package: "lab04-cuda-optimized",
        gpu: true,
        mandelbrot: true,
    },
    Lab {
        name: "lab05",
        package: "lab05-buddhabrot",
        gpu: true,
        mandelbrot: false,
    },
    Lab {
        name: "lab06",
        package: "lab06-generics-vs-virtual",
        gpu: true,
        mandelbrot: false,
    },
];

/// Find a lab by "lab04", "4", "04" or its package name.
pub fn find(name: &str) -> crate::Result<Lab> {
    let wanted = name.trim_start_matches("lab").trim_start_matches('0');
    LABS.iter()
        .copied()
        .find(|lab| {
            lab.name == name
                || lab.package == name
                || lab.name.trim_start_matches("lab").trim_start_matches('0') == wanted
        })
        .ok_or_else(|| {
            let names: Vec<_> = LABS.iter().map(|l| l.name).collect();
            format!("no lab called '{name}'; the labs are {}", names.join(", "))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_labs_by_any_of_their_names() {
        assert_eq!(find("lab04").unwrap().package, "lab04-cuda-optimized");
        assert_eq!(find("4").unwrap().name, "lab04");
        assert_eq!(find("lab02-rayon").unwrap().name, "lab02");
        assert!(find("lab09").is_err());
    }
}
