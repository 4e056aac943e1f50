use toolgate::tool;

/// Add a pair.
#[tool(public, read_only)]
async fn add_pair((a, b): (i64, i64)) -> i64 {
    a + b
}

fn main() {}
