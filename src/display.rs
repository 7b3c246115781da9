//! How annals spells things in its messages: untrusted text quoted and escaped, counts
//! grouped by thousands, bytes as lower-case hex. Public so that tools printing beside the
//! library's messages (the `annals` command line) spell them the same way.
//!
//! ```
//! assert_eq!(annals::display::grouped(1_234_567), "1,234,567");
//! assert_eq!(annals::display::quoted("a\u{1b}[2Jb"), "\"a\\u{1b}[2Jb\"");
//! assert_eq!(annals::display::hex(&[0xab, 0x01]), "ab01");
//! ```

pub use crate::audit::proof_file::quoted;
pub use crate::hash::hex;
pub use crate::projection::grouped;
