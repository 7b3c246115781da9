//! The `annals` command line, run as a real process.
