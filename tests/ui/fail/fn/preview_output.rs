use toolgate::tool;

/// Confirm an order.
#[tool(ability = "orders.manage", preview = preview_confirm)]
async fn confirm_order(number: String) {
    let _ = number;
}

async fn preview_confirm(number: String) -> String {
    format!("Confirm {number}")
}

fn main() {}
