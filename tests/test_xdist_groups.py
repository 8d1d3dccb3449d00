"""make test keeps grouped tests on one worker: their ids carry the group, which is what xdist's
``--dist loadgroup`` scheduler reads (``tests/conftest._name_groups_in_test_ids``)."""

from __future__ import annotations

import pytest


@pytest.mark.xdist_group("id-check")
def test_a_grouped_test_carries_its_group_in_its_id(request):
    if not getattr(request.config.option, "loadgroup", False) or not hasattr(request.config, "workerinput"):
        pytest.skip("only on an xdist worker under --dist loadgroup (make test)")
    assert request.node.nodeid.endswith("@id-check")


def test_the_long_work_is_dealt_first(request):
    # Servers, browsers, clusters and benchmarks' quick runs come before the unit tests in the order
    # the scheduler deals (make test passes --no-loadscope-reorder, so this order is the one used).
    from tests.conftest import _dealing_rank

    if request.config.getoption("loadscopereorder", default=None) is None:
        pytest.skip("needs pytest-xdist")
    ranks = [_dealing_rank(item) for item in request.session.items]
    assert ranks == sorted(ranks)
