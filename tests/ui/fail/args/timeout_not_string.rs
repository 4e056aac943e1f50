use toolgate::tool;

/// Search the web.
#[tool(public, read_only, timeout = 2)]
async fn web_search() {}

fn main() {}
