//! The names a reason, a status or a kind crosses to JavaScript as: each a Rust enum of the
//! library, named as serde names it (`held`, `sequence_reused`). `constants.names` lists them,
//! and the build declares each list in `index.d.ts` as a union of string literals (the fields
//! that carry one are typed with it), so `reason === 'helld'` does not type-check.

use std::collections::HashMap;

use annals::Durability;
use annals::consumers::ConsumerRefusal;
use annals::ingest::IngestConflict;
use annals::leases::LeaseRefusal;
use annals::outbox::{ExpiryReason, OutboxRefusal, OutboxState};
use annals::registry::{InstanceKind, Status};
use annals::runs::{
    BillingMode, ChangeKind, RunRefusal, SpanKind, SpanOrigin, SpanOutcome, SpanRefusal,
};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// Each TypeScript union's name, and the Rust enum whose names it holds.
pub fn names() -> HashMap<String, Vec<String>> {
    [
        ("BillingMode", variants::<BillingMode>()),
        ("ConsumerRefusal", variants::<ConsumerRefusal>()),
        ("Durability", variants::<Durability>()),
        ("ExpiryReason", variants::<ExpiryReason>()),
        ("IngestConflict", variants::<IngestConflict>()),
        ("InstanceKind", variants::<InstanceKind>()),
        ("InstanceStatus", variants::<Status>()),
        ("LeaseRefusal", variants::<LeaseRefusal>()),
        ("OutboxRefusal", variants::<OutboxRefusal>()),
        ("OutboxState", variants::<OutboxState>()),
        ("RunChangeKind", variants::<ChangeKind>()),
        ("RunRefusal", variants::<RunRefusal>()),
        ("SpanEnd", variants::<SpanOutcome>()),
        ("SpanKind", variants::<SpanKind>()),
        ("SpanOrigin", variants::<SpanOrigin>()),
        ("SpanRefusal", variants::<SpanRefusal>()),
    ]
    .into_iter()
    .map(|(name, variants)| (name.to_owned(), variants))
    .collect()
}

/// The names of `T`'s variants as serde reads them: serde's derive hands a deserializer the
/// list, which [`Capture`] keeps and then refuses to go on.
fn variants<'de, T: Deserialize<'de>>() -> Vec<String> {
    let found = serde_names::<T>();
    assert!(
        !found.is_empty(),
        "{}: not a unit enum",
        std::any::type_name::<T>()
    );
    found.iter().map(|name| (*name).to_owned()).collect()
}

/// The serde names of enum `T`'s variants (none if `T` is not an enum).
pub(crate) fn serde_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut found: &'static [&'static str] = &[];
    // Always an error: the capture only looks at what the enum asks for.
    drop(T::deserialize(Capture(&mut found)));
    found
}

/// A deserializer that keeps the variant names an enum asks it for, and gives nothing.
struct Capture<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for Capture<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only an enum's names are taken"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = variants;
        Err(de::Error::custom("the names are taken"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_enums_names_are_serdes() {
        let names = variants::<LeaseRefusal>();
        let held = serde_json::to_value(LeaseRefusal::Held).unwrap();
        assert!(names.iter().any(|name| held == *name), "{names:?}");
        assert_eq!(
            variants::<annals::registry::Status>(),
            ["enabled", "disabled"]
        );
    }
}
