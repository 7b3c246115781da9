//! Tests of the runs projection's rules.
