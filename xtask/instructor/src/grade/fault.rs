//! Whose fault a failure is, carried by its type from where it happens to the report.
//!
//! The student's failure costs the points, with a line saying why. The grader's (its
//! reference or solution failed, the sandbox did not start) is never a student's 0: the check
//! is not graded, and a class grades the submission again. Only the grader's own code makes
//! a [`Fault::Grader`], so no text a student's program prints can pass for one; and the
//! report says "the grader failed" once, from the variant, never from the text.

/// Why part of a grade failed (a lab's build, a check, a submission of a class), and whose
/// fault it is.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    Student(String),
    Grader(String),
}

impl Fault {
    /// The student's failure said with `how` (what their run was for); the grader's kept as
    /// it is, as it speaks of the grader's own work.
    pub fn map_student(self, how: impl FnOnce(String) -> String) -> Fault {
        match self {
            Fault::Student(why) => Fault::Student(how(why)),
            grader @ Fault::Grader(_) => grader,
        }
    }
}

/// The text alone, where whose fault it is does not matter (the hand-out's own build).
impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Student(why) | Fault::Grader(why) => write!(f, "{why}"),
        }
    }
}
