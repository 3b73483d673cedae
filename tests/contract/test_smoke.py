"""The contract smoke (SPEC §10): every operation of the served schema is called once over
HTTP against a live server — the way a runtime calls it — with a request that works, and each
answer is checked against the schema (status code, content type, body). The table of calls is
`tests.contract.test_schema_conformance.calls`, which must cover every operation of the schema, so
an operation added without a call fails here. `make smoke` runs it alone."""

import pytest
import schemathesis

from tests.contract.test_fuzz import CHECKS
from tests.contract.test_schema_conformance import case_of, every_call

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_answers_every_operation_over_http_as_its_schema_says(
    api, api_token, live_server, monkeypatch
):
    from config.api import RuntimeThrottle

    monkeypatch.setattr(RuntimeThrottle, "THROTTLE_RATES", {})
    served = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/?format=json")
    w, table = every_call(api)
    headers = {"Authorization": f"Bearer {api_token}"}
    answered = {}
    for row in table:
        name, *_, status = row
        case = case_of(served, api, w, row)
        response = case.call_and_validate(base_url=live_server.url, headers=headers, checks=CHECKS)
        assert response.status_code == status, (name, response.status_code, response.text[:500])
        answered[name] = response.status_code
    assert len(answered) == len(
        {r.ok().definition.raw["operationId"] for r in served.get_all_operations()}
    )
