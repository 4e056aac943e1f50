//! The shop served over its own stdin and stdout, as a desktop client launches it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const SHOP: &str = env!("CARGO_BIN_EXE_example-shop");

const INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","#,
    r#""capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#,
);

#[test]
fn over_stdio_a_long_answer_fits_the_pipe_whole_and_the_server_ends_with_its_client() {
    let mut shop = Command::new(SHOP)
        .arg("--stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the shop starts");
    let mut input = shop.stdin.take().expect("stdin");
    let mut output = BufReader::new(shop.stdout.take().expect("stdout"));
    writeln!(input, "{INITIALIZE}").expect("the shop reads");
    let mut answer = String::new();
    output.read_line(&mut answer).expect("the shop answers");
    assert!(answer.contains("serverInfo"), "{answer}");

    // 1 MiB, not a pipe's default 64 KiB: an answer up to that size is written at once, while the client
    // has read none of it.
    let holds = rustix::pipe::fcntl_getpipe_size(output.get_ref()).expect("stdout is a pipe");
    assert_eq!(holds, 1 << 20);

    drop(input);
    let status = shop.wait().expect("the shop ends");
    assert!(status.success(), "{status}");
}
