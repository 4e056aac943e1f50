use toolgate::tool;

/// Count the orders.
#[tool(public, read_only)]
async fn count_orders() -> u64 {
    let count: u64 = "three";
    count
}

fn main() {}
