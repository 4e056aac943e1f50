use toolgate::tool;

/// Find orders.
#[tool(public, colour = "blue")]
async fn find_orders() {}

fn main() {}
