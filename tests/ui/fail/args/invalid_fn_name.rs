use toolgate::tool;

/// The size of the cart.
#[tool(public, read_only)]
async fn größe() -> u32 {
    3
}

fn main() {}
