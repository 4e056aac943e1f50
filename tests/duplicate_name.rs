//! Two tools with one name: the registry refuses to build and names both places.

use toolgate::{BuildError, Registry, tool};

mod billing {
    use super::tool;

    /// Export invoices as CSV.
    #[tool(ability = "billing.view", read_only)]
    pub(crate) async fn export() -> String {
        String::new()
    }
}

mod orders {
    use super::tool;

    /// Export orders as CSV.
    #[tool(ability = "orders.view", read_only, name = "export")]
    pub(crate) async fn export_orders() -> String {
        String::new()
    }
}

#[test]
fn duplicate_names_fail_at_start_up_naming_both_sources() {
    let error = Registry::builder().build().unwrap_err();
    let BuildError::DuplicateName {
        name,
        first,
        second,
    } = &error
    else {
        panic!("unexpected error: {error}")
    };
    assert_eq!(name, "export");
    let mut lines: Vec<String> = [first, second].iter().map(|place| line_at(place)).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "pub(crate) async fn export() -> String {",
            "pub(crate) async fn export_orders() -> String {"
        ]
    );
    assert!(
        error
            .to_string()
            .contains("rename one with `name = \"...\"`"),
        "{error}"
    );
}

/// The text of the line a `file:line` source points at.
fn line_at(place: &str) -> String {
    let (file, line) = place.rsplit_once(':').expect("file:line");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join(file)).expect("the source file");
    let line: usize = line.parse().expect("a line number");
    text.lines()
        .nth(line - 1)
        .expect("the line exists")
        .trim()
        .to_owned()
}
