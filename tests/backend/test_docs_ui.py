"""The documentation pages load everything from the platform itself: they work with no network."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest

_TYPES = {
    "script": {"text/javascript", "application/javascript"},
    "stylesheet": {"text/css"},
    "icon": {"image/png", "image/x-icon"},
}


class _Assets(HTMLParser):
    """Every script, stylesheet and icon URL a page loads, with what kind it is."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []
        self.spec_urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "script" and values.get("src"):
            self.found.append(("script", values["src"]))
        if tag == "link" and values.get("href"):
            rel = values.get("rel", "")
            self.found.append(("stylesheet" if rel == "stylesheet" else "icon", values["href"]))
        if tag == "redoc":
            self.spec_urls.append(values.get("spec-url", ""))


def _assets(html: str) -> _Assets:
    parser = _Assets()
    parser.feed(html)
    return parser


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_a_docs_page_loads_every_asset_from_the_app_itself(client, page):
    """Platform choice: /docs and /redoc render offline, every script, style and icon served by the app."""
    response = client.get(page)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assets = _assets(response.text)
    kinds = {kind for kind, _url in assets.found}
    assert {"script", "icon"} <= kinds
    for kind, url in assets.found:
        parts = urlsplit(url)
        assert (parts.scheme, parts.netloc) == ("", ""), f"{page} loads {url} from another host"
        asset = client.get(urljoin(page, url))
        assert asset.status_code == 200, url
        media_type = asset.headers["content-type"].split(";")[0].strip()
        assert media_type in _TYPES[kind], (url, media_type)
        assert len(asset.content) > 0


def test_the_swagger_ui_page_names_no_other_host_anywhere(client):
    """Platform choice: no CDN, no online validator badge, no web fonts in the Swagger UI page."""
    html = client.get("/docs").text
    assert "http://" not in html
    assert "https://" not in html
    assert '"validatorUrl": null' in html
    assert "'/openapi.json'" in html or '"/openapi.json"' in html


def test_the_redoc_page_reads_the_apps_own_document_without_web_fonts(client):
    """Platform choice: ReDoc reads /openapi.json and loads no Google Fonts."""
    html = client.get("/redoc").text
    assert _assets(html).spec_urls == ["/openapi.json"]
    assert "fonts.googleapis.com" not in html
    assert "https://" not in html


def test_a_missing_docs_asset_is_a_404_problem(client):
    """RFC 9457: an unknown asset path is a 404 problem+json like any unknown path."""
    response = client.get("/docs/assets/redoc/nothing-here.js")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "not_found"


def test_the_docs_pages_are_not_operations_of_the_api(client):
    """Platform choice: the docs and their assets are not part of the published API surface."""
    paths = client.get("/openapi.json").json()["paths"]
    assert not [path for path in paths if path.startswith(("/docs", "/redoc"))]
