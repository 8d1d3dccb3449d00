"""Widgets of the research pages: job tables, collaboration rule pickers, numbers bounded by a job
parameter's declaration."""

from __future__ import annotations

import streamlit as st

from engines.platform.config_schema import FieldInfo


def jobs_table(frame, empty_message: str) -> None:
    """Background jobs as a table with a progress bar column (``frame``: a DataFrame with a "progress" column)."""
    if frame.empty:
        st.info(empty_message)
        return
    st.dataframe(frame, hide_index=True, width="stretch",
                 column_config={"progress": st.column_config.ProgressColumn("progress", min_value=0.0, max_value=1.0)})


def rule_picker(role: str, default: str, prefix: str = "rule") -> tuple[str, dict]:
    """A registered collaboration rule for ``role`` ("protect" or "supply") and its typed parameters.

    Researchers pick rules by name and fill in their declared parameters; they never type code.
    Widget keys: ``<prefix>-<role>`` for the rule, ``<prefix>-<role>-<param>`` for each parameter.
    """
    from engines.collab import rules

    names = rules.available_rules(role)
    name = st.selectbox(f"{role.capitalize()} rule", names, index=names.index(default), key=f"{prefix}-{role}",
                        help=rules.rule_schema(default)["doc"])
    params = {}
    for param in rules.rule_schema(name)["params"]:
        number = float if param["type"] == "float" else int
        params[param["name"]] = st.number_input(
            f"{name}: {param['name']}", value=number(param["default"]), help=param.get("help"),
            min_value=number(param["min"]) if "min" in param else None,
            max_value=number(param["max"]) if "max" in param else None, key=f"{prefix}-{role}-{param['name']}")
    return name, params


def number_from_field(container, label: str, field: FieldInfo, **kwargs) -> int | float:
    """A number input with a job parameter's own default and bounds (``config_schema.field_info``), so a
    page never restates them; ``kwargs`` (step, format, help, key) pass through. An exclusive bound
    (a rate in (0, 1)) becomes the nearest value the widget's format shows inside it."""
    integer = isinstance(field.default, int) and not isinstance(field.default, bool)
    cast = int if integer else float
    inside = 1 if integer else 0.001
    low = field.ge if field.ge is not None else (None if field.gt is None else field.gt + inside)
    high = field.le if field.le is not None else (None if field.lt is None else field.lt - inside)
    return container.number_input(label, value=cast(field.default), min_value=None if low is None else cast(low),
                                  max_value=None if high is None else cast(high),
                                  help=kwargs.pop("help", field.title), **kwargs)
