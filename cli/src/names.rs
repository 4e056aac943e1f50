//! Tool names: `SearchOrders`, `search-orders` or `search_orders` all become `search_orders`.

/// The snake_case function name for a tool name given in any common case.
pub(crate) fn snake_case(name: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if c == '-' || c == '_' || c == ' ' {
            if !out.ends_with('_') && !out.is_empty() {
                out.push('_');
            }
            previous_lower = false;
        } else if c.is_ascii_uppercase() {
            if previous_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            previous_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            return Err(format!(
                "`{name}` has a character a tool name cannot have: `{c}`"
            ));
        }
    }
    let out = out.trim_matches('_').to_owned();
    match out.chars().next() {
        Some(first) if first.is_ascii_lowercase() => Ok(out),
        _ => Err(format!("`{name}` must start with a letter")),
    }
}

#[cfg(test)]
mod tests {
    use super::snake_case;

    #[test]
    fn common_cases_become_snake_case() {
        assert_eq!(snake_case("SearchOrders").unwrap(), "search_orders");
        assert_eq!(snake_case("search-orders").unwrap(), "search_orders");
        assert_eq!(snake_case("ShipOrderV2").unwrap(), "ship_order_v2");
        assert!(snake_case("9lives").is_err() && snake_case("a/b").is_err());
    }
}
