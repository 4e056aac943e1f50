use toolgate::tool;

struct Order {
    number: String,
}

/// Get an order.
#[tool(ability = "orders.view", read_only)]
async fn get_order(number: String) -> Order {
    Order { number }
}

fn main() {}
