use toolgate::tool;

/// Find orders.
#[tool(ability = "orders.view", public, read_only)]
async fn find_orders() {}

fn main() {}
