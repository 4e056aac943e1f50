use toolgate::tool;

/// Find orders.
#[tool(public, read_only)]
async fn find_orders(
    #[arg(lenght(max = 20))]
    query: String,
) {
    let _ = query;
}

fn main() {}
