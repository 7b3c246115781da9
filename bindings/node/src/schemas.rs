//! The JSON schemas of the library's commands and outcomes, which cross to JavaScript as they
//! are (`crossing.rs`): `scripts/schema.mjs` writes their TypeScript declarations from them,
//! by the same conventions the crossing applies, so no declaration is written by hand.

use std::collections::HashMap;

use annals::audit::VerifyReport;
use annals::consumers::{ConsumerCommand, ConsumerOutcome, ConsumerTables};
use annals::ingest::{IngestCommand, IngestOutcome, IngestTables};
use annals::leases::{
    LaneCommand, LaneOutcome, LeaseCommand, LeaseGuard, LeaseOutcome, LeaseTables,
};
use annals::outbox::{
    OutboxCommand, OutboxOutcome, OutboxRow, OutboxTables, PullCommand, PullOutcome, SweepCommand,
    SweepOutcome,
};
use annals::registry::{
    ChargeFuel, FuelEntry, FuelOutcome, FuelTotal, Instance, InstanceCommand, InstanceOutcome,
    RegistryTables, SetSetting, SettingOutcome,
};
use annals::runs::{
    OpenRunRollup, Run, RunChange, RunCommand, RunCommandOutcome, RunRollup, RunSnapshot,
    RunTables, Span, SpanCommand, SpanCommandOutcome, SpanEvent,
};
use annals::writer::WriterOptions;
use annals::{
    AppendOutcome, NewEvent, Record, archive::ArchiveReport, erasure::Erasure, log::Head,
    maintenance::Backup,
};
use napi_derive::napi;
use schemars::JsonSchema;
use serde_json::Value;

/// A TypeScript declaration's name, and the library types it declares: a struct, or the
/// variants of one or more enums as one union.
fn unions() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        // The log's own outcomes.
        ("AppendOutcome", vec![schema::<AppendOutcome>()]),
        ("Head", vec![schema::<Head>()]),
        ("BackupReport", vec![schema::<Backup>()]),
        ("ArchiveReport", vec![schema::<ArchiveReport>()]),
        ("VerifyReport", vec![schema::<VerifyReport>()]),
        // A record as the reads give it, its payload opened (`OPENED`).
        ("LogRecord", vec![schema::<Record>()]),
        // What a caller gives beside a command: an event to append, a lease guard, how the
        // writer batches.
        ("NewEvent", vec![schema::<NewEvent>()]),
        ("LeaseGuard", vec![schema::<LeaseGuard>()]),
        ("WriterOptions", vec![schema::<WriterOptions>()]),
        ("Erasure", vec![schema::<Erasure>()]),
        ("LeaseCommand", vec![schema::<LeaseCommand>()]),
        ("LeaseOutcome", vec![schema::<LeaseOutcome>()]),
        ("IngestCommand", vec![schema::<IngestCommand>()]),
        ("IngestOutcome", vec![schema::<IngestOutcome>()]),
        ("LaneCommand", vec![schema::<LaneCommand>()]),
        ("LaneOutcome", vec![schema::<LaneOutcome>()]),
        ("SettingCommand", vec![schema::<SetSetting>()]),
        ("SettingOutcome", vec![schema::<SettingOutcome>()]),
        ("ConsumerCommand", vec![schema::<ConsumerCommand>()]),
        ("ConsumerOutcome", vec![schema::<ConsumerOutcome>()]),
        // A row's commands, a peer's pull and the sweeps: one `outbox` method, one union.
        (
            "OutboxCommand",
            vec![
                schema::<OutboxCommand>(),
                schema::<PullCommand>(),
                schema::<SweepCommand>(),
            ],
        ),
        (
            "OutboxOutcome",
            vec![
                schema::<OutboxOutcome>(),
                schema::<PullOutcome>(),
                schema::<SweepOutcome>(),
            ],
        ),
        ("InstanceCommand", vec![schema::<InstanceCommand>()]),
        ("InstanceOutcome", vec![schema::<InstanceOutcome>()]),
        ("FuelCommand", vec![schema::<ChargeFuel>()]),
        ("FuelOutcome", vec![schema::<FuelOutcome>()]),
        ("RunCommand", vec![schema::<RunCommand>()]),
        ("RunOutcome", vec![schema::<RunCommandOutcome>()]),
        ("SpanCommand", vec![schema::<SpanCommand>()]),
        ("SpanOutcome", vec![schema::<SpanCommandOutcome>()]),
        // The rows the queries give that no outcome holds.
        ("OutboxRow", vec![schema::<OutboxRow>()]),
        ("Instance", vec![schema::<Instance>()]),
        ("FuelEntry", vec![schema::<FuelEntry>()]),
        ("FuelTotal", vec![schema::<FuelTotal>()]),
        ("Run", vec![schema::<Run>()]),
        ("Span", vec![schema::<Span>()]),
        ("SpanEvent", vec![schema::<SpanEvent>()]),
        ("RunChange", vec![schema::<RunChange>()]),
        ("RunSnapshot", vec![schema::<RunSnapshot>()]),
        ("RunRollup", vec![schema::<RunRollup>()]),
        ("OpenRunRollup", vec![schema::<OpenRunRollup>()]),
        // Every row of a projection, as `state(projection)` gives it.
        ("RegistryTables", vec![schema::<RegistryTables>()]),
        ("LeaseTables", vec![schema::<LeaseTables>()]),
        ("OutboxTables", vec![schema::<OutboxTables>()]),
        ("RunTables", vec![schema::<RunTables>()]),
        ("IngestTables", vec![schema::<IngestTables>()]),
        ("ConsumerTables", vec![schema::<ConsumerTables>()]),
    ]
}

fn schema<T: JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

/// The rows that cross with a personal field opened (`erasure.rs`, `PersonalRow`): the type's
/// name, the field, and the property holding it sealed that is taken off.
const OPENED: [(&str, &str, Option<&str>); 4] = [
    ("LogRecord", "payload", None),
    ("OutboxRow", "payload", None),
    ("SpanEvent", "payload", Some("personal")),
    ("IngestedEvent", "bytes", None),
];

/// `schema`, of a row `OPENED` names, as it crosses: `field` is `null` once its subject is
/// erased (`x-nullable`: `scripts/schema.mjs` declares it `… | null`), beside an optional
/// `subject` and `erased`, and the sealed bytes are gone.
fn opened(schema: &mut Value, field: &str, sealed: Option<&str>) {
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(sealed) = sealed {
        properties.remove(sealed);
    }
    if let Some(property) = properties.get_mut(field).and_then(Value::as_object_mut) {
        property.insert("x-nullable".to_owned(), Value::Bool(true));
        let described = property
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        property.insert(
            "description".to_owned(),
            Value::String(format!(
                "{described} Read from the package, a personal one is its plaintext while \
                 its subject's key stands, `null` once the subject is erased (or this store \
                 holds no key for it)."
            )),
        );
    }
    properties.insert(
        "subject".to_owned(),
        serde_json::json!({
            "type": "string",
            "description": "The subject a personal field belongs to; absent for a plain one.",
        }),
    );
    properties.insert(
        "erased".to_owned(),
        serde_json::json!({
            "type": "boolean",
            "description": "`true` when the field is personal and its subject was erased (or \
                this store holds no key for it): it is then `null`.",
        }),
    );
}

/// The JSON schema of each command and outcome the package declares, by its TypeScript name:
/// what `scripts/schema.mjs` generates the declarations from. The rows `OPENED` names are
/// given as they cross, wherever they are declared or met.
#[napi(ts_return_type = "Record<string, Array<object>>")]
pub fn schemas() -> HashMap<String, Vec<Value>> {
    unions()
        .into_iter()
        .map(|(name, mut schemas)| {
            for root in &mut schemas {
                for (row, field, sealed) in OPENED {
                    if row == name {
                        opened(root, field, sealed);
                    }
                    if let Some(defined) = root.pointer_mut(&format!("/$defs/{row}")) {
                        opened(defined, field, sealed);
                    }
                }
            }
            (name.to_owned(), schemas)
        })
        .collect()
}
