use toolgate::tool;

/// Find orders.
#[tool(ability = ["orders.view", "see all orders"], read_only)]
async fn find_orders() {}

fn main() {}
