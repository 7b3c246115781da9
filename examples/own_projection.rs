//! A projection of the program's own, with an upcaster: the `cart` projection keeps each
//! cart's item quantities, written in the same transaction as every append. Its event
//! `cart.item_added` changed shape: schema 1 had `qty`, schema 2 has `quantity` and a price.
//! Old records are never rewritten; `apply` upcasts schema 1 to schema 2 as it reads, so a
//! rebuild from the log gives the same tables as the live ones (which `verify` checks).
//!
//! `cargo run --example own_projection`

use std::sync::Arc;

use annals::projection::{Projection, Table, WriteTables};
use annals::{ExpectedVersion, NewEvent, Record, Store, StoreOptions};
use serde::Deserialize;

/// The event as schema 1 wrote it.
#[derive(Deserialize)]
struct ItemAddedV1 {
    sku: String,
    qty: u64,
}

/// The event now (schema 2).
#[derive(Deserialize)]
struct ItemAdded {
    sku: String,
    quantity: u64,
    price_cents: u64,
}

/// Schema 1 → schema 2: the price was not recorded then, so it is 0.
impl From<ItemAddedV1> for ItemAdded {
    fn from(old: ItemAddedV1) -> ItemAdded {
        ItemAdded {
            sku: old.sku,
            quantity: old.qty,
            price_cents: 0,
        }
    }
}

/// Items per cart and SKU: the key is `"<cart>/<sku>"`.
const ITEMS: Table<String, u64> = Table::new("cart.items");
/// Each cart's total in cents.
const TOTALS: Table<String, u64> = Table::new("cart.totals");

struct Carts;

impl Carts {
    /// The event in `record`, upcast to the current schema.
    fn item_added(record: &Record) -> annals::Result<ItemAdded> {
        let undecodable = |problem| annals::Error::UndecodableEvent {
            kind: record.kind.clone(),
            schema: record.schema,
            problem,
        };
        let refused = |error: serde_json::Error| {
            undecodable(annals::error::PayloadProblem::Undecodable {
                cause: error.to_string(),
            })
        };
        match record.schema {
            1 => serde_json::from_slice::<ItemAddedV1>(&record.payload)
                .map(ItemAdded::from)
                .map_err(refused),
            2 => serde_json::from_slice(&record.payload).map_err(refused),
            _ => Err(undecodable(annals::error::PayloadProblem::UnknownSchema)),
        }
    }
}

impl Projection for Carts {
    fn name(&self) -> &'static str {
        "cart"
    }
    fn version(&self) -> u32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &["cart.items", "cart.totals"]
    }
    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> annals::Result<()> {
        // Kinds of other programs and domains pass by: a projection reads only its own.
        if record.kind != "cart.item_added" {
            return Ok(());
        }
        let cart = record
            .stream
            .strip_prefix("cart/")
            .unwrap_or(&record.stream)
            .to_owned();
        let item = Carts::item_added(record)?;
        let key = format!("{cart}/{}", item.sku);
        let held = ITEMS.get(tables, &key)?.unwrap_or(0);
        ITEMS.insert(tables, &key, &(held + item.quantity))?;
        let total = TOTALS.get(tables, &cart)?.unwrap_or(0);
        TOTALS.insert(tables, &cart, &(total + item.quantity * item.price_cents))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let options = StoreOptions {
        create: true,
        projections: vec![Arc::new(Carts)],
        ..StoreOptions::default()
    };
    let store = Store::open_with(dir.path().join("annals.redb"), options)?;

    // An old record (schema 1), then two of the current shape.
    let at_ms = 1_700_000_000_000;
    let events = [
        (1, r#"{"sku":"tea","qty":2}"#),
        (2, r#"{"sku":"tea","quantity":1,"price_cents":450}"#),
        (2, r#"{"sku":"cup","quantity":3,"price_cents":1200}"#),
    ];
    for (schema, payload) in events {
        let event = NewEvent::new("cart.item_added", at_ms, payload.as_bytes().to_vec())
            .with_schema(schema);
        let outcome = store.append("cart/c-1", ExpectedVersion::Any, &[event])?;
        assert!(matches!(outcome, annals::AppendOutcome::Appended(_)));
    }

    let state = store.snapshot()?.state();
    let tea = ITEMS.get(&state, &"c-1/tea".to_owned())?;
    let total = TOTALS.get(&state, &"c-1".to_owned())?;
    assert_eq!(tea, Some(3));
    assert_eq!(total, Some(450 + 3 * 1200));
    println!(
        "cart c-1: {} tea, total {} cents",
        tea.unwrap_or(0),
        total.unwrap_or(0)
    );

    // A rebuild replays the log, upcasting the old record again, to the same tables.
    annals::maintenance::Rebuild::of(&store).run(Some("cart"))?;
    assert_eq!(
        ITEMS.get(&store.snapshot()?.state(), &"c-1/tea".to_owned())?,
        Some(3)
    );
    assert!(annals::Audit::of(&store).verify()?.is_sound());
    println!("rebuilt from the log and verified: sound");
    Ok(())
}
