use toolgate::tool;

/// Parse a number.
#[tool(public, read_only)]
async fn parse(text: String) -> Result<u32, String> {
    text.parse().map_err(|_| "not a number".to_owned())
}

fn main() {}
