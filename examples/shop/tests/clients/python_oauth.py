"""Signs a person in to example-shop the way an MCP host does, with the official Python `mcp` SDK's
`OAuthClientProvider`: the shop's 401 leads the SDK to its protected resource metadata and on to the
authorization server's, where it registers itself (dynamic client registration) and sends the person to
sign in with PKCE; it exchanges the code for tokens, calls as a viewer, signs in again with the
manager's scope when a write answers 403 insufficient_scope, and refreshes its token when it expires.

The person is played headlessly: the browser the SDK would open is an HTTP client that keeps cookies
and fills in the provider's own login and consent pages as `LOGIN`.

Usage: python_oauth.py URL LOGIN WAIT_SECS   (WAIT_SECS: how long to wait before the call that refreshes)
       python_oauth.py person AUTHORIZATION_URL LOGIN
The first prints one line per check and "N passed, M failed", and exits non-zero when a check fails.
The second is only the person, for another host (the Inspector): it signs in at AUTHORIZATION_URL and
delivers the code to the host's own callback, as a browser would.
"""

import asyncio
import html
import re
import sys
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from checks import check, finish, text_of

REDIRECT = "http://127.0.0.1:9/callback"


def scopes(asked):
    """The resource's scopes an authorization request asks for (the SDK adds `offline_access`, for a
    refresh token, when the provider offers it)."""
    return set(asked.get("scope", [""])[0].split()) - {"offline_access"}


class Memory(TokenStorage):
    """What the SDK keeps between sign-ins; every token it was given, to compare."""

    def __init__(self):
        self.tokens, self.client, self.issued = None, None, []

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken):
        self.tokens = tokens
        self.issued.append(tokens)

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull):
        self.client = client_info


class Person:
    """The browser: follows the authorization URL through the provider's login and consent pages."""

    def __init__(self, login, deliver=False):
        self.login, self.deliver, self.answer, self.asked = login, deliver, None, []

    async def sign_in(self, authorization_url):
        asked = parse_qs(urlparse(authorization_url).query)
        self.asked.append(asked)
        async with httpx2.AsyncClient(follow_redirects=False) as browser:
            response = await browser.get(authorization_url)
            for _ in range(12):
                if response.is_redirect:
                    location = urljoin(str(response.url), response.headers["location"])
                    if location.startswith(asked["redirect_uri"][0]):
                        query = parse_qs(urlparse(location).query)
                        if "error" in query:
                            raise RuntimeError(f"the provider refused: {query}")
                        if self.deliver:
                            await browser.get(location)
                            return
                        self.answer = AuthorizationCodeResult(
                            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
                        )
                        return
                    response = await browser.get(location)
                    continue
                form = re.search(r'<form[^>]*action="([^"]+)"', response.text)
                prompt = re.search(r'name="prompt" value="([^"]+)"', response.text)
                if not form or not prompt:
                    raise RuntimeError(f"no form to fill in at {response.url}: {response.status_code}")
                fields = {"prompt": prompt.group(1)}
                if fields["prompt"] == "login":
                    fields |= {"login": self.login, "password": "any"}
                action = urljoin(str(response.url), html.unescape(form.group(1)))
                response = await browser.post(action, data=fields)
            raise RuntimeError("the sign-in went round in circles")

    async def callback(self):
        answer, self.answer = self.answer, None
        return answer


async def run(url, login, wait_secs):
    storage, person = Memory(), Person(login)
    oauth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="toolgate's Python test host",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=person.sign_in,
        callback_handler=person.callback,
    )
    http = create_mcp_http_client(auth=oauth)
    async with Client(streamable_http_client(url, http_client=http)) as client:
        check("the client registered itself at the provider", storage.client is not None and storage.client.client_id)
        first = person.asked[0] if person.asked else {}
        check("the first sign-in asks for the viewer's scope only, with PKCE, for this resource",
              scopes(first) == {"orders:read"} and first.get("code_challenge_method") == ["S256"]
              and first.get("resource") == [url], first)
        names = [tool.name for tool in (await client.list_tools()).tools]
        check("signed in as a viewer, the person sees reads and no writes",
              "search_orders" in names and "confirm_order" not in names, names)
        found = await client.call_tool("search_orders", {"query": "Lovelace", "limit": 2})
        check("a read runs as the signed-in person", not found.is_error and found.structured_content["total"] == 5, found)

        write = await client.call_tool("confirm_order", {"number": "RO-00003"})
        again = person.asked[1] if len(person.asked) > 1 else {}
        check("a write asks the person to sign in again, with the manager's scope as well",
              scopes(again) == {"orders:read", "orders:write"}, person.asked)
        check("then the write is previewed for approval and runs nothing",
              "Waiting for approval" in text_of(write), write)

        before = storage.tokens.access_token
        await asyncio.sleep(wait_secs)
        found = await client.call_tool("search_orders", {"query": "Hopper", "limit": 1})
        check("an expired token is refreshed, without signing in again",
              not found.is_error and storage.tokens.access_token != before and len(person.asked) == 2,
              (found, len(person.asked)))


def main():
    if sys.argv[1] == "person":
        asyncio.run(Person(sys.argv[3], deliver=True).sign_in(sys.argv[2]))
        print("signed in")
        return
    url, login, wait_secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    asyncio.run(run(url, login, wait_secs))
    finish()


if __name__ == "__main__":
    main()
