//! Names each set of features once, as a `cfg` of its own, so that the code says what a set means rather
//! than listing its features again wherever it is used.

fn main() {
    let on = |feature: &str| std::env::var_os(format!("CARGO_FEATURE_{feature}")).is_some();
    // A database keeps the records, confirmations, counts, tasks and audit: SQLite or PostgreSQL.
    println!("cargo::rustc-check-cfg=cfg(database)");
    if on("SQLITE") || on("POSTGRES") {
        println!("cargo::rustc-cfg=database");
    }
    // The admin API and its page: the operator's commands over HTTP.
    println!("cargo::rustc-check-cfg=cfg(admin)");
    if on("OPERATOR") && on("MCP") {
        println!("cargo::rustc-cfg=admin");
    }
    // Someone edits the records from outside the code: the operator's commands (and the admin API).
    println!("cargo::rustc-check-cfg=cfg(edits)");
    if on("OPERATOR") {
        println!("cargo::rustc-cfg=edits");
    }
    // The gateway signs in to remote servers with OAuth.
    println!("cargo::rustc-check-cfg=cfg(signs_in)");
    if on("REMOTE") && on("OAUTH") {
        println!("cargo::rustc-cfg=signs_in");
    }
}
