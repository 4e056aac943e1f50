//! The records' behaviour, the same on SQLite and PostgreSQL: each test runs on both.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolgate::prelude::*;
use toolgate::store::{
    Change, Edit, Profile, ProfileChange, ProfileEdit, RecordErrorKind, Status, SyncPlan,
    ToolRecord,
};
use toolgate::{Delegation, ErrorKind};

use crate::db::{Backend, Db, on_both_backends};
use crate::{Gate, clerk, lists, names, record, registry, wait_until, with_gate};

on_both_backends![
    a_registry_with_records_serves_nothing_until_they_are_loaded,
    a_disabled_tool_vanishes_for_the_next_call_while_a_call_in_flight_finishes,
    settings_that_do_not_match_their_schema_are_refused_naming_the_field,
    an_operator_may_require_more_abilities_never_fewer,
    the_second_of_two_operators_editing_one_record_sees_the_first_ones_change,
    a_sync_marks_vanished_tools_missing_and_never_deletes_them,
    a_sync_whose_one_upsert_fails_writes_nothing,
    a_sync_that_finds_no_tools_at_all_deletes_nothing,
    a_change_in_one_process_reaches_another_within_a_second,
    a_database_from_a_newer_toolgate_is_refused,
    every_audit_row_names_the_policy_revision_it_ran_under,
    a_confirmation_issued_on_one_process_acts_once_across_both,
    a_caller_with_a_profile_sees_only_its_tools_and_runs_them_with_its_settings,
    profile_changes_are_checked_like_every_other,
    a_delegated_profile_is_as_narrow_as_its_parents_or_narrower,
    the_audit_keeps_the_delegation_chain_the_session_log_and_the_telemetry,
    an_approval_shows_the_preview_it_answered_and_calls_are_counted_per_tool,
];

async fn a_registry_with_records_serves_nothing_until_they_are_loaded(backend: Backend) {
    let Some(db) = Db::fresh(backend, "unloaded").await else {
        return;
    };
    let registry = db
        .serve(Registry::builder().state(Arc::new(Gate::default())))
        .build()
        .unwrap();
    assert!(
        names(&registry, &clerk()).is_empty(),
        "fails closed before the records are read"
    );
    assert!(registry.refresh().await.unwrap());
    assert!(lists(&registry, "search_catalogue"));
}

async fn a_disabled_tool_vanishes_for_the_next_call_while_a_call_in_flight_finishes(
    backend: Backend,
) {
    let Some(db) = Db::fresh(backend, "disabled").await else {
        return;
    };
    let gate = Arc::new(Gate::default());
    let registry = with_gate(&db, Arc::clone(&gate)).await;
    registry.sync("deploy").await.unwrap();

    let in_flight = tokio::spawn({
        let registry = registry.clone();
        async move { registry.call(&clerk(), "slow_report", json!({})).await }
    });
    gate.started.notified().await;
    // ANCHOR: edit
    let before = registry.revision();
    let edit = Edit::new(
        "ops",
        &record(&registry, "slow_report").await,
        Change::Disable,
    );
    let revision = registry.edit(&edit).await.unwrap();
    // ANCHOR_END: edit
    assert!(revision > before && registry.revision() == revision);

    assert!(!lists(&registry, "slow_report"));
    let refused = registry.call(&clerk(), "slow_report", json!({})).await;
    assert_eq!(
        refused.error().unwrap().kind(),
        ErrorKind::Unavailable,
        "{refused:?}"
    );

    gate.finish.notify_one();
    let finished = in_flight.await.unwrap();
    assert_eq!(
        finished.into_result().text_for_model(),
        "report done",
        "it ran on its snapshot"
    );
}

async fn settings_that_do_not_match_their_schema_are_refused_naming_the_field(backend: Backend) {
    let Some(db) = Db::fresh(backend, "settings").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let schema = registry
        .get("search_catalogue")
        .unwrap()
        .settings_schema()
        .cloned()
        .unwrap();
    assert_eq!(
        schema["properties"]["max_rows"]["description"],
        "At most this many rows."
    );

    let before = registry.revision();
    let current = record(&registry, "search_catalogue").await;
    let wrong = Edit::new(
        "ops",
        &current,
        Change::Settings(json!({ "max_rows": "many" })),
    );
    let error = registry.edit(&wrong).await.unwrap_err();
    assert_eq!(error.kind(), RecordErrorKind::Invalid);
    assert!(error.message().contains("`max_rows`"), "{error}");
    assert_eq!(
        error.problems()[0].0,
        "max_rows",
        "named for a form's field"
    );
    assert_eq!(registry.revision(), before, "nothing changed");
    assert_eq!(db.store().revision().await.unwrap(), before);

    let right = Edit::new("ops", &current, Change::Settings(json!({ "max_rows": 5 })));
    registry.edit(&right).await.unwrap();
    let outcome = registry
        .call(&clerk(), "search_catalogue", json!({ "query": "lamps" }))
        .await;
    assert_eq!(outcome.into_result().text_for_model(), "5 rows for lamps");

    let built = Registry::builder()
        .state(Arc::new(Gate::default()))
        .settings("search_catalogue", json!({ "max_rows": -1 }))
        .build()
        .unwrap_err();
    assert!(built.to_string().contains("`max_rows`"), "{built}");
}

async fn an_operator_may_require_more_abilities_never_fewer(backend: Backend) {
    let Some(db) = Db::fresh(backend, "abilities").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let current = record(&registry, "search_catalogue").await;

    let loosen = Edit::new("ops", &current, Change::Unrequire("catalogue.view".into()));
    let error = registry.edit(&loosen).await.unwrap_err();
    assert_eq!(error.kind(), RecordErrorKind::Invalid);
    assert!(error.message().contains("never less"), "{error}");

    let tighten = Edit::new("ops", &current, Change::Require("catalogue.audit".into()));
    registry.edit(&tighten).await.unwrap();
    assert!(!lists(&registry, "search_catalogue"));
    let auditor = Caller::new("auditor").with_abilities(["catalogue.view", "catalogue.audit"]);
    assert!(names(&registry, &auditor).contains(&"search_catalogue".to_owned()));
    let refused = registry
        .call(&clerk(), "search_catalogue", json!({ "query": "x" }))
        .await;
    assert_eq!(
        refused.error().unwrap().kind(),
        ErrorKind::UnknownTool,
        "listed to no one it was not granted to"
    );
}

async fn the_second_of_two_operators_editing_one_record_sees_the_first_ones_change(
    backend: Backend,
) {
    let Some(db) = Db::fresh(backend, "conflict").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let seen = record(&registry, "slow_report").await;
    // Two operators at once, through two connections: exactly one edit is written.
    let other = registry_on(&db.reopen().await).await;
    let (by_ana, by_ben) = (
        Edit::new("ana", &seen, Change::Disable),
        Edit::new("ben", &seen, Change::Require("reports.view".into())),
    );
    let (ana, ben) = tokio::join!(registry.edit(&by_ana), other.edit(&by_ben));
    let (winner, loser) = match (ana, ben) {
        (Ok(_), Err(error)) => ("ana", error),
        (Err(error), Ok(_)) => ("ben", error),
        both => panic!("exactly one edit is written: {both:?}"),
    };
    assert_eq!(loser.kind(), RecordErrorKind::Conflict, "{loser}");
    assert!(
        loser.message().contains("changed by someone else"),
        "{loser}"
    );
    let history = registry.records().unwrap().history(10).await.unwrap();
    assert_eq!(
        (history[0].actor.as_str(), history[0].tool.as_str()),
        (winner, "slow_report")
    );
    assert_eq!(history[1].actor, "deploy", "the loser left no row");

    // The one who lost reads again and redoes it.
    let now = record(&registry, "slow_report").await;
    registry
        .edit(&Edit::new("ben", &now, Change::Enable))
        .await
        .unwrap();
    assert_eq!(
        registry.records().unwrap().history(1).await.unwrap()[0].what,
        json!({ "change": "enable" })
    );
}

/// Another registry on `db`, as another process would have.
async fn registry_on(db: &Db) -> Registry {
    registry(db).await
}

async fn a_sync_marks_vanished_tools_missing_and_never_deletes_them(backend: Backend) {
    let Some(db) = Db::fresh(backend, "vanished").await else {
        return;
    };
    let registry = registry(&db).await;
    let store = registry.records().unwrap();
    // A tool an earlier version of the binary had, with the operator's settings.
    let mut old = ToolRecord::example();
    old.name = "old_export".into();
    old.settings = Some(json!({ "bucket": "reports" }));
    let mut plan = SyncPlan::default();
    plan.new.push(old);
    store.apply_sync("earlier", &plan).await.unwrap();

    let plan = registry.sync_plan().await.unwrap();
    assert_eq!(plan.vanished, ["old_export"]);
    assert!(
        plan.to_string().contains("+ search_catalogue: new"),
        "{plan}"
    );
    registry.sync("deploy").await.unwrap();
    let kept = record(&registry, "old_export").await;
    assert_eq!(
        (kept.status, kept.settings),
        (Status::Missing, Some(json!({ "bucket": "reports" })))
    );
    assert!(
        registry.sync_plan().await.unwrap().is_empty(),
        "a second sync has nothing to do"
    );

    let present = store.delete("ops", "search_catalogue").await.unwrap_err();
    assert_eq!(present.kind(), RecordErrorKind::Invalid);
    store.delete("ops", "old_export").await.unwrap();
    assert!(!store.load().await.unwrap().tools.contains_key("old_export"));
}

async fn a_sync_whose_one_upsert_fails_writes_nothing(backend: Backend) {
    let Some(db) = Db::fresh(backend, "failed_sync").await else {
        return;
    };
    let registry = registry(&db).await;
    let store = registry.records().unwrap();
    let mut other = ToolRecord::example();
    other.name = "old_export".into();
    let mut plan = SyncPlan::default();
    plan.new.push(other);
    store.apply_sync("earlier", &plan).await.unwrap();
    let before = store.load().await.unwrap();

    // The database refuses to write one record, as a full disk or a constraint would.
    db.execute(
        "CREATE TRIGGER refuse_one BEFORE INSERT ON toolgate_tools WHEN NEW.name = 'slow_report' \
         BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
        "CREATE FUNCTION refuse_one() RETURNS trigger AS $$ BEGIN \
         IF NEW.name = 'slow_report' THEN RAISE EXCEPTION 'disk full'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql; \
         CREATE TRIGGER refuse_one BEFORE INSERT ON toolgate_tools FOR EACH ROW EXECUTE FUNCTION refuse_one();",
    )
    .await;
    let error = registry.sync("deploy").await.unwrap_err();
    assert_eq!(error.kind(), RecordErrorKind::Database);
    assert!(error.message().contains("disk full"), "{error}");
    assert_eq!(
        store.load().await.unwrap(),
        before,
        "neither the others nor itself changed"
    );
    assert_eq!(
        record(&registry, "old_export").await.status,
        Status::Present,
        "not marked missing"
    );
}

async fn a_sync_that_finds_no_tools_at_all_deletes_nothing(backend: Backend) {
    let Some(db) = Db::fresh(backend, "empty_sync").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let store = registry.records().unwrap();
    let before = store.load().await.unwrap();
    // A build, or a remote server, that lists no tools: HAWKI's syncer deleted everything then.
    let plan = SyncPlan::new(Vec::<&toolgate::Tool>::new(), &before, 1);
    assert!(plan.new.is_empty() && plan.changed.is_empty());
    assert_eq!(plan.vanished.len(), before.tools.len());
    store.apply_sync("empty build", &plan).await.unwrap();
    let after = store.load().await.unwrap();
    assert_eq!(
        after.tools.len(),
        before.tools.len(),
        "every record is kept"
    );
    assert!(after.tools.values().all(|r| r.status == Status::Missing));
    let kept = &after.tools["search_catalogue"];
    assert_eq!(kept.settings, before.tools["search_catalogue"].settings);
}

async fn a_change_in_one_process_reaches_another_within_a_second(backend: Backend) {
    let Some(db) = Db::fresh(backend, "two_processes").await else {
        return;
    };
    let one = registry(&db).await;
    let two = registry_on(&db.reopen().await).await;
    one.sync("deploy").await.unwrap();
    // Checks every second at the latest; PostgreSQL tells it sooner.
    tokio::spawn(two.watch(Duration::from_millis(match backend {
        Backend::Sqlite => 100,
        Backend::Postgres => 1000,
    })));
    wait_until(|| lists(&two, "slow_report")).await;

    let mut took = Vec::new();
    for change in [Change::Disable, Change::Enable, Change::Disable] {
        let started = Instant::now();
        let edit = Edit::new("ops", &record(&one, "slow_report").await, change);
        let revision = one.edit(&edit).await.unwrap();
        wait_until(|| two.revision() == revision).await;
        took.push(started.elapsed());
    }
    println!("{backend:?}: a change reached the second registry after {took:?}");
    assert!(!lists(&two, "slow_report"));
}

async fn a_database_from_a_newer_toolgate_is_refused(backend: Backend) {
    let Some(error) = Db::open_newer(backend).await else {
        return;
    };
    assert!(error.contains("newer toolgate"), "{error}");
    assert!(error.contains("version 99"), "{error}");
}

async fn every_audit_row_names_the_policy_revision_it_ran_under(backend: Backend) {
    let Some(db) = Db::fresh(backend, "audit").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let revision = registry.revision();
    registry
        .call(&clerk(), "search_catalogue", json!({ "query": "x" }))
        .await;
    let row = db.last_audit().await;
    assert_eq!(
        (row.caller.as_str(), row.tool.as_str(), row.outcome.as_str()),
        ("clerk", "search_catalogue", "done")
    );
    assert_eq!(row.revision, Some(revision));
}

async fn the_audit_keeps_the_delegation_chain_the_session_log_and_the_telemetry(backend: Backend) {
    let Some(db) = Db::fresh(backend, "audit_chain").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let helper = clerk()
        .delegate(Delegation::to("planner").abilities(["catalogue.view"]))
        .delegate(Delegation::to("counter").abilities(["catalogue.view"]));
    registry.call(&helper, "count_lamps", json!({})).await;
    let row = db.last_audit().await;
    assert_eq!(
        (row.caller.as_str(), row.outcome.as_str()),
        ("counter", "done")
    );
    assert_eq!(row.on_behalf_of, ["planner", "clerk"]);
    assert_eq!(row.session_log.as_deref(), Some("count_lamps: 12 in stock"));
    assert_eq!(row.telemetry, Some(json!({ "lamps": 12 })));
    registry
        .call(&clerk(), "search_catalogue", json!({ "query": "x" }))
        .await;
    let plain = db.last_audit().await;
    assert!(
        plain.on_behalf_of.is_empty() && plain.session_log.is_none() && plain.telemetry.is_none()
    );
}

async fn a_delegated_profile_is_as_narrow_as_its_parents_or_narrower(backend: Backend) {
    let Some(db) = Db::fresh(backend, "delegated_profiles").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    for (name, tools) in [
        ("wide", &["search_catalogue", "count_lamps"][..]),
        ("narrow", &["count_lamps"][..]),
    ] {
        registry
            .edit_profile(&ProfileEdit::create("ops", name, "a profile"))
            .await
            .unwrap();
        for tool in tools {
            let profile = registry_profile(&registry, name).await;
            let assign = ProfileChange::Assign {
                tool: (*tool).into(),
                settings: None,
            };
            registry
                .edit_profile(&ProfileEdit::new("ops", &profile, assign))
                .await
                .unwrap();
        }
    }
    let bot = Caller::new("bot")
        .with_abilities(["catalogue.view"])
        .with_profile("narrow");
    assert_eq!(names(&registry, &bot), ["count_lamps"]);
    let widened = bot.delegate(
        Delegation::to("helper")
            .abilities(["catalogue.view"])
            .profile("wide"),
    );
    assert_eq!(
        names(&registry, &widened),
        ["count_lamps"],
        "a wider profile below a narrow one sees only what both allow"
    );
    let refused = registry
        .call(&widened, "search_catalogue", json!({ "query": "x" }))
        .await;
    assert_eq!(refused.error().unwrap().kind(), ErrorKind::UnknownTool);
    let person = Caller::new("ada").with_abilities(["catalogue.view"]);
    let narrowed = person.delegate(
        Delegation::to("helper")
            .abilities(["catalogue.view"])
            .profile("narrow"),
    );
    assert_eq!(names(&registry, &narrowed), ["count_lamps"]);
}

async fn a_confirmation_issued_on_one_process_acts_once_across_both(backend: Backend) {
    let Some(db) = Db::fresh(backend, "confirm").await else {
        return;
    };
    let keys = toolgate::confirm::KeyRing::random();
    let replica = |db: Db| {
        let keys = keys.clone();
        async move {
            let builder = Registry::builder()
                .state(Arc::new(Gate::default()))
                .settings("search_catalogue", json!({ "max_rows": 20 }))
                .keys(keys);
            db.serve(builder).load().await.unwrap()
        }
    };
    let (a, b) = (replica(db.clone()).await, replica(db.reopen().await).await);
    let order = match backend {
        Backend::Sqlite => 7,
        Backend::Postgres => 8,
    };
    let Outcome::NeedsConfirmation(pending) =
        a.call(&clerk(), "refund", json!({ "order": order })).await
    else {
        panic!("a write is previewed first");
    };
    // Approved on both at once: one runs it, the other is answered from the store or refused.
    let caller = clerk();
    let (first, second) = tokio::join!(
        a.confirm(&caller, pending.confirmation()),
        b.confirm(&caller, pending.confirmation()),
    );
    let done = format!("Refunded order {order}.");
    let texts = [first, second].map(|o| o.into_result().text_for_model());
    assert!(texts.contains(&done), "{texts:?}");
    assert_eq!(crate::refunds(order), 1, "it ran once: {texts:?}");
    let again = b.confirm(&clerk(), pending.confirmation()).await;
    assert_eq!(
        again.into_result().text_for_model(),
        done,
        "a retry gets the first result"
    );
    assert_eq!(crate::refunds(order), 1);
}

async fn a_caller_with_a_profile_sees_only_its_tools_and_runs_them_with_its_settings(
    backend: Backend,
) {
    let Some(db) = Db::fresh(backend, "profiles").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    // ANCHOR: profile
    registry
        .edit_profile(&ProfileEdit::create(
            "ops",
            "support-bot",
            "The support chat's model",
        ))
        .await
        .unwrap();
    let profile = registry_profile(&registry, "support-bot").await;
    let assign = ProfileChange::Assign {
        tool: "search_catalogue".into(),
        settings: Some(json!({ "max_rows": 3 })),
    };
    registry
        .edit_profile(&ProfileEdit::new("ops", &profile, assign))
        .await
        .unwrap();
    let bot = Caller::new("bot-1")
        .with_abilities(["catalogue.view"])
        .with_profile("support-bot");
    // ANCHOR_END: profile
    assert_eq!(
        names(&registry, &bot),
        ["search_catalogue"],
        "not slow_report, though it is public"
    );
    let search = json!({ "query": "lamps" });
    let as_bot = registry
        .call(&bot, "search_catalogue", search.clone())
        .await;
    assert_eq!(as_bot.into_result().text_for_model(), "3 rows for lamps");
    let as_clerk = registry
        .call(&clerk(), "search_catalogue", search.clone())
        .await;
    assert_eq!(
        as_clerk.into_result().text_for_model(),
        "20 rows for lamps",
        "the tool's own settings"
    );
    let refused = registry.call(&bot, "slow_report", json!({})).await;
    assert_eq!(refused.error().unwrap().kind(), ErrorKind::UnknownTool);

    let without_ability = Caller::new("bot-2").with_profile("support-bot");
    assert!(
        names(&registry, &without_ability).is_empty(),
        "abilities still hold"
    );
    let stranger = Caller::new("bot-3")
        .with_abilities(["catalogue.view"])
        .with_profile("no-such-profile");
    assert!(
        names(&registry, &stranger).is_empty(),
        "an unknown profile sees nothing"
    );

    let profile = registry_profile(&registry, "support-bot").await;
    let unassign = ProfileChange::Unassign {
        tool: "search_catalogue".into(),
    };
    registry
        .edit_profile(&ProfileEdit::new("ops", &profile, unassign))
        .await
        .unwrap();
    assert!(names(&registry, &bot).is_empty());
    let history = registry.records().unwrap().history(1).await.unwrap();
    assert_eq!(
        (history[0].actor.as_str(), history[0].tool.as_str()),
        ("ops", "search_catalogue")
    );
    assert_eq!(history[0].what["profile"], "support-bot");
}

async fn profile_changes_are_checked_like_every_other(backend: Backend) {
    let Some(db) = Db::fresh(backend, "profile_checks").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let create = ProfileEdit::create("ops", "reports", "");
    registry.edit_profile(&create).await.unwrap();
    let before = registry.revision();
    let refused = |change: ProfileChange| {
        let registry = registry.clone();
        async move {
            let profile = registry_profile(&registry, "reports").await;
            registry
                .edit_profile(&ProfileEdit::new("ops", &profile, change))
                .await
                .unwrap_err()
        }
    };
    let wrong = refused(ProfileChange::Assign {
        tool: "search_catalogue".into(),
        settings: Some(json!({ "max_rows": "many" })),
    })
    .await;
    assert_eq!(wrong.kind(), RecordErrorKind::Invalid);
    assert!(wrong.message().contains("`max_rows`"), "{wrong}");
    let unknown = refused(ProfileChange::Assign {
        tool: "no_such_tool".into(),
        settings: None,
    })
    .await;
    assert_eq!(unknown.kind(), RecordErrorKind::NotFound, "{unknown}");
    let no_settings = refused(ProfileChange::Assign {
        tool: "slow_report".into(),
        settings: Some(json!({ "x": 1 })),
    })
    .await;
    assert!(
        no_settings.message().contains("takes no settings"),
        "{no_settings}"
    );
    let again = registry.edit_profile(&create).await.unwrap_err();
    assert_eq!(again.kind(), RecordErrorKind::Conflict, "{again}");
    let missing = ProfileEdit::for_profile("ops", "nobody-made-this", 1, ProfileChange::Delete);
    assert_eq!(
        registry.edit_profile(&missing).await.unwrap_err().kind(),
        RecordErrorKind::NotFound
    );
    let bad_name = ProfileEdit::create("ops", "no spaces please", "");
    assert_eq!(
        registry.edit_profile(&bad_name).await.unwrap_err().kind(),
        RecordErrorKind::Invalid
    );
    assert_eq!(registry.revision(), before, "nothing changed");

    // Two operators at once on one profile: the second sees the first one's change.
    let seen = registry_profile(&registry, "reports").await;
    let other = registry_on(&db.reopen().await).await;
    let (one, two) = (
        ProfileEdit::new(
            "ana",
            &seen,
            ProfileChange::Assign {
                tool: "slow_report".into(),
                settings: None,
            },
        ),
        ProfileEdit::new(
            "ben",
            &seen,
            ProfileChange::Assign {
                tool: "search_catalogue".into(),
                settings: None,
            },
        ),
    );
    let (a, b) = tokio::join!(registry.edit_profile(&one), other.edit_profile(&two));
    let lost = match (a, b) {
        (Ok(_), Err(error)) | (Err(error), Ok(_)) => error,
        both => panic!("exactly one change is written: {both:?}"),
    };
    assert_eq!(lost.kind(), RecordErrorKind::Conflict, "{lost}");
}

async fn registry_profile(registry: &Registry, name: &str) -> Profile {
    let records = registry.records().unwrap().load().await.unwrap();
    records.profiles[name].clone()
}

async fn an_approval_shows_the_preview_it_answered_and_calls_are_counted_per_tool(
    backend: Backend,
) {
    let Some(db) = Db::fresh(backend, "audit_preview").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        - 1_000;
    for query in ["a", "b"] {
        registry
            .call(&clerk(), "search_catalogue", json!({ "query": query }))
            .await;
    }
    // Two previews of different orders, then the first approved: it shows its own preview.
    let Outcome::NeedsConfirmation(first) = registry
        .call(&clerk(), "refund", json!({ "order": 7001 }))
        .await
    else {
        panic!("a write is previewed first");
    };
    registry
        .call(&clerk(), "refund", json!({ "order": 7002 }))
        .await;
    registry.confirm(&clerk(), first.confirmation()).await;
    let rows = db
        .store()
        .audit_trail(&toolgate::store::AuditQuery::newest(3))
        .await
        .unwrap();
    let actions: Vec<(&str, Option<&str>)> = rows
        .iter()
        .map(|r| (r.action.as_str(), r.preview.as_deref()))
        .collect();
    assert_eq!(
        actions,
        [
            ("approve", Some("Refund order 7001")),
            ("preview", Some("Refund order 7002")),
            ("preview", Some("Refund order 7001")),
        ]
    );

    let counts = db.store().calls_per_tool(started).await.unwrap();
    let counted: Vec<(&str, u64)> = counts.iter().map(|c| (c.tool.as_str(), c.calls)).collect();
    assert_eq!(
        counted,
        [("search_catalogue", 2), ("refund", 1)],
        "previews are no calls; the approved run is"
    );
    let later = db.store().calls_per_tool(u64::MAX / 2).await.unwrap();
    assert!(later.is_empty(), "nothing after the window's start");
}
