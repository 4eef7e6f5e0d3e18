//! What `grade --class` reads of GitHub Classroom's clone of every student repository
//! (`gh classroom clone student-repos`): `ASSIGNMENT-submissions/ASSIGNMENT-USERNAME/`
//! ([`clone_student`]). (The `classroom` command writes Classroom's workflow.)

/// The suffix `gh classroom clone student-repos` gives the folder of an assignment's clones.
pub const CLONE_SUFFIX: &str = "-submissions";

/// The student's user name in a clone of `gh classroom clone student-repos`: the folder
/// `ASSIGNMENT-submissions` holds `ASSIGNMENT-USERNAME` for each student.
pub fn clone_student<'a>(class_dir: &str, entry: &'a str) -> Option<&'a str> {
    let assignment = class_dir.strip_suffix(CLONE_SUFFIX)?;
    let user = entry.strip_prefix(assignment)?.strip_prefix('-')?;
    (!user.is_empty()).then_some(user)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_folders_name_their_students() {
        assert_eq!(
            clone_student("mandelbrot-submissions", "mandelbrot-ada"),
            Some("ada")
        );
        assert_eq!(
            clone_student("mandelbrot-submissions", "mandelbrot-two-part"),
            Some("two-part")
        );
        assert_eq!(clone_student("mandelbrot-submissions", "other-ada"), None);
        assert_eq!(clone_student("mandelbrot-submissions", "mandelbrot-"), None);
        assert_eq!(clone_student("downloads", "mandelbrot-ada"), None);
    }
}
