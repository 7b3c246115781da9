//! Races between real processes on one log.
