//! Personal payloads and their erasure from Node (`docs/erasure.md`): `store.erase(subject,
//! atMs)`, appends personal to a subject (the `subject` option of `append`, `appendAsync` and
//! the writer's `append`), and reads that give a personal payload's plaintext while its
//! subject's key stands and a typed erased mark after it (`payload: null`, `erased: true`),
//! never its ciphertext as data. The sealing, the keys and the erasing are the crate's; this
//! file only converts.

use annals::{Payload, PayloadReader, Record, Store as Inner};
use napi::Env;
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

/// Opens the personal payloads of a read's records: a key store is read only once the read
/// meets a personal payload, and once for the rest of the read.
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
        let payload = match &self.reader {
            Some(reader) => reader.open(&record)?,
            // A plain payload needs no key store: `Store::payload` reads none for it.
            None => annals::PayloadReader::of(self.store)?.open(&record)?,
        };
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
        if self.reader.is_none() {
            self.reader = Some(annals::PayloadReader::of(self.store)?);
        }
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
