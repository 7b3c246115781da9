//! How the writing commands open a log that another process may hold: in the asked sharing
//! mode, joining writers that hold it in multi-writer mode, and otherwise waiting up to
//! `--wait` for the holder to close it before giving up with a message that says who holds
//! it and what to do.

use std::path::Path;
use std::time::Duration;

use clap::Args;

use super::failure::{Failure, Kind};
use annals::{Error, error::OpenError};
use annals::{Sharing, Store, StoreOptions, error::Holder};

/// How a writing command opens its log.
#[derive(Args, Clone, Debug)]
pub(crate) struct WriteAccess {
    /// How to share the log with other processes: `single-writer` (readers may open it
    /// beside this command), `multi-writer` (other writers too) or `exclusive`. A log that
    /// writers hold in multi-writer mode is joined in that mode whatever this says.
    #[arg(long, default_value = "single-writer")]
    pub(crate) sharing: Sharing,
    /// How long to wait for another process to let go of the log, e.g. `5s`, `250ms`, `2m`.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub(crate) wait: Duration,
}

/// Opens `path` for writing as `access` says, creating it when `create` is set.
pub(crate) fn open_for_writing(
    path: &Path,
    create: bool,
    access: &WriteAccess,
) -> Result<Store, Failure> {
    open_with_archives(path, create, access, &[])
}

/// [`open_for_writing`] with the archive files of a cut log's cuts, from which the open
/// replays a projection the last cut kept no snapshot of (`StoreOptions::archives`).
pub(crate) fn open_with_archives(
    path: &Path,
    create: bool,
    access: &WriteAccess,
    archives: &[std::path::PathBuf],
) -> Result<Store, Failure> {
    // Creating a log over a directory fails deep in redb with no path; say it here.
    if let Some(failure) = super::failure::diagnose(path, false) {
        return Err(failure);
    }
    require_folder(path)?;
    joining(access, |sharing| {
        let options = StoreOptions {
            create,
            sharing,
            busy_timeout: access.wait,
            archives: archives.to_vec(),
            ..StoreOptions::default()
        };
        Store::open_with(path, options)
    })
}

/// Refuses a log path in a folder that does not exist, naming the folder: creating a log
/// there fails deep in redb, in words that name no path.
pub(crate) fn require_folder(path: &Path) -> Result<(), Failure> {
    match path
        .parent()
        .filter(|folder| !folder.as_os_str().is_empty())
    {
        Some(folder) if !folder.is_dir() => Err(Failure::of(
            Kind::NotFound,
            format!("{}: no such folder", folder.display()),
        )),
        _ => Ok(()),
    }
}

/// Runs `open` in the asked sharing mode, and again in multi-writer mode when writers hold
/// the log in that mode; a log still held is a usage failure that says by whom and what to do.
pub(crate) fn joining<T>(
    access: &WriteAccess,
    mut open: impl FnMut(Sharing) -> annals::Result<T>,
) -> Result<T, Failure> {
    let held = match open(access.sharing) {
        Err(Error::Open(OpenError::Held {
            holder: Holder::MultiWriter,
            ..
        })) if access.sharing != Sharing::MultiWriter => open(Sharing::MultiWriter),
        other => other,
    };
    match held {
        Err(Error::Open(held @ OpenError::Held { .. })) => Err(Failure::of(
            Kind::Held,
            format!(
                "{held}; waited {} (--wait sets how long)",
                describe(access.wait)
            ),
        )),
        other => other.map_err(Failure::from),
    }
}

/// `5s`, `250ms`, `2m`, `1h`, or a number of seconds.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    let amount: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 5s, 250ms or 2m"))?;
    let millis = match unit {
        "ms" => Some(amount),
        "" | "s" => amount.checked_mul(1_000),
        "m" => amount.checked_mul(60_000),
        "h" => amount.checked_mul(3_600_000),
        _ => return Err(format!("{text:?}: the unit must be ms, s, m or h")),
    };
    millis
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is too long a duration"))
}

fn describe(duration: Duration) -> String {
    match duration.as_millis() {
        millis if millis % 1_000 == 0 => format!("{}s", millis / 1_000),
        millis => format!("{millis}ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_units_and_refuse_anything_else() {
        let check = |text: &str, expected: Option<u64>| {
            assert_eq!(
                parse_duration(text).ok().map(|d| d.as_millis() as u64),
                expected,
                "{text}"
            );
        };
        check("5s", Some(5_000));
        check("250ms", Some(250));
        check("2m", Some(120_000));
        check("1h", Some(3_600_000));
        check("7", Some(7_000));
        check("0s", Some(0));
        check("", None);
        check("5x", None);
        check("-1s", None);
        check("s", None);
        check("99999999999999999999h", None);
    }
}
