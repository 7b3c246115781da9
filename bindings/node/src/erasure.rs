//! Personal payloads and their erasure from Node (`docs/erasure.md`): `store.erase(subject,
//! atMs)`, appends personal to a subject (the `subject` option of `append`, `appendAsync` and
//! the writer's `append`), and reads that give a personal payload's plaintext while its
//! subject's key stands and a typed erased mark after it (`payload: null`, `erased: true`),
//! never its ciphertext as data. Rows of projections that keep a personal field (an outbox
//! row's payload, a span event's) cross with that field opened the same way: `payload` the
//! plaintext with its `subject`, or `null` with `erased: true`. The sealing, the keys and the
//! erasing are the crate's; this file only converts.

use annals::ingest::IngestedEvent;
use annals::outbox::OutboxRow;
use annals::runs::SpanEvent;
use annals::{
    Record, Store as Inner,
    erasure::{Payload, PayloadReader, SealedField},
};
use napi::Env;
use napi::bindgen_prelude::{Array, Buffer, Either3, JsObjectValue, Null, Object};
use napi_derive::napi;

use crate::Store;
use crate::convert::u64_of_ms;
use crate::crossing::Made;
use crate::error::to_js;

/// A record as a reader may take it: a personal payload opened, or marked erased.
pub(crate) struct Opened {
    /// The record, its payload the plaintext of a personal one (empty once erased).
    pub record: Record,
    /// The subject a personal or erased payload belongs to.
    pub subject: Option<String>,
    /// Whether the payload's subject was erased (or this store holds no key for it).
    pub erased: bool,
}

/// Opens the personal payloads of a read's records: the key store is read once a read, when
/// it meets the first personal payload, for the rest of it.
pub(crate) struct Opener<'s> {
    store: &'s Inner,
    reader: Option<PayloadReader>,
}

impl<'s> Opener<'s> {
    pub(crate) fn new(store: &'s Inner) -> Opener<'s> {
        Opener {
            store,
            reader: None,
        }
    }

    /// `record` with its payload as a reader may take it.
    pub(crate) fn open(&mut self, mut record: Record) -> annals::Result<Opened> {
        // A plain payload needs no reader, nor the key store one reads.
        if annals::erasure::PayloadReader::subject_of(&record.payload).is_none() {
            return Ok(Opened {
                record,
                subject: None,
                erased: false,
            });
        }
        // One reader for every record the opener is given: making one reads the key store and
        // takes a snapshot, which made each record of a `readAll` five times its cost in Rust.
        let reader = match self.reader.take() {
            Some(reader) => reader,
            None => annals::erasure::PayloadReader::of(self.store)?,
        };
        let payload = self.reader.insert(reader).open(&record)?;
        let subject = payload.subject().unwrap_or_default().to_owned();
        let data = match payload {
            Payload::Plain(_) => {
                return Ok(Opened {
                    record,
                    subject: None,
                    erased: false,
                });
            }
            Payload::Personal { mut data, .. } => Some(std::mem::take(&mut *data)),
            // Erased, or a kind of payload this binding does not know: never the stored bytes.
            _ => None,
        };
        let erased = data.is_none();
        record.payload = data.unwrap_or_default();
        Ok(Opened {
            record,
            subject: Some(subject),
            erased,
        })
    }

    /// Every record of `records`, opened.
    pub(crate) fn open_all(&mut self, records: Vec<Record>) -> annals::Result<Vec<Opened>> {
        records
            .into_iter()
            .map(|record| self.open(record))
            .collect()
    }
}

/// A record read as it is stored, opened as a reader may take it.
pub(crate) fn opened(store: &Inner, record: Record) -> annals::Result<Opened> {
    Opener::new(store).open(record)
}

#[napi]
impl Store {
    /// Erases `subject` (crypto-shredding): appends its `subject.erased` event at `atMs`,
    /// durably, then destroys its key in the key store beside the log. From then on every
    /// read of its personal payloads gives `payload: null` with `erased: true`; `verify`,
    /// proofs and replay still pass. Erasing a subject again appends nothing.
    #[napi(ts_return_type = "Erasure")]
    pub fn erase(&self, env: Env, subject: String, at_ms: f64) -> napi::Result<Made> {
        self.not_a_view("erase")?;
        self.outside_transaction("erase")?;
        let at_ms = u64_of_ms(at_ms, "atMs")?;
        let erasure = self.with(|store| store.erase(&subject, at_ms).map_err(to_js))?;
        // The crate's own `Erasure`, by serde: a field it adds comes through.
        crate::crossing::to_js(&env, &erasure)
    }
}

/// A row's personal field as a reader may take it: plain (left as it crossed), a personal one
/// opened, or the mark of one erased.
enum Field {
    Plain,
    Personal { subject: String, data: Vec<u8> },
    Erased { subject: String },
}

/// A row of a projection with a field that may be personal, and how JavaScript takes it.
pub(crate) trait PersonalRow {
    /// The field, as `PayloadReader::open_field` reads it.
    fn field(&self) -> SealedField<'_>;
    /// The property of the crossed row that holds the field (`payload`, an ingested event's
    /// `bytes`).
    const FIELD: &'static str = "payload";
    /// Whether the field crosses as text (a span event's) rather than a `Buffer`.
    const TEXT: bool;
    /// A property of the crossed row that holds the sealed field, to be taken off once it is
    /// opened (a span event's `personal`), if the field is not in `payload` itself.
    const SEALED: Option<&'static str>;
}

impl PersonalRow for OutboxRow {
    fn field(&self) -> SealedField<'_> {
        self.payload_field()
    }
    const TEXT: bool = false;
    const SEALED: Option<&'static str> = None;
}

impl PersonalRow for IngestedEvent {
    fn field(&self) -> SealedField<'_> {
        self.bytes_field()
    }
    const FIELD: &'static str = "bytes";
    const TEXT: bool = false;
    const SEALED: Option<&'static str> = None;
}

impl PersonalRow for SpanEvent {
    fn field(&self) -> SealedField<'_> {
        self.payload_field()
    }
    const TEXT: bool = true;
    const SEALED: Option<&'static str> = Some("personal");
}

impl Opener<'_> {
    /// `field` as a reader may take it; the key store is read once, at the first personal
    /// field, so plain rows read as they did whatever the key store holds.
    fn field(&mut self, field: &SealedField<'_>) -> annals::Result<Field> {
        if field.subject().is_none() {
            return Ok(Field::Plain);
        }
        if self.reader.is_none() {
            self.reader = Some(PayloadReader::of(self.store)?);
        }
        let Some(reader) = &self.reader else {
            return Ok(Field::Plain);
        };
        Ok(match reader.open_field(field)? {
            Payload::Plain(_) => Field::Plain,
            Payload::Personal { subject, mut data } => Field::Personal {
                subject: subject.to_owned(),
                data: std::mem::take(&mut *data),
            },
            // Erased, or a kind of payload this binding does not know: never the stored bytes.
            other => Field::Erased {
                subject: other.subject().unwrap_or_default().to_owned(),
            },
        })
    }

    /// `object`, the crossed `row`, with its personal field opened: `payload` (an ingested
    /// event's `bytes`) the plaintext (text for a span event) with its `subject`, or `null`
    /// with `erased: true`; the sealed bytes taken off. A plain row is left as it crossed.
    pub(crate) fn open_crossed<R: PersonalRow>(
        &mut self,
        row: &R,
        object: &mut Object<'_>,
    ) -> napi::Result<()> {
        let (subject, erased) = match self.field(&row.field()).map_err(to_js)? {
            Field::Plain => return Ok(()),
            Field::Personal { subject, data } if R::TEXT => {
                let text = String::from_utf8_lossy(&data).into_owned();
                object.set_named_property(R::FIELD, text)?;
                (subject, false)
            }
            Field::Personal { subject, data } => {
                object.set_named_property(R::FIELD, Buffer::from(data))?;
                (subject, false)
            }
            Field::Erased { subject } => {
                object.set_named_property(R::FIELD, Null)?;
                (subject, true)
            }
        };
        if let Some(sealed) = R::SEALED {
            object.delete_named_property(sealed)?;
        }
        object.set_named_property("subject", subject)?;
        if erased {
            object.set_named_property("erased", true)?;
        }
        Ok(())
    }

    /// `objects`, the crossed `rows` in their order, each opened ([`Self::open_crossed`]).
    pub(crate) fn open_all_crossed<R: PersonalRow>(
        &mut self,
        rows: &[R],
        objects: &mut [Object<'_>],
    ) -> napi::Result<()> {
        for (row, object) in rows.iter().zip(objects.iter_mut()) {
            self.open_crossed(row, object)?;
        }
        Ok(())
    }

    /// The array `name` of the crossed `object`, whose elements are `rows`, each opened.
    pub(crate) fn open_property<R: PersonalRow>(
        &mut self,
        object: &Object<'_>,
        name: &str,
        rows: &[R],
    ) -> napi::Result<()> {
        let array: Array<'_> = object.get_named_property(name)?;
        for (index, row) in (0u32..).zip(rows) {
            if let Some(mut element) = array.get::<Object<'_>>(index)? {
                self.open_crossed(row, &mut element)?;
            }
        }
        Ok(())
    }
}

/// `rows` as JavaScript's, each personal field opened: what a query of rows gives.
pub(crate) fn rows_js<R: PersonalRow + serde::Serialize>(
    store: &Inner,
    env: &Env,
    rows: &[R],
) -> napi::Result<Made> {
    let mut made = crate::crossing::to_js(env, &rows)?;
    if let Either3::B(objects) = &mut made {
        Opener::new(store).open_all_crossed(rows, objects)?;
    }
    Ok(made)
}

/// `row` (or `null`) as JavaScript's, its personal field opened.
pub(crate) fn row_js<R: PersonalRow + serde::Serialize>(
    store: &Inner,
    env: &Env,
    row: &Option<R>,
) -> napi::Result<Made> {
    let mut made = crate::crossing::to_js(env, row)?;
    if let (Some(row), Either3::A(object)) = (row, &mut made) {
        Opener::new(store).open_crossed(row, object)?;
    }
    Ok(made)
}
