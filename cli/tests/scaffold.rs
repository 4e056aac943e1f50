//! `cargo toolgate tool` writes modules that compile and whose tests pass, in a crate of their own.

use std::fs;
use std::path::Path;
use std::process::Command;

const CLI: &str = env!("CARGO_BIN_EXE_cargo-toolgate");

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(CLI)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the scaffold runs")
}

/// Runs the scaffold and asserts it succeeded.
fn generate(dir: &Path, args: &[&str]) {
    let output = run(dir, args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn generated_tools_compile_and_their_tests_pass() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace");
    let dir = std::env::temp_dir().join(format!("toolgate-scaffold-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("src")).expect("a temporary crate");
    let runtime = workspace.join("runtime");
    fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"scaffolded\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n[workspace]\n\n\
             [dependencies]\ntoolgate = {{ path = {:?}, default-features = false }}\n\n\
             [dev-dependencies]\ntokio = {{ version = \"1\", features = [\"rt\", \"macros\"] }}\n",
            runtime.display().to_string()
        ),
    )
    .expect("a manifest");
    fs::write(
        dir.join("src/lib.rs"),
        "//! A crate that gets tools.\n\npub mod tools;\n",
    )
    .expect("a crate root");
    fs::copy(workspace.join("Cargo.lock"), dir.join("Cargo.lock"))
        .expect("the workspace's versions");

    generate(
        &dir,
        &[
            "toolgate",
            "tool",
            "SearchOrders",
            "--ability",
            "orders.view",
        ],
    );
    generate(
        &dir,
        &[
            "toolgate",
            "tool",
            "ConfirmOrder",
            "--write",
            "--ability=orders.manage",
        ],
    );
    let again = run(
        &dir,
        &[
            "toolgate",
            "tool",
            "SearchOrders",
            "--ability",
            "orders.view",
        ],
    );
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already; nothing was written"));

    let listed = fs::read_to_string(dir.join("src/tools/mod.rs")).expect("mod.rs");
    assert!(
        listed.contains("pub mod search_orders;\n") && listed.contains("pub mod confirm_order;\n"),
        "{listed}"
    );
    let read_source =
        fs::read_to_string(dir.join("src/tools/search_orders.rs")).expect("the read tool");
    assert!(read_source.contains("#[tool(ability = \"orders.view\", read_only)]"));
    let write_source =
        fs::read_to_string(dir.join("src/tools/confirm_order.rs")).expect("the write tool");
    assert!(
        write_source
            .contains("#[tool(ability = \"orders.manage\", preview = preview_confirm_order)]")
    );

    let tested = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["test", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", workspace.join("target/scaffold-check"))
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&tested.stdout);
    assert!(
        tested.status.success() && stdout.contains("2 passed"),
        "the generated crate fails:\n{stdout}\n{}",
        String::from_utf8_lossy(&tested.stderr)
    );
    let _ = fs::remove_dir_all(&dir);
}
