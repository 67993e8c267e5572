"""The API's docs behind the key, from the package; 404s that suit who asks; the favicon."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from arbiter.store import Store
from arbiter.store.api_key_repository import create_api_key

HTML = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def test_openapi_and_docs_need_a_key_once_keys_exist(
    client: TestClient, server_store: Store
) -> None:
    assert client.get("/v1/openapi.json").status_code == 200  # open server: no key
    assert client.get("/v1/docs").status_code == 200
    _, key = create_api_key(server_store, "docs")
    document = client.get("/v1/openapi.json")
    assert document.status_code == 401
    assert document.json()["error"]["code"] == "unauthorized"
    page = client.get("/v1/docs", headers=HTML)
    assert page.status_code == 401
    assert page.headers["content-type"].startswith("text/html")
    assert "An API key is needed" in page.text
    headers = {"X-API-Key": key}
    assert client.get("/v1/openapi.json", headers=headers).json()["info"]["title"] == "Arbiter"
    assert client.get("/v1/docs", headers=headers).status_code == 200


def test_docs_page_loads_swagger_from_the_package_under_a_strict_csp(
    client: TestClient,
) -> None:
    page = client.get("/v1/docs")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "script-src 'self';" in csp
    assert "unsafe-inline" not in csp
    assert "unsafe-eval" not in csp
    assert "http" not in page.text.replace('href="/', "").replace('src="/', "").split("<body>")[0]
    assert "<script>" not in page.text  # no inline script
    for asset in (
        "/static/swagger/swagger-ui-bundle.js",
        "/static/swagger/swagger-ui.css",
        "/static/swagger/init.js",
    ):
        assert asset in page.text
        answer = client.get(asset)
        assert answer.status_code == 200, asset
        assert len(answer.content) > 100


def test_swagger_ships_with_its_licence() -> None:
    import arbiter.server

    folder = Path(arbiter.server.__file__).parent / "static" / "swagger"
    assert "Apache License" in (folder / "LICENSE").read_text()
    assert "SmartBear" in (folder / "NOTICE").read_text()


def test_an_unknown_path_is_a_page_for_a_browser_and_json_otherwise(client: TestClient) -> None:
    page = client.get("/no/such/page", headers=HTML)
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert "Page not found" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    for path in ("/no/such/page", "/v1/nothing"):
        answer = client.get(path, headers={"Accept": "*/*"})
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "not_found"
    assert client.get("/v1/nothing", headers={"Accept": "application/json"}).json()["error"]


def test_a_missing_run_page_never_shows_where_the_store_is(
    client: TestClient, server_store: Store
) -> None:
    where = server_store.url.removeprefix("sqlite:///")
    for path in ("/runs/nope", "/runs/nope/results", "/compare?a=nope&b=nope", "/verdicts/999"):
        answer = client.get(path, headers=HTML)
        assert answer.status_code == 404, path
        assert where not in answer.text
        assert "sqlite" not in answer.text
    assert "no run matches id &#39;nope&#39;" in client.get("/runs/nope", headers=HTML).text


def test_the_favicon_is_served_and_linked(client: TestClient) -> None:
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.content.startswith(b"<svg")
    assert client.get("/static/favicon.svg").status_code == 200
    assert 'rel="icon"' in client.get("/", headers=HTML).text
    assert 'rel="icon"' in client.get("/v1/docs").text
