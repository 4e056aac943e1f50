//! Write previews and confirmations, and tools that ask for input, in-process: every refusal changes
//! nothing, an approved write runs once, replicas sharing keys and a store accept each other's
//! confirmations and refuse replays across them.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolgate::confirm::KeyRing;
use toolgate::confirm::{ConfirmationStore, MemoryStore};
use toolgate::output::{APPROVAL_KEY, Pending};
use toolgate::param::ClientSupport;
use toolgate::prelude::*;
use toolgate::sqlite::SqliteStore;
use toolgate::store::{AuditQuery, RecordStore};
use toolgate::{Ask, Elicited, ErrorKind, Outcome};

/// Every transfer that really happened.
#[derive(Clone, Default)]
struct Bank(Arc<Mutex<Vec<String>>>);

impl Bank {
    fn transfers(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Transfer money to an account. Moves money.
#[tool(ability = "payments.send", preview = preview_transfer)]
async fn transfer(
    bank: State<Bank>,
    /// The receiving account.
    to: String,
    /// The amount in euros.
    #[arg(range(min = 0.01, max = 10000))]
    amount: f64,
) -> Result<String, ToolError> {
    bank.0
        .0
        .lock()
        .unwrap()
        .push(format!("{amount:.2} EUR to {to}"));
    Ok(format!("Sent {amount:.2} EUR to {to}."))
}

/// What `transfer` would do.
async fn preview_transfer(_bank: State<Bank>, to: String, amount: f64) -> Preview {
    Preview::new(format!("Send {amount:.2} EUR to {to}"))
        .with_data(json!({ "to": to, "amount": amount }))
}

/// Show the balance. Changes nothing.
#[tool(ability = "payments.send", read_only)]
async fn balance() -> &'static str {
    "1000.00 EUR"
}

/// Your name, for the greeting.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Name {
    /// What to call you.
    name: String,
}

/// Your favourite colour.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Colour {
    /// A colour.
    colour: String,
}

/// Greets the user, asking two questions in two rounds.
#[tool(public, read_only)]
async fn greet(
    ask: Ask,
    /** Greeting word. */
    word: String,
) -> Result<String, ToolError> {
    let Elicited::Accepted(Name { name }) = ask.elicit::<Name>("name", "What is your name?")?
    else {
        return Ok(format!("{word}, stranger."));
    };
    let Elicited::Accepted(Colour { colour }) =
        ask.elicit::<Colour>("colour", "Favourite colour?")?
    else {
        return Ok(format!("{word}, {name}."));
    };
    Ok(format!("{word}, {name} who likes {colour}."))
}

/// Asks for three things in one round.
#[tool(public, read_only)]
async fn survey(ask: Ask) -> Result<String, ToolError> {
    let name = ask.elicit::<Name>("name", "What is your name?");
    let sample = ask.sample("greeting", "Write a greeting", 50);
    let roots = ask.roots("roots");
    ask.ready()?;
    let (Elicited::Accepted(Name { name }), sample, roots) = (name?, sample?, roots?) else {
        return Ok("declined".into());
    };
    Ok(format!(
        "{name}; {}; {} roots",
        sample["content"]["text"].as_str().unwrap_or_default(),
        roots.len()
    ))
}

fn payer() -> Caller {
    Caller::new("ada").with_abilities(["payments.send"])
}

fn keys() -> KeyRing {
    KeyRing::new("k1", [1u8; 32]).unwrap()
}

fn build(bank: &Bank, keys: KeyRing, store: impl ConfirmationStore) -> Registry {
    Registry::builder()
        .state(bank.clone())
        .keys(keys)
        .confirmation_store(store)
        .build()
        .unwrap()
}

async fn preview(registry: &Registry, caller: &Caller, args: Value) -> Pending {
    match registry.call(caller, "transfer", args).await {
        Outcome::NeedsConfirmation(pending) => pending,
        other => panic!("expected a preview, got {other:?}"),
    }
}

fn refusal(outcome: &Outcome) -> (ErrorKind, String) {
    let error = outcome
        .error()
        .unwrap_or_else(|| panic!("expected a refusal, got {outcome:?}"));
    (error.kind(), error.message().to_owned())
}

fn approve() -> Map<String, Value> {
    answer(json!({ "action": "accept", "content": { "approve": true } }))
}

fn answer(value: Value) -> Map<String, Value> {
    [(APPROVAL_KEY.to_owned(), value)].into_iter().collect()
}

#[tokio::test]
async fn an_approved_write_runs_once_and_a_retry_returns_the_first_result() {
    let bank = Bank::default();
    let registry = build(&bank, keys(), MemoryStore::new());
    let pending = preview(&registry, &payer(), json!({ "to": "NL01", "amount": 25 })).await;
    assert_eq!(pending.preview().text(), "Send 25.00 EUR to NL01");
    assert_eq!(pending.preview().data().unwrap()["amount"], 25.0);
    assert!(bank.transfers().is_empty(), "a preview writes nothing");

    let done = registry.confirm(&payer(), pending.confirmation()).await;
    assert_eq!(
        done.clone().into_result().text_for_model(),
        "Sent 25.00 EUR to NL01."
    );
    let again = registry.confirm(&payer(), pending.confirmation()).await;
    assert_eq!(
        again.into_result().text_for_model(),
        "Sent 25.00 EUR to NL01."
    );
    let retried = registry
        .run(
            &payer(),
            Call::new("transfer", json!({ "amount": 25, "to": "NL01" }))
                .confirmation(pending.confirmation()),
        )
        .await;
    assert_eq!(
        retried.into_result().text_for_model(),
        "Sent 25.00 EUR to NL01.",
        "key order is irrelevant"
    );
    assert_eq!(
        bank.transfers(),
        ["25.00 EUR to NL01"],
        "the write ran exactly once"
    );
}

#[tokio::test]
async fn every_bad_confirmation_is_refused_and_changes_nothing() {
    let bank = Bank::default();
    let registry = build(&bank, keys(), MemoryStore::new());
    let args = json!({ "to": "NL01", "amount": 25 });
    let pending = preview(&registry, &payer(), args.clone()).await;
    let token = pending.confirmation();

    let forged = registry.confirm(&payer(), "tg1.k1.e30.AAAA").await;
    assert_eq!(refusal(&forged).0, ErrorKind::Confirmation);
    assert!(refusal(&forged).1.contains("altered, forged"), "{forged:?}");

    let (head, mac) = token.rsplit_once('.').unwrap();
    let flipped = format!(
        "{head}.{}{}",
        if mac.starts_with('A') { "B" } else { "A" },
        &mac[1..]
    );
    assert_eq!(
        refusal(&registry.confirm(&payer(), &flipped).await).0,
        ErrorKind::Confirmation
    );
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    let swapped = if parts[2].as_bytes()[20] == b'A' {
        "B"
    } else {
        "A"
    };
    parts[2].replace_range(20..21, swapped);
    let tampered = parts.join(".");
    assert_eq!(
        refusal(&registry.confirm(&payer(), &tampered).await).0,
        ErrorKind::Confirmation
    );

    let other = Caller::new("eve").with_abilities(["payments.send"]);
    let stolen = registry.confirm(&other, token).await;
    assert!(matches!(stolen, Outcome::Denied(_)), "{stolen:?}");
    assert!(refusal(&stolen).1.contains("another caller"));

    let changed = registry
        .run(
            &payer(),
            Call::new("transfer", json!({ "to": "NL01", "amount": 2500 })).confirmation(token),
        )
        .await;
    assert!(
        refusal(&changed).1.starts_with("The arguments differ"),
        "{changed:?}"
    );

    let elsewhere = registry
        .run(
            &payer(),
            Call::new("balance", json!({})).confirmation(token),
        )
        .await;
    assert!(
        refusal(&elsewhere)
            .1
            .contains("has no preview and takes no confirmation"),
        "{elsewhere:?}"
    );

    let other_ring = build(
        &bank,
        KeyRing::new("k1", [2u8; 32]).unwrap(),
        MemoryStore::new(),
    );
    assert_eq!(
        refusal(&other_ring.confirm(&payer(), token).await).0,
        ErrorKind::Confirmation,
        "another key"
    );
    assert!(bank.transfers().is_empty(), "no refusal ran the write");

    // The real one still works after all that.
    let done = registry.confirm(&payer(), token).await;
    assert!(done.is_done(), "{done:?}");
    assert_eq!(bank.transfers().len(), 1);
}

#[tokio::test]
async fn declined_and_expired_confirmations_never_run() {
    let bank = Bank::default();
    let registry = Registry::builder()
        .state(bank.clone())
        .confirmation_ttl(Duration::from_millis(30))
        .build()
        .unwrap();
    let declined = preview(&registry, &payer(), json!({ "to": "NL01", "amount": 1 })).await;
    registry
        .decline(&payer(), declined.confirmation())
        .await
        .unwrap();
    let after = registry.confirm(&payer(), declined.confirmation()).await;
    assert!(refusal(&after).1.contains("was declined"), "{after:?}");

    let approved = preview(&registry, &payer(), json!({ "to": "NL02", "amount": 2 })).await;
    assert!(
        registry
            .confirm(&payer(), approved.confirmation())
            .await
            .is_done()
    );
    let late = registry
        .decline(&payer(), approved.confirmation())
        .await
        .unwrap_err();
    assert!(late.message().contains("already approved"), "{late:?}");

    let expiring = preview(&registry, &payer(), json!({ "to": "NL03", "amount": 3 })).await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    let expired = registry.confirm(&payer(), expiring.confirmation()).await;
    assert!(
        refusal(&expired)
            .1
            .starts_with("This confirmation has expired"),
        "{expired:?}"
    );
    assert_eq!(bank.transfers(), ["2.00 EUR to NL02"]);
}

#[tokio::test]
async fn an_approval_answer_runs_the_write_and_a_decline_answer_does_not() {
    let bank = Bank::default();
    let registry = build(&bank, keys(), MemoryStore::new());
    let args = json!({ "to": "NL01", "amount": 5 });
    let pending = preview(&registry, &payer(), args.clone()).await;
    let request = pending.approval_request();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Send 5.00 EUR to NL01");

    let unanswered = registry
        .run(
            &payer(),
            Call::new("transfer", args.clone()).resume(Some(pending.confirmation()), Map::new()),
        )
        .await;
    assert!(
        matches!(unanswered, Outcome::NeedsConfirmation(_)),
        "no answer asks again: {unanswered:?}"
    );
    let said_no = registry
        .run(
            &payer(),
            Call::new("transfer", args.clone()).resume(
                Some(pending.confirmation()),
                answer(json!({ "action": "accept", "content": { "approve": false } })),
            ),
        )
        .await;
    assert!(matches!(said_no, Outcome::Declined), "{said_no:?}");
    let second = preview(&registry, &payer(), args.clone()).await;
    let yes = registry
        .run(
            &payer(),
            Call::new("transfer", args).resume(Some(second.confirmation()), approve()),
        )
        .await;
    assert!(yes.is_done(), "{yes:?}");
    assert_eq!(bank.transfers(), ["5.00 EUR to NL01"]);
}

#[tokio::test]
async fn replicas_sharing_keys_and_a_store_accept_each_other_and_refuse_replays() {
    let dir = std::env::temp_dir().join(format!("toolgate-replicas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("shared.db");
    let _ = std::fs::remove_file(&path);
    let (one, two) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    let ring = one.key_ring().unwrap();
    assert_eq!(
        two.key_ring().unwrap().current_id(),
        ring.current_id(),
        "one key per database"
    );
    let bank = Bank::default();
    let a = build(&bank, one.key_ring().unwrap(), one);
    let b = build(&bank, two.key_ring().unwrap(), two);

    let pending = preview(&a, &payer(), json!({ "to": "NL01", "amount": 7 })).await;
    assert!(
        b.confirm(&payer(), pending.confirmation()).await.is_done(),
        "B accepts A's confirmation"
    );
    let replay = a.confirm(&payer(), pending.confirmation()).await;
    assert_eq!(
        replay.into_result().text_for_model(),
        "Sent 7.00 EUR to NL01.",
        "A returns B's result"
    );

    // Concurrent approvals on both replicas: one write.
    let pending = preview(&b, &payer(), json!({ "to": "NL02", "amount": 8 })).await;
    let ada = payer();
    let (x, y) = tokio::join!(
        a.confirm(&ada, pending.confirmation()),
        b.confirm(&ada, pending.confirmation())
    );
    assert!(x.is_done() || y.is_done(), "{x:?} {y:?}");
    assert_eq!(bank.transfers(), ["7.00 EUR to NL01", "8.00 EUR to NL02"]);

    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn keys_rotate_without_breaking_pending_confirmations() {
    let bank = Bank::default();
    let store = Arc::new(MemoryStore::new());
    let old = KeyRing::new("k1", [1u8; 32]).unwrap();
    let before = build(&bank, old, Arc::clone(&store));
    let pending = preview(&before, &payer(), json!({ "to": "NL01", "amount": 3 })).await;
    let rotated = KeyRing::new("k2", [2u8; 32])
        .unwrap()
        .with_previous("k1", [1u8; 32])
        .unwrap();
    let after = build(&bank, rotated, Arc::clone(&store));
    assert!(
        after
            .confirm(&payer(), pending.confirmation())
            .await
            .is_done()
    );
    let fresh = preview(&after, &payer(), json!({ "to": "NL02", "amount": 4 })).await;
    assert!(
        fresh.confirmation().starts_with("tg1.k2."),
        "the current key seals"
    );
    let retired = build(
        &bank,
        KeyRing::new("k2", [2u8; 32]).unwrap(),
        Arc::clone(&store),
    );
    let pending = preview(&before, &payer(), json!({ "to": "NL03", "amount": 5 })).await;
    assert_eq!(
        refusal(&retired.confirm(&payer(), pending.confirmation()).await).0,
        ErrorKind::Confirmation
    );
    assert_eq!(bank.transfers(), ["3.00 EUR to NL01"]);
}

#[tokio::test]
async fn the_skip_policy_runs_writes_without_a_preview_for_whom_it_names() {
    let bank = Bank::default();
    let registry = Registry::builder()
        .state(bank.clone())
        .skip_confirmation(|caller, tool| caller.id() == "nightly-job" && tool.name() == "transfer")
        .build()
        .unwrap();
    let robot = Caller::new("nightly-job").with_abilities(["payments.send"]);
    let ran = registry
        .call(&robot, "transfer", json!({ "to": "NL01", "amount": 1 }))
        .await;
    assert!(ran.is_done(), "{ran:?}");
    let person = registry
        .call(&payer(), "transfer", json!({ "to": "NL01", "amount": 1 }))
        .await;
    assert!(matches!(person, Outcome::NeedsConfirmation(_)));
    assert_eq!(bank.transfers(), ["1.00 EUR to NL01"]);
}

#[tokio::test]
async fn previews_approvals_declines_and_refusals_are_audited_to_the_database() {
    let db = SqliteStore::in_memory().unwrap();
    let bank = Bank::default();
    let registry = Registry::builder()
        .state(bank.clone())
        .keys(db.key_ring().unwrap())
        .confirmation_store(db.clone())
        .audit(db.audit())
        .build()
        .unwrap();
    let args = json!({ "to": "NL01", "amount": 2 });
    let first = preview(&registry, &payer(), args.clone()).await;
    registry.confirm(&payer(), first.confirmation()).await;
    registry.confirm(&payer(), "forged").await;
    let second = preview(&registry, &payer(), args).await;
    registry
        .decline(&payer(), second.confirmation())
        .await
        .unwrap();
    let rows = db.audit_trail(&AuditQuery::newest(10)).await.unwrap();
    let lines: Vec<String> = rows
        .iter()
        .rev()
        .map(|r| format!("{} {} {} {}", r.caller, r.action, r.tool, r.outcome))
        .collect();
    assert_eq!(
        lines,
        [
            "ada preview transfer needs_confirmation",
            "ada approve transfer done",
            "ada approve - confirmation_refused",
            "ada preview transfer needs_confirmation",
            "ada decline transfer declined",
        ]
    );
    assert_eq!(
        rows[4].digest, rows[3].digest,
        "preview and approval share the arguments' digest"
    );
    assert_eq!(rows[4].digest.len(), 64);
}

#[tokio::test]
async fn a_tool_asks_in_rounds_and_answers_travel_in_the_sealed_state() {
    let registry = Registry::builder()
        .state(Bank::default())
        .keys(keys())
        .build()
        .unwrap();
    let ada = Caller::new("ada");
    let args = json!({ "word": "Hello" });
    let Outcome::InputRequired(first) = registry.call(&ada, "greet", args.clone()).await else {
        panic!("expected a question")
    };
    assert_eq!(first.requests().keys().collect::<Vec<_>>(), ["name"]);
    let schema = &first.requests()["name"]["params"]["requestedSchema"];
    assert_eq!(schema["required"], json!(["name"]));
    assert_eq!(schema["properties"]["name"]["type"], "string");

    let name = json!({ "action": "accept", "content": { "name": "Ada" } });
    let resume = |state: &str, key: &str, value: &Value| {
        Call::new("greet", args.clone()).resume(
            Some(state),
            [(key.to_owned(), value.clone())].into_iter().collect(),
        )
    };
    let Outcome::InputRequired(second) = registry
        .run(&ada, resume(first.state(), "name", &name))
        .await
    else {
        panic!("expected the second question")
    };
    assert_eq!(second.requests().keys().collect::<Vec<_>>(), ["colour"]);
    assert_ne!(
        second.state(),
        first.state(),
        "the state carries the first answer"
    );

    let colour = json!({ "action": "accept", "content": { "colour": "green" } });
    let done = registry
        .run(&ada, resume(second.state(), "colour", &colour))
        .await;
    assert_eq!(
        done.into_result().text_for_model(),
        "Hello, Ada who likes green."
    );

    let mut tampered = second.state().to_owned();
    tampered.insert(10, 'x');
    let refused = registry
        .run(&ada, resume(&tampered, "colour", &colour))
        .await;
    assert_eq!(refusal(&refused).0, ErrorKind::Confirmation);
    let other_args =
        Call::new("greet", json!({ "word": "Bye" })).resume(Some(second.state()), Map::new());
    assert!(
        refusal(&registry.run(&ada, other_args).await)
            .1
            .starts_with("The arguments differ")
    );
    let eve = registry
        .run(
            &Caller::new("eve"),
            resume(second.state(), "colour", &colour),
        )
        .await;
    assert!(matches!(eve, Outcome::Denied(_)), "{eve:?}");

    let garbage = json!({ "nonsense": true });
    let again = registry
        .run(&ada, resume(first.state(), "name", &garbage))
        .await;
    assert!(
        matches!(again, Outcome::InputRequired(ref i) if i.requests().contains_key("name")),
        "{again:?}"
    );
}

#[tokio::test]
async fn questions_of_one_round_are_asked_together_and_only_what_the_client_supports() {
    let registry = Registry::builder().state(Bank::default()).build().unwrap();
    let ada = Caller::new("ada");
    let Outcome::InputRequired(input) = registry.call(&ada, "survey", json!({})).await else {
        panic!()
    };
    let mut methods: Vec<&str> = input
        .requests()
        .values()
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    methods.sort_unstable();
    assert_eq!(
        methods,
        ["elicitation/create", "roots/list", "sampling/createMessage"]
    );

    let answers: Map<String, Value> = [
        ("name", json!({ "action": "accept", "content": { "name": "Ada" } })),
        ("greeting", json!({ "role": "assistant", "content": { "type": "text", "text": "Hi" }, "model": "m" })),
        ("roots", json!({ "roots": [{ "uri": "file:///src" }] })),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let done = registry
        .run(
            &ada,
            Call::new("survey", json!({})).resume(Some(input.state()), answers),
        )
        .await;
    assert_eq!(done.into_result().text_for_model(), "Ada; Hi; 1 roots");

    let limited = Call::new("survey", json!({})).client_support(ClientSupport {
        sampling: false,
        ..ClientSupport::ALL
    });
    let refused = registry.run(&ada, limited).await;
    let Outcome::Unsupported(missing) = &refused else {
        panic!("expected a missing capability, got {refused:?}")
    };
    assert_eq!(missing.capability(), "sampling");
    assert_eq!(
        refused.into_result().structured.unwrap()["error"]["data"]["requiredCapabilities"],
        json!({ "sampling": {} })
    );
}
