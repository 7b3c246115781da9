//! Tests of the leases projection's rules.
