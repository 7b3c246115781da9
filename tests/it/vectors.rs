//! Golden record vectors: re-encode and re-hash each, byte for byte.
