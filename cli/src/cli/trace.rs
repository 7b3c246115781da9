//! `-v`: the library's tracing spans (commits, batches, catch-up, rebuild, verify, import)
//! printed to standard error as each closes, with its duration. Standard output never
//! carries them, so `-v` changes nothing a program reads there.

use tracing_subscriber::fmt::format::FmtSpan;

/// Installs the subscriber for `-v` (info: rebuild, verify, import, catch-up) or `-vv` and
/// more (debug: every commit and batch too); without `-v`, none, and spans cost one check.
/// `color` says whether to colour them (`color.rs` decides).
pub(crate) fn init(verbose: u8, color: bool) {
    let level = match verbose {
        0 => return,
        1 => tracing::Level::INFO,
        2 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    // `try_init` fails only when a subscriber is already set, which leaves that one in place.
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false)
        // Its own complaint about a failed write goes through `eprintln!`, which panics on a
        // closed standard error (`annals -vv follow ... 2>&1 | head`): a span that cannot be
        // printed is dropped, and the command's own output ends it quietly.
        .log_internal_errors(false)
        // Colours only for a person at a terminal, never into a log file.
        .with_ansi(color)
        .try_init();
}
