use toolgate::tool;

/// Delete every order.
#[tool(read_only)]
async fn delete_everything() {}

fn main() {}
