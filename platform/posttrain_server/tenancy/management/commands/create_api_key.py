"""``python manage.py create_api_key --org NAME``: print a new key (creating the org if new)."""

from django.core.management.base import BaseCommand, CommandParser

from posttrain_server.tenancy.services import api_key_create, organization_get_or_create


class Command(BaseCommand):
    help = "Create an API key for an organization (created if needed) and print it once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", required=True, help="organization name")
        parser.add_argument("--name", default="", help="a label for the key")

    def handle(self, *args: object, **options: str) -> None:
        organization = organization_get_or_create(name=options["org"])
        issued = api_key_create(organization=organization, name=options["name"])
        self.stderr.write(f"organization {organization.id} ({organization.name}); "
                          f"key {issued.api_key.id}. The key is shown once:")
        self.stdout.write(issued.secret)
