"""The static-files storage: WhiteNoise's hashed, compressed files once `collectstatic` has run
(`make run` and the deploy steps run it), and the plain file — served by WhiteNoise from the
app's own `static/` folder (`WHITENOISE_USE_FINDERS`) — for a file that was never collected.
Without this fallback, starting the app without `collectstatic` (`runserver` or gunicorn with
DEBUG off) made every page a 500; with it, such a page is styled too, only without the
long-lived cache headers the hashed names get."""

from django.core.files.storage import FileSystemStorage
from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    def url(self, name, force=False):
        try:
            return super().url(name, force)
        except ValueError:  # not in the manifest, or no manifest: never collected
            return FileSystemStorage.url(self, name)
