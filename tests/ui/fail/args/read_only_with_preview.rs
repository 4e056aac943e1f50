use toolgate::{Preview, ToolError, tool};

/// Find orders.
#[tool(ability = "orders.view", read_only, preview = preview_find)]
async fn find_orders() {}

async fn preview_find() -> Result<Preview, ToolError> {
    Ok(Preview::new("nothing"))
}

fn main() {}
