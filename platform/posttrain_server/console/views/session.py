"""Signing in and out, and choosing which of one's organizations the console acts for."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from posttrain_server.console.access import SESSION_ORG, console_view, organizations_of


class LoginView(auth_views.LoginView):
    template_name = "console/login.html"
    redirect_authenticated_user = True


class LogoutView(auth_views.LogoutView):
    next_page = "console:login"


@require_POST
@console_view
def organization_switch(request: HttpRequest) -> HttpResponse:
    wanted = request.POST.get("organization", "")
    if any(org.id == wanted for org in organizations_of(request.user)):
        request.session[SESSION_ORG] = wanted
    return redirect("console:dashboard")
