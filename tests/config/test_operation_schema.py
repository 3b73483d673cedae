"""C6: `config.schema.OperationSchema` documents an operation from its method's docstring: the
first paragraph is its `summary`, the rest its `description` (each paragraph's lines joined by
a space, paragraphs by a blank line). A view's class docstring never reaches the schema, and
words given to `extend_schema` (a webhook's) still come first."""

from django.urls import path
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView


class ThingApi(APIView):
    """X1: for readers of the code only."""

    @extend_schema(operation_id="thing_get", responses={200: None})
    def get(self, request):
        """Read a thing

        Answer the thing, its lines
        wrapped as a docstring wraps them.

        A second paragraph."""
        return Response()

    @extend_schema(operation_id="thing_delete", responses={204: None})
    def delete(self, request):
        return Response(status=204)

    @extend_schema(
        operation_id="thing_put",
        summary="Said by the declaration",
        description="The declaration's own words.",
        responses={200: None},
    )
    def put(self, request):
        """Not this

        Nor this."""
        return Response()


def _operation(method: str) -> dict:
    generator = SchemaGenerator(patterns=[path("things", ThingApi.as_view())])
    return generator.get_schema(request=None, public=True)["paths"]["/things"][method]


def test_it_makes_the_first_paragraph_the_summary_and_the_rest_the_description():
    operation = _operation("get")
    assert operation["summary"] == "Read a thing"
    assert operation["description"] == (
        "Answer the thing, its lines wrapped as a docstring wraps them.\n\nA second paragraph."
    )


def test_it_never_puts_the_class_docstring_in_the_schema():
    operation = _operation("delete")
    assert ("summary" in operation, "description" in operation) == (False, False)


def test_it_keeps_the_words_extend_schema_gives_first():
    operation = _operation("put")
    assert (operation["summary"], operation["description"]) == (
        "Said by the declaration",
        "The declaration's own words.",
    )
