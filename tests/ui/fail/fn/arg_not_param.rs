use toolgate::tool;

struct Money {
    cents: i64,
}

/// Refund an amount.
#[tool(ability = "payments.refund")]
async fn refund(amount: Money) -> String {
    format!("{}", amount.cents)
}

fn main() {}
