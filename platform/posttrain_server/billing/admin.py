from django.contrib import admin

from posttrain_server.billing.models import OrganizationQuota, PriceBook


@admin.register(PriceBook)
class PriceBookAdmin(admin.ModelAdmin):
    list_display = ("version", "effective_at", "note")


@admin.register(OrganizationQuota)
class OrganizationQuotaAdmin(admin.ModelAdmin):
    list_display = ("organization", "monthly_budget", "max_concurrent_jobs")
