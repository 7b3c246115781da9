//! Projections: tables derived from the log, updated in the same write transaction as each
//! append and rebuilt exactly by replaying it.
//!
//! This module owns the [`Projection`] trait, the checkpoint of each projection, applying
//! records to every projection, catching up and rebuilding, and the canonical digest of a
//! projection's tables. It knows no specific domain.
//!
//! The determinism rule: [`Projection::apply`] is a function of the record and the
//! projection's own tables only. It reads no clock, no environment, no randomness, and
//! writes rows whose bytes do not depend on hash-map iteration order. That is what makes a
//! replay reproduce the tables byte for byte, and what `verify` checks.

pub(crate) mod digest;
pub(crate) mod key;
pub mod shown;
pub(crate) mod table;

use std::fmt;
use std::sync::Arc;

use crate::storage::{Readable, Writer};

pub use crate::error::ProjectionError;
use crate::error::Result;
pub use crate::error::spelling::grouped;
use crate::event::EventKind;
use crate::hash::hex;
use crate::record::Record;
pub use key::KeyCodec;
use table::TransactionTables;
pub use table::{RawRow, ReadTables, Table, TableSource, WriteTables};

/// `tables`, a projection's typed rows, as the JSON `annals state` prints
/// ([`Projection::state_json`]).
pub(crate) fn state_value<T: serde::Serialize>(tables: &T) -> serde_json::Value {
    // Rows whose maps have string keys always make a value, as `serde_json::json!` takes of
    // what it is given: a failure is the crate's own mistake.
    serde_json::to_value(tables).expect("a projection's rows have string keys")
}

// The checkpoint table is the log's (`log/checkpoints.rs`): the log reads it for
// `Snapshot::checkpoint` without knowing any projection.
pub use crate::log::checkpoints::Checkpoint;
pub(crate) use crate::log::checkpoints::{
    AT_HEAD, CHECKPOINT_VALUE_BYTES, CHECKPOINTS, resolve_checkpoint, seal_checkpoint,
    unseal_checkpoint,
};

/// A table set derived from the log.
///
/// ```
/// use annals::projection::{Projection, Table, WriteTables};
/// use annals::{Record, Result};
///
/// /// Counts records per kind.
/// struct KindCounts;
/// const COUNTS: Table<String, u64> = Table::new("kind_counts.counts");
///
/// impl Projection for KindCounts {
///     fn name(&self) -> &'static str { "kind_counts" }
///     fn version(&self) -> u32 { 1 }
///     fn tables(&self) -> &'static [&'static str] { &["kind_counts.counts"] }
///     fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
///         let count = COUNTS.get(tables, &record.kind)?.unwrap_or(0);
///         COUNTS.insert(tables, &record.kind, &(count + 1))
///     }
/// }
/// ```
pub trait Projection: Send + Sync + 'static {
    /// Unique name; the prefix of its tables (`<name>.<table>`).
    fn name(&self) -> &'static str;
    /// Bump it when `apply` changes meaning: on open, a projection whose checkpoint was built
    /// by another version is rebuilt from the log.
    fn version(&self) -> u32;
    /// The tables it owns, all named `<name>.<something>`. They are cleared on rebuild and
    /// digested by `verify`.
    fn tables(&self) -> &'static [&'static str];
    /// The kind prefix (e.g. `lease.`) whose events only this projection's commands may
    /// append; raw appends of such kinds are refused. `None`: it owns no kinds.
    fn owned_kinds(&self) -> Option<&'static str> {
        None
    }
    /// Every event kind it owns with the payload schema version written now; `schema/EVENTS.md`
    /// must list exactly these. Empty for a projection that owns no kinds.
    fn catalogue(&self) -> &'static [EventKind] {
        &[]
    }
    /// The kinds of entity whose history it can name (`lease:<resource>`): how
    /// [`crate::audit::Entity::parse_among`] maps a name to the streams this projection's
    /// commands write. The default names none.
    fn entities(&self) -> &'static [EntityKind] {
        &[]
    }
    /// Refuses `record` when it is of this projection's kinds and its payload does not
    /// decode ([`crate::Error::UndecodableEvent`]): what [`Self::apply`] would refuse of the
    /// record alone, told without a table. An import asks it of every record before it opens
    /// the log for writing, so that such a file is refused with the log's bytes as they were.
    /// The default refuses nothing (`apply` still decides).
    fn check_payload(&self, record: &Record) -> Result<()> {
        let _ = record;
        Ok(())
    }
    /// Applies one record. Must ignore kinds it does not know, read nothing but `record` and
    /// its own tables, and be deterministic.
    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()>;
    /// Every row as JSON, in key order: what `annals state` prints. The default shows each
    /// table's keys and values in hex; the built-in projections show typed rows.
    fn state_json(&self, state: &dyn TableSource) -> Result<serde_json::Value> {
        let mut tables = serde_json::Map::new();
        for table in self.tables() {
            let rows = state.range_raw(
                table,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                crate::log::read::Direction::Forward,
                usize::MAX,
            )?;
            let rows = rows
                .iter()
                .map(|(key, value)| serde_json::json!({ "key": hex(key), "value": hex(value) }))
                .collect();
            tables.insert((*table).to_owned(), serde_json::Value::Array(rows));
        }
        Ok(serde_json::Value::Object(tables))
    }

    /// The tables `annals state` shows, their columns named, rows decoded through their types
    /// ([`shown`]). The default shows none: a projection of one's own is shown by
    /// [`Self::state_json`].
    fn shown_tables(&self) -> Vec<shown::ShownTable> {
        Vec::new()
    }

    /// Calls `found` with each log position below `below` that a row of its tables points
    /// at and its queries read back ([`TableSource::log_record`]): a cut keeps those records
    /// readable while it archives the rest. The default: its rows point at no record.
    fn records_read(
        &self,
        state: &dyn TableSource,
        below: crate::Position,
        found: &mut dyn FnMut(crate::Position),
    ) -> Result<()> {
        let _ = (state, below, found);
        Ok(())
    }

    /// Deletes its tables. The default deletes every table in [`Self::tables`].
    fn clear(&self, tables: &WriteTables<'_>) -> Result<()> {
        for table in self.tables() {
            tables.clear(table)?;
        }
        Ok(())
    }
}

impl fmt::Debug for dyn Projection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Projection({} v{})", self.name(), self.version())
    }
}

/// [`ProjectionError::Invariant`]: `record` breaks `rule` of `projection`, as `detail` says.
pub(crate) fn invariant(
    projection: &str,
    record: &Record,
    rule: &'static str,
    detail: String,
) -> crate::error::Error {
    ProjectionError::Invariant {
        projection: projection.to_owned(),
        position: record.position,
        kind: record.kind.clone(),
        rule,
        detail,
    }
    .into()
}

/// A kind of entity a projection names for history: the word before the colon of an entity
/// spec, the names after it, and the streams an entity of the kind is written to.
///
/// ```
/// use annals::projection::EntityKind;
/// const LEASE: EntityKind = EntityKind {
///     kind: "lease",
///     shape: "lease:<resource>",
///     streams: |parts| vec![format!("lease/{}", parts[0])],
/// };
/// assert_eq!(LEASE.parts(), 1);
/// assert_eq!((LEASE.streams)(&["deploy"]), ["lease/deploy"]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct EntityKind {
    /// The word before the colon, e.g. `lease`.
    pub kind: &'static str,
    /// The spec's shape, each name in angle brackets: `lease:<resource>`, or
    /// `lane:<lane>/<key>` for a kind of two names, which a spec separates at its first `/`.
    pub shape: &'static str,
    /// The streams of an entity, from its names (as many as [`EntityKind::parts`]), in order.
    pub streams: fn(&[&str]) -> Vec<String>,
}

impl EntityKind {
    /// How many names an entity of this kind has: those its shape names (one or two).
    pub fn parts(&self) -> usize {
        self.shape.matches('<').count()
    }
}

/// The projections of one store, in registration order.
#[derive(Clone, Default)]
pub struct Projections {
    list: Vec<Arc<dyn Projection>>,
}

impl fmt::Debug for Projections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.list.iter().map(|p| p.name()))
            .finish()
    }
}

impl Projections {
    /// Adds `projection`; refuses a duplicate name or a table outside its `<name>.` prefix.
    pub(crate) fn register(&mut self, projection: Arc<dyn Projection>) -> Result<()> {
        let name = projection.name();
        let valid_name = !name.is_empty()
            && name != "annals"
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid_name {
            return Err(ProjectionError::InvalidName {
                name: name.to_owned(),
            }
            .into());
        }
        if self.get(name).is_some() {
            return Err(ProjectionError::Duplicate {
                name: name.to_owned(),
            }
            .into());
        }
        let prefix = format!("{name}.");
        if let Some(table) = projection.tables().iter().find(|t| !t.starts_with(&prefix)) {
            return Err(ProjectionError::TableOutsidePrefix {
                projection: name.to_owned(),
                table: (*table).to_owned(),
            }
            .into());
        }
        let registered = self.list.len();
        self.list.push(projection);
        // Names are unique: the one just registered is the one its name finds.
        debug_assert!(
            self.list.len() == registered + 1
                && self
                    .get(name)
                    .is_some_and(|found| Arc::ptr_eq(found, &self.list[registered])),
            "projection {name:?} registered once, found by its name"
        );
        Ok(())
    }

    /// The projection called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Projection>> {
        self.list.iter().find(|p| p.name() == name)
    }

    /// Every projection, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Projection>> {
        self.list.iter()
    }

    /// These projections but the ones named in `names`.
    pub(crate) fn without(&self, names: &[String]) -> Projections {
        Projections {
            list: self
                .list
                .iter()
                .filter(|p| !names.iter().any(|name| name == p.name()))
                .cloned()
                .collect(),
        }
    }

    /// The projection that owns `kind`, if any.
    pub fn owner_of_kind(&self, kind: &str) -> Option<&'static str> {
        self.list
            .iter()
            .find(|p| {
                p.owned_kinds()
                    .is_some_and(|prefix| kind.starts_with(prefix))
            })
            .map(|p| p.name())
    }

    /// Refuses a raw append (one no command decided) of a kind a projection owns
    /// ([`crate::error::StoreError::ReservedKind`]), of the log's cut record
    /// ([`crate::error::StoreError::CutKind`]) or erasure record
    /// ([`crate::error::StoreError::ErasureKind`], [`crate::error::StoreError::ErasureStream`]): only their
    /// commands append those. A plain
    /// payload that begins like a personal envelope is refused too
    /// ([`crate::error::ErasureError::EnvelopeMagic`]).
    pub(crate) fn check_raw_kinds(
        &self,
        stream: &str,
        events: &[crate::record::NewEvent],
    ) -> Result<()> {
        if stream.starts_with(crate::record::envelope::ERASURE_STREAM_PREFIX) {
            return Err(crate::error::StoreError::ErasureStream {
                stream: stream.to_owned(),
            }
            .into());
        }
        for (index, event) in events.iter().enumerate() {
            // A plain payload read back as a personal envelope would be misread.
            if event
                .payload
                .starts_with(&crate::record::envelope::ENVELOPE_MAGIC)
            {
                return Err(crate::error::ErasureError::EnvelopeMagic { index }.into());
            }
            if event.kind == crate::log::cut::CUT_KIND {
                return Err(crate::error::StoreError::CutKind {
                    kind: event.kind.clone(),
                }
                .into());
            }
            if event.kind == crate::record::envelope::ERASED_KIND {
                return Err(crate::error::StoreError::ErasureKind {
                    kind: event.kind.clone(),
                }
                .into());
            }
            if let Some(projection) = self.owner_of_kind(&event.kind) {
                return Err(crate::error::StoreError::ReservedKind {
                    kind: event.kind.clone(),
                    projection: projection.to_owned(),
                }
                .into());
            }
        }
        Ok(())
    }

    /// Refuses a record whose payload a projection would refuse to decode when applying it
    /// ([`Projection::check_payload`]), before any table is touched.
    pub(crate) fn check_payload(&self, record: &Record) -> Result<()> {
        self.list
            .iter()
            .try_for_each(|projection| projection.check_payload(record))
    }

    /// Applies `record` to every projection, each seeing only its own tables.
    pub(crate) fn apply(&self, tables: &TransactionTables<'_>, record: &Record) -> Result<()> {
        for projection in &self.list {
            projection.apply(&tables.scoped(projection.as_ref()), record)?;
        }
        Ok(())
    }

    /// Whether every projection's checkpoint follows the head at its own version in `txn`,
    /// as [`Projections::advance_checkpoints`] leaves them: what a session told so
    /// ([`crate::store::WriteSession`]'s `checkpoints_follow`) takes on trust. For assertions.
    pub(crate) fn all_follow(&self, txn: &Writer<'_>) -> Result<bool> {
        for projection in &self.list {
            if checkpoint_stored(txn, projection.name())? != Some((projection.version(), AT_HEAD)) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Records that every projection has applied everything the transaction appended (and,
    /// being up to date when it began, everything before): each follows the head. Writes only
    /// a checkpoint that does not say so already; whether every one said so already.
    pub(crate) fn advance_checkpoints(&self, txn: &Writer<'_>) -> Result<bool> {
        let mut table = CHECKPOINTS.write(txn)?;
        let mut all_following = true;
        for projection in &self.list {
            let following = (projection.version(), AT_HEAD);
            let stored = match table.get(projection.name())? {
                Some(stored) => Some(unseal_checkpoint(projection.name(), &stored.value())?),
                None => None,
            };
            if stored != Some(following) {
                all_following = false;
                table.insert(
                    projection.name(),
                    seal_checkpoint(projection.name(), following),
                )?;
            }
        }
        drop(table);
        // Every projection of the store now follows the head at its own version.
        debug_assert!(
            self.all_follow(txn).unwrap_or(false),
            "each checkpoint follows the head after an advance"
        );
        Ok(all_following)
    }
}

/// The checkpoint of `name` in `txn`, `None` if it has none.
pub(crate) fn checkpoint(txn: &Writer<'_>, name: &str) -> Result<Option<Checkpoint>> {
    let head = crate::log::read::Snapshot::head_in(txn)?.next;
    let table = CHECKPOINTS.write(txn)?;
    match table.get(name)? {
        Some(stored) => Ok(Some(resolve_checkpoint(
            unseal_checkpoint(name, &stored.value())?,
            head,
        ))),
        None => Ok(None),
    }
}

/// Sets the checkpoint of one projection.
pub(crate) fn set_checkpoint(txn: &Writer<'_>, name: &str, checkpoint: Checkpoint) -> Result<()> {
    // A checkpoint names a position of the log: at most its head (`AT_HEAD` is no position).
    assert!(
        checkpoint.next.0 != AT_HEAD,
        "a checkpoint set at a position names one"
    );
    CHECKPOINTS.write(txn)?.insert(
        name,
        seal_checkpoint(name, (checkpoint.version, checkpoint.next.0)),
    )?;
    debug_assert_eq!(
        checkpoint_stored(txn, name)?,
        Some((checkpoint.version, checkpoint.next.0)),
        "a checkpoint set reads back"
    );
    Ok(())
}

/// The checkpoint of `name` as stored, its position unresolved.
fn checkpoint_stored(txn: &Writer<'_>, name: &str) -> Result<Option<(u32, u64)>> {
    match CHECKPOINTS.write(txn)?.get(name)? {
        Some(stored) => Ok(Some(unseal_checkpoint(name, &stored.value())?)),
        None => Ok(None),
    }
}
