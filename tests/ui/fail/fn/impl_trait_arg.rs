use toolgate::tool;

/// Shout.
#[tool(public, read_only)]
async fn shout(text: impl AsRef<str>) -> String {
    text.as_ref().to_uppercase()
}

fn main() {}
