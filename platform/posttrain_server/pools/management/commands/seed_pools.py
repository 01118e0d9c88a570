"""``manage.py seed_pools``: add the default pools and price book where they are missing."""

from django.core.management.base import BaseCommand

from posttrain_server.billing.services import price_book_seed_default
from posttrain_server.pools.services import pools_seed_defaults


class Command(BaseCommand):
    help = "Create the default pools (cpu, blackwell, rubin) and price book if missing."

    def handle(self, *args: object, **options: object) -> None:
        created = pools_seed_defaults()
        book = price_book_seed_default()
        self.stdout.write(f"pools created: {', '.join(created) or 'none'}; "
                          f"default price book {'created' if book else 'already there'}")
