//! The error types of everyday Rust applications work as they are: a boxed error, and with the `anyhow`
//! feature `anyhow::Result`, for text and for structured results.
use std::error::Error;

use toolgate::tool;

/// Read a number from a file.
#[tool(public, read_only)]
async fn read_number(path: String) -> Result<u32, Box<dyn Error + Send + Sync>> {
    Ok(std::fs::read_to_string(path)?.trim().parse()?)
}

/// Read a file.
#[tool(public, read_only)]
async fn read_text(path: String) -> Result<String, Box<dyn Error + Send + Sync>> {
    Ok(std::fs::read_to_string(path)?)
}

/// Read a number from a file, with context.
#[tool(public, read_only)]
async fn read_number_anyhow(path: String) -> anyhow::Result<u32> {
    use anyhow::Context;
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    Ok(text.trim().parse()?)
}

/// Read a file, with context.
#[tool(public, read_only)]
async fn read_text_anyhow(path: String) -> anyhow::Result<String> {
    anyhow::Context::context(std::fs::read_to_string(&path), "reading the file")
}

fn main() {}
