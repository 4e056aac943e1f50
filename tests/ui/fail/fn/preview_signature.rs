use toolgate::{Preview, State, ToolError, tool};

#[derive(Clone)]
struct Db;

/// Confirm an order.
#[tool(ability = "orders.manage", preview = preview_confirm)]
async fn confirm_order(db: State<Db>, number: String) {
    let _ = (db, number);
}

async fn preview_confirm(number: String) -> Result<Preview, ToolError> {
    Ok(Preview::new(format!("Confirm {number}")))
}

fn main() {}
