//! Personal data and its erasure by crypto-shredding (`docs/erasure.md`): what a program
//! needs to append a payload personal to a subject, read it back, erase the subject, and move
//! the subjects' keys between key stores. [`Store::append_personal`](crate::Store::append_personal)
//! seals a payload before its record is hashed and [`Store::erase`](crate::Store::erase)
//! destroys a subject's key; [`PayloadReader`] gives a [`Payload`] (the plaintext while the
//! key stands, [`Payload::Erased`] after); [`Keys`] exports and imports keys
//! ([`KeyExport`], [`KeyImport`]); [`Erasure`] reports an erasure; [`SealedField`] is a
//! personal field of an event as stored; [`check_subject`] is the rule for a subject's name.
//! A command's own personal fields are [`command::PersonalField`](crate::command::PersonalField)s.
//!
//! Only names: the code lives in the store (the key store, sealing and erasure) and in the
//! format (the envelope), and never imports this module.

pub use crate::record::envelope::{Payload, SealedField};
pub use crate::store::{Erasure, KeyExport, KeyImport, Keys, PayloadReader, check_subject};
