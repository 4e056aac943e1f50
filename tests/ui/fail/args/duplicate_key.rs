use toolgate::tool;

/// Ship an order.
#[tool(ability = "orders.view", ability = "orders.ship")]
async fn ship_order() {}

fn main() {}
