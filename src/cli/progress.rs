//! The progress line: a bar on standard error while a long command runs. It draws only to a
//! terminal and never writes to standard output, so it never changes what a command prints.

use std::io::{self, IsTerminal, Write};

/// A one-line progress bar on standard error for long operations, drawn only when standard
/// error is a terminal (never into a pipe or a file), redrawn only when its percentage moves.
pub(crate) struct ProgressLine {
    label: &'static str,
    total: u64,
    enabled: bool,
    shown_percent: Option<u64>,
}

/// Characters of the bar between its brackets.
const PROGRESS_BAR_WIDTH: u64 = 30;

impl ProgressLine {
    pub(crate) fn new(label: &'static str, total: u64) -> ProgressLine {
        ProgressLine {
            label,
            total,
            enabled: total > 0 && io::stderr().is_terminal(),
            shown_percent: None,
        }
    }

    pub(crate) fn update(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        let done = done.min(self.total);
        let percent = done * 100 / self.total;
        if self.shown_percent == Some(percent) {
            return;
        }
        self.shown_percent = Some(percent);
        let filled = (done * PROGRESS_BAR_WIDTH / self.total) as usize;
        let empty = PROGRESS_BAR_WIDTH as usize - filled;
        let mut err = io::stderr().lock();
        // A failure to draw progress is not a failure of the operation.
        let _ = write!(
            err,
            "\r{} [{}{}] {percent:>3}% {done}/{}",
            self.label,
            "#".repeat(filled),
            "-".repeat(empty),
            self.total
        );
        let _ = err.flush();
    }

    /// Erases the line, if one was drawn.
    pub(crate) fn finish(&mut self) {
        if self.shown_percent.take().is_some() {
            let mut err = io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
