//! Rows as people read them: aligned columns of text, or one JSON object a line. A row is its
//! columns in order (key columns, then the value's fields in declaration order), which
//! `serde_json::Map` would sort; so rows are kept as pairs and serialised by hand.
//!
//! Aligning needs each column's width before the first row is printed, so the text form
//! measures the rows in one pass and prints them in a second ([`Widths`]): memory holds the
//! columns, never the rows.

use std::io::Write;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use super::failure::Failure;
use super::time::rfc3339;

/// One row: each column's name and value, in order.
pub(crate) type Row = Vec<(String, Value)>;

/// The widest a column of text gets; longer cells are cut with `…`.
const CELL_CHARS_MAX: usize = 48;

/// A row as a JSON object whose keys keep the row's order.
pub(crate) struct OrderedRow<'a>(pub(crate) &'a [(String, Value)]);

impl Serialize for OrderedRow<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// One cell as text: a string as it is (JSON-escaped if it holds a control character), `-`
/// for nothing, a time column (`…at_ms`) in RFC 3339 unless `ms`, anything else as compact
/// JSON; cut at [`CELL_CHARS_MAX`].
pub(crate) fn cell(column: &str, value: &Value, ms: bool) -> String {
    let text = match value {
        Value::Null => "-".to_owned(),
        Value::String(text) if !text.chars().any(char::is_control) => text.clone(),
        Value::Number(number) if !ms && column.ends_with("at_ms") => {
            number.as_u64().map_or_else(|| number.to_string(), rfc3339)
        }
        // Compact JSON of a parsed value cannot fail.
        other => serde_json::to_string(other).unwrap_or_default(),
    };
    if text.chars().count() > CELL_CHARS_MAX {
        let mut cut: String = text.chars().take(CELL_CHARS_MAX - 1).collect();
        cut.push('…');
        cut
    } else {
        text
    }
}

/// The columns of a table and the width of each, measured over its rows.
#[derive(Default)]
pub(crate) struct Widths {
    columns: Vec<(String, usize)>,
}

impl Widths {
    /// Widens the columns to fit `row`, adding any column not seen yet at the end.
    pub(crate) fn measure(&mut self, row: &Row, ms: bool) {
        for (name, value) in row {
            let width = cell(name, value, ms).chars().count();
            match self.columns.iter_mut().find(|(column, _)| column == name) {
                Some((_, widest)) => *widest = (*widest).max(width),
                None => self
                    .columns
                    .push((name.clone(), width.max(name.chars().count()))),
            }
        }
    }

    /// Writes the column names, aligned.
    pub(crate) fn print_header(&self, out: &mut impl Write) -> Result<(), Failure> {
        let names: Vec<String> = self.columns.iter().map(|(name, _)| name.clone()).collect();
        self.print_cells(out, &names)
    }

    /// Writes `row` under the header, `-` in a column it lacks.
    pub(crate) fn print_row(
        &self,
        out: &mut impl Write,
        row: &Row,
        ms: bool,
    ) -> Result<(), Failure> {
        let cells: Vec<String> = self
            .columns
            .iter()
            .map(|(column, _)| {
                row.iter()
                    .find(|(name, _)| name == column)
                    .map_or_else(|| "-".to_owned(), |(name, value)| cell(name, value, ms))
            })
            .collect();
        self.print_cells(out, &cells)
    }

    fn print_cells(&self, out: &mut impl Write, cells: &[String]) -> Result<(), Failure> {
        let mut line = String::new();
        for (at, (text, (_, width))) in cells.iter().zip(&self.columns).enumerate() {
            if at + 1 == cells.len() {
                // No padding after the last column.
                line.push_str(text);
            } else {
                let pad = width.saturating_sub(text.chars().count());
                line.push_str(text);
                line.extend(std::iter::repeat_n(' ', pad + 2));
            }
        }
        writeln!(out, "{line}")?;
        Ok(())
    }
}
