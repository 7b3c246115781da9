//! An operator's work on a log, beside the appends and reads of the program that owns it:
//! copying it whole ([`Backup`]), giving free pages back ([`Compaction`]), bringing an export
//! in ([`Import`], [`ImportStage`]), rebuilding the projections ([`Rebuild`]), measuring it
//! ([`Stats`], [`Footprint`], [`TableFootprint`]), and publishing its head (signed
//! [`Checkpoints`], static [`Tiles`] and [`TilesWritten`]); and what a tool beside the library
//! asks before it opens a log: whether a writer holds the file ([`held_by_writer`]), which
//! projections a log is made with ([`builtin_projections`]), and whether an append would be
//! taken by a log not yet made ([`check_append_to_new_log`]). Each type is made from a
//! [`Store`](crate::Store) or a path; none of it changes a record (cutting a log is
//! [`crate::archive`]'s).
//!
//! Only names: the code lives in the store (`src/store/`) and never imports this module.

pub use crate::store::{
    Backup, Checkpoints, Compaction, Footprint, Import, ImportStage, Rebuild, Stats,
    TableFootprint, Tiles, TilesWritten, builtin_projections, check_append_to_new_log,
    held_by_writer,
};
