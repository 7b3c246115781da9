//! Tests of the outbox projection's rules.
