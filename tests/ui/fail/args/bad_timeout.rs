use toolgate::tool;

/// Search the web.
#[tool(public, read_only, timeout = "soon")]
async fn web_search() {}

fn main() {}
