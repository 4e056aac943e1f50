use toolgate::tool;

/// Export every order.
#[tool(public, read_only, task = "sometimes")]
async fn export_orders() {}

/// Say hello.
#[tool(public, read_only, task = true)]
async fn hello() {}

fn main() {}
