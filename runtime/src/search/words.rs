//! How text becomes search terms: lowercase runs of letters and digits, without the little words that say
//! nothing about a tool, and with a plain English plural folded (`orders` finds `order`), the same for
//! tools and for queries.

/// Words too common to tell tools apart.
const STOP: [&str; 24] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "its", "me",
    "my", "of", "on", "or", "that", "the", "this", "to", "with",
];

/// The terms of `text`, in order.
pub(crate) fn terms(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .filter(|word| !STOP.contains(&word.as_str()))
        .map(|word| fold(&word))
}

/// A word without its plural `s` (`orders`, `searches`), keeping `ss` and short words (`status`, `bus`).
fn fold(word: &str) -> String {
    let plural =
        word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us");
    match word.strip_suffix("es") {
        Some(stem)
            if plural && (stem.ends_with("sh") || stem.ends_with("ch") || stem.ends_with('x')) =>
        {
            stem.to_owned()
        }
        _ if plural => word[..word.len() - 1].to_owned(),
        _ => word.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_and_plurals_fold_alike_in_tools_and_queries() {
        let tool: Vec<String> =
            terms("ship_order: Ship the Orders, searches; status 2FA").collect();
        assert_eq!(
            tool,
            ["ship", "order", "ship", "order", "search", "status", "2fa"]
        );
        assert_eq!(
            terms("boxes class bus").collect::<Vec<_>>(),
            ["box", "class", "bus"]
        );
    }
}
