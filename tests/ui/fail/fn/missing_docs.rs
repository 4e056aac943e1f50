use toolgate::tool;

#[tool(public, read_only)]
async fn mystery() {}

fn main() {}
