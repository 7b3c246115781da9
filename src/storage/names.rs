//! Maps keyed by a table's name, hashed cheaply: a command looks its tables up in every layer
//! of the overlay and in each commit's cache of open tables, dozens of times, and std's
//! SipHash of the name was a twentieth of an append's instructions. The names are the code's
//! own (the log's tables and each projection's), never an input, so a hash that a chosen key
//! could flood is no risk here.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map from table names to `V`.
pub(crate) type ByName<V> = HashMap<String, V, BuildHasherDefault<NameHasher>>;

/// FNV-1a over the name's bytes (64 bits).
#[derive(Clone, Copy)]
pub(crate) struct NameHasher(u64);

impl Default for NameHasher {
    fn default() -> Self {
        NameHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_hash_as_fnv_1a_says() {
        // The FNV-1a 64 test vectors of its authors' reference (isthe.com/chongo/tech/comp/fnv).
        for (text, expected) in [
            ("", 0xcbf2_9ce4_8422_2325_u64),
            ("a", 0xaf63_dc4c_8601_ec8c),
            ("foobar", 0x8594_4171_f739_67e8),
        ] {
            let mut hasher = NameHasher::default();
            hasher.write(text.as_bytes());
            assert_eq!(hasher.finish(), expected, "{text:?}");
        }
    }

    #[test]
    fn a_map_by_name_finds_what_it_holds() {
        let mut map: ByName<u32> = ByName::default();
        for (at, name) in ["segments", "meta", "leases", "leases.by_holder"]
            .iter()
            .enumerate()
        {
            map.insert((*name).to_owned(), at as u32);
        }
        assert_eq!(map.get("leases.by_holder"), Some(&3));
        assert_eq!(map.get("lease"), None);
    }
}
