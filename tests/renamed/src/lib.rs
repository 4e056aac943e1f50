//! A crate that depends on toolgate under another name (`tg`) and declares a tool with `crate = ::tg`.

/// Greets someone.
#[tg::tool(public, read_only, crate = ::tg)]
pub async fn greet(
    /// Who to greet.
    name: String,
) -> String {
    format!("Hello, {name}!")
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_renamed_dependency_registers_and_runs_tools() {
        let registry = tg::Registry::builder().build().unwrap();
        let outcome = registry
            .call(
                &tg::Caller::anonymous(),
                "greet",
                serde_json::json!({ "name": "Ada" }),
            )
            .await;
        assert_eq!(outcome.into_result().text_for_model(), "Hello, Ada!");
    }
}
