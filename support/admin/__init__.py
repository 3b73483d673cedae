"""The Django admin is the support staff's tool (docs/DESIGN.md), so every model's admin lives
here, built on `base.SupportAdmin`: one module per app whose models it shows, memory's in
three (`memory` for the records and the rows kept beside them, `keys` for the key registry,
`tombstones`) and support's own in two (`logs` for the access, reveal and action logs,
`accounts` for API tokens and users); `site` adds the support views to the admin site. Importing
the package registers them all (Django's admin autodiscovery imports `support.admin`)."""

from . import (  # noqa: F401
    accounts,
    base,
    conversations,
    events,
    keys,
    logs,
    memory,
    policy,
    site,
    tombstones,
)
