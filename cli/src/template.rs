//! The generated module, and where it is written.

use std::fs;
use std::path::Path;

use crate::Request;
use crate::names::snake_case;

/// Writes `<dir>/<name>.rs`, lists it in `<dir>/mod.rs`, and says what was done.
pub(crate) fn write(request: &Request) -> Result<String, String> {
    let name = snake_case(&request.name)?;
    if !request
        .ability
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || ".:_-".contains(c))
    {
        return Err(format!(
            "ability `{}` may use only ASCII letters, digits, `.`, `_`, `-` and `:`",
            request.ability
        ));
    }
    fs::create_dir_all(&request.dir)
        .map_err(|e| format!("cannot create {}: {e}", request.dir.display()))?;
    let file = request.dir.join(format!("{name}.rs"));
    if file.exists() {
        return Err(format!(
            "{} exists already; nothing was written",
            file.display()
        ));
    }
    let source = if request.write {
        write_tool(&name, &request.ability)
    } else {
        read_tool(&name, &request.ability)
    };
    fs::write(&file, source).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    list_module(&request.dir, &name)?;
    Ok(format!(
        "wrote {} and listed it in {}; make sure the crate root declares `mod {};`. \
         Its test needs tokio (features `rt`, `macros`) as a dev-dependency.",
        file.display(),
        request.dir.join("mod.rs").display(),
        request
            .dir
            .file_name()
            .map_or("tools".into(), |n| n.to_string_lossy()),
    ))
}

/// Adds `pub mod <name>;` to `<dir>/mod.rs`, creating it if needed.
fn list_module(dir: &Path, name: &str) -> Result<(), String> {
    let path = dir.join("mod.rs");
    let mut text =
        fs::read_to_string(&path).unwrap_or_else(|_| "//! The crate's tools.\n\n".to_owned());
    let line = format!("pub mod {name};\n");
    if !text.contains(&line) {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&line);
    }
    fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn read_tool(name: &str, ability: &str) -> String {
    format!(
        r#"//! The `{name}` tool.

use toolgate::prelude::*;

/// Find what `{name}` finds. Say here what it does, when to use it and what it returns: the model reads
/// this.
#[tool(ability = "{ability}", read_only)]
pub async fn {name}(
    /// What to look for.
    query: String,
    limit: Limit,
) -> Result<Vec<String>, ToolError> {{
    let rows = vec![format!("nothing matches `{{query}}` yet")];
    Ok(rows.into_iter().take(limit.as_usize()).collect())
}}

#[cfg(test)]
mod tests {{
    use toolgate::Limit;

    #[tokio::test]
    async fn {name}_answers() {{
        let rows = super::{name}("anything".into(), Limit::default()).await.expect("it answers");
        assert!(rows.len() <= Limit::<20, 50>::default().as_usize());
    }}
}}
"#
    )
}

fn write_tool(name: &str, ability: &str) -> String {
    format!(
        r#"//! The `{name}` tool.

use toolgate::prelude::*;

/// Change what `{name}` changes. Say here what it does and what it needs: the model reads this. A person
/// approves a preview before it runs.
#[tool(ability = "{ability}", preview = preview_{name})]
pub async fn {name}(
    /// The record to change.
    id: String,
) -> Result<String, ToolError> {{
    Err(ToolError::new(format!("`{name}` is not implemented yet; nothing was changed for {{id}}.")))
}}

/// What `{name}` would do, for a person to approve: name the records and amounts involved. It must not
/// write.
async fn preview_{name}(id: String) -> Result<Preview, ToolError> {{
    Ok(Preview::new(format!("`{name}` would change {{id}}.")))
}}

#[cfg(test)]
mod tests {{
    #[tokio::test]
    async fn {name}_previews_and_writes_nothing_yet() {{
        let preview = super::preview_{name}("R-1".into()).await.expect("a preview");
        assert!(preview.text().contains("R-1"));
        let error = super::{name}("R-1".into()).await.expect_err("not implemented yet");
        assert!(error.message().contains("nothing was changed"));
    }}
}}
"#
    )
}
