//! Subscriptions.
