//! The book cannot drift: every `{{#include}}` names a file and anchor that exist, every relative link and
//! its `#fragment` resolve, and every compile-fail case of the trybuild suite is explained.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn book_pages() -> Vec<PathBuf> {
    let mut pages = Vec::new();
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("book/src exists") {
            let path = entry.expect("readable").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// The targets of `{{#include PATH}}` and `{{#include PATH:ANCHOR}}` in `text`.
fn includes(text: &str) -> Vec<(String, Option<String>)> {
    text.split("{{#include ")
        .skip(1)
        .filter_map(|rest| rest.split_once("}}"))
        .map(|(target, _)| match target.trim().rsplit_once(':') {
            Some((path, anchor)) if !anchor.contains('/') => {
                (path.to_owned(), Some(anchor.to_owned()))
            }
            _ => (target.trim().to_owned(), None),
        })
        .collect()
}

/// Relative markdown links `](page.md#fragment)`.
fn links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')'))
        .map(|(target, _)| target.to_owned())
        .filter(|t| !t.starts_with("http") && !t.starts_with('#') && t.contains(".md"))
        .collect()
}

/// mdBook's heading ids: lowercase, spaces to dashes, other punctuation dropped.
fn heading_ids(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn every_include_and_link_resolves() {
    let pages = book_pages();
    assert!(pages.len() >= 10, "the book has its chapters: {pages:?}");
    let mut problems = Vec::new();
    for page in &pages {
        let text = fs::read_to_string(page).expect("readable");
        let dir = page.parent().expect("in a folder");
        for (path, anchor) in includes(&text) {
            let target = dir.join(&path);
            match fs::read_to_string(&target) {
                Err(_) => {
                    problems.push(format!("{}: includes missing file {path}", page.display()))
                }
                Ok(source) => {
                    if let Some(anchor) = anchor {
                        let (start, end) =
                            (format!("ANCHOR: {anchor}"), format!("ANCHOR_END: {anchor}"));
                        if !source.contains(&start) || !source.contains(&end) {
                            problems.push(format!(
                                "{}: {path} has no anchor `{anchor}`",
                                page.display()
                            ));
                        }
                    }
                }
            }
        }
        for link in links(&text) {
            let (file, fragment) = link
                .split_once('#')
                .map_or((link.as_str(), None), |(f, h)| (f, Some(h)));
            match fs::read_to_string(dir.join(file)) {
                Err(_) => {
                    problems.push(format!("{}: links to missing page {file}", page.display()))
                }
                Ok(target) => {
                    if let Some(fragment) = fragment
                        && !heading_ids(&target).contains(fragment)
                    {
                        problems.push(format!(
                            "{}: {file} has no heading #{fragment}",
                            page.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "broken book references:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_compile_error_is_explained() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let errors =
        fs::read_to_string(root.join("../book/src/reference/errors.md")).expect("errors page");
    let mut missing = Vec::new();
    for group in ["args", "fn"] {
        for entry in fs::read_dir(root.join("ui/fail").join(group)).expect("ui cases") {
            let path = entry.expect("readable").path();
            if path.extension().is_some_and(|e| e == "rs") {
                let case = format!(
                    "ui/fail/{group}/{}",
                    path.file_name().expect("named").to_string_lossy()
                );
                if !errors.contains(&case) {
                    missing.push(case);
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "compile-fail cases not explained in the book: {missing:?}"
    );
}

#[test]
fn the_parsers_of_this_test_work() {
    assert_eq!(
        includes("a {{#include ../x.rs:tool}} b {{#include y.md}}"),
        [
            ("../x.rs".to_owned(), Some("tool".to_owned())),
            ("y.md".to_owned(), None)
        ]
    );
    assert_eq!(
        links("see [a](b.md#c) and [d](https://e.md) and [f](#g)"),
        ["b.md#c"]
    );
    assert!(heading_ids("## Keys and values\n### `unknown_key`").contains("keys-and-values"));
    assert!(heading_ids("### `unknown_key`").contains("unknown_key"));
}
