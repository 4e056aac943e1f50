use toolgate::tool;

/// Find orders.
#[tool(abilty = "orders.view", read_only)]
async fn find_orders() {}

fn main() {}
