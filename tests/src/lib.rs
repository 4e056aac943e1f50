//! Integration tests of toolgate.
