use toolgate::tool;

/// Read the caller's own invoices.
#[tool(public, enforced_downstream, read_only)]
async fn my_invoices() {}

fn main() {}
