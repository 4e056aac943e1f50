//! What the benchmark's fallible steps return: any error, to be printed.

/// A step's value, or why it failed.
pub(crate) type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;
