//! `state`: a projection's tables as people read them, or as JSON lines, one row a line.
//!
//! Rows are read a page at a time from the projection's own tables and decoded through each
//! table's types ([`Table`]), so memory stays flat however many rows there are: nothing here
//! collects a table. Shown are the tables that hold a projection's state; its index tables
//! (`by_…`, `due`, `open_…`) repeat what those say in another order.

use std::io::{self, BufWriter, Write};
use std::ops::Bound;
use std::process::ExitCode;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::Failure;
use super::args::StateArgs;
use super::progress::ProgressLine;
use super::render::print_json;
use super::table::{OrderedRow, Row, Widths, fields};
use crate::error::{AuditError, Error};
use crate::ingest;
use crate::log::read::Direction;
use crate::projection::key::{KeyCodec, key_from_bytes};
use crate::projection::{Table, TableSource};
use crate::record::{Position, decode_bounded};
use crate::{consumers, leases, outbox, registry, runs};

/// Rows read from redb per page: enough to amortise a range read, few enough to keep memory
/// flat.
const PAGE_ROWS: usize = 512;

/// A table `state` shows: its rows decoded through its key and value types.
trait Rows: Sync {
    /// The table's name, e.g. `leases.held`.
    fn name(&self) -> &'static str;
    /// Calls `visit` with each row in key order, until it returns `false`.
    fn scan(
        &self,
        source: &dyn TableSource,
        columns: &Columns,
        visit: &mut dyn FnMut(Row) -> Result<bool, Failure>,
    ) -> Result<(), Failure>;
}

/// What a table's columns are called: one name per part of its key, and the name of the
/// value when it is not a struct.
struct Columns {
    key: &'static [&'static str],
    value: &'static str,
}

impl<K: KeyCodec + Serialize, V: Serialize + DeserializeOwned> Rows for Table<K, V> {
    fn name(&self) -> &'static str {
        Table::name(self)
    }

    fn scan(
        &self,
        source: &dyn TableSource,
        columns: &Columns,
        visit: &mut dyn FnMut(Row) -> Result<bool, Failure>,
    ) -> Result<(), Failure> {
        scan_shown::<K, V, V>(Table::name(self), source, columns, visit, |_, value| {
            Ok(value)
        })
    }
}

/// A table whose rows point into the log, shown as what they point at: each row read back
/// through `resolve` (a span event's row holds its record's position).
struct Resolved<K, V, T> {
    table: Table<K, V>,
    resolve: fn(&dyn TableSource, K, V) -> crate::error::Result<T>,
}

impl<K: KeyCodec + Serialize, V: Serialize + DeserializeOwned, T: Serialize> Rows
    for Resolved<K, V, T>
{
    fn name(&self) -> &'static str {
        Rows::name(&self.table)
    }

    fn scan(
        &self,
        source: &dyn TableSource,
        columns: &Columns,
        visit: &mut dyn FnMut(Row) -> Result<bool, Failure>,
    ) -> Result<(), Failure> {
        scan_shown::<K, V, T>(self.name(), source, columns, visit, |key, value| {
            Ok((self.resolve)(source, key, value)?)
        })
    }
}

/// `runs.events`, each row shown as the span event its record holds.
static RUN_EVENTS: Resolved<(String, String, u64), u64, runs::SpanEvent> = Resolved {
    table: runs::query::EVENTS,
    resolve: runs::query::event_at,
};

/// Calls `visit` with each row of the table `table` (keys `K`, values `V`) in key order, its
/// value shown as `show` makes it, until `visit` returns `false`.
fn scan_shown<K: KeyCodec + Serialize, V: DeserializeOwned, T: Serialize>(
    table: &'static str,
    source: &dyn TableSource,
    columns: &Columns,
    visit: &mut dyn FnMut(Row) -> Result<bool, Failure>,
    show: impl Fn(K, V) -> Result<T, Failure>,
) -> Result<(), Failure> {
    let corrupt = |detail: String| {
        Failure::from(Error::CorruptProjection {
            table: table.to_owned(),
            detail,
        })
    };
    let mut after: Option<Vec<u8>> = None;
    let mut walked = 0u64;
    loop {
        let lower = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let page = source.range_raw(
            table,
            lower,
            Bound::Unbounded,
            Direction::Forward,
            PAGE_ROWS,
        )?;
        walked += page.len() as u64;
        if page.len() < PAGE_ROWS {
            // The rows printed below must be the whole table: a damaged page of redb's can
            // lead the walk past some.
            crate::projection::table::check_walked(source, table, walked)?;
        }
        for (key_bytes, value_bytes) in &page {
            let key: K = key_from_bytes(key_bytes)
                .ok_or_else(|| corrupt("a key does not decode".to_owned()))?;
            let value: V = decode_bounded(value_bytes).map_err(corrupt)?;
            let mut row = key_columns(&key, columns.key)?;
            let shown = show(key, value)?;
            for (name, value) in fields(&shown, columns.value)? {
                // A value that repeats its key shows it once, in the key's column.
                if !row.iter().any(|(column, _)| *column == name) {
                    row.push((name, value));
                }
            }
            if !visit(row)? {
                return Ok(());
            }
        }
        if page.len() < PAGE_ROWS {
            return Ok(());
        }
        after = page.last().map(|(key, _)| key.clone());
    }
}

/// A key as columns: a tuple's parts under `names`, anything else under the first name.
fn key_columns(key: &impl Serialize, names: &[&str]) -> Result<Row, Failure> {
    let value = serde_json::to_value(key)
        .map_err(|error| Failure::Usage(format!("encoding JSON: {error}")))?;
    Ok(match value {
        Value::Array(parts) if names.len() > 1 => names
            .iter()
            .map(|name| (*name).to_owned())
            .zip(parts)
            .collect(),
        Value::Null => Vec::new(),
        single => vec![(names.first().copied().unwrap_or("key").to_owned(), single)],
    })
}

/// The tables `state` shows of each projection, with their column names.
fn tables(projection: &str) -> Option<Vec<(&'static dyn Rows, Columns)>> {
    let columns = |key, value| Columns { key, value };
    Some(match projection {
        "registry" => vec![
            (
                &registry::query::INSTANCES as &dyn Rows,
                columns(&["handle"], "instance"),
            ),
            (&registry::query::SETTINGS, columns(&["key"], "value")),
            (
                &registry::query::FUEL,
                columns(&["instance", "caller", "op"], "fuel"),
            ),
            (
                &registry::query::FUEL_TOTALS,
                columns(&["instance"], "total"),
            ),
        ],
        "leases" => vec![
            (
                &leases::query::HELD as &dyn Rows,
                columns(&["resource"], "lease"),
            ),
            (
                &leases::query::RELEASED_TOKENS,
                columns(&["resource"], "last_token"),
            ),
            (&leases::query::LANES, columns(&["lane", "key"], "lease")),
        ],
        "outbox" => vec![(&outbox::query::ROWS as &dyn Rows, columns(&["key"], "row"))],
        "runs" => vec![
            (
                &runs::query::RUNS as &dyn Rows,
                columns(&["run"], "run_state"),
            ),
            (&runs::query::SPANS, columns(&["run", "span"], "span_state")),
            (&RUN_EVENTS, columns(&["run", "span", "index"], "event")),
            (&runs::query::CHANGES, columns(&["run", "seq"], "change")),
            (&runs::query::ROLLUPS, columns(&["run"], "rollup")),
            (
                &runs::query::OPEN_ROLLUPS,
                columns(&["run"], "rollup_while_open"),
            ),
        ],
        "consumers" => vec![(
            &consumers::query::POSITIONS as &dyn Rows,
            columns(&["consumer"], "checkpoint"),
        )],
        "ingest" => vec![
            (
                &ingest::query::EVENTS as &dyn Rows,
                columns(&["project", "run", "sequence"], "event"),
            ),
            (
                &ingest::query::PROJECTS,
                columns(&["project"], "hub_project"),
            ),
            (&ingest::query::RUNS, columns(&["project", "run"], "run")),
        ],
        _ => return None,
    })
}

/// The projections `state` knows, for messages.
const PROJECTIONS: &str = "registry, leases, outbox, runs, consumers, ingest";

pub(crate) fn state(args: StateArgs) -> Result<ExitCode, Failure> {
    let Some(mut shown) = tables(&args.projection) else {
        return Err(Failure::Usage(format!(
            "there is no projection {}: state shows {PROJECTIONS}",
            super::render::word(&args.projection)
        )));
    };
    if let Some(name) = &args.table {
        let qualified = format!("{}.{name}", args.projection);
        shown.retain(|(table, _)| table.name() == name || table.name() == qualified);
        if shown.is_empty() {
            let names: Vec<&str> = tables(&args.projection)
                .into_iter()
                .flatten()
                .map(|(table, _)| table.name())
                .collect();
            return Err(Failure::Usage(format!(
                "{} has no table {}: its tables are {}",
                args.projection,
                super::render::word(name),
                names.join(", ")
            )));
        }
    }
    let store = crate::store::Store::open_read_only(&args.db)?;
    // The replayed database outlives the read transaction on it, declared first so dropped last.
    let replay;
    let replayed;
    let live;
    let source: &dyn TableSource = match args.at {
        None => {
            live = store.state()?;
            &live
        }
        Some(at) => {
            let snapshot = store.snapshot()?;
            let head = snapshot.head()?.next.0;
            if at > head {
                return Err(Error::from(AuditError::SizeBeyondHead { size: at, head }).into());
            }
            let mut line = ProgressLine::new("replay", at);
            let replaying = crate::audit::replay::replay_with(
                &snapshot,
                store.projections(),
                Some(Position(at)),
                &mut |done| line.update(done),
            );
            line.finish();
            replay = replaying?;
            replayed = replay.state()?;
            &replayed
        }
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let mut matched = 0u64;
    for (at, (table, columns)) in shown.iter().enumerate() {
        matched += if args.json {
            print_json_rows(&mut out, source, *table, columns, &args)?
        } else {
            if at > 0 {
                writeln!(out)?;
            }
            print_text_table(&mut out, source, *table, columns, &args)?
        };
    }
    out.flush()?;
    if let Some(key) = &args.key
        && matched == 0
    {
        return Err(Failure::Finding(format!(
            "{}: no row of {} has the key {}",
            args.db.display(),
            args.projection,
            super::render::word(key)
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `row` is one `--key` selects: its first column (the key, or the key's first part)
/// spelled as text.
fn selected(row: &Row, key: Option<&str>) -> bool {
    let Some(key) = key else { return true };
    match row.first().map(|(_, value)| value) {
        Some(Value::String(text)) => text == key,
        Some(Value::Number(number)) => number.to_string() == key,
        Some(_) => false,
        None => false,
    }
}

/// Writes each selected row of `table` as a JSON line; returns how many.
fn print_json_rows(
    out: &mut impl Write,
    source: &dyn TableSource,
    table: &dyn Rows,
    columns: &Columns,
    args: &StateArgs,
) -> Result<u64, Failure> {
    #[derive(Serialize)]
    struct RowJson<'a> {
        table: &'a str,
        row: OrderedRow<'a>,
    }
    let mut printed = 0;
    table.scan(source, columns, &mut |row| {
        if selected(&row, args.key.as_deref()) {
            print_json(
                out,
                &RowJson {
                    table: table.name(),
                    row: OrderedRow(&row),
                },
            )?;
            printed += 1;
        }
        Ok(true)
    })?;
    Ok(printed)
}

/// Writes `table` as aligned text under a line naming it and its row count: one pass to
/// measure the columns, one to print. Returns how many rows it printed.
fn print_text_table(
    out: &mut impl Write,
    source: &dyn TableSource,
    table: &dyn Rows,
    columns: &Columns,
    args: &StateArgs,
) -> Result<u64, Failure> {
    let key = args.key.as_deref();
    let mut widths = Widths::default();
    let mut rows = 0u64;
    table.scan(source, columns, &mut |row| {
        if selected(&row, key) {
            widths.measure(&row, args.ms);
            rows += 1;
        }
        Ok(true)
    })?;
    let noun = if rows == 1 { "row" } else { "rows" };
    writeln!(out, "{} ({rows} {noun})", table.name())?;
    if rows == 0 {
        return Ok(0);
    }
    widths.print_header(out)?;
    table.scan(source, columns, &mut |row| {
        if selected(&row, key) {
            widths.print_row(out, &row, args.ms)?;
        }
        Ok(true)
    })?;
    Ok(rows)
}
