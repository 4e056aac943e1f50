use toolgate::tool;

struct Shop;

impl Shop {
    /// Count orders.
    #[tool(public, read_only)]
    async fn count_orders(&self) -> u64 {
        0
    }
}

fn main() {}
