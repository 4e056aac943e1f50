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
    let BuildError::DuplicateName { name, first, second } = &error else { panic!("unexpected error: {error}") };
    assert_eq!(name, "export");
    let mut places = [first.as_str(), second.as_str()];
    places.sort_unstable();
    assert_eq!(places, ["tests/duplicate_name.rs:10", "tests/duplicate_name.rs:20"]);
    assert!(error.to_string().contains("rename one with `name = \"...\"`"), "{error}");
}
