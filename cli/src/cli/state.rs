//! `state`: a projection's tables as people read them, or as JSON lines, one row a line.
//!
//! Each projection describes the tables it shows (`Projection::shown_tables`); their rows are
//! read a page at a time and decoded by the library, so memory stays flat however many rows
//! there are: nothing here collects a table. Shown are the tables that hold a projection's state; its index tables
//! (`by_…`, `due`, `open_…`) repeat what those say in another order.

use std::io::Write;
use std::process::ExitCode;

use annals::Position;
use annals::projection::TableSource;
use annals::projection::shown::ShownTable;
use serde::Serialize;
use serde_json::Value;

use super::args::StateArgs;
use super::command::{NamedFile, Run};
use super::failure::Failure;
use super::pager::Output;
use super::progress::ProgressLine;
use super::render::print_json;
use super::table::{OrderedRow, Row, Widths};

/// The tables `state` shows of projection `name`, as the projection describes them.
fn tables(name: &str) -> Option<Vec<ShownTable>> {
    annals::maintenance::builtin_projections()
        .into_iter()
        .find(|projection| projection.name() == name)
        .map(|projection| projection.shown_tables())
}

/// Calls `visit` with each row of `table` until it returns `false` or fails.
fn scan(
    table: &ShownTable,
    source: &dyn TableSource,
    visit: &mut dyn FnMut(Row) -> Result<bool, Failure>,
) -> Result<(), Failure> {
    let mut failed = None;
    table.scan(source, &mut |row| match visit(row) {
        Ok(more) => more,
        Err(failure) => {
            failed = Some(failure);
            false
        }
    })?;
    failed.map_or(Ok(()), Err)
}

/// The projections `state` knows, for messages.
const PROJECTIONS: &str = "registry, leases, outbox, runs, consumers, ingest";

pub(crate) fn state(args: StateArgs) -> Result<ExitCode, Failure> {
    let shown = shown_tables(&args)?;
    let store = annals::Store::open_read_only(&args.log.db)?;
    // The replayed tables outlive the read transaction on them, declared first so dropped last.
    let replay;
    let replayed;
    let live;
    let source: &dyn TableSource = match args.at {
        None => {
            live = store.snapshot()?.state();
            &live
        }
        Some(at) => {
            let mut line = ProgressLine::new("replay", at);
            let replaying = annals::archive::Archives::of(&store).state_at(
                Position(at),
                &args.archive,
                &mut |done| line.update(done),
            );
            line.finish();
            replay = replaying?;
            replayed = replay.state()?;
            &replayed
        }
    };
    let mut out = Output::start(&args.paging);
    let mut matched = 0u64;
    for (at, table) in shown.iter().enumerate() {
        matched += if args.json {
            print_json_rows(&mut out, source, table, &args)?
        } else {
            if at > 0 {
                writeln!(out)?;
            }
            print_text_table(&mut out, source, table, &args)?
        };
    }
    // The pager is quit before a finding is reported.
    out.finish()?;
    if let Some(key) = &args.key
        && matched == 0
    {
        return Err(Failure::Finding(format!(
            "{}: no row of {} has the key {}",
            args.log.db.display(),
            args.projection,
            super::render::word(key)
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// The tables `state` shows: the projection's, or the one `--table` names (plain or
/// qualified by the projection); a usage error naming what there is otherwise.
fn shown_tables(args: &StateArgs) -> Result<Vec<ShownTable>, Failure> {
    let Some(mut shown) = tables(&args.projection) else {
        return Err(Failure::Usage(format!(
            "there is no projection {}: state shows {PROJECTIONS}",
            super::render::word(&args.projection)
        )));
    };
    if let Some(name) = &args.table {
        let qualified = format!("{}.{name}", args.projection);
        shown.retain(|table| table.name() == name || table.name() == qualified);
        if shown.is_empty() {
            let names: Vec<&str> = tables(&args.projection)
                .into_iter()
                .flatten()
                .map(|table| table.name())
                .collect();
            return Err(Failure::Usage(format!(
                "{} has no table {}: its tables are {}",
                args.projection,
                super::render::word(name),
                names.join(", ")
            )));
        }
    }
    Ok(shown)
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
    table: &ShownTable,
    args: &StateArgs,
) -> Result<u64, Failure> {
    #[derive(Serialize)]
    struct RowJson<'a> {
        table: &'a str,
        row: OrderedRow<'a>,
    }
    let mut printed = 0;
    scan(table, source, &mut |row| {
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
    table: &ShownTable,
    args: &StateArgs,
) -> Result<u64, Failure> {
    let key = args.key.as_deref();
    let mut widths = Widths::default();
    let mut rows = 0u64;
    scan(table, source, &mut |row| {
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
    scan(table, source, &mut |row| {
        if selected(&row, key) {
            widths.print_row(out, &row, args.ms)?;
        }
        Ok(true)
    })?;
    Ok(rows)
}

impl Run for StateArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.log.db, "the log")]
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        state(self)
    }
}
