//! Integration tests of the results store, one binary: round trips, migrations, listing
//! and resolving, crash safety (a killed writer), concurrent writers, error messages.

mod concurrency;
mod crash;
mod fixtures;
mod listing;
mod migrations;
mod round_trip;
