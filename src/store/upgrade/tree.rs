//! The step from format v3 to v4: the Merkle tree rebuilt with RFC 6962's hash (SHA-256) from
//! the record hashes, which do not change.
//!
//! The tree is derived data, as a projection is: every stored node and the frontier follow from
//! the record hashes alone, so the upgrade walks the records once, checking each against its
//! own hash and the chain, and writes the new tree in place of the old in the upgrade's
//! transaction.

use redb::WriteTransaction;

use crate::error::{Error, Result};
use crate::log::merkle::MerkleWriter;
use crate::log::read::{check_at, parse_segment};
use crate::log::tables::{HEAD_KEY, MERKLE, META, SEGMENTS};
use crate::log::{Head, decode_head, encode_head, seal_meta, unseal_meta};
use crate::record::problem::Problem;
use crate::record::{Format, Position};
use crate::storage::Readable;

/// Replaces the tree of the log `txn` writes, whose segments keep records in `layout`, with the
/// tree of format v4 over the same record hashes.
pub(super) fn rebuild(txn: &WriteTransaction, layout: Format) -> Result<()> {
    let head = stored_head(txn)?;
    // Every node is rewritten, and a node the old table held beyond the log's (damage) must
    // not survive: the table starts empty.
    MERKLE.delete(txn)?;
    MERKLE.create(txn)?;
    let empty = encode_head(Head::default());
    let writer = crate::storage::Writer::redb(txn);
    let mut tree = MerkleWriter::open(&writer, &empty, 0)?;
    let walked = push_every_record(txn, layout, &mut tree)?;
    if walked != head {
        return Err(Error::Corrupt {
            position: walked.next,
            problem: Box::new(Problem::Head {
                stored_next: head.next,
                stored_hash: head.hash,
                next: walked.next,
                hash: walked.hash,
            }),
        });
    }
    let mut meta = META.write(txn)?;
    meta.insert(
        HEAD_KEY,
        seal_meta(HEAD_KEY, &tree.head_bytes(head)).as_slice(),
    )?;
    Ok(())
}

/// The head the log's meta table keeps.
fn stored_head(txn: &WriteTransaction) -> Result<Head> {
    let meta = META.write(txn)?;
    let Some(bytes) = meta.get(HEAD_KEY)? else {
        return Err(Error::corrupt_meta(
            crate::error::MetaItem::Head,
            crate::error::MetaFault::Missing,
        ));
    };
    decode_head(unseal_meta(HEAD_KEY, bytes.value())?)
}

/// Walks every segment in position order, checking each record against its own hash and the
/// chain (the segments tiling the log from position 0 without a gap), and pushes each record's
/// hash onto `tree`: the head the walk reaches.
fn push_every_record(
    txn: &WriteTransaction,
    layout: Format,
    tree: &mut MerkleWriter<'_>,
) -> Result<Head> {
    let mut walked = Head::default();
    let segments = SEGMENTS.write(txn)?;
    for entry in segments.range(0..)? {
        let (key, value) = entry?;
        let first = key.value();
        if first != walked.next.0 {
            return Err(Error::Corrupt {
                position: walked.next,
                problem: Box::new(Problem::Gap {
                    expected: walked.next,
                    found: Position(first),
                }),
            });
        }
        let bytes = value.value();
        let segment = parse_segment(layout, first, bytes)?;
        for at in segment.records_at() {
            let record = check_at(bytes, &at, walked.next)?;
            if record.prev != walked.hash {
                return Err(Error::Corrupt {
                    position: walked.next,
                    problem: Box::new(Problem::Prev {
                        expected: walked.hash,
                        found: record.prev,
                    }),
                });
            }
            tree.push(record.hash)?;
            walked = Head {
                next: Position(walked.next.0 + 1),
                hash: record.hash,
            };
        }
        // The tree grows by a leaf for every record walked, and by nothing else: the frontier
        // written beside the head (`MerkleWriter::head_bytes`) checks the same count.
        assert_eq!(
            tree.size(),
            walked.next.0,
            "the rebuilt Merkle tree has a leaf per record walked"
        );
    }
    Ok(walked)
}
