"""API resources: ``client.files``, ``client.fine_tuning.jobs``, ``client.models``."""

from posttrain.resources.files import AsyncFiles, Files
from posttrain.resources.fine_tuning import AsyncFineTuning, AsyncJobs, FineTuning, Jobs
from posttrain.resources.models import AsyncModels, Models
from posttrain.resources.organization import AsyncOrganization, Organization

__all__ = ["AsyncFiles", "AsyncFineTuning", "AsyncJobs", "AsyncModels", "AsyncOrganization",
           "Files", "FineTuning", "Jobs", "Models", "Organization"]
