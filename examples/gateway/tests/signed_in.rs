//! The gateway signs itself in to a remote server that wants OAuth, as a machine (the client credentials
//! grant): the shop in its signed-in mode, in process, behind panva's `oidc-provider`. The gateway finds
//! the authorization server in the shop's metadata, asks it for a token for the shop, serves the shop's
//! tools under its own policy, and asks for a new token before the one it holds expires. A wrong secret,
//! a token endpoint that is down, or a server whose metadata names another address, leaves the server
//! degraded with the reason, and runs nothing.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

#[path = "../../../tests/support/oidc_provider.rs"]
#[allow(dead_code)] // shared with the OAuth tests, which use all of it
mod oidc_provider;
#[path = "../../../tests/support/postgres.rs"]
#[allow(dead_code)] // shared with the records' tests, which use all of it
mod postgres;
#[path = "../../../tests/support/real_clients.rs"]
#[allow(dead_code)] // shared with the shop's tests, which use all of it
mod real_clients;

use std::path::{Path, PathBuf};
use std::process::Command;

use example_shop::{Db, server, signed_in_http_server};
use oidc_provider::Provider;
use real_clients::{Served, report};
use serde_json::{Value, json};
use toolgate::http::{HttpServer, ProtectedResource, TokenVerifier};
use toolgate::mcp::McpServer;
use toolgate::operator::AdminApi;
use toolgate::output::Outcome;
use toolgate::param::ClientSupport;
use toolgate::registry::Config;
use toolgate::remote::{ClientSecret, RemoteServer, SignIn};
use toolgate::store::Database;
use toolgate::{Call, Caller};

const GATEWAY: &str = env!("CARGO_BIN_EXE_example-gateway");

/// The environment variable the test's gateway reads the shop's client secret from.
const SECRET: &str = "ORDERS_CLIENT_SECRET";

/// The shop, signing people in at `provider`, served in this process at a free port as `public` says
/// its address is (its own, unless given); its address.
fn shop(runtime: &tokio::runtime::Runtime, provider: &Provider, public: Option<&str>) -> String {
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let grants = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shop/deploy/signed-in.toml");
        let store = Database::open(":memory:").await.unwrap();
        let config = Config::load(grants).unwrap();
        let registry = example_shop::registry(Db::open(":memory:").unwrap(), &store, config)
            .await
            .unwrap();
        let served =
            signed_in_http_server(server(registry), &provider.issuer, public.unwrap_or(&url))
                .unwrap();
        tokio::spawn(served.serve_listener(listener, std::future::pending()));
        url
    })
}

/// The gateway's configuration: the shop at `url` as the server `orders`, signed in to as the
/// provider's `back-office` client.
fn config(name: &str, url: &str) -> PathBuf {
    // ANCHOR: client_credentials
    let text = format!(
        "[servers.orders]\nurl = {url:?}\nability = \"orders.view\"\ntrusted = true\n\
         oauth = {{ client_id = \"back-office\", client_secret_env = \"{SECRET}\", scopes = [\"orders:read\"] }}\n"
    );
    // ANCHOR_END: client_credentials
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    file
}

/// `toolgate servers list` on the gateway of `config`, with `secret` as the client's.
fn servers(config: &Path, secret: &str) -> String {
    let output = Command::new(GATEWAY)
        .arg("--config")
        .arg(config)
        .args(["toolgate", "servers", "list"])
        .env(SECRET, secret)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        report("servers list", &output)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The gateway of `config`, serving, with the client's secret.
fn serving(config: &Path) -> Served {
    let mut command = Command::new(GATEWAY);
    command
        .arg("--config")
        .arg(config)
        .env(SECRET, "back-office-secret");
    Served::spawn(command)
}

/// What the gateway at `url` answers a viewer's call of `tool`: a 2026-07-28 request, which needs no
/// session, its answer as JSON or as one event.
fn call(runtime: &tokio::runtime::Runtime, url: &str, tool: &str) -> Value {
    call_as(runtime, url, "viewer-token", tool)
}

/// What the gateway at `url` answers the call of `tool` with `token`.
fn call_as(runtime: &tokio::runtime::Runtime, url: &str, token: &str, tool: &str) -> Value {
    runtime.block_on(async {
        let text = reqwest::Client::new()
            .post(url)
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": tool, "arguments": {"query": "Lovelace"},
                    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientCapabilities": {}}}}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let json = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .next_back()
            .unwrap_or(&text);
        serde_json::from_str(json.trim()).unwrap_or(Value::String(text))
    })
}

#[test]
fn the_gateway_signs_in_to_a_remote_server_as_a_client_and_renews_its_token() {
    let Some(provider) = Provider::start("http://127.0.0.1/mcp") else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = shop(&runtime, &provider, None);
    let config = config("signed-in-gateway", &url);

    let listed = servers(&config, "back-office-secret");
    assert!(listed.starts_with("orders           online"), "{listed}");
    assert!(
        listed.contains("signed in as OAuth client back-office"),
        "{listed}"
    );

    let wrong = servers(&config, "not-the-secret");
    assert!(wrong.starts_with("orders           degraded"), "{wrong}");
    assert!(
        wrong.contains("refused: invalid_client"),
        "the token endpoint's refusal: {wrong}"
    );

    // Tokens that live four seconds: the gateway renews them while it serves.
    runtime.block_on(provider.tokens(json!({"ttl": 4})));
    let gateway = serving(&config);
    let search = || call(&runtime, &gateway.url, "orders_search_orders");
    // The remote server is listed in the background; wait until its tools are served.
    let mut first = search();
    for _ in 0..60 {
        if first["result"]["structuredContent"]["total"] == 5 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
        first = search();
    }
    assert_eq!(first["result"]["structuredContent"]["total"], 5, "{first}");
    let asked = runtime.block_on(provider.count("client_credentials"));
    std::thread::sleep(std::time::Duration::from_secs(3));
    let again = search();
    assert_eq!(again["result"]["structuredContent"]["total"], 5, "{again}");
    assert!(
        runtime.block_on(provider.count("client_credentials")) > asked,
        "a new token before the old one expired"
    );
}

/// An authorization server whose token endpoint is down: the server it guards is degraded with the
/// reason, and the gateway's own tools answer as before.
#[test]
fn a_token_endpoint_that_is_down_degrades_its_server_and_nothing_else() {
    let Some(provider) = Provider::start("http://127.0.0.1/mcp") else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = shop(&runtime, &provider, None);
    runtime.block_on(provider.tokens(json!({"tokenEndpoint": "down"})));
    let config = config("down-gateway", &url);
    let listed = servers(&config, "back-office-secret");
    assert!(listed.starts_with("orders           degraded"), "{listed}");
    assert!(listed.contains("answered 503"), "{listed}");

    let gateway = serving(&config);
    let local = call(&runtime, &gateway.url, "search_orders");
    assert_eq!(
        local["result"]["structuredContent"]["total"], 5,
        "the gateway's own tool: {local}"
    );
}

#[test]
fn a_server_whose_metadata_names_another_address_gets_no_token() {
    let Some(provider) = Provider::start("http://127.0.0.1/mcp") else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = shop(&runtime, &provider, Some("https://orders.example.com/mcp"));
    let listed = servers(&config("elsewhere-gateway", &url), "back-office-secret");
    assert!(listed.starts_with("orders           degraded"), "{listed}");
    assert!(listed.contains("metadata of another resource"), "{listed}");
    assert_eq!(runtime.block_on(provider.count("client_credentials")), 0);
}

/// A server that asks for a token, and whose metadata never ends: the gateway reads at most 256 KiB of
/// it, and asks for no token.
#[test]
fn a_server_whose_metadata_is_huge_is_refused_unread() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut request = [0; 4096];
                    let read = stream.read(&mut request).await.unwrap_or(0);
                    if request[..read].starts_with(b"POST") {
                        let challenge = "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\n\
                                         content-length: 0\r\nconnection: close\r\n\r\n";
                        let _ = stream.write_all(challenge.as_bytes()).await;
                        return;
                    }
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                                content-length: 52428800\r\nconnection: close\r\n\r\n{\"resource\": \"";
                    let _ = stream.write_all(head.as_bytes()).await;
                    let chunk = vec![b'x'; 64 * 1024];
                    for _ in 0..800 {
                        if stream.write_all(&chunk).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        url
    });
    let listed = servers(&config("huge-gateway", &url), "any");
    assert!(listed.starts_with("orders           degraded"), "{listed}");
    assert!(listed.contains("sent more than 262144 bytes"), "{listed}");
}

/// A gateway whose operator adds its servers, on the records database at `store`.
struct Operated {
    config: PathBuf,
    store: String,
}

impl Operated {
    fn new(name: &str, store: String) -> Self {
        let config = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.toml"));
        std::fs::write(&config, "# The operator adds the servers.\n").unwrap();
        Operated { config, store }
    }

    /// The gateway, serving or running an operator's command.
    fn command(&self) -> Command {
        let mut command = Command::new(GATEWAY);
        command
            .arg("--config")
            .arg(&self.config)
            .arg("--store")
            .arg(&self.store);
        command
    }

    /// What `toolgate args` prints.
    fn toolgate(&self, args: &[&str]) -> String {
        let output = self.command().arg("toolgate").args(args).output().unwrap();
        assert!(output.status.success(), "{}", report("toolgate", &output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Adds the shop at `shop` as `orders`, signed in to by an operator who comes back to `callback`,
    /// the gateway naming itself by its client ID metadata document beside it, where an authorization
    /// server takes those.
    fn add_orders(&self, shop: &str, callback: &str) {
        let document = callback.replace("/callback", "/client-metadata.json");
        // ANCHOR: operator
        let entry = json!({
            "url": shop, "ability": "orders.view", "trusted": true,
            "oauth": {
                "redirect_uri": callback, "scopes": ["orders:read"], "metadata_document": document,
            },
        });
        self.toolgate(&["servers", "add", "orders", &entry.to_string()]);
        // ANCHOR_END: operator
    }

    /// Begins the sign-in to `orders` on the command line and signs Rita in at `provider`, as her browser
    /// would: where she is sent back.
    fn sign_in(
        &self,
        runtime: &tokio::runtime::Runtime,
        provider: &Provider,
        callback: &str,
    ) -> String {
        let begun = self.toolgate(&["servers", "sign-in", "orders"]);
        let url = begun
            .lines()
            .nth(1)
            .unwrap_or_else(|| panic!("no address: {begun}"));
        runtime.block_on(provider.sign_in(url, "rita", callback))
    }
}

/// A SQLite file named `name` in the test's scratch folder, none of it there yet.
fn fresh_store(name: &str) -> PathBuf {
    let store = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.db"));
    for file in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{file}", store.display()));
    }
    store
}

/// Every byte the SQLite file `store` and its log hold now.
fn stored(store: &Path) -> Vec<u8> {
    let mut file = Vec::new();
    for part in ["", "-wal"] {
        file.extend(std::fs::read(format!("{}{part}", store.display())).unwrap_or_default());
    }
    file
}

/// Whether `haystack` holds `needle` anywhere.
fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// An operator signs the gateway in to the shop once, in a browser, by the authorization code grant:
/// the server is added and signed in to from the command line while the gateway serves, the refresh
/// token is kept encrypted in the gateway's database (a copy of the file does not carry it), a
/// restarted gateway stays signed in, and a grant the provider revokes leaves the server unavailable
/// with what to do.
#[test]
fn an_operator_signs_the_gateway_in_once_and_it_stays_signed_in() {
    let Some(provider) = Provider::start("http://127.0.0.1/mcp") else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let shop = shop(&runtime, &provider, None);
    let store = fresh_store("operator-sign-in");
    let operated = Operated::new("operator-sign-in", store.display().to_string());
    let toolgate = |args: &[&str]| operated.toolgate(args);
    let mut served = Served::spawn(operated.command());
    let callback = served.url.replace("/mcp", "/oauth/callback");
    operated.add_orders(&shop, &callback);
    let before = toolgate(&["servers", "list"]);
    assert!(
        before.contains("no operator has signed the gateway in to `orders` yet"),
        "{before}"
    );

    // Tokens that live four seconds: the gateway renews them while it serves.
    runtime.block_on(provider.tokens(json!({"ttl": 4})));
    let back = operated.sign_in(&runtime, &provider, &callback);
    let answer = |at: &str| {
        runtime.block_on(async {
            let response = reqwest::get(at).await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        })
    };
    let (status, text) = answer(&back);
    assert_eq!(status, 200, "{text}");
    assert!(text.starts_with("Signed in to `orders`"), "{text}");
    let (again, text) = answer(&back);
    assert_eq!(again, 400, "a sign-in is finished once: {text}");
    // The gateway's client ID metadata document, for an authorization server that reads those.
    let (status, text) = answer(&callback.replace("/callback", "/client-metadata.json"));
    assert_eq!(status, 200, "{text}");
    let document: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        document["client_id"],
        callback.replace("/callback", "/client-metadata.json")
    );
    assert_eq!(document["redirect_uris"], json!([callback]));
    assert_eq!(document["token_endpoint_auth_method"], "none");

    let served_total = |url: &str| {
        let mut found = call(&runtime, url, "orders_search_orders");
        for _ in 0..80 {
            if found["result"]["structuredContent"]["total"] == 5 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
            found = call(&runtime, url, "orders_search_orders");
        }
        found
    };
    let first = served_total(&served.url);
    assert_eq!(first["result"]["structuredContent"]["total"], 5, "{first}");

    let issued = runtime.block_on(provider.refresh_tokens());
    assert!(
        !issued.is_empty(),
        "the provider gave the gateway a refresh token"
    );
    let file = stored(&store);
    assert!(holds(&file, "tge1."), "the sign-in is kept, encrypted");
    for token in &issued {
        assert!(
            !holds(&file, token),
            "a copy of the database carries no refresh token"
        );
    }

    // A restarted gateway reads its sign-in from the database, and renews it when it is due.
    served.kill();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let refreshed = runtime.block_on(provider.count("refreshes"));
    let served = Served::spawn(operated.command());
    let after = served_total(&served.url);
    assert_eq!(after["result"]["structuredContent"]["total"], 5, "{after}");
    assert!(
        runtime.block_on(provider.count("refreshes")) > refreshed,
        "renewed, not signed in again"
    );

    // The provider revokes the grant: when the token is due, the server cannot be used, and says why.
    runtime.block_on(provider.revoke_refreshes());
    std::thread::sleep(std::time::Duration::from_secs(3));
    let revoked = call(&runtime, &served.url, "orders_search_orders");
    let text = revoked.to_string();
    assert_eq!(revoked["result"]["isError"], true, "{text}");
    assert!(text.contains("sign the gateway in again"), "{text}");
}

/// Two gateways on one PostgreSQL database: the operator signs in once, through either, and both serve
/// the shop's tools with the one sign-in, renewed by one of them at a time while both serve.
#[test]
fn an_operators_sign_in_serves_every_replica_on_postgresql() {
    let Some(provider) = Provider::start("http://127.0.0.1/mcp") else {
        return;
    };
    let Some(cluster) = postgres::shared() else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let shop = shop(&runtime, &provider, None);
    let store = runtime.block_on(cluster.database("gateway_sign_in"));
    let operated = Operated::new("replicas-sign-in", store);
    let replicas = [
        Served::spawn(operated.command()),
        Served::spawn(operated.command()),
    ];
    let callback = replicas[1].url.replace("/mcp", "/oauth/callback");
    operated.add_orders(&shop, &callback);
    runtime.block_on(provider.tokens(json!({"ttl": 4})));
    let back = operated.sign_in(&runtime, &provider, &callback);
    let status = runtime.block_on(async { reqwest::get(&back).await.unwrap().status() });
    assert_eq!(status, 200);

    let total = |served: &Served| {
        call(&runtime, &served.url, "orders_search_orders")["result"]["structuredContent"]["total"]
            .clone()
    };
    for served in &replicas {
        let mut found = total(served);
        for _ in 0..80 {
            if found == 5 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
            found = total(served);
        }
        assert_eq!(found, 5, "{}", served.url);
    }
    // Past two renewals, both still serve with the one sign-in.
    for _ in 0..6 {
        std::thread::sleep(std::time::Duration::from_secs(1));
        for served in &replicas {
            assert_eq!(total(served), 5, "{}", served.url);
        }
    }
    assert!(runtime.block_on(provider.count("refreshes")) >= 2);
}

/// A server that checks each caller's rights gets each caller's own token: the gateway, a resource
/// server itself, exchanges the token each caller signed in to it with at the authorization server (RFC
/// 8693) for one of their own for the shop, and never sends it on as it is. Rita, who may read orders,
/// finds them; Bob, signed in without that scope, is refused by the shop itself; Rita's second call uses
/// the token already exchanged for her.
#[test]
fn each_caller_reaches_a_server_that_checks_rights_with_a_token_of_their_own() {
    let Some(provider) = Provider::start("http://127.0.0.1/mcp") else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let shop = shop(&runtime, &provider, None);
    let gateway = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        // ANCHOR: exchange
        let secret = ClientSecret::value("back-office-secret");
        let orders = RemoteServer::http("orders", &shop)
            .public()
            .trusted()
            .enforced_downstream()
            .sign_in(SignIn::token_exchange("back-office", secret).scopes(["orders:read"]));
        // ANCHOR_END: exchange
        let registry = toolgate::Registry::builder()
            .compiled_tools(std::iter::empty::<&str>())
            .remote(orders)
            .build()
            .unwrap();
        registry.refresh_servers().await.unwrap();
        let resource = ProtectedResource::new(&url)
            .unwrap()
            .authorization_server(&provider.issuer);
        let verifier = TokenVerifier::new(&resource).unwrap();
        let served = HttpServer::new(McpServer::new(registry))
            .protected_resource(resource)
            .authenticator(verifier);
        tokio::spawn(served.serve_listener(listener, std::future::pending()));
        url
    });
    let token = |sub: &str, scope: &str| {
        let claims = json!({"sub": sub, "aud": gateway, "scope": scope, "client_id": "claude"});
        runtime.block_on(provider.mint("current", claims))
    };
    let (rita, bob) = (token("rita", "orders:read"), token("bob", ""));
    let found = call_as(&runtime, &gateway, &rita, "orders_search_orders");
    assert_eq!(found["result"]["structuredContent"]["total"], 5, "{found}");
    let refused = call_as(&runtime, &gateway, &bob, "orders_search_orders");
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let again = call_as(&runtime, &gateway, &rita, "orders_search_orders");
    assert_eq!(again["result"]["structuredContent"]["total"], 5, "{again}");
    assert_eq!(
        runtime.block_on(provider.count("exchanges")),
        2,
        "one exchange each; Rita's token is kept for her second call"
    );
}

/// A server that acts as each person gets each person's own token, which they authorize once: the
/// gateway lists the shop's tools by an operator's sign-in, and Rita, calling a tool of it for the first
/// time, is handed the address where she signs in (a URL-mode elicitation); her call goes on when she
/// comes back, as her. Bob, whose client cannot open links, is told where to sign in, and nothing is
/// sent for him: never Rita's token. Her grant is kept encrypted in the records, under her and the
/// server.
#[test]
fn each_person_signs_in_once_and_the_server_sees_them() {
    let Some(provider) = Provider::start("http://127.0.0.1/mcp") else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let shop = shop(&runtime, &provider, None);
    let store = fresh_store("each-person");
    let (registry, callback) = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let callback = format!("http://{}/oauth/callback", listener.local_addr().unwrap());
        let database = Database::open(store.to_str().unwrap()).await.unwrap();
        // ANCHOR: each_person
        let orders = RemoteServer::http("orders", &shop)
            .public()
            .trusted()
            .enforced_downstream()
            .sign_in(
                SignIn::authorization_code(&callback)
                    .scopes(["orders:read"])
                    .each_person(&callback),
            );
        // ANCHOR_END: each_person
        let registry = toolgate::Registry::builder()
            .compiled_tools(std::iter::empty::<&str>())
            .database(&database)
            .remote(orders)
            .build()
            .unwrap();
        let served = HttpServer::new(McpServer::new(registry.clone())).mount(AdminApi);
        tokio::spawn(served.serve_listener(listener, std::future::pending()));
        (registry, callback)
    });
    let open = |url: &str, login: &str| {
        runtime.block_on(async {
            let back = provider.sign_in(url, login, &callback).await;
            let response = reqwest::get(&back).await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        })
    };
    // The operator signs the gateway in, for its listing.
    let begun = runtime.block_on(registry.begin_sign_in("orders")).unwrap();
    assert_eq!(open(&begun, "ops").0, 200);
    runtime.block_on(registry.refresh_servers()).unwrap();
    assert!(registry.get("orders_search_orders").is_some());

    let rita = Caller::new("rita");
    let search = || Call::new("orders_search_orders", json!({"query": "Lovelace"}));
    let Outcome::InputRequired(asked) = runtime.block_on(registry.run(&rita, search())) else {
        panic!("Rita is asked to sign in");
    };
    let link = &asked.requests()["sign_in"]["params"];
    assert_eq!(link["mode"], "url", "{link}");
    let address = link["url"].as_str().unwrap();
    let authorizations = runtime.block_on(provider.count("authorizations"));
    let (status, text) = open(address, "rita");
    assert_eq!(status, 200, "{text}");
    assert!(text.starts_with("Signed in to `orders`"), "{text}");
    assert!(runtime.block_on(provider.count("authorizations")) > authorizations);
    let accepted = json!({"action": "accept"});
    let answers = [("sign_in".to_owned(), accepted)].into_iter().collect();
    let resumed = search().resume(Some(asked.state()), answers);
    let found = runtime.block_on(registry.run(&rita, resumed)).into_result();
    assert!(!found.is_error, "{}", found.text_for_model());
    assert_eq!(found.structured.as_ref().unwrap()["total"], 5);
    let again = runtime
        .block_on(registry.run(&rita, search()))
        .into_result();
    assert!(
        !again.is_error,
        "her grant is kept: {}",
        again.text_for_model()
    );

    let bob = Caller::new("bob");
    let plain = search().client_support(ClientSupport::NONE);
    let refused = runtime.block_on(registry.run(&bob, plain)).into_result();
    let text = refused.text_for_model();
    assert!(refused.is_error, "{text}");
    assert!(
        text.contains("you have not signed in to it yet: open http://127.0.0.1:"),
        "told where to sign in: {text}"
    );
    let anonymous = runtime
        .block_on(registry.run(&Caller::anonymous(), search()))
        .into_result();
    assert!(
        anonymous
            .text_for_model()
            .starts_with("[ERROR] Unknown tool"),
        "a server that acts as each person is not offered to a caller who is nobody"
    );

    let file = stored(&store);
    for token in runtime.block_on(provider.refresh_tokens()) {
        assert!(!holds(&file, &token), "no refresh token in the database");
    }
}
