//! The `annals` binary: everything it does is in `annals::cli`, built with the `cli` feature.

fn main() -> std::process::ExitCode {
    annals::cli::main()
}
