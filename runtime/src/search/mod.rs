//! Finding tools by what they do: a BM25 index over a snapshot's tools, made once per snapshot, which
//! `Registry::search` ranks with and then filters to the tools the caller may run.

mod bm25;
mod words;

pub(crate) use bm25::Index;
