//! The book cannot drift: every `{{#include}}` names a file and anchor that exist, every relative link and
//! its `#fragment` resolve, and every compile-fail case of the trybuild suite is explained. The reference
//! cannot either: every public item of the runtime carries an example that runs.

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

/// The `.rs` files under `dir`, recursively.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).expect("the directory exists") {
        let path = entry.expect("readable").path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The public items in `source` (`pub struct`, `enum`, `trait`, `fn`, `type`, `const` at the start of a line)
/// whose doc comment has no code block, unless they are `#[doc(hidden)]`.
fn items_without_examples(source: &str) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    let kinds = [
        "struct ",
        "enum ",
        "trait ",
        "fn ",
        "async fn ",
        "type ",
        "const ",
    ];
    let mut missing = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("pub ") else {
            continue;
        };
        if !kinds.iter().any(|k| rest.starts_with(k)) {
            continue;
        }
        // The doc comment and attributes right above the item.
        let mut above = lines[..i]
            .iter()
            .rev()
            .take_while(|l| !l.trim().is_empty() && !l.starts_with('}') && !l.starts_with("pub "));
        if !above.any(|l| l.contains("doc(hidden)") || l.contains("```")) {
            let name = rest.split(['(', '<', ':', '{', '=', ';']).next();
            missing.push(name.unwrap_or(rest).trim().to_owned());
        }
    }
    missing
}

/// The code fences in `text` (doc comments, or the markdown they include) that do not run.
fn fences_that_do_not_run(text: &str) -> Vec<&str> {
    text.lines()
        .map(|l| {
            l.trim_start()
                .trim_start_matches("//!")
                .trim_start_matches("///")
                .trim()
        })
        .filter(|l| l.starts_with("```") && (l.contains("ignore") || l.contains("no_run")))
        .collect()
}

#[test]
fn every_public_item_has_an_example_that_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime");
    let mut missing = Vec::new();
    let files = sources(&root.join("src"))
        .into_iter()
        .chain([root.join("docs/tool.md")]);
    for path in files {
        let text = fs::read_to_string(&path).expect("readable");
        for item in items_without_examples(&text) {
            missing.push(format!("{}: no example on `{item}`", path.display()));
        }
        for fence in fences_that_do_not_run(&text) {
            missing.push(format!(
                "{}: an example that does not run: {fence}",
                path.display()
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_parsers_of_this_test_work() {
    let source = "/// Has one.\n/// ```\n/// x\n/// ```\npub fn a() {}\n\n/// None.\n#[derive(Debug)]\npub struct B;\n\n#[doc(hidden)]\npub fn c() {}\n";
    assert_eq!(items_without_examples(source), ["struct B"]);
    assert_eq!(
        fences_that_do_not_run("/// ```rust,ignore\n/// ```\n//! ```no_run\n```rust\n"),
        ["```rust,ignore", "```no_run"]
    );
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

/// The rooms of `runtime/src` from the ground up, as the design page's floor order names them: a room
/// may import from its own floor's other rooms only where they share a line here.
const FLOORS: &[&[&str]] = &[
    &["error", "clock", "random", "sync"],
    &["text"],
    &["caller"],
    &["param"],
    &["schema"],
    &["output"],
    &["tool"],
    &["confirm", "search", "oauth", "openapi"],
    &["policy"],
    &["store"],
    &["remote"],
    &["catalog"],
    &["call"],
    &["dialect"],
    &["registry"],
    &["mcp"],
    &["http"],
    &["operator"],
];

/// The rooms `source` names as `crate::ROOM` outside comments and its unit tests, which may use the
/// whole crate.
fn rooms_used(source: &str) -> BTreeSet<&str> {
    let code = source
        .split("\n#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default();
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .flat_map(|line| line.split("crate::").skip(1))
        .map(|rest| {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

#[test]
fn every_import_of_the_runtime_points_down_the_house() {
    let floor = |room: &str| FLOORS.iter().position(|rooms| rooms.contains(&room));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime/src");
    let mut upward = Vec::new();
    for path in sources(&root) {
        let relative = path.strip_prefix(&root).unwrap();
        let first = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let room = first.trim_end_matches(".rs");
        if matches!(room, "lib" | "private") {
            continue; // The root and the macro's door re-export every room.
        }
        let Some(here) = floor(room) else {
            panic!(
                "{}: a room the floor order does not name; add it to FLOORS and the design page",
                relative.display()
            );
        };
        let source = fs::read_to_string(&path).unwrap();
        for used in rooms_used(&source) {
            match floor(used) {
                Some(there) if used != room && there >= here => {
                    upward.push(format!(
                        "{} imports `crate::{used}`, on floor {there}",
                        relative.display()
                    ));
                }
                _ => {}
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run up the house:\n{}",
        upward.join("\n")
    );
    assert!(
        rooms_used("use crate::store::Records; // crate::mcp\n// crate::http").contains("store")
    );
    assert_eq!(rooms_used("// use crate::http::Guard;").len(), 0);
    assert_eq!(
        rooms_used("fn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::mcp::X;\n}").len(),
        0
    );
}
