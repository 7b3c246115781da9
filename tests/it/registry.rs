//! Tests of the registry projection's rules.
