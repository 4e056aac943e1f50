//! Delegated callers in-process: narrowed rights, a chain's profiles and expiry, call ceilings, writes that
//! wait for the person at the root, and the chain in the audit trail.

use std::time::Duration;

use toolgate::Delegation;
use toolgate::policy::{AuditEvent, AuditSink};

use super::fixtures::*;

fn agent_of(person: &Caller) -> Caller {
    person.delegate(Delegation::to("planner").role("Agent").abilities([
        "orders.view",
        "orders.manage",
        "billing.refund",
    ]))
}

#[tokio::test]
async fn a_delegated_caller_holds_the_intersection_and_sees_and_runs_no_more() {
    let ledger = Ledger::default();
    let registry = registry(&ledger);
    let helper =
        viewer().delegate(Delegation::to("fetcher").abilities(["orders.view", "orders.manage"]));
    assert_eq!(helper.abilities().collect::<Vec<_>>(), ["orders.view"]);
    let listed = names(&registry.list(&helper));
    assert!(
        listed.contains(&"find_orders".to_owned()) && !listed.contains(&"confirm_order".to_owned())
    );
    let refused = registry
        .call(&helper, "confirm_order", json!({ "number": "RO-1" }))
        .await;
    assert_eq!(failure(&refused).0, ErrorKind::UnknownTool);
    let widened = helper.clone().with_abilities(["orders.manage"]);
    assert!(
        !widened.has("orders.manage"),
        "a delegated caller cannot add what its parent lacks"
    );
    let found = registry
        .call(
            &helper,
            "find_orders",
            json!({ "query": "ada", "limit": 1 }),
        )
        .await;
    assert!(!found.into_result().is_error);
    assert!(ledger.lines().is_empty());
}

#[tokio::test]
async fn a_sub_agent_cannot_approve_a_write_and_the_person_at_the_root_can() {
    let ledger = Ledger::default();
    let registry = Registry::builder()
        .state(ledger.clone())
        .skip_confirmation(|_, _| true)
        .build()
        .unwrap();
    // ANCHOR: approve
    let person = manager();
    let helper = agent_of(&person).delegate(Delegation::to("worker").abilities(["orders.manage"]));
    let Outcome::NeedsConfirmation(pending) = registry
        .call(&helper, "confirm_order", json!({ "number": "RO-7" }))
        .await
    else {
        panic!("a delegated caller's write waits for a person, whatever the skip policy says");
    };
    for sub_agent in [&helper, helper.on_behalf_of().unwrap()] {
        let approved = registry.confirm(sub_agent, pending.confirmation()).await;
        assert_eq!(
            failure(&approved),
            (
                ErrorKind::Denied,
                "A delegated caller cannot approve or decline a write; max@acme, for whom it acts, decides. \
                 Nothing was changed."
                    .into()
            )
        );
        assert!(
            registry
                .decline(sub_agent, pending.confirmation())
                .await
                .is_err()
        );
    }
    assert_eq!(
        ledger.lines(),
        ["previewed RO-7"],
        "nothing ran for the sub-agents"
    );
    let approved = registry.confirm(&person, pending.confirmation()).await;
    assert_eq!(
        approved.into_result().text_for_model(),
        "Order RO-7 is confirmed."
    );
    // ANCHOR_END: approve
    assert_eq!(
        ledger.lines(),
        ["previewed RO-7", "confirmed RO-7 for max@acme"]
    );
    let plain = registry
        .call(&person, "confirm_order", json!({ "number": "RO-8" }))
        .await;
    assert!(
        matches!(plain, Outcome::Done(_)),
        "the person's own write follows the skip policy"
    );
}

#[tokio::test]
async fn an_expired_delegation_sees_nothing_and_runs_nothing() {
    let registry = registry(&Ledger::default());
    let person = manager();
    let brief = agent_of(&person).delegate(
        Delegation::to("worker")
            .abilities(["orders.view"])
            .expires_in(Duration::from_millis(30)),
    );
    assert!(!registry.list(&brief).is_empty());
    tokio::time::sleep(Duration::from_millis(60)).await;
    let expired = brief.delegate(Delegation::to("late").abilities(["orders.view"]));
    for caller in [&brief, &expired] {
        assert!(names(&registry.list(caller)).is_empty(), "{caller:?}");
        let refused = registry
            .call(caller, "add", json!({ "a": 1, "b": 2 }))
            .await;
        assert_eq!(failure(&refused).0, ErrorKind::UnknownTool);
    }
    assert!(
        expired.expires_at() <= brief.expires_at(),
        "a delegation never outlives its parent's"
    );
}

#[tokio::test]
async fn every_delegation_up_the_chain_counts_its_calls() {
    let registry = registry(&Ledger::default());
    // ANCHOR: ceiling
    let person = manager();
    let agent = person.delegate(
        Delegation::to("planner")
            .abilities(["orders.view"])
            .max_calls(3),
    );
    let helper = agent.delegate(
        Delegation::to("fetcher")
            .abilities(["orders.view"])
            .max_calls(5),
    );
    let add = |caller: Caller| {
        let registry = registry.clone();
        async move {
            registry
                .call(&caller, "add", json!({ "a": 1, "b": 2 }))
                .await
        }
    };
    assert!(!add(agent.clone()).await.into_result().is_error);
    assert!(!add(helper.clone()).await.into_result().is_error);
    assert!(!add(helper.clone()).await.into_result().is_error);
    let fourth = add(helper.clone()).await;
    assert_eq!(
        failure(&fourth),
        (
            ErrorKind::LimitReached,
            "This delegated access allows 3 calls, and they are used up. Nothing ran; answer with what you have."
                .into()
        ),
        "the planner's three calls are shared with what it delegated"
    );
    // ANCHOR_END: ceiling
    assert_eq!(
        failure(&add(agent.clone()).await).0,
        ErrorKind::LimitReached
    );
    assert!(
        !add(person.clone()).await.into_result().is_error,
        "the person has no ceiling"
    );
    let other = person.delegate(
        Delegation::to("planner")
            .abilities(["orders.view"])
            .max_calls(1),
    );
    assert!(
        !add(other).await.into_result().is_error,
        "another delegation to the same id counts on its own"
    );
}

/// One audit event as kept: the caller, whom it acted for, the session log line and the telemetry.
type Kept = (String, Vec<String>, Option<String>, Option<Value>);

/// Keeps the audit events' chains, session logs and telemetry.
#[derive(Clone, Default)]
struct Chains(Arc<Mutex<Vec<Kept>>>);

impl AuditSink for Chains {
    fn record(&self, event: &AuditEvent<'_>) {
        let chain = event.on_behalf_of().map(str::to_owned).collect();
        let telemetry = event.telemetry().map(|t| Value::Object(t.clone()));
        let log = event.session_log().map(str::to_owned);
        self.0
            .lock()
            .unwrap()
            .push((event.caller.id().to_owned(), chain, log, telemetry));
    }
}

#[tokio::test]
async fn the_audit_names_the_sub_agent_on_behalf_of_whom_it_acted() {
    let chains = Chains::default();
    let registry = Registry::builder()
        .state(Ledger::default())
        .audit(chains.clone())
        .build()
        .unwrap();
    let helper = agent_of(&manager()).delegate(Delegation::to("fetcher"));
    registry.call(&helper, "report", json!({})).await;
    registry
        .call(&manager(), "add", json!({ "a": 1, "b": 2 }))
        .await;
    let rows = chains.0.lock().unwrap().clone();
    assert_eq!(
        rows,
        [
            (
                "fetcher".to_owned(),
                vec!["planner".to_owned(), "max@acme".to_owned()],
                Some("report: 0 issues".to_owned()),
                Some(json!({ "issues": 0 }))
            ),
            ("max@acme".to_owned(), vec![], None, None),
        ]
    );
}
