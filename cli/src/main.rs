//! The `annals` binary: the command line of an annals log file. It is a client of the
//! `annals` crate's public API and holds no rule of its own; see `cli/mod.rs`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
