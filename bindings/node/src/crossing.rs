//! How the library's own command and outcome types cross to JavaScript and back: through their
//! serde implementations, so a field the library adds reaches Node with no copy of the type
//! here. Two adapters sit between those implementations and napi-rs's serde (de)serializer and
//! apply the package's conventions, the same for every type:
//!
//! - a struct's fields are camelCase in JavaScript (`ttl_ms` is `ttlMs`); a map's keys are
//!   the caller's data and stay as they are;
//! - an enum named `…Command` or `…Outcome` is an object tagged by `type`, its variant in
//!   camelCase (`{ type: 'markWaiting', … }`), which a command of one variant may leave out; a
//!   variant holding a struct (`AppendOutcome::Appended`) is the struct's fields so tagged;
//!   any other enum is its serde name (`'held'`, `'sequence_reused'`);
//! - an integer comes in as a safe-integer `number` or a `bigint`, refused naming the field if
//!   it is neither or does not fit; a `u64` goes out as a `bigint`, except milliseconds (a field
//!   ending in `_ms`), which go out as a `number`, as do the narrower integers;
//! - `null` and `undefined` are absent: an `Option` is `None`, a field with a serde default takes
//!   it; an absent field is left out of an object; a field the type does not have is refused,
//!   named;
//! - bytes come in as a `Buffer` or `Uint8Array` and go out as a `Buffer`: the adapters are not
//!   human-readable in serde's sense, so a payload the command line's JSON prints as text (an
//!   outbox row's) crosses as its bytes;
//! - a roster (`Knows`) is an array of handles, `['*']` for every one (`ROSTERS`): its serde
//!   form is stored, and the reference's hosts spell it so.
//!
//! `scripts/schema.mjs` declares the same conventions in TypeScript from the types' JSON
//! schemas (`schemas()`), so the declarations cannot drift from what crosses. It must never
//! decide anything a command means: it only converts.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::fmt::Display;

use napi::Env;
use napi::bindgen_prelude::{
    Array as JsArray, BigInt, Buffer, Either, Either3, JsObjectValue, JsValue, Null, Object,
    ToNapiValue, Unknown,
};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::ser::{self, Impossible, Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::error::{invalid, js_name};

/// The largest integer a JavaScript number holds exactly.
const SAFE_INTEGER_MAX: i64 = 9_007_199_254_740_991;

/// `command`, a JavaScript object, as the library's `T`.
pub fn from_js<T: DeserializeOwned>(command: &Object<'_>) -> napi::Result<T> {
    T::deserialize(In {
        holder: command,
        place: &Place::Root,
        value: None,
    })
    .map_err(|error| at(&Place::Root, error))
}

/// `value`, the argument JavaScript names `name` (`events`, `guard`), as the library's `T`: a
/// refusal names its place under that name (`events[1].atMs`, `guard.token`).
pub fn argument<T: DeserializeOwned>(value: Unknown<'_>, name: &'static str) -> napi::Result<T> {
    let place = Place::Argument(name);
    // The holder is never read for an argument: its value is given, as an entry's is.
    let holder = <Object<'_> as napi::bindgen_prelude::FromNapiValue>::from_unknown(value)?;
    T::deserialize(In {
        holder: &holder,
        place: &place,
        value: Some((value, value.get_type()?)),
    })
    .map_err(|error| at(&place, error))
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

/// The `type` of a command, as serde names its variant (`markWaiting` is `mark_waiting`): to
/// tell which of several of the library's enums declares it.
pub fn tag(command: &Object<'_>) -> napi::Result<String> {
    let tag: String = command
        .get_c_named_property_unchecked(c"type")
        .map_err(|_| invalid("type", "must be a string"))?;
    Ok(snake(&tag))
}

/// Whether an object `command` has `field`, neither `null` nor `undefined`.
pub fn has(command: &Object<'_>, field: &str) -> napi::Result<bool> {
    Ok(command
        .get::<Unknown<'_>>(field)?
        .map(|value| value.get_type())
        .transpose()?
        .is_some_and(|kind| !matches!(kind, napi::ValueType::Null | napi::ValueType::Undefined)))
}

/// A field's name as JavaScript spells it and as V8 takes it, made once per name: the names
/// are the library's fields, a few hundred, kept for the life of the process.
fn spelled(field: &'static str) -> (&'static str, &'static CStr) {
    thread_local! {
        static SPELLED: RefCell<HashMap<&'static str, (&'static str, &'static CStr)>> =
            RefCell::new(HashMap::new());
    }
    SPELLED.with(|spelled| {
        *spelled.borrow_mut().entry(field).or_insert_with(|| {
            let name = js_name(field);
            // A Rust field's name has no NUL in it.
            let c_name = CString::new(name.as_bytes()).unwrap_or_default();
            (
                Box::leak(name.into_boxed_str()),
                Box::leak(c_name.into_boxed_c_str()),
            )
        })
    })
}

/// Whether an enum crosses as an object tagged by `type` rather than as a name.
fn tagged(name: &str) -> bool {
    name.ends_with("Command") || name.ends_with("Outcome")
}

/// An enum that crosses as a list: its variant holding the list is the list, its wildcard
/// variant the list of the wildcard alone (`scripts/schema.mjs` declares it `Array<string>`).
struct Roster {
    /// The enum's serde name.
    name: &'static str,
    /// The variant that holds the list.
    list: &'static str,
    /// The variant that stands for everyone, and the list's item that says it.
    everyone: &'static str,
    wildcard: &'static str,
}

/// The registry's `Knows`: handles, or `['*']`, as the reference spells it. Its serde form
/// (`{handles}` or `"all"`) is in stored events and rows, so its shape here is the crossing's.
const ROSTERS: [Roster; 1] = [Roster {
    name: "Knows",
    list: "handles",
    everyone: "all",
    wildcard: annals::registry::KNOWS_ALL,
}];

fn roster(name: &str) -> Option<&'static Roster> {
    ROSTERS.iter().find(|roster| roster.name == name)
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

/// serde's error `text`, met reading `field`, as an `INVALID_ARGUMENT` naming the field.
fn named(field: &str, text: &str) -> napi::Error {
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

/// An `INVALID_ARGUMENT` naming `field` (the command itself when it is the whole).
fn refused(field: &str, problem: impl Display) -> napi::Error {
    let field = if field.is_empty() { "command" } else { field };
    invalid(field, &problem.to_string())
}

// ---------------------------------------------------------------------------------------------
// Coming in: `In` reads each value where it is (a field of an object by its name, an element
// of an array) when the library's type asks for it, as the type it asks for.

/// The place of a value in what the caller passed, for reading it and for naming it.
#[derive(Clone, Copy)]
enum Place<'a> {
    /// The command itself (or the options): its fields are named alone (`nowMs`).
    Root,
    /// An argument of the call, by its name: its fields are named under it (`guard.token`).
    Argument(&'static str),
    /// A field of the object at `parent`: its name as JavaScript spells it, and as V8 takes it.
    Field(&'a Place<'a>, &'static str, &'static CStr),
    /// The key `name` of the map at `parent`, as the caller wrote it.
    Key(&'a Place<'a>, &'a str),
    /// Element `at` of the array at `parent`.
    Element(&'a Place<'a>, u32),
}

impl Display for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Root => f.write_str("command"),
            Place::Argument(name) => f.write_str(name),
            Place::Field(Place::Root, name, _) | Place::Key(Place::Root, name) => f.write_str(name),
            Place::Field(parent, name, _) | Place::Key(parent, name) => {
                write!(f, "{parent}.{name}")
            }
            Place::Element(parent, at) => write!(f, "{parent}[{at}]"),
        }
    }
}

/// An `INVALID_ARGUMENT` naming `place`.
fn refuse(place: &Place<'_>, problem: impl Display) -> napi::Error {
    invalid(&place.to_string(), &problem.to_string())
}

/// An error of the library's type met reading `place` (serde's words, which serde's errors
/// carry with the status `InvalidArg`: a missing field, an unknown name), as one naming it; an
/// error the crossing made names its place already and passes as it is.
fn at(place: &Place<'_>, error: napi::Error) -> napi::Error {
    if error.status != napi::Status::InvalidArg {
        return error;
    }
    named(
        &match place {
            Place::Root => String::new(),
            place => place.to_string(),
        },
        &error.reason,
    )
}

/// The value at `place`, inside `holder` (the object or array it is in; the root's own), or
/// `value` when the object's entries read it already, with its type, to see it was there.
struct In<'a> {
    holder: &'a Object<'a>,
    place: &'a Place<'a>,
    value: Option<(Unknown<'a>, napi::ValueType)>,
}

impl<'a> In<'a> {
    /// The value as `T`, refused as not `what` if it is not one.
    fn fetch<T: napi::bindgen_prelude::FromNapiValue>(&self, what: &str) -> napi::Result<T> {
        if let Some((value, _)) = self.value {
            return T::from_unknown(value)
                .map_err(|_| refuse(self.place, format!("must be {what}")));
        }
        let value = match self.place {
            // An argument's value is always given (`argument`).
            Place::Root | Place::Argument(_) => self
                .holder
                .get_named_property_unchecked::<T>("")
                .map_err(drop),
            Place::Field(_, _, name) => self
                .holder
                .get_c_named_property_unchecked::<T>(name)
                .map_err(drop),
            Place::Key(_, name) => self
                .holder
                .get_named_property_unchecked::<T>(name)
                .map_err(drop),
            Place::Element(_, at) => self.holder.get_element::<T>(*at).map_err(drop),
        };
        value.map_err(|()| refuse(self.place, format!("must be {what}")))
    }

    /// The value's type, `undefined` when it is absent.
    fn kind(&self) -> napi::Result<napi::ValueType> {
        if let Some((_, kind)) = self.value {
            return Ok(kind);
        }
        match self.place {
            Place::Root => Ok(napi::ValueType::Object),
            _ => self.fetch::<Unknown<'_>>("a value")?.get_type(),
        }
    }

    /// The object the value is (the root is one).
    fn object(&self) -> napi::Result<Object<'a>> {
        match self.place {
            Place::Root => Ok(*self.holder),
            _ => {
                if self.kind()? != napi::ValueType::Object {
                    return Err(refuse(self.place, "must be an object"));
                }
                self.fetch::<Object<'a>>("an object")
            }
        }
    }

    fn integer<'de, V: Visitor<'de>>(self, width: Width, visitor: V) -> napi::Result<V::Value> {
        let whole: i128 = match self.fetch::<Either<f64, BigInt>>("a safe integer or a bigint")? {
            Either::A(number) => {
                if !(number.fract() == 0.0 && number.abs() <= SAFE_INTEGER_MAX as f64) {
                    return Err(refuse(
                        self.place,
                        format!("{number} is not a whole number from {}", width.bound),
                    ));
                }
                number as i128
            }
            Either::B(big) => {
                let (negative, value, lossless) = big.get_u128();
                if !lossless {
                    return Err(refuse(
                        self.place,
                        format!("is not a whole number from {}", width.bound),
                    ));
                }
                let value = i128::try_from(value).unwrap_or(i128::MAX);
                if negative { -value } else { value }
            }
        };
        if !(width.min..=width.max).contains(&whole) {
            return Err(refuse(
                self.place,
                format!("{whole} is not a whole number from {}", width.bound),
            ));
        }
        let place = self.place;
        let value = if width.min < 0 {
            visitor.visit_i64(whole as i64)
        } else {
            visitor.visit_u64(whole as u64)
        };
        value.map_err(|error| at(place, error))
    }
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

macro_rules! integer {
    ($($method:ident $width:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
            self.integer($width, visitor)
        }
    )*};
}

impl<'de, 'a> Deserializer<'de> for In<'a> {
    type Error = napi::Error;

    // JavaScript is not a text format: bytes cross as a Buffer (see the module's doc).
    fn is_human_readable(&self) -> bool {
        false
    }

    integer! {
        deserialize_u8 U8 deserialize_u16 U16 deserialize_u32 U32 deserialize_u64 U64
        deserialize_i64 I64 deserialize_i32 I64 deserialize_i16 I64 deserialize_i8 I64
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        match self.kind()? {
            napi::ValueType::Undefined | napi::ValueType::Null => visitor.visit_none(),
            napi::ValueType::Boolean => self.deserialize_bool(visitor),
            napi::ValueType::String => self.deserialize_string(visitor),
            napi::ValueType::Number | napi::ValueType::BigInt => self.deserialize_i64(visitor),
            napi::ValueType::Object => self.deserialize_map(visitor),
            _ => Err(refuse(self.place, "a value the binding cannot take")),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        visitor.visit_bool(self.fetch("a boolean")?)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        visitor.visit_f64(self.fetch("a number")?)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        self.deserialize_u64(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        self.deserialize_string(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        self.deserialize_string(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        let place = self.place;
        visitor
            .visit_string(self.fetch("a string")?)
            .map_err(|error| at(place, error))
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        let bytes: Buffer = self.fetch("a Buffer")?;
        visitor.visit_bytes(&bytes)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        match self.kind()? {
            napi::ValueType::Undefined | napi::ValueType::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> napi::Result<V::Value> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> napi::Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        let value: Unknown<'_> = self.fetch("an array")?;
        if value.is_buffer()? {
            // A `Vec<u8>` (a payload) asks for a sequence; a Buffer gives bytes.
            let bytes: Buffer = self.fetch("a Buffer")?;
            return visitor.visit_seq(de::value::SeqDeserializer::<_, napi::Error>::new(
                bytes.iter().copied(),
            ));
        }
        if !value.is_array()? {
            return Err(refuse(self.place, "must be an array"));
        }
        let array = self.fetch::<Object<'a>>("an array")?;
        let len = array.get_array_length()?;
        let place = self.place;
        visitor
            .visit_seq(Items {
                array: &array,
                parent: place,
                at: 0,
                len,
            })
            .map_err(|error| at(place, error))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> napi::Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> napi::Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        let object = self.object()?;
        let keys = object.get_property_names()?;
        let len = keys.get_array_length()?;
        let place = self.place;
        visitor
            .visit_map(Entries {
                object: &object,
                parent: place,
                names: Names::Keys(&keys, len),
                at: 0,
                name: None,
                key: String::new(),
                value: None,
            })
            .map_err(|error| at(place, error))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> napi::Result<V::Value> {
        let object = self.object()?;
        let place = self.place;
        visitor
            .visit_map(Entries {
                object: &object,
                parent: place,
                names: Names::Fields(fields),
                at: 0,
                name: None,
                key: String::new(),
                value: None,
            })
            .map_err(|error| at(place, error))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> napi::Result<V::Value> {
        let place = self.place;
        if let Some(roster) = roster(name) {
            let handles: Vec<String> = serde::Deserialize::deserialize(self)?;
            let everyone = handles.iter().any(|handle| handle == roster.wildcard);
            return visitor
                .visit_enum(Listed {
                    variant: if everyone {
                        roster.everyone
                    } else {
                        roster.list
                    },
                    handles,
                })
                .map_err(|error| at(place, error));
        }
        if !tagged(name) {
            let text: String = self.fetch("a string")?;
            let Some(variant) = variants.iter().find(|variant| **variant == text) else {
                return Err(refuse(
                    place,
                    format!("must be one of {}; not '{text}'", variants.join(", ")),
                ));
            };
            return visitor
                .visit_enum(de::value::BorrowedStrDeserializer::<napi::Error>::new(
                    variant,
                ))
                .map_err(|error| at(place, error));
        }
        let object = self.object()?;
        let variant = variant_of(&object, place, variants)?;
        visitor
            .visit_enum(Tagged {
                object: &object,
                place,
                variant,
            })
            .map_err(|error| at(place, error))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        self.deserialize_string(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> napi::Result<V::Value> {
        visitor.visit_unit()
    }
}

/// Variants JavaScript spells as another with one more field: `acquire` with `labels` is the
/// library's `acquire_labelled` (scripts/schema.mjs declares them as one, from `MERGED`).
const MERGED: &[(&str, &str, &str)] = &[("acquire", "labels", "acquire_labelled")];

/// The variant an object tagged by `type` names, among `variants`.
fn variant_of(
    object: &Object<'_>,
    place: &Place<'_>,
    variants: &'static [&'static str],
) -> napi::Result<&'static str> {
    let tag_place = Place::Field(place, "type", c"type");
    // A command of one variant needs no `type` (`consumer`'s `checkpoint`).
    if let [only] = variants
        && !has(object, "type")?
    {
        return Ok(only);
    }
    let tag: String = object
        .get_c_named_property_unchecked(c"type")
        .map_err(|_| refuse(&tag_place, "must be a string"))?;
    let name = snake(&tag);
    let merged = MERGED
        .iter()
        .find(|(spelled, _, _)| *spelled == name)
        .map(|(_, field, variant)| (field, variant));
    if let Some((field, variant)) = merged
        && variants.contains(variant)
        && has(object, field)?
    {
        return Ok(variants
            .iter()
            .find(|known| *known == variant)
            .copied()
            .unwrap_or(variant));
    }
    variants
        .iter()
        .find(|variant| **variant == name && variant_js(variant) == tag)
        .copied()
        .ok_or_else(|| {
            let known: Vec<String> = variants.iter().map(|variant| variant_js(variant)).collect();
            refuse(
                &tag_place,
                format!("must be one of {}; not '{tag}'", known.join(", ")),
            )
        })
}

/// The elements of an array.
struct Items<'a> {
    array: &'a Object<'a>,
    parent: &'a Place<'a>,
    at: u32,
    len: u32,
}

impl<'de, 'a> SeqAccess<'de> for Items<'a> {
    type Error = napi::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> napi::Result<Option<T::Value>> {
        if self.at >= self.len {
            return Ok(None);
        }
        let place = Place::Element(self.parent, self.at);
        self.at += 1;
        let value = seed.deserialize(In {
            holder: self.array,
            place: &place,
            value: None,
        });
        value.map(Some).map_err(|error| at(&place, error))
    }

    fn size_hint(&self) -> Option<usize> {
        Some((self.len - self.at) as usize)
    }
}

/// The names an object's entries are read by.
enum Names<'a> {
    /// A struct's fields, as the library spells them: each is read by its camelCase name,
    /// absent or not (an absent one is `None` if it may be, refused as missing if not).
    Fields(&'static [&'static str]),
    /// A map's own keys, as the caller wrote them.
    Keys(&'a Object<'a>, u32),
}

/// An object's entries.
struct Entries<'a> {
    object: &'a Object<'a>,
    parent: &'a Place<'a>,
    names: Names<'a>,
    at: u32,
    /// The name the next value is read by: a field's, or a map's key.
    name: Option<(&'static str, &'static CStr)>,
    key: String,
    /// The next field's value, read to see it is there, and its type.
    value: Option<(Unknown<'a>, napi::ValueType)>,
}

impl<'de, 'a> MapAccess<'de> for Entries<'a> {
    type Error = napi::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> napi::Result<Option<K::Value>> {
        let key: &str = match &self.names {
            Names::Fields(fields) => loop {
                // A field that is absent (`undefined` or `null`) is not given to serde at all:
                // an `Option` is `None`, a field with a default takes it, any other is missing.
                let Some(field) = fields.get(self.at as usize) else {
                    return Ok(None);
                };
                self.at += 1;
                let name = spelled(field);
                let value: Unknown<'a> = self.object.get_c_named_property_unchecked(name.1)?;
                let kind = value.get_type()?;
                if matches!(kind, napi::ValueType::Undefined | napi::ValueType::Null) {
                    continue;
                }
                self.name = Some(name);
                self.value = Some((value, kind));
                break field;
            },
            Names::Keys(keys, len) => {
                if self.at >= *len {
                    return Ok(None);
                }
                self.name = None;
                self.key = keys.get_element::<String>(self.at)?;
                self.at += 1;
                &self.key
            }
        };
        seed.deserialize(de::value::StrDeserializer::<napi::Error>::new(key))
            .map(Some)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> napi::Result<T::Value> {
        let key = std::mem::take(&mut self.key);
        let place = match self.name {
            Some((name, c_name)) => Place::Field(self.parent, name, c_name),
            None => Place::Key(self.parent, &key),
        };
        let value = seed.deserialize(In {
            holder: self.object,
            place: &place,
            value: self.value.take(),
        });
        value.map_err(|error| at(&place, error))
    }
}

/// The variant serde names `variant`, as `seed` reads its name.
fn variant_named<'de, T: DeserializeSeed<'de>>(
    seed: T,
    variant: &'static str,
) -> napi::Result<T::Value> {
    seed.deserialize(de::value::BorrowedStrDeserializer::<napi::Error>::new(
        variant,
    ))
}

/// A roster read from its list, as the variant it is.
struct Listed {
    variant: &'static str,
    handles: Vec<String>,
}

impl<'de> EnumAccess<'de> for Listed {
    type Error = napi::Error;
    type Variant = Self;

    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> napi::Result<(T::Value, Self)> {
        Ok((variant_named(seed, self.variant)?, self))
    }
}

impl<'de> VariantAccess<'de> for Listed {
    type Error = napi::Error;

    fn unit_variant(self) -> napi::Result<()> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> napi::Result<T::Value> {
        seed.deserialize(de::value::SeqDeserializer::<_, napi::Error>::new(
            self.handles.into_iter(),
        ))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> napi::Result<V::Value> {
        Err(napi::Error::from_reason("a roster is a list"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        _: V,
    ) -> napi::Result<V::Value> {
        Err(napi::Error::from_reason("a roster is a list"))
    }
}

/// An object tagged by `type`, as its variant's fields.
struct Tagged<'a> {
    object: &'a Object<'a>,
    place: &'a Place<'a>,
    variant: &'static str,
}

impl<'de, 'a> EnumAccess<'de> for Tagged<'a> {
    type Error = napi::Error;
    type Variant = Self;

    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> napi::Result<(T::Value, Self)> {
        Ok((variant_named(seed, self.variant)?, self))
    }
}

impl<'de, 'a> VariantAccess<'de> for Tagged<'a> {
    type Error = napi::Error;

    fn unit_variant(self) -> napi::Result<()> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> napi::Result<T::Value> {
        Err(refuse(self.place, "a variant the binding cannot take"))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> napi::Result<V::Value> {
        Err(refuse(self.place, "a variant the binding cannot take"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> napi::Result<V::Value> {
        visitor.visit_map(Entries {
            object: self.object,
            parent: self.place,
            names: Names::Fields(fields),
            at: 0,
            name: None,
            key: String::new(),
            value: None,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Going out: `Into` writes each value where it goes (a field, an element, the result) as it
// is serialized, naming fields as V8 names its own (`set_named_property`).

/// Where a value goes.
enum Slot<'a, 'e> {
    /// A field of an object, named as V8 takes it.
    Field(&'a mut Object<'static>, &'static CStr),
    /// The key `name` of a map.
    Key(&'a mut Object<'static>, &'a str),
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
            Slot::Field(object, name) => object.set_c_named_property(name, value),
            Slot::Key(object, name) => object.set_named_property(name, value),
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

    // JavaScript is not a text format: bytes cross as a Buffer, not as the text or hex the
    // command line's JSON prints for them (see the module's doc).
    fn is_human_readable(&self) -> bool {
        false
    }

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
        if let Some(roster) = roster(name)
            && variant == roster.everyone
        {
            return self.put(vec![roster.wildcard]);
        }
        if tagged(name) {
            let mut object = Object::new(self.env)?;
            object.set_c_named_property(c"type", variant_js(variant))?;
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
        name: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> napi::Result<()> {
        match roster(name) {
            Some(roster) if variant == roster.list => value.serialize(self),
            // A tagged enum's variant holding a struct (`AppendOutcome::Appended`): the
            // struct's fields, tagged by the variant as a struct variant's are.
            _ if tagged(name) => {
                let Some(mut object) = object_of(self.env, value, self.field)? else {
                    return Err(unsupported("a newtype variant of other than a struct"));
                };
                object.set_c_named_property(c"type", variant_js(variant))?;
                self.slot.put_object(object)
            }
            _ => Err(unsupported("a newtype variant")),
        }
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
            .set_c_named_property(c"type", variant_js(variant))?;
        Ok(record)
    }
}

/// `value` made alone: the object it is, or `None` if it is not one.
fn object_of<T: Serialize + ?Sized>(
    env: &Env,
    value: &T,
    field: &'static str,
) -> napi::Result<Option<Object<'static>>> {
    let mut made = None;
    value.serialize(Into {
        env,
        slot: Slot::Result(&mut made),
        field,
    })?;
    Ok(match made {
        Some(Either3::A(object)) => Some(object),
        _ => None,
    })
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
            Elements::Result(list, _) => match object_of(self.env, value, self.field)? {
                Some(object) => list.push(object),
                None => return Err(unsupported("a list of other than objects")),
            },
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
            slot: Slot::Key(&mut self.object, &key),
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
        value.serialize(Into {
            env: self.env,
            slot: Slot::Field(&mut self.object, spelled(key).1),
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
