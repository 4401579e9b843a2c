"""The platform's documentation pages, `/docs` (Swagger UI) and `/redoc`, served without network.

Both pages load their scripts, styles and favicon from the app itself, under `/docs/assets/`: Swagger UI
from the `swagger-ui-bundle-v2` package, ReDoc from the file vendored in `docs_assets/redoc/` (see its
README). The HTML is FastAPI's own, pointed at those paths, with ReDoc's Google Fonts and Swagger UI's
online validator badge turned off, so opening the docs makes no request to another host.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

__all__ = ["ASSETS_PATH", "mount_docs"]

ASSETS_PATH = "/docs/assets"
_SWAGGER_UI = f"{ASSETS_PATH}/swagger-ui"
_REDOC = f"{ASSETS_PATH}/redoc"
_REDOC_DIR = Path(__file__).parent / "docs_assets" / "redoc"


def mount_docs(app: FastAPI, *, title: str) -> None:
    """Serve `/docs` and `/redoc` for the app's `/openapi.json`, with their assets, on `app`."""
    app.mount(_SWAGGER_UI, StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui-assets")
    app.mount(_REDOC, StaticFiles(directory=_REDOC_DIR), name="redoc-assets")
    favicon = f"{_SWAGGER_UI}/favicon-32x32.png"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        """Swagger UI for the platform's OpenAPI document."""
        root = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{title} - Swagger UI",
            swagger_js_url=f"{root}{_SWAGGER_UI}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{_SWAGGER_UI}/swagger-ui.css",
            swagger_favicon_url=f"{root}{favicon}",
            # Swagger UI would otherwise load a validator badge from validator.swagger.io.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        """ReDoc for the platform's OpenAPI document."""
        root = request.scope.get("root_path", "").rstrip("/")
        return get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{title} - ReDoc",
            redoc_js_url=f"{root}{_REDOC}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{favicon}",
            with_google_fonts=False,
        )
