use toolgate::tool;

/// Shout a text.
#[tool(public, read_only)]
async fn shout(text: &str) -> String {
    text.to_uppercase()
}

fn main() {}
