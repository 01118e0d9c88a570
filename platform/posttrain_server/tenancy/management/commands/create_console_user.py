"""``python manage.py create_console_user --org NAME --username NAME``: a console sign-in.

Creates the organization and the user when new, adds the membership, and sets the password
(``--password``, or a random one printed once). Running it again resets the password.
"""

from django.core.management.base import BaseCommand, CommandParser

from posttrain_server.tenancy.services import console_user_set, organization_get_or_create


class Command(BaseCommand):
    help = "Create or reset a web console user for an organization and print the password."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--org", required=True, help="organization name")
        parser.add_argument("--username", required=True)
        parser.add_argument("--password", default=None,
                            help="default: a random password, printed once")

    def handle(self, *args: object, **options: str) -> None:
        organization = organization_get_or_create(name=options["org"])
        user, password = console_user_set(organization=organization,
                                          username=options["username"],
                                          password=options["password"])
        self.stderr.write(f"console user {user.get_username()} in {organization.name} "
                          f"({organization.id}); the password is shown once:")
        self.stdout.write(password)
