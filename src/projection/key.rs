//! Order-preserving key encoding for projection tables.
//!
//! Every projection table maps key bytes to value bytes; [`KeyCodec`] turns typed keys into
//! bytes whose lexicographic order is the typed order, so range scans (due rows by time,
//! rows of one owner) are B-tree ranges. Integers are big-endian; a string is its bytes with
//! `0x00` escaped as `0x00 0xFF`, ended by `0x00 0x00`, so a tuple of strings sorts field by
//! field (the FoundationDB tuple-layer trick).

/// A key type with an order-preserving byte encoding.
pub trait KeyCodec: Sized {
    /// Appends the encoding of `self` to `out`.
    fn encode_key(&self, out: &mut Vec<u8>);
    /// Reads one value from the front of `input`, advancing it; `None` if malformed.
    fn decode_key(input: &mut &[u8]) -> Option<Self>;
}

/// The bytes of a key.
pub fn key_bytes<K: KeyCodec>(key: &K) -> Vec<u8> {
    let mut out = Vec::new();
    key.encode_key(&mut out);
    out
}

/// The key encoded in `bytes`, which must hold exactly one.
pub(crate) fn key_from_bytes<K: KeyCodec>(mut bytes: &[u8]) -> Option<K> {
    let key = K::decode_key(&mut bytes)?;
    bytes.is_empty().then_some(key)
}

impl KeyCodec for u64 {
    fn encode_key(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_be_bytes());
    }
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        let (head, rest) = input.split_first_chunk::<8>()?;
        *input = rest;
        Some(u64::from_be_bytes(*head))
    }
}

impl KeyCodec for u8 {
    fn encode_key(&self, out: &mut Vec<u8>) {
        out.push(*self);
    }
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        let (head, rest) = input.split_first()?;
        *input = rest;
        Some(*head)
    }
}

impl KeyCodec for String {
    fn encode_key(&self, out: &mut Vec<u8>) {
        out.reserve(self.len() + 2);
        // Each zero byte is written 0x00 0xFF, so the text's pieces between zeros are copied
        // whole.
        let mut pieces = self.as_bytes().split(|&byte| byte == 0);
        if let Some(first) = pieces.next() {
            out.extend_from_slice(first);
        }
        for piece in pieces {
            out.extend_from_slice(&[0, 0xFF]);
            out.extend_from_slice(piece);
        }
        out.extend_from_slice(&[0, 0]);
    }
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        // Most text holds no zero byte: then its first zero starts the terminator.
        let first_zero = input.iter().position(|&byte| byte == 0)?;
        if input.get(first_zero + 1) == Some(&0) {
            let text = String::from_utf8(input[..first_zero].to_vec()).ok()?;
            *input = &input[first_zero + 2..];
            return Some(text);
        }
        let mut bytes = Vec::new();
        let mut at = 0;
        loop {
            match (input.get(at)?, input.get(at + 1)) {
                (0, Some(0)) => break,
                (0, Some(0xFF)) => {
                    bytes.push(0);
                    at += 2;
                }
                (0, _) => return None,
                (&byte, _) => {
                    bytes.push(byte);
                    at += 1;
                }
            }
        }
        *input = &input[at + 2..];
        String::from_utf8(bytes).ok()
    }
}

impl KeyCodec for () {
    fn encode_key(&self, _out: &mut Vec<u8>) {}
    fn decode_key(_input: &mut &[u8]) -> Option<Self> {
        Some(())
    }
}

macro_rules! tuple_key {
    ($($name:ident),+) => {
        impl<$($name: KeyCodec),+> KeyCodec for ($($name,)+) {
            #[allow(non_snake_case)]
            fn encode_key(&self, out: &mut Vec<u8>) {
                let ($($name,)+) = self;
                $($name.encode_key(out);)+
            }
            fn decode_key(input: &mut &[u8]) -> Option<Self> {
                Some(($($name::decode_key(input)?,)+))
            }
        }
    };
}
tuple_key!(A);
tuple_key!(A, B);
tuple_key!(A, B, C);
tuple_key!(A, B, C, D);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_keys_sort_like_strings_even_with_nul_bytes() {
        let mut words = ["b", "a\0b", "a", "", "a\0", "ab", "\u{ff}"]
            .map(String::from)
            .to_vec();
        let mut encoded: Vec<Vec<u8>> = words.iter().map(key_bytes).collect();
        words.sort();
        encoded.sort();
        let decoded: Vec<String> = encoded.iter().map(|b| key_from_bytes(b).unwrap()).collect();
        assert_eq!(decoded, words);
    }

    #[test]
    fn tuples_sort_field_by_field() {
        let mut keys = vec![
            (String::from("ab"), 1u64),
            (String::from("a"), 9),
            (String::from("a"), 2),
            (String::from("b"), 0),
        ];
        let mut encoded: Vec<Vec<u8>> = keys.iter().map(key_bytes).collect();
        keys.sort();
        encoded.sort();
        let decoded: Vec<(String, u64)> =
            encoded.iter().map(|b| key_from_bytes(b).unwrap()).collect();
        assert_eq!(decoded, keys);
    }

    #[test]
    fn string_keys_escape_each_zero_byte_and_end_with_two_zeros() {
        let check = |text: &str, expected: &[u8]| {
            let encoded = key_bytes(&String::from(text));
            assert_eq!(encoded, expected, "{text:?}");
            assert_eq!(key_from_bytes::<String>(&encoded).as_deref(), Some(text));
        };
        check("", &[0, 0]);
        check("ab", b"ab\0\0");
        check("\0", &[0, 0xFF, 0, 0]);
        check("a\0b\0", &[b'a', 0, 0xFF, b'b', 0, 0xFF, 0, 0]);
        check("\0\0x", &[0, 0xFF, 0, 0xFF, b'x', 0, 0]);
    }

    #[test]
    fn malformed_keys_do_not_decode() {
        assert_eq!(key_from_bytes::<u64>(&[1, 2, 3]), None);
        assert_eq!(key_from_bytes::<String>(b"abc"), None);
        assert_eq!(key_from_bytes::<String>(&[b'a', 0, 7]), None);
        assert_eq!(key_from_bytes::<u8>(&[1, 2]), None, "trailing bytes");
    }
}
