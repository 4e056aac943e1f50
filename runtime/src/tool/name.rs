//! MCP's tool-name rule (SEP-986), defined once: for dynamic tools when a registry is built, and for
//! compiled-in tools in a `const` the `#[tool]` macro writes, so that a bad name fails the build.

/// What a tool name may be, as people read it; a macro, so that the build-time messages can `concat!` it.
macro_rules! name_rule {
    () => {
        "tool names use only ASCII letters, digits, `_`, `-` and `.` (1 to 128 characters)"
    };
}

pub(crate) const NAME_RULE: &str = name_rule!();

/// Not public API: 1 to 128 of `[A-Za-z0-9_.-]`.
#[doc(hidden)]
pub const fn is_tool_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > 128 {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')) {
            return false;
        }
        i += 1;
    }
    true
}

/// Not public API: the build error for an invalid name given with `name = "..."`.
#[doc(hidden)]
pub const INVALID_NAME: &str = concat!("invalid tool name; ", name_rule!());

/// Not public API: the build error for a function whose name is not a valid tool name.
#[doc(hidden)]
pub const INVALID_FN_NAME: &str = concat!(
    "this function's name is not a valid tool name; ",
    name_rule!(),
    ": set `name = \"...\"` in `#[tool]`"
);

/// Not public API: whether `name` is a built-in tool an app's own tool may replace with
/// `#[tool(overrides_builtin)]`.
#[doc(hidden)]
pub const fn is_replaceable(name: &str) -> bool {
    let replaceable = super::definition::REPLACEABLE;
    let mut i = 0;
    while i < replaceable.len() {
        let (a, b) = (name.as_bytes(), replaceable[i].as_bytes());
        let mut j = 0;
        while j < a.len() && a.len() == b.len() && a[j] == b[j] {
            j += 1;
        }
        if j == a.len() && a.len() == b.len() {
            return true;
        }
        i += 1;
    }
    false
}

/// Not public API: the build error for `overrides_builtin` on a tool named unlike any built-in.
#[doc(hidden)]
pub const NOT_REPLACEABLE: &str = "`overrides_builtin` replaces toolgate's built-in tool of the same name, and only \
    `show_table` and `draw_chart` can be replaced: name the tool after one of them (`name = \"show_table\"`), or \
    remove `overrides_builtin`";

#[cfg(test)]
mod tests {
    use super::is_tool_name;

    #[test]
    fn tool_names() {
        assert!(is_tool_name("search_orders") && is_tool_name("shop.orders-v2"));
        assert!(!is_tool_name("") && !is_tool_name("search orders") && !is_tool_name("café"));
        assert!(is_tool_name(&"a".repeat(128)) && !is_tool_name(&"a".repeat(129)));
    }

    #[test]
    fn only_the_display_tools_can_be_replaced() {
        use super::is_replaceable;
        assert!(is_replaceable("show_table") && is_replaceable("draw_chart"));
        assert!(
            !is_replaceable("tool_search")
                && !is_replaceable("show_tabl")
                && !is_replaceable("show_tables")
        );
    }
}
