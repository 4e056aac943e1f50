use toolgate::tool;

/// Search the web.
#[tool(public, read_only, name = "search the web")]
async fn web_search() {}

fn main() {}
