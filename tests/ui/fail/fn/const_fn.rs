use toolgate::tool;

/// The answer.
#[tool(public, read_only)]
const fn answer() -> u32 {
    42
}

fn main() {}
