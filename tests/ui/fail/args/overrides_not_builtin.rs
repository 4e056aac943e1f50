use toolgate::tool;

/// Find orders, replacing nothing.
#[tool(public, read_only, overrides_builtin)]
async fn find_orders() -> &'static str {
    "none"
}

fn main() {}
