//! A progress bar for long runs, on stderr, for a person watching.
//!
//! The work only counts: [`Progress::add`] is one relaxed atomic add (per row, per chunk of
//! samples), never a lock, a clock read or a write. A thread of its own draws the count a
//! few times a second, and only
//! - when stderr is a terminal (indicatif's stderr target hides itself otherwise, and then
//!   no thread is started at all: a pipe, a log file or a test sees the same stderr as
//!   without a bar), and
//! - once the run has taken [`SHOW_AFTER`]: a short run, whatever its size on whatever
//!   machine, shows nothing.
//!
//! The bar is cleared when the work is done, before the timing table is printed.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long the work runs before a bar appears: about when a person starts to wonder.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

/// How often the bar is redrawn.
const REFRESH: Duration = Duration::from_millis(250);

/// Units of work done so far, and the thread that draws them; neither where nothing is drawn.
pub struct Progress {
    done: Option<Arc<AtomicU64>>,
    drawer: Option<Drawer>,
}

struct Drawer {
    /// Dropped (or sent to) when the work is done: the thread clears the bar and ends.
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

impl Progress {
    /// Start counting `total` units named `unit` ("rows", "samples"); a bar on stderr after
    /// [`SHOW_AFTER`] if stderr is a terminal.
    ///
    /// Where stderr is not a terminal, nothing is counted and nothing is allocated: a lab
    /// run under a tight memory limit (`ulimit -v`) must not fail on the bar's few bytes
    /// once its image has taken what there was.
    pub fn start(total: u64, unit: &'static str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress {
                done: None,
                drawer: None,
            };
        }
        Progress::drawn_on(ProgressDrawTarget::stderr(), total, unit, SHOW_AFTER)
    }

    /// Start counting, with the bar drawn on `target` after `delay` (unless `target` is
    /// hidden).
    fn drawn_on(
        target: ProgressDrawTarget,
        total: u64,
        unit: &'static str,
        delay: Duration,
    ) -> Progress {
        if target.is_hidden() {
            return Progress {
                done: None,
                drawer: None,
            };
        }
        let done = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = mpsc::channel();
        let count = Arc::clone(&done);
        // A thread that cannot start costs the bar, not the run.
        let drawer = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || draw(target, total, unit, delay, &count, stopped))
            .ok()
            .map(|thread| Drawer { stop, thread });
        Progress {
            done: Some(done),
            drawer,
        }
    }

    /// Count `units` more done. Callable from every worker thread at once.
    #[inline]
    pub fn add(&self, units: u64) {
        // Relaxed: the drawer needs an up-to-date count, not an order with other memory.
        if let Some(done) = &self.done {
            done.fetch_add(units, Ordering::Relaxed);
        }
    }

    /// The work is done: clear the bar, if one was drawn.
    pub fn finish(self) {}
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(Drawer { stop, thread }) = self.drawer.take() {
            drop(stop);
            // A drawer that panicked has nothing left to clear.
            let _ = thread.join();
        }
    }
}

/// The drawing thread: wait `delay`, then draw `done` of `total` every [`REFRESH`] until told
/// to stop, and clear the bar.
fn draw(
    target: ProgressDrawTarget,
    total: u64,
    unit: &'static str,
    delay: Duration,
    done: &AtomicU64,
    stopped: mpsc::Receiver<()>,
) {
    let finished = |wait| !matches!(stopped.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
    if finished(delay) {
        return;
    }
    let bar = ProgressBar::with_draw_target(Some(total), target).with_elapsed(delay);
    // No estimate of the time left: rows through the set cost hundreds of times more than
    // rows outside it, and indicatif's estimate said "0s left" with most of a run to go.
    let template = format!("{{bar:40}} {{percent:>3}}% of {{human_len}} {unit} in {{elapsed}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    loop {
        bar.set_position(done.load(Ordering::Relaxed));
        if finished(REFRESH) {
            break;
        }
    }
    bar.finish_and_clear();
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io;
    use std::sync::Mutex;

    use indicatif::TermLike;

    use super::*;

    /// A terminal that keeps what is drawn on it.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl Screen {
        fn text(&self) -> String {
            self.0.lock().unwrap().clone()
        }
        fn put(&self, s: &str) -> io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            Ok(())
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            100
        }
        fn move_cursor_up(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> io::Result<()> {
            self.put(&format!("{s}\n"))
        }
        fn write_str(&self, s: &str) -> io::Result<()> {
            self.put(s)
        }
        fn clear_line(&self) -> io::Result<()> {
            self.put("<clear>")
        }
        fn flush(&self) -> io::Result<()> {
            Ok(())
        }
    }

    fn on_screen(total: u64, delay: Duration) -> (Screen, Progress) {
        let screen = Screen::default();
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        (screen, Progress::drawn_on(target, total, "rows", delay))
    }

    #[test]
    fn a_run_shorter_than_the_delay_draws_nothing() {
        let (screen, progress) = on_screen(10, Duration::from_secs(60));
        progress.add(10);
        progress.finish();
        assert_eq!(screen.text(), "");
    }

    #[test]
    fn a_long_run_shows_the_count_of_every_thread_then_clears_it() {
        let (screen, progress) = on_screen(400, Duration::ZERO);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..50).for_each(|_| progress.add(1)));
            }
        });
        // Within a refresh or two (a loaded machine gets ten seconds), the count of all four
        // threads is drawn.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !screen.text().contains(" 50% of 400 rows") && std::time::Instant::now() < deadline {
            std::thread::sleep(REFRESH / 5);
        }
        let drawn = screen.text();
        assert!(drawn.contains(" 50% of 400 rows"), "{drawn:?}");
        progress.finish();
        let cleared = screen.text();
        assert!(cleared.ends_with("<clear>"), "{cleared:?}");
    }

    #[test]
    fn a_hidden_target_starts_no_thread() {
        let progress = Progress::drawn_on(ProgressDrawTarget::hidden(), 10, "rows", Duration::ZERO);
        assert!(progress.drawer.is_none());
        progress.add(1);
    }
}
