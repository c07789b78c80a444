//! Split algorithms (placeholder, being written).
