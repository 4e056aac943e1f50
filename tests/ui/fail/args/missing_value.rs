use toolgate::tool;

/// Search the web.
#[tool(public, read_only, capability)]
async fn web_search() {}

fn main() {}
