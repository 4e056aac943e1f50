use toolgate::tool;

/// Find orders.
#[tool(public, read_only, category = "orders", categories = ["sales"])]
async fn find_orders() {}

fn main() {}
