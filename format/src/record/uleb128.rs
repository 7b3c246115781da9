//! Unsigned LEB128, the one variable-width integer of the format (`schema/FORMAT.md` 3.3 and
//! 3.8): seven bits a byte, low bits first, the high bit set on every byte but the last, in its
//! shortest form and within 64 bits. Every value has exactly one encoding, so a decoder
//! refuses any other.

/// Appends `value` in unsigned LEB128.
pub fn put(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7F) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The bytes [`put`] writes for `value`: 1 to 10.
pub fn len(value: u64) -> usize {
    let bits = 64 - value.max(1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Takes one unsigned LEB128 number off the front of `bytes`: `None` if it is cut short, does
/// not fit 64 bits, or is not in its shortest form (so every value has one encoding).
pub fn take(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (index, &byte) in bytes.iter().enumerate().take(10) {
        let bits = u64::from(byte & 0x7F);
        let shift = 7 * index as u32;
        if index == 9 && byte > 1 {
            return None;
        }
        value |= bits << shift;
        if byte & 0x80 == 0 {
            if byte == 0 && index > 0 {
                return None;
            }
            *bytes = &bytes[index + 1..];
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_have_one_encoding_each() {
        for value in [
            0,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut bytes = Vec::new();
            put(&mut bytes, value);
            assert_eq!(bytes.len(), len(value), "{value}");
            let mut rest = bytes.as_slice();
            assert_eq!(take(&mut rest), Some(value));
            assert!(rest.is_empty());
        }
        let mut max = Vec::new();
        put(&mut max, u64::MAX);
        assert_eq!(max.len(), 10);
        for refused in [
            &[0x80][..],
            &[0x80, 0x00],
            &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02],
            &[0x80; 11],
        ] {
            assert_eq!(take(&mut &refused[..]), None, "{refused:?}");
        }
    }
}
