//! Tests of toolgate: behaviour of the pipeline, start-up checks, and compile errors (`ui`).
