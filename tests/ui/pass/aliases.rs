//! Type aliases never change what a parameter or a result means: the traits decide, not the names.
#![allow(dead_code)]

use toolgate::{Caller, Limit, State, ToolError, tool};

#[derive(Clone)]
struct Pool;

type Db = State<Pool>;
type Who = Caller;
type Rows = Limit;
type Answer = std::result::Result<Vec<String>, ToolError>;

/// List things.
#[tool(ability = "things.view", read_only)]
async fn list_things(db: Db, who: Who, limit: Rows) -> Answer {
    let _ = (db, who);
    Ok(vec!["thing".to_owned(); limit.as_usize()])
}

fn main() {}
