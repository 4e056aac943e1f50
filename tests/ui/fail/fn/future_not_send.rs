use std::rc::Rc;

use toolgate::tool;

async fn pause() {}

/// Count something.
#[tool(public, read_only)]
async fn count() -> usize {
    let shared = Rc::new(3);
    pause().await;
    *shared
}

fn main() {}
