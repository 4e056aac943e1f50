use toolgate::tool;

/// Add two numbers.
#[tool(public, read_only)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
