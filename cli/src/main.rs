//! `cargo toolgate tool NAME --ability ABILITY [--write] [--dir src/tools]`
//!
//! Writes a new tool module into the crate in the current directory: a compiling `#[tool]` with doc comments
//! and the right attribute (`read_only` unless `--write`; a write gets a preview hook, and its body returns a
//! clear "not implemented yet" tool error instead of writing anything), with a test. It also lists the module
//! in `<dir>/mod.rs`. Install with `cargo install --path cli`, or run `cargo run -p toolgate-cli --`.

mod names;
mod template;

use std::path::PathBuf;
use std::process::ExitCode;

/// What to generate.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    name: String,
    ability: String,
    write: bool,
    dir: PathBuf,
}

const USAGE: &str = "usage: cargo toolgate tool NAME --ability ABILITY [--write] [--dir src/tools]";

fn parse(args: &[String]) -> Result<Request, String> {
    let args = match args {
        [first, rest @ ..] if first == "toolgate" => rest,
        all => all,
    };
    let [command, name, rest @ ..] = args else {
        return Err(USAGE.to_owned());
    };
    if command != "tool" {
        return Err(format!("unknown command `{command}`; {USAGE}"));
    }
    let mut request = Request {
        name: name.clone(),
        ability: String::new(),
        write: false,
        dir: PathBuf::from("src/tools"),
    };
    let mut rest = rest.iter();
    while let Some(arg) = rest.next() {
        let (key, inline) = arg
            .split_once('=')
            .map_or((arg.as_str(), None), |(k, v)| (k, Some(v.to_owned())));
        let mut value = || {
            inline
                .clone()
                .or_else(|| rest.next().cloned())
                .ok_or(format!("{key} needs a value"))
        };
        match key {
            "--ability" => request.ability = value()?,
            "--dir" => request.dir = PathBuf::from(value()?),
            "--write" => request.write = true,
            other => return Err(format!("unknown option `{other}`; {USAGE}")),
        }
    }
    if request.ability.is_empty() {
        return Err(format!(
            "every tool needs an ability (or write `public` in the generated attribute); {USAGE}"
        ));
    }
    Ok(request)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = parse(&args).and_then(|request| template::write(&request));
    match result {
        Ok(message) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn reads_the_packstub_style_command() {
        let request = parse(&args(
            "toolgate tool ConfirmOrder --write --ability=orders.manage",
        ))
        .unwrap();
        assert_eq!(
            request,
            Request {
                name: "ConfirmOrder".into(),
                ability: "orders.manage".into(),
                write: true,
                dir: "src/tools".into()
            }
        );
        assert!(
            parse(&args("tool SearchOrders"))
                .unwrap_err()
                .contains("needs an ability")
        );
        assert!(
            parse(&args("tool X --ability a --colour red"))
                .unwrap_err()
                .contains("unknown option `--colour`")
        );
    }
}
