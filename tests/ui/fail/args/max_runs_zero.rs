use toolgate::tool;

/// Search the web.
#[tool(public, read_only, max_runs = 0)]
async fn web_search() {}

fn main() {}
