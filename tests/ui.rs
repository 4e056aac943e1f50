//! Compile errors are part of the interface: each misuse of `#[tool]` fails at the user's token with a
//! message saying what to write instead. The `.stderr` snapshots are made with the toolchain pinned in
//! `rust-toolchain.toml`; regenerate them with `TRYBUILD=overwrite cargo test -p toolgate-tests --test ui`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/fail/**/*.rs");
    cases.pass("ui/pass/*.rs");
}
