"""A strict Content-Security-Policy on every console page.

The console's pages load only their own static files: no inline script or style, no other
origin, no framing. An injected ``<script>`` (say, through a file name) would not run. The
API docs pages (Swagger UI, ReDoc) and Django's admin keep their own, looser needs and are
left as they were.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
          "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; "
          "form-action 'self'; frame-ancestors 'none'")


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        is_console = match is not None and match.namespace == "console"
        if is_console or (match is None and "html" in response.get("Content-Type", "")):
            response.setdefault("Content-Security-Policy", POLICY)
            response.setdefault("Referrer-Policy", "same-origin")
            response.setdefault("X-Content-Type-Options", "nosniff")
        return response
