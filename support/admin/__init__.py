"""The Django admin is the support staff's tool (docs/DESIGN.md), so every model's admin lives
here, built on `base.SupportAdmin`: one module per app whose models it shows. Importing the
package registers them all (Django's admin autodiscovery imports `support.admin`)."""

from . import base, conversations, events, memory, policy  # noqa: F401
