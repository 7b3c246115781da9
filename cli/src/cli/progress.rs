//! Progress bars on standard error while a long command runs (`demo`, `import`, `export`,
//! `rebuild`, `verify`, `compact`), drawn by indicatif. A bar draws only when standard error is a
//! terminal, never into a pipe or a file, and never to standard output, so it never changes
//! what a command prints.

use std::io::{self, IsTerminal};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a bar may redraw: often enough to look alive, rarely enough that a command
/// reporting after every few records spends nothing on drawing.
const REDRAWS_PER_SECOND: u8 = 10;

/// A progress bar on standard error counting records: hidden unless standard error is a
/// terminal.
pub(crate) struct ProgressLine {
    bar: ProgressBar,
}

impl ProgressLine {
    /// A bar labelled `label` counting up to `total` records.
    pub(crate) fn new(label: &'static str, total: u64) -> ProgressLine {
        let target = if total > 0 && io::stderr().is_terminal() {
            ProgressDrawTarget::stderr_with_hz(REDRAWS_PER_SECOND)
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        // The template is a constant; should indicatif ever refuse it, the default style
        // still shows the count.
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix:>8} [{bar:30}] {percent:>3}% {human_pos}/{human_len} records, {elapsed} elapsed, {eta} left",
        ) {
            bar.set_style(style.progress_chars("#>-"));
        }
        bar.set_prefix(label);
        // A steady tick keeps the elapsed time and rate moving between reports.
        bar.enable_steady_tick(Duration::from_millis(1_000 / u64::from(REDRAWS_PER_SECOND)));
        ProgressLine { bar }
    }

    /// A bar labelled `label` counting up to `total` bytes.
    pub(crate) fn bytes(label: &'static str, total: u64) -> ProgressLine {
        let line = ProgressLine::new(label, total);
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix:>8} [{bar:30}] {percent:>3}% {bytes}/{total_bytes}, {elapsed} elapsed, {eta} left",
        ) {
            line.bar.set_style(style.progress_chars("#>-"));
        }
        line
    }

    /// A handle on the bar, for a thread that reports while this one waits on the work.
    pub(crate) fn handle(&self) -> ProgressBar {
        self.bar.clone()
    }

    /// Sets the records done so far.
    pub(crate) fn update(&mut self, done: u64) {
        self.bar.set_position(done);
    }

    /// Erases the bar, if one was drawn.
    pub(crate) fn finish(&mut self) {
        if !self.bar.is_finished() {
            self.bar.finish_and_clear();
        }
    }
}

impl Drop for ProgressLine {
    /// A command that stops early (an error, `?`) leaves no bar behind on the terminal.
    fn drop(&mut self) {
        self.finish();
    }
}
