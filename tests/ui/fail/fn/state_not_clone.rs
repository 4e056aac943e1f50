use std::sync::Mutex;

use toolgate::{State, tool};

/// Counts visits.
#[tool(public)]
async fn visit(visits: State<Mutex<u32>>) -> String {
    let mut visits = visits.lock().unwrap();
    *visits += 1;
    visits.to_string()
}

fn main() {}
