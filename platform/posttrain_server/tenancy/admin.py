from django.contrib import admin

from posttrain_server.tenancy.models import ApiKey, Membership, Organization

admin.site.register(Organization)
admin.site.register(Membership)


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "name", "prefix", "created_at", "last_used_at",
                    "revoked_at")
    readonly_fields = ("prefix", "hashed_secret")
