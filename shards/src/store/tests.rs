//! Store tests (filled below).
