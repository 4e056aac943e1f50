use toolgate::tool;

/// Find orders.
#[tool(public, read_only = true)]
async fn find_orders() {}

fn main() {}
