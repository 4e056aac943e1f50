use toolgate::tool;

/// Find orders.
#[tool(ability = orders_view, read_only)]
async fn find_orders() {}

fn main() {}
