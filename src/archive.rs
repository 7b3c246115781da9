//! Cutting a log and keeping what was cut: [`Archives::archive_before`] writes a prefix of the
//! log to an archive file ([`ArchiveOptions`], [`ArchiveReport`]) and cuts the log there,
//! keeping the state later work needs ([`Cut`], [`CutProjection`]); [`Archives`] then checks
//! and verifies the archives and reads their records back ([`ArchivedRecords`]). Retention
//! is its own module because a cut changes what the log holds, where the other work of
//! operators ([`crate::maintenance`]) leaves its records as they are.
//!
//! Only names: the code lives in the store (`src/store/archive.rs`) and never imports this
//! module.

pub use crate::store::{
    ArchiveOptions, ArchiveReport, ArchivedRecords, Archives, Cut, CutProjection,
};
