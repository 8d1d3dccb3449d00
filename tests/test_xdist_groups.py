"""make test keeps grouped tests on one worker: their ids carry the group, which is what xdist's
``--dist loadgroup`` scheduler reads (``tests/conftest._name_groups_in_test_ids``)."""

from __future__ import annotations

import pytest


@pytest.mark.xdist_group("id-check")
def test_a_grouped_test_carries_its_group_in_its_id(request):
    if not getattr(request.config.option, "loadgroup", False) or not hasattr(request.config, "workerinput"):
        pytest.skip("only on an xdist worker under --dist loadgroup (make test)")
    assert request.node.nodeid.endswith("@id-check")
