use toolgate::tool;

/// Find orders.
#[tool(ability = "", read_only)]
async fn find_orders() {}

fn main() {}
