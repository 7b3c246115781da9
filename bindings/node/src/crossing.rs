//! How the library's own command and outcome types cross to JavaScript and back: through their
//! serde implementations, so a field the library adds reaches Node with no copy of the type
//! here. Two adapters sit between those implementations and napi-rs's serde (de)serializer and
//! apply the package's conventions, the same for every type:
//!
//! - a struct's fields are camelCase in JavaScript (`ttl_ms` is `ttlMs`); a map's keys are
//!   the caller's data and stay as they are;
//! - an enum named `…Command` or `…Outcome` is an object tagged by `type`, its variant in
//!   camelCase (`{ type: 'markWaiting', … }`); any other enum is its serde name
//!   (`'held'`, `'sequence_reused'`);
//! - an integer comes in as a safe-integer `number` or a `bigint`, refused naming the field if
//!   it is neither or does not fit; a `u64` goes out as a `bigint`, except milliseconds (a field
//!   ending in `_ms`), which go out as a `number`, as do the narrower integers;
//! - `null` and `undefined` are an absent `Option`; an absent field is left out of an object;
//!   a field the type does not have is refused, named;
//! - bytes come in as a `Buffer` or `Uint8Array` and go out as a `Buffer`.
//!
//! `scripts/schema.mjs` declares the same conventions in TypeScript from the types' JSON
//! schemas (`schemas()`), so the declarations cannot drift from what crosses. It must never
//! decide anything a command means: it only converts.

use std::fmt::Display;

use napi::bindgen_prelude::{
    Array as JsArray, BigInt, Buffer, Either3, JsObjectValue, Null, Object, ToNapiValue, Unknown,
};
use napi::{Env, JsValue};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess,
    SeqAccess, VariantAccess, Visitor,
};
use serde::ser::{self, Impossible, Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::error::{invalid, js_name};

/// The largest integer a JavaScript number holds exactly.
const SAFE_INTEGER_MAX: i64 = 9_007_199_254_740_991;

/// What the message of an error already made for JavaScript starts with (`error::coded`):
/// such an error passes through the adapters as it is.
const MADE: &str = "annals:";

/// `value`, a JavaScript object, as the library's `T`.
pub fn from_js<'v, T: DeserializeOwned>(env: &Env, value: impl JsValue<'v>) -> napi::Result<T> {
    match env.from_js_value::<Incoming<T>, _>(value) {
        Ok(Incoming(value)) => Ok(value),
        Err(error) => Err(napi::Error::new(
            napi::Status::GenericFailure,
            named("", &error.reason),
        )),
    }
}

/// `value` as JavaScript's, by the conventions above.
pub fn to_js<T: Serialize>(env: &Env, value: &T) -> napi::Result<Made> {
    let mut made = None;
    value.serialize(Into {
        env,
        slot: Slot::Result(&mut made),
        field: "",
    })?;
    made.ok_or_else(|| napi::Error::from_reason("a value that made nothing"))
}

/// Whether an object `command` has `field`, neither `null` nor `undefined`.
pub fn has(command: &Object<'_>, field: &str) -> napi::Result<bool> {
    Ok(command
        .get::<Unknown<'_>>(field)?
        .map(|value| value.get_type())
        .transpose()?
        .is_some_and(|kind| !matches!(kind, napi::ValueType::Null | napi::ValueType::Undefined)))
}

/// Whether an enum crosses as an object tagged by `type` rather than as a name.
fn tagged(name: &str) -> bool {
    name.ends_with("Command") || name.ends_with("Outcome")
}

/// `field` under `parent`, as JavaScript spells it (`labels.holderName`).
fn child(parent: &str, field: &str) -> String {
    let spelled = js_name(field);
    if parent.is_empty() {
        spelled
    } else {
        format!("{parent}.{spelled}")
    }
}

/// `mark_waiting` as JavaScript spells a variant: `markWaiting`.
fn variant_js(variant: &str) -> String {
    js_name(variant)
}

/// `markWaiting` as serde names the variant: `mark_waiting`.
fn snake(name: &str) -> String {
    let mut spelled = String::with_capacity(name.len() + 4);
    for letter in name.chars() {
        if letter.is_ascii_uppercase() {
            spelled.push('_');
            spelled.push(letter.to_ascii_lowercase());
        } else {
            spelled.push(letter);
        }
    }
    spelled
}

/// The message of an error met reading `field`: as it is if the adapters made it (it names
/// its field already), else an `INVALID_ARGUMENT` naming `field`.
fn named(field: &str, text: &str) -> String {
    if let Some(at) = text.find(MADE) {
        return text[at..].to_owned();
    }
    // serde's own words name a field as the library spells it: "missing field `ttl_ms`".
    if let Some(missing) = text
        .split_once("missing field `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(missing, _)| missing)
    {
        return refused(&child(field, missing), "missing");
    }
    let problem = text.strip_prefix("InvalidArg, ").unwrap_or(text);
    refused(field, problem)
}

/// An `INVALID_ARGUMENT` naming `field` (the command itself when it is the whole), as the
/// message of an error.
fn refused(field: &str, problem: impl Display) -> String {
    let field = if field.is_empty() { "command" } else { field };
    invalid(field, &problem.to_string()).reason
}

// ---------------------------------------------------------------------------------------------
// Coming in: `In` wraps napi-rs's deserializer, and each visitor it hands on wraps the library's.

struct Incoming<T>(T);

impl<'de, T: DeserializeOwned> de::Deserialize<'de> for Incoming<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let adapted = In {
            inner: deserializer,
            field: String::new(),
        };
        T::deserialize(adapted)
            .map(Incoming)
            .map_err(|error| <D::Error as de::Error>::custom(error.0))
    }
}

/// An error's message, carried through serde's traits between napi-rs's and the library's.
#[derive(Debug)]
struct Carried(String);

impl Display for Carried {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Carried {}

impl de::Error for Carried {
    fn custom<M: Display>(message: M) -> Self {
        Carried(message.to_string())
    }
}

/// An error of the inner deserializer met at `field`, as the adapters carry it.
fn carried<E: Display>(field: &str) -> impl Fn(E) -> Carried + '_ {
    move |error| Carried(named(field, &error.to_string()))
}

/// A carried error as the inner deserializer's.
fn outer<E: de::Error>(error: Carried) -> E {
    E::custom(error.0)
}

/// The value of `field`, deserialized by `inner`.
struct In<D> {
    inner: D,
    field: String,
}

/// The range of the integer a field wants.
#[derive(Clone, Copy)]
struct Width {
    min: i128,
    max: i128,
    bound: &'static str,
}

const U8: Width = Width {
    min: 0,
    max: u8::MAX as i128,
    bound: "0 to 2^8 - 1",
};
const U16: Width = Width {
    min: 0,
    max: u16::MAX as i128,
    bound: "0 to 2^16 - 1",
};
const U32: Width = Width {
    min: 0,
    max: u32::MAX as i128,
    bound: "0 to 2^32 - 1",
};
const U64: Width = Width {
    min: 0,
    max: u64::MAX as i128,
    bound: "0 to 2^64 - 1",
};
const I64: Width = Width {
    min: i64::MIN as i128,
    max: i64::MAX as i128,
    bound: "-2^63 to 2^63 - 1",
};

impl<'de, D: Deserializer<'de>> In<D> {
    fn integer<V: Visitor<'de>>(self, width: Width, visitor: V) -> Result<V::Value, Carried> {
        let field = self.field;
        let whole = self
            .inner
            .deserialize_any(Whole { field: &field })
            .map_err(carried(&field))?;
        if !(width.min..=width.max).contains(&whole) {
            return Err(Carried(refused(
                &field,
                format!("{whole} is not a whole number from {}", width.bound),
            )));
        }
        let value = if width.min < 0 {
            visitor.visit_i64(whole as i64)
        } else {
            visitor.visit_u64(whole as u64)
        };
        value.map_err(|error: Carried| Carried(named(&field, &error.0)))
    }
}

/// A whole number, from a safe-integer `number` or a `bigint`.
struct Whole<'a> {
    field: &'a str,
}

impl<'de> Visitor<'de> for Whole<'_> {
    type Value = i128;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a safe integer or a bigint")
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<i128, E> {
        // A whole number comes as an i64, and so does a negative bigint: it must be a safe
        // integer to be taken (a negative bigint outside it is refused by any range).
        if !(-SAFE_INTEGER_MAX..=SAFE_INTEGER_MAX).contains(&value) {
            return Err(E::custom(refused(
                self.field,
                format!("{value} is not a safe integer (a bigint carries it)"),
            )));
        }
        Ok(value.into())
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<i128, E> {
        Ok(value.into())
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<i128, E> {
        Ok(value)
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<i128, E> {
        Ok(i128::try_from(value).unwrap_or(i128::MAX))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<i128, E> {
        Err(E::custom(refused(
            self.field,
            format!("{value} is not a whole number"),
        )))
    }
}

macro_rules! integer {
    ($($method:ident $width:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Carried> {
            self.integer($width, visitor)
        }
    )*};
}

macro_rules! forwarded {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Carried> {
            let field = self.field;
            self.inner.$method(Plain { visitor, field: &field, bytes_as_seq: false })
                .map_err(carried(&field))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for In<D> {
    type Error = Carried;

    integer! {
        deserialize_u8 U8 deserialize_u16 U16 deserialize_u32 U32 deserialize_u64 U64
        deserialize_i64 I64 deserialize_i32 I64 deserialize_i16 I64 deserialize_i8 I64
    }

    forwarded! {
        deserialize_any deserialize_bool deserialize_str deserialize_string deserialize_bytes
        deserialize_byte_buf deserialize_f64 deserialize_f32 deserialize_char deserialize_unit
        deserialize_identifier deserialize_ignored_any deserialize_map deserialize_i128
        deserialize_u128 deserialize_option
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Carried> {
        let field = self.field;
        self.inner
            .deserialize_any(Plain {
                visitor,
                field: &field,
                bytes_as_seq: true,
            })
            .map_err(carried(&field))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Carried> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Carried> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Carried> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Carried> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Carried> {
        let field = self.field;
        self.inner
            .deserialize_map(Fields {
                visitor,
                field: &field,
                fields,
            })
            .map_err(carried(&field))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Carried> {
        let field = self.field;
        self.inner
            .deserialize_any(Variant {
                visitor,
                field: &field,
                variants,
                tagged: tagged(name),
            })
            .map_err(carried(&field))
    }
}

/// A visitor whose maps, sequences and values are read through the adapter.
struct Plain<'a, V> {
    visitor: V,
    field: &'a str,
    /// Whether a Buffer's bytes are a sequence (a `Vec<u8>` asks for one).
    bytes_as_seq: bool,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Plain<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.visitor.expecting(f)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<V::Value, E> {
        self.visitor.visit_bool(value)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<V::Value, E> {
        self.visitor.visit_i64(value)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<V::Value, E> {
        self.visitor.visit_u64(value)
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<V::Value, E> {
        self.visitor.visit_i128(value)
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<V::Value, E> {
        self.visitor.visit_u128(value)
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<V::Value, E> {
        self.visitor.visit_f64(value)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<V::Value, E> {
        self.visitor.visit_str(value)
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<V::Value, E> {
        self.visitor.visit_string(value)
    }

    fn visit_bytes<E: de::Error>(self, value: &[u8]) -> Result<V::Value, E> {
        if self.bytes_as_seq {
            return self
                .visitor
                .visit_seq(de::value::SeqDeserializer::<_, E>::new(
                    value.iter().copied(),
                ));
        }
        self.visitor.visit_bytes(value)
    }

    fn visit_byte_buf<E: de::Error>(self, value: Vec<u8>) -> Result<V::Value, E> {
        if self.bytes_as_seq {
            return self
                .visitor
                .visit_seq(de::value::SeqDeserializer::<_, E>::new(value.into_iter()));
        }
        self.visitor.visit_byte_buf(value)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.visitor
            .visit_some(In {
                inner: deserializer,
                field: self.field.to_owned(),
            })
            .map_err(outer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor
            .visit_seq(Items {
                inner: seq,
                field: self.field,
                at: 0,
            })
            .map_err(outer)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor
            .visit_map(Entries {
                inner: map,
                field: self.field,
                value_field: String::new(),
                fields: None,
            })
            .map_err(outer)
    }
}

/// A struct: an object whose keys are its fields in camelCase.
struct Fields<'a, V> {
    visitor: V,
    field: &'a str,
    fields: &'static [&'static str],
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Fields<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor
            .visit_map(Entries {
                inner: map,
                field: self.field,
                value_field: String::new(),
                fields: Some(self.fields),
            })
            .map_err(outer)
    }
}

/// The elements of an array, each named by its index.
struct Items<'a, A> {
    inner: A,
    field: &'a str,
    at: usize,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Items<'_, A> {
    type Error = Carried;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Carried> {
        let field = format!("{}[{}]", self.field, self.at);
        self.at += 1;
        self.inner
            .next_element_seed(Seeded {
                seed,
                field: field.clone(),
            })
            .map_err(carried(&field))
    }
}

/// A value read through the adapter as `field`.
struct Seeded<T> {
    seed: T,
    field: String,
}

impl<'de, T: DeserializeSeed<'de>> DeserializeSeed<'de> for Seeded<T> {
    type Value = T::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T::Value, D::Error> {
        self.seed
            .deserialize(In {
                inner: deserializer,
                field: self.field,
            })
            .map_err(outer)
    }
}

/// An object's entries: a struct's (`fields`, keys renamed and checked) or a map's (keys as
/// they are).
struct Entries<'a, A> {
    inner: A,
    field: &'a str,
    /// What the next value is named.
    value_field: String,
    fields: Option<&'static [&'static str]>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Entries<'_, A> {
    type Error = Carried;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Carried> {
        let Some(key) = self
            .inner
            .next_key::<String>()
            .map_err(carried(self.field))?
        else {
            return Ok(None);
        };
        let key = match self.fields {
            None => {
                self.value_field = if self.field.is_empty() {
                    key.clone()
                } else {
                    format!("{}.{key}", self.field)
                };
                key
            }
            Some(fields) => {
                let name = snake(&key);
                self.value_field = child(self.field, &name);
                if !fields.contains(&name.as_str()) || js_name(&name) != key {
                    let known: Vec<String> = fields.iter().map(|field| js_name(field)).collect();
                    let named = if self.field.is_empty() {
                        key.clone()
                    } else {
                        format!("{}.{key}", self.field)
                    };
                    return Err(Carried(refused(
                        &named,
                        format!("not a field here (the fields are {})", known.join(", ")),
                    )));
                }
                name
            }
        };
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Carried> {
        let field = std::mem::take(&mut self.value_field);
        self.inner
            .next_value_seed(Seeded {
                seed,
                field: field.clone(),
            })
            .map_err(carried(&field))
    }
}

/// An enum: a name, or an object tagged by `type`.
struct Variant<'a, V> {
    visitor: V,
    field: &'a str,
    variants: &'static [&'static str],
    tagged: bool,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Variant<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.tagged {
            f.write_str("an object with a `type`")
        } else {
            write!(f, "one of {}", self.variants.join(", "))
        }
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<V::Value, E> {
        if self.tagged {
            return Err(E::custom(refused(self.field, "must be an object")));
        }
        let Some(variant) = self.variants.iter().find(|variant| **variant == value) else {
            return Err(E::custom(refused(
                self.field,
                format!("must be one of {}; not '{value}'", self.variants.join(", ")),
            )));
        };
        self.visitor
            .visit_enum(de::value::BorrowedStrDeserializer::<Carried>::new(variant))
            .map_err(outer)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<V::Value, A::Error> {
        let tag_field = child(self.field, "type");
        if !self.tagged {
            return Err(de::Error::custom(refused(self.field, "must be a name")));
        }
        if map.next_key::<String>()?.as_deref() != Some("type") {
            return Err(de::Error::custom(refused(&tag_field, "must come first")));
        }
        let tag: String = map.next_value()?;
        let name = snake(&tag);
        let Some(variant) = self
            .variants
            .iter()
            .find(|variant| **variant == name && variant_js(variant) == tag)
        else {
            let known: Vec<String> = self.variants.iter().map(|v| variant_js(v)).collect();
            return Err(de::Error::custom(refused(
                &tag_field,
                format!("must be one of {}; not '{tag}'", known.join(", ")),
            )));
        };
        self.visitor
            .visit_enum(Tagged {
                map,
                field: self.field,
                variant,
            })
            .map_err(outer)
    }
}

/// The rest of an object tagged by `type`, as its variant's fields.
struct Tagged<'a, A> {
    map: A,
    field: &'a str,
    variant: &'static str,
}

impl<'de, 'a, A: MapAccess<'de>> EnumAccess<'de> for Tagged<'a, A> {
    type Error = Carried;
    type Variant = Self;

    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, Self), Carried> {
        let variant = seed.deserialize(de::value::BorrowedStrDeserializer::<Carried>::new(
            self.variant,
        ))?;
        Ok((variant, self))
    }
}

impl<'de, A: MapAccess<'de>> VariantAccess<'de> for Tagged<'_, A> {
    type Error = Carried;

    fn unit_variant(self) -> Result<(), Carried> {
        let mut entries = Entries {
            inner: self.map,
            field: self.field,
            value_field: String::new(),
            fields: Some(&[]),
        };
        // A variant without fields refuses every key.
        entries.next_key::<String>().map(drop)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> Result<T::Value, Carried> {
        Err(Carried(refused(
            self.field,
            "a variant the binding cannot take",
        )))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, Carried> {
        Err(Carried(refused(
            self.field,
            "a variant the binding cannot take",
        )))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Carried> {
        visitor.visit_map(Entries {
            inner: self.map,
            field: self.field,
            value_field: String::new(),
            fields: Some(fields),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Going out: `Into` writes each value where it goes (a field, an element, the result) as it
// is serialized, naming fields as V8 names its own (`set_named_property`).

/// Where a value goes.
enum Slot<'a, 'e> {
    /// The field `name` of an object.
    Field(&'a mut Object<'static>, &'a str),
    /// Element `at` of an array.
    Element(&'a mut JsArray<'e>, u32),
    /// The result of the call: an object, a list of them or `null`.
    Result(&'a mut Option<Made>),
}

/// What a call gives back: an object (an outcome, a row), a list of rows, or `null` (no row).
pub type Made = Either3<Object<'static>, Vec<Object<'static>>, Null>;

impl Slot<'_, '_> {
    fn put<T: ToNapiValue>(self, value: T, field: &str) -> napi::Result<()> {
        match self {
            Slot::Field(object, name) => object.set_named_property(name, value),
            Slot::Element(array, at) => array.set(at, value),
            Slot::Result(_) => Err(napi::Error::from_reason(format!(
                "{field}: a value the binding gives only inside an object"
            ))),
        }
    }

    fn put_object(self, value: Object<'static>) -> napi::Result<()> {
        match self {
            Slot::Result(made) => {
                *made = Some(Either3::A(value));
                Ok(())
            }
            slot => slot.put(value, ""),
        }
    }
}

struct Into<'a, 'e> {
    env: &'e Env,
    slot: Slot<'a, 'e>,
    field: &'static str,
}

impl Into<'_, '_> {
    /// Whether the field holds milliseconds, which go out as a `number`.
    fn milliseconds(&self) -> bool {
        self.field.ends_with("_ms")
    }

    fn put<T: ToNapiValue>(self, value: T) -> napi::Result<()> {
        self.slot.put(value, self.field)
    }
}

fn unsupported(what: &str) -> napi::Error {
    napi::Error::from_reason(format!("{what} does not cross to JavaScript"))
}

macro_rules! put {
    ($($method:ident $type:ty)*) => {$(
        fn $method(self, value: $type) -> napi::Result<()> {
            self.put(value)
        }
    )*};
}

impl<'a, 'e> Serializer for Into<'a, 'e> {
    type Ok = ();
    type Error = napi::Error;
    type SerializeSeq = Array<'a, 'e>;
    type SerializeTuple = Impossible<(), napi::Error>;
    type SerializeTupleStruct = Impossible<(), napi::Error>;
    type SerializeTupleVariant = Impossible<(), napi::Error>;
    type SerializeMap = Record<'a, 'e>;
    type SerializeStruct = Record<'a, 'e>;
    type SerializeStructVariant = Record<'a, 'e>;

    put! {
        serialize_bool bool serialize_i8 i8 serialize_i16 i16 serialize_i32 i32
        serialize_u8 u8 serialize_u16 u16 serialize_u32 u32 serialize_f32 f32
        serialize_f64 f64 serialize_str &str
    }

    fn serialize_char(self, value: char) -> napi::Result<()> {
        self.put(value.to_string())
    }

    fn serialize_bytes(self, value: &[u8]) -> napi::Result<()> {
        self.put(Buffer::from(value.to_vec()))
    }

    fn serialize_i64(self, value: i64) -> napi::Result<()> {
        if self.milliseconds() {
            return self.put(value as f64);
        }
        self.put(BigInt::from(value))
    }

    fn serialize_u64(self, value: u64) -> napi::Result<()> {
        if self.milliseconds() {
            return self.put(value as f64);
        }
        self.put(BigInt::from(value))
    }

    fn serialize_i128(self, value: i128) -> napi::Result<()> {
        self.put(BigInt::from(value))
    }

    fn serialize_u128(self, value: u128) -> napi::Result<()> {
        self.put(BigInt::from(value))
    }

    fn serialize_none(self) -> napi::Result<()> {
        match self.slot {
            Slot::Result(made) => {
                *made = Some(Either3::C(Null));
                Ok(())
            }
            slot => slot.put(Null, self.field),
        }
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> napi::Result<()> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> napi::Result<()> {
        self.serialize_none()
    }

    fn serialize_unit_struct(self, _: &'static str) -> napi::Result<()> {
        self.serialize_none()
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
    ) -> napi::Result<()> {
        if tagged(name) {
            let mut object = Object::new(self.env)?;
            object.set_named_property("type", variant_js(variant))?;
            return self.slot.put_object(object);
        }
        self.put(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> napi::Result<()> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> napi::Result<()> {
        Err(unsupported("a newtype variant"))
    }

    fn serialize_seq(self, len: Option<usize>) -> napi::Result<Array<'a, 'e>> {
        let items = match self.slot {
            Slot::Result(made) => Elements::Result(Vec::with_capacity(len.unwrap_or(0)), made),
            slot => Elements::Nested(
                self.env
                    .create_array(u32::try_from(len.unwrap_or(0)).unwrap_or(0))?,
                slot,
            ),
        };
        Ok(Array {
            items,
            at: 0,
            env: self.env,
            field: self.field,
        })
    }

    fn serialize_tuple(self, _: usize) -> napi::Result<Self::SerializeTuple> {
        Err(unsupported("a tuple"))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> napi::Result<Self::SerializeTupleStruct> {
        Err(unsupported("a tuple struct"))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> napi::Result<Self::SerializeTupleVariant> {
        Err(unsupported("a tuple variant"))
    }

    fn serialize_map(self, _: Option<usize>) -> napi::Result<Record<'a, 'e>> {
        Record::new(self)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> napi::Result<Record<'a, 'e>> {
        Record::new(self)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> napi::Result<Record<'a, 'e>> {
        let mut record = Record::new(self)?;
        record
            .object
            .set_named_property("type", variant_js(variant))?;
        Ok(record)
    }
}

/// An array being written.
struct Array<'a, 'e> {
    items: Elements<'a, 'e>,
    at: u32,
    env: &'e Env,
    /// The field the array is: its elements are serialized as it (a list of positions goes
    /// out as bigints, one of milliseconds as numbers).
    field: &'static str,
}

/// An array inside an object, or the list a call gives.
enum Elements<'a, 'e> {
    Nested(JsArray<'e>, Slot<'a, 'e>),
    Result(Vec<Object<'static>>, &'a mut Option<Made>),
}

impl SerializeSeq for Array<'_, '_> {
    type Ok = ();
    type Error = napi::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> napi::Result<()> {
        match &mut self.items {
            Elements::Nested(array, _) => value.serialize(Into {
                env: self.env,
                slot: Slot::Element(array, self.at),
                field: self.field,
            })?,
            Elements::Result(list, _) => {
                let mut made = None;
                value.serialize(Into {
                    env: self.env,
                    slot: Slot::Result(&mut made),
                    field: self.field,
                })?;
                match made {
                    Some(Either3::A(object)) => list.push(object),
                    _ => return Err(unsupported("a list of other than objects")),
                }
            }
        }
        self.at += 1;
        Ok(())
    }

    fn end(self) -> napi::Result<()> {
        match self.items {
            Elements::Nested(array, slot) => slot.put(array, self.field),
            Elements::Result(list, made) => {
                *made = Some(Either3::B(list));
                Ok(())
            }
        }
    }
}

/// An object being written: a struct's (fields in camelCase, absent ones left out) or a
/// map's (keys as they are).
struct Record<'a, 'e> {
    object: Object<'static>,
    env: &'e Env,
    slot: Slot<'a, 'e>,
    field: &'static str,
    /// A map's next key.
    key: String,
}

impl<'a, 'e> Record<'a, 'e> {
    fn new(into: Into<'a, 'e>) -> napi::Result<Record<'a, 'e>> {
        Ok(Record {
            object: Object::new(into.env)?,
            env: into.env,
            slot: into.slot,
            field: into.field,
            key: String::new(),
        })
    }
}

impl SerializeMap for Record<'_, '_> {
    type Ok = ();
    type Error = napi::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> napi::Result<()> {
        // Keys are strings (a span's attributes): anything else has no object key to be.
        match serde_json::to_value(key) {
            Ok(serde_json::Value::String(key)) => {
                self.key = key;
                Ok(())
            }
            _ => Err(unsupported("a map key that is not a string")),
        }
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> napi::Result<()> {
        let key = std::mem::take(&mut self.key);
        value.serialize(Into {
            env: self.env,
            slot: Slot::Field(&mut self.object, &key),
            field: self.field,
        })
    }

    fn end(self) -> napi::Result<()> {
        self.slot.put_object(self.object)
    }
}

impl ser::SerializeStruct for Record<'_, '_> {
    type Ok = ();
    type Error = napi::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> napi::Result<()> {
        // A compound value makes the probe fail: present.
        if value.serialize(IsNone) == Ok(true) {
            return Ok(());
        }
        let name = js_name(key);
        value.serialize(Into {
            env: self.env,
            slot: Slot::Field(&mut self.object, &name),
            field: key,
        })
    }

    fn end(self) -> napi::Result<()> {
        self.slot.put_object(self.object)
    }
}

impl ser::SerializeStructVariant for Record<'_, '_> {
    type Ok = ();
    type Error = napi::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> napi::Result<()> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }

    fn end(self) -> napi::Result<()> {
        self.slot.put_object(self.object)
    }
}

/// Whether a value is `None` (an absent field is left out of the object): it asks nothing of
/// the value but its first word.
struct IsNone;

macro_rules! present {
    ($($method:ident $type:ty)*) => {$(
        fn $method(self, _: $type) -> Result<bool, std::fmt::Error> {
            Ok(false)
        }
    )*};
}

/// A compound value: present (`IsNone` stops at its first word, with an error).
macro_rules! absent {
    ($($method:ident $compound:ident ($($argument:ty),*))*) => {$(
        fn $method(self, $(_: $argument),*) -> Result<Self::$compound, std::fmt::Error> {
            Err(std::fmt::Error)
        }
    )*};
}

impl Serializer for IsNone {
    type Ok = bool;
    type Error = std::fmt::Error;
    type SerializeSeq = Impossible<bool, std::fmt::Error>;
    type SerializeTuple = Impossible<bool, std::fmt::Error>;
    type SerializeTupleStruct = Impossible<bool, std::fmt::Error>;
    type SerializeTupleVariant = Impossible<bool, std::fmt::Error>;
    type SerializeMap = Impossible<bool, std::fmt::Error>;
    type SerializeStruct = Impossible<bool, std::fmt::Error>;
    type SerializeStructVariant = Impossible<bool, std::fmt::Error>;

    present! {
        serialize_bool bool serialize_i8 i8 serialize_i16 i16 serialize_i32 i32
        serialize_i64 i64 serialize_u8 u8 serialize_u16 u16 serialize_u32 u32
        serialize_u64 u64 serialize_f32 f32 serialize_f64 f64 serialize_char char
        serialize_str &str serialize_bytes &[u8] serialize_unit_struct &'static str
    }

    fn serialize_none(self) -> Result<bool, std::fmt::Error> {
        Ok(true)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<bool, std::fmt::Error> {
        Ok(false)
    }

    fn serialize_unit(self) -> Result<bool, std::fmt::Error> {
        Ok(false)
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<bool, std::fmt::Error> {
        Ok(false)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<bool, std::fmt::Error> {
        Ok(false)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<bool, std::fmt::Error> {
        Ok(false)
    }

    absent! {
        serialize_seq SerializeSeq (Option<usize>)
        serialize_tuple SerializeTuple (usize)
        serialize_tuple_struct SerializeTupleStruct (&'static str, usize)
        serialize_tuple_variant SerializeTupleVariant (&'static str, u32, &'static str, usize)
        serialize_map SerializeMap (Option<usize>)
        serialize_struct SerializeStruct (&'static str, usize)
        serialize_struct_variant SerializeStructVariant (&'static str, u32, &'static str, usize)
    }
}
