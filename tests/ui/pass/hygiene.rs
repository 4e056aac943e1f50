//! The user's own `Result`, `Option`, `State`, `Box`, `Vec` and `Ok` in scope do not confuse the expansion.
#![allow(dead_code, non_snake_case)]

use toolgate::{ToolError, tool};

type Result<T> = std::result::Result<T, ToolError>;
struct Option;
struct State;
struct Box;
struct Vec;
struct Some;
struct None;
fn Ok() {}
mod inventory {}
mod core {}

/// Add two numbers.
#[tool(public, read_only)]
async fn add(a: i64, b: i64) -> Result<i64> {
    a.checked_add(b).ok_or_else(|| ToolError::new("overflow"))
}

fn main() {}
