//! Okapi BM25 over each tool's fields, weighted: a word of the name says more about a tool than a word of
//! its description.

use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::tool::Tool;

use super::words::terms;

/// BM25's saturation of a term's frequency.
const K1: f32 = 1.2;
/// BM25's normalisation by a tool's length.
const B: f32 = 0.75;

/// What one occurrence of a term weighs, by field.
const NAME: f32 = 3.0;
const TITLE: f32 = 2.0;
const CAPABILITY: f32 = 2.0;
const CATEGORY: f32 = 1.5;
const PARAMETER: f32 = 1.5;
const DESCRIPTION: f32 = 1.0;

/// The terms of a snapshot's tools, by the tools' positions in it.
#[derive(Debug)]
pub(crate) struct Index {
    /// For each term, the tools it occurs in, with its weighted frequency there.
    postings: FxHashMap<String, Vec<(u32, f32)>>,
    /// Each tool's weighted length.
    lengths: Vec<f32>,
    average: f32,
}

impl Index {
    /// The index of `tools`, in order.
    pub(crate) fn new<'a>(tools: impl IntoIterator<Item = &'a Tool>) -> Self {
        let mut postings: FxHashMap<String, Vec<(u32, f32)>> = FxHashMap::default();
        let mut lengths = Vec::new();
        for (position, tool) in tools.into_iter().enumerate() {
            let mut counts: FxHashMap<String, f32> = FxHashMap::default();
            let mut length = 0.0;
            let mut add = |text: &str, weight: f32| {
                for term in terms(text) {
                    *counts.entry(term).or_default() += weight;
                    length += weight;
                }
            };
            add(&tool.name, NAME);
            add(tool.title.as_deref().unwrap_or_default(), TITLE);
            add(&tool.description, DESCRIPTION);
            add(tool.capability.as_deref().unwrap_or_default(), CAPABILITY);
            for category in &tool.categories {
                add(category, CATEGORY);
            }
            if let Some(Value::Object(properties)) = tool.input_schema.get("properties") {
                for (name, schema) in properties {
                    add(name, PARAMETER);
                    add(
                        schema
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                        DESCRIPTION,
                    );
                }
            }
            let position = u32::try_from(position).unwrap_or(u32::MAX);
            for (term, frequency) in counts {
                postings
                    .entry(term)
                    .or_default()
                    .push((position, frequency));
            }
            lengths.push(length);
        }
        let total: f32 = lengths.iter().sum();
        let average = (total / lengths.len().max(1) as f32).max(f32::MIN_POSITIVE);
        Index {
            postings,
            lengths,
            average,
        }
    }

    /// The tools that share a term with `query`, by position, each with its score, best first (ties in
    /// the tools' order).
    pub(crate) fn ranked(&self, query: &str) -> Vec<(usize, f32)> {
        let tools = self.lengths.len() as f32;
        let mut scores = vec![0.0_f32; self.lengths.len()];
        let mut asked: Vec<String> = Vec::new();
        for term in terms(query) {
            if asked.contains(&term) {
                continue;
            }
            let Some(postings) = self.postings.get(&term) else {
                asked.push(term);
                continue;
            };
            let found = postings.len() as f32;
            let idf = (1.0 + (tools - found + 0.5) / (found + 0.5)).ln();
            for &(position, frequency) in postings {
                let length = self.lengths[position as usize] / self.average;
                let norm = K1 * (1.0 - B + B * length);
                scores[position as usize] += idf * frequency * (K1 + 1.0) / (frequency + norm);
            }
            asked.push(term);
        }
        let mut ranked: Vec<(usize, f32)> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, score)| *score > 0.0)
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::registry::Registry;
    use crate::tool::DynamicTool;

    /// The tools `(name, description, parameters)`, in order.
    fn tools(specs: &[(&str, &str, Value)]) -> Vec<Arc<Tool>> {
        let mut builder = Registry::builder();
        for (name, description, parameters) in specs {
            let schema = json!({ "type": "object", "properties": parameters });
            let tool = DynamicTool::new(*name, *description, schema, |_: Value, _| async { "ok" });
            builder = builder.tool(tool.public().read_only());
        }
        let registry = builder.build().unwrap();
        specs
            .iter()
            .map(|(name, ..)| registry.get(name).unwrap())
            .collect()
    }

    fn index(tools: &[Arc<Tool>]) -> Index {
        Index::new(tools.iter().map(|t| &**t))
    }

    fn names(tools: &[Arc<Tool>], ranked: &[(usize, f32)]) -> Vec<String> {
        ranked
            .iter()
            .map(|(i, _)| tools[*i].name.to_string())
            .collect()
    }

    #[test]
    fn a_rare_term_outranks_a_common_one_and_the_name_outranks_the_description() {
        let tools = tools(&[
            ("list_orders", "List the orders of a customer.", json!({})),
            (
                "refund_payment",
                "Refund a payment of an order to the customer.",
                json!({}),
            ),
            ("order_details", "The full record of one order.", json!({})),
            (
                "send_email",
                "Send a message.",
                json!({ "refund": { "type": "string", "description": "The refund it is about." } }),
            ),
        ]);
        let index = index(&tools);
        assert_eq!(
            names(&tools, &index.ranked("refund the customer")),
            ["refund_payment", "send_email", "list_orders"],
            "refund is rare, so it decides; a name beats a parameter"
        );
        assert_eq!(names(&tools, &index.ranked("orders"))[0], "list_orders");
        assert!(
            index.ranked("weather").is_empty(),
            "no shared term, no result"
        );
        assert!(index.ranked("").is_empty());
    }

    #[test]
    fn repeating_a_word_of_the_query_changes_nothing() {
        let tools = tools(&[
            ("web_search", "Search the web.", json!({})),
            ("search_orders", "Find orders.", json!({})),
        ]);
        let index = index(&tools);
        assert_eq!(
            index.ranked("search web"),
            index.ranked("search search web web")
        );
    }
}
