use toolgate::tool;

/// Echo a value.
#[tool(public, read_only)]
async fn echo<T: serde::Serialize>(value: T) -> T {
    value
}

fn main() {}
