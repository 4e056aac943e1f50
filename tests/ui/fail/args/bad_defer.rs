use toolgate::tool;

/// Export every order.
#[tool(public, read_only, defer = "lazy")]
async fn export_orders() {}

/// Say hello.
#[tool(public, read_only, defer = true)]
async fn hello() {}

fn main() {}
