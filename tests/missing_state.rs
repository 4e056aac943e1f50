//! A tool asks for state the registry was not given: start-up fails naming the tool and the type.

use toolgate::{Registry, State, tool};

#[derive(Clone)]
struct Mailer;

/// Send a newsletter.
#[tool(ability = "mail.send")]
async fn send_newsletter(mailer: State<Mailer>) {
    let _ = mailer;
}

#[test]
fn missing_state_fails_at_start_up() {
    let error = Registry::builder().build().unwrap_err().to_string();
    assert_eq!(
        error,
        "tool `send_newsletter` takes `State<missing_state::Mailer>`, but the registry has no such state; \
         add it with `Registry::builder().state(value)`"
    );
    assert!(Registry::builder().state(Mailer).build().is_ok());
}
