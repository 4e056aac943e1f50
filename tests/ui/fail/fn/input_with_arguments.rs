use toolgate::{Input, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NewCustomer {
    name: String,
}

/// Create a customer.
#[tool(ability = "customers.manage")]
async fn create_customer(input: Input<NewCustomer>, notify: bool) {
    let _ = (input.0.name, notify);
}

fn main() {}
