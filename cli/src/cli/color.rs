//! Whether the command line writes colour, decided in this one place for everything that
//! could: clap's help and usage errors, and the spans `-v` prints (`trace.rs`). Progress bars
//! (`progress.rs`) draw without colour, and what a command prints as its result never has any.
//!
//! `--color auto` (the default) colours a stream only when it is a terminal and `NO_COLOR` is
//! unset or empty (no-color.org) and `TERM` is not `dumb`; `--color always` and `never` say so
//! whatever the stream, as ripgrep's and git's do. Nothing here writes anything.

use std::ffi::OsString;
use std::io::IsTerminal;

use clap::ColorChoice;
use clap::ValueEnum;
use clap::builder::styling::{AnsiColor, Effects, Styles};

/// How help and usage errors look when coloured: headings and names in bold colour, values
/// to fill in in plain colour, as cargo's help looks.
pub(crate) const STYLES: Styles = Styles::styled()
    .header(AnsiColor::Green.on_default().effects(Effects::BOLD))
    .usage(AnsiColor::Green.on_default().effects(Effects::BOLD))
    .literal(AnsiColor::Cyan.on_default().effects(Effects::BOLD))
    .placeholder(AnsiColor::Cyan.on_default())
    .error(AnsiColor::Red.on_default().effects(Effects::BOLD))
    .valid(AnsiColor::Cyan.on_default().effects(Effects::BOLD))
    .invalid(AnsiColor::Yellow.on_default().effects(Effects::BOLD));

/// Whether to colour what goes to `stream`, given `--color`'s `choice`.
pub(crate) fn enabled(choice: ColorChoice, stream: &impl IsTerminal) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            auto_allows(std::env::var_os("NO_COLOR"), std::env::var_os("TERM"))
                && stream.is_terminal()
        }
    }
}

/// Whether the environment lets `--color auto` colour a terminal: not when `NO_COLOR` holds
/// anything (an empty value counts as unset, as no-color.org says), nor on a `dumb` terminal.
fn auto_allows(no_color: Option<OsString>, term: Option<OsString>) -> bool {
    let no_color = no_color.is_some_and(|value| !value.is_empty());
    let dumb = term.is_some_and(|term| term == "dumb");
    !no_color && !dumb
}

/// `--color`'s value among the process's arguments, for what clap writes before the
/// arguments parse (help, usage errors): the last one given wins, as clap's would; a value
/// clap would refuse counts as `auto` (clap then says what is wrong with it).
pub(crate) fn asked() -> ColorChoice {
    choice_among(std::env::args_os().skip(1))
}

fn choice_among(arguments: impl Iterator<Item = OsString>) -> ColorChoice {
    let mut choice = ColorChoice::Auto;
    let mut arguments = arguments.take_while(|argument| argument != "--");
    while let Some(argument) = arguments.next() {
        let value = if argument == "--color" {
            arguments.next()
        } else {
            argument
                .to_str()
                .and_then(|text| text.strip_prefix("--color="))
                .map(OsString::from)
        };
        if let Some(value) = value {
            choice = value
                .to_str()
                .and_then(|text| ColorChoice::from_str(text, false).ok())
                .unwrap_or(ColorChoice::Auto);
        }
    }
    choice
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(arguments: &[&str], expected: ColorChoice) {
        let arguments = arguments.iter().map(OsString::from);
        assert_eq!(choice_among(arguments), expected);
    }

    #[test]
    fn color_flag_is_found_in_either_spelling_and_the_last_wins() {
        check(&["log", "db"], ColorChoice::Auto);
        check(&["--color", "never", "log"], ColorChoice::Never);
        check(&["log", "--color=always"], ColorChoice::Always);
        check(&["--color=never", "--color", "always"], ColorChoice::Always);
        check(&["--color", "purple"], ColorChoice::Auto);
        check(
            &["append", "db", "s", "k", "--", "--color=never"],
            ColorChoice::Auto,
        );
    }

    #[test]
    fn no_color_with_any_value_but_empty_turns_auto_off() {
        let some = |text: &str| Some(OsString::from(text));
        assert!(auto_allows(None, some("xterm-256color")));
        assert!(auto_allows(some(""), None));
        assert!(!auto_allows(some("1"), None));
        assert!(!auto_allows(some("0"), some("xterm")));
        assert!(!auto_allows(None, some("dumb")));
    }
}
