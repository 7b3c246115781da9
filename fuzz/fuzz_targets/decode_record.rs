//! Fuzz target `decode_record`: a thin wrapper; the body is
//! `annals::testing::harness::decode_record`, which the stable test
//! `tests/it/fuzz_replay.rs` also runs over the corpus. The allocator here makes any single
//! allocation beyond the format's limits (the payload cap plus the header cap) a crash, so
//! a length field that is trusted before it is checked is a finding.

#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};

/// The largest allocation decoding may make: a payload at its cap and a header at its cap.
const ALLOCATION_BYTES_MAX: usize =
    annals::testing::internals::record::PAYLOAD_BYTES_CAP as usize + annals::testing::internals::record::HEADER_BYTES_CAP;

struct Bounded;

// SAFETY: every call is forwarded to the system allocator unchanged; the check only
// aborts before an oversized request.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOCATION_BYTES_MAX {
            std::process::abort();
        }
        // SAFETY: the caller upholds `alloc`'s contract, which `System` shares.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOCATION_BYTES_MAX {
            std::process::abort();
        }
        // SAFETY: as for `alloc`. Forwarded, not left to the default (which writes the zeros
        // itself and so touches every page of a large, lazily mapped block).
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > ALLOCATION_BYTES_MAX {
            std::process::abort();
        }
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Bounded = Bounded;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    annals::testing::harness::decode_record(data);
});
