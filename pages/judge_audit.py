"""Research: audit LLM safety judges against human labels (Schwinn et al. 2026, "A Coin Flip for Safety").

Pick the data (a labeling project or the synthetic demo set), run judges as ``judge.run`` jobs,
audit them as a ``judge.audit`` job, then read its ``audit.json``: metrics with intervals, the judge
x attack heatmaps per victim model, ASR inflation, annotator agreement, concordance and subsets.
Every job comes from the database, so a reload or another browser shows the same work.
"""

import functools
import json

import pandas as pd
import streamlit as st

from engines.judge import jobs as judge_jobs
from engines.judge import labeling, plots, review, uploads
from engines.judge.items import JudgeDataError
from engines.judge.judges import JUDGES, available_judges, describe_judges
from engines.platform import jobqueue
from engines.platform.config_schema import field_info
from engines.platform.csv_safety import csv_bytes, frame_csv_bytes
from engines.platform.settings import get_settings
from pages import _access as access
from pages import _research_widgets as widgets
from pages._upload import file_input

PAGE = {"title": "Judge audit", "group": "Research", "roles": ["researcher"], "icon": ":material/gavel:",
        "order": 54}
DEMO = "demo"
FINISHED_SEEN = "judge-audit-finished-seen"
IMPORTED = "judge-audit-imported"  # the message of an import, shown after the rerun that lists the new set  # succeeded jobs the page was drawn with (a new one redraws it)
HUMAN_RULES = {"majority": "majority of the labels (an adjudicator breaks ties)", "first": "first label only"}


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


identity = access.require_role("researcher")
st.title("Judge audit")
st.caption("How well do LLM safety judges agree with people? Run judges over labelled red-teaming outputs, then "
           "audit them: accuracy and agreement by victim model, attack and category, and how much attack success "
           "rates are inflated by judge errors (Schwinn et al. 2026, “A Coin Flip for Safety”).")

# 1 · DATA: a labeling project, or the shipped synthetic demo set

st.header("1 · Data")


def import_form() -> None:
    """Upload items (with labels and verdicts, optional) as a data set the jobs can read.

    Each file goes through ``file_input`` (stored under a name the server chooses, checked for its
    kind and size); the import reads those stored files and names them by the browser's file name."""
    fmt = st.radio("Format of the items", list(uploads.FORMATS), format_func=uploads.FORMATS.get,
                   key="judge-upload-format")
    picked: dict[str, object] = {}  # widget key -> the stored upload, or None

    def pick(label: str, kind: str, key: str, help: str | None = None):
        picked[key] = file_input(label, kind=kind, area="judge", key=key, help=help)
        return picked[key]

    with st.form("judge-upload"):
        left, right = st.columns(2)
        name = left.text_input("Name of the data set (lowercase, digits, dashes)", key="judge-upload-name")
        title = right.text_input("Title (optional)", key="judge-upload-title")
        files: dict[str, object] = {}
        model = attack = ""
        if fmt == "items":
            files["items"] = pick("items.jsonl", "jsonl", "judge-upload-items")
        elif fmt == "harmbench":
            files["behaviors"] = pick("Behaviours CSV (HarmBench's behaviors_*.csv)", "csv", "judge-upload-hb-behaviors")
            files["completions"] = pick("Completions JSON ({BehaviorID: [{test_case, generation}, …]})", "json",
                                        "judge-upload-hb-completions")
            left, right = st.columns(2)
            model = left.text_input("Victim model of these completions", key="judge-upload-hb-model")
            attack = right.text_input("Attack that made them", key="judge-upload-hb-attack")
        else:
            files["artifact"] = pick("JailbreakBench artifact JSON", "json", "judge-upload-jbb-artifact")
            files["behaviors"] = pick("JBB-Behaviors CSV (optional: categories and targets)", "csv",
                                      "judge-upload-jbb-behaviors")
        labels = pick("Human labels: labels.csv with item_key, annotator, score (1–5), optional seq", "csv",
                      "judge-upload-labels", help="Optional: without it, the labels inside items.jsonl (if any) are used.")
        verdicts = pick("Judge verdicts: verdicts.csv with item_key, judge, p_harmful, label (optional)", "csv",
                        "judge-upload-verdicts", help="One file may hold the verdicts of several judges (its judge column).")
        if not st.form_submit_button("Import", type="primary"):
            return
    # A file chosen but not accepted (file_input shows why beside it): importing without it would
    # silently drop the labels or verdicts it held.
    if any(upload is None and st.session_state.get(key) is not None for key, upload in picked.items()):
        st.error("Nothing was imported: a file was not accepted (the reason is shown beside it).")
        return
    try:
        data_set = uploads.save_upload(
            name, fmt, files, labels=labels, verdicts=[verdicts] if verdicts is not None else [], title=title,
            model=model, attack=attack, created_by=identity.user_id)
    except (uploads.UploadError, JudgeDataError) as exc:
        st.error(f"Nothing was imported. {exc}")
    else:
        st.session_state[IMPORTED] = (f"Imported '{data_set.name}': {data_set.n_items:,} items, "
                                      f"{data_set.n_labels:,} labels, {data_set.n_verdicts:,} verdicts.")
        st.session_state["judge-audit-source"] = f"upload:{data_set.name}"
        st.rerun()


def _labels_text(data_set: uploads.DataSet) -> str:
    if data_set.labels:
        return f"{data_set.n_labels:,} labels"
    if data_set.n_labels:
        return f"{data_set.n_labels:,} labels inside the items"
    return "no human labels (import the items again with a labels.csv to audit judges against people)"


if (imported := st.session_state.pop(IMPORTED, None)) is not None:
    st.success(imported)
projects = labeling.list_projects()
data_sets = {d.name: d for d in uploads.list_uploads()}
sources = {f"project:{p.slug}": f"Labeling project: {p.title or p.slug} ({p.slug})" for p in projects}
sources |= {f"upload:{d.name}": f"Imported files: {d.title} ({d.name})" for d in data_sets.values()}
if judge_jobs.DEMO_ITEMS.exists() and judge_jobs.DEMO_LABELS.exists():
    sources[DEMO] = "Synthetic demo set (redacted generations, simulated annotators)"
with st.expander("Import files", expanded=not sources):
    st.caption("Items with their human labels and, if you have them, judge verdicts, in the formats of the command "
               "line (`python -m engines.judge import …` writes items.jsonl; see docs/judge.md). Every file is "
               "checked before anything is stored; an error names the file, line and field. Other shapes (generic "
               "JSONL or CSV with a column mapping): import them with the command line, then upload items.jsonl.")
    import_form()
if not sources:
    st.info("No data to audit yet: import files above, or create a labeling project from imported items under "
            "Admin → Labeling projects and have annotators label it under Annotate → Label.")
    st.stop()
if list(sources) == [DEMO]:
    st.info("Only the synthetic demo set is offered so far: import your own files above, or create a labeling "
            "project under Admin → Labeling projects.")
if st.session_state.get("judge-audit-source") not in sources:
    st.session_state.pop("judge-audit-source", None)
source = st.selectbox("Items and human labels", list(sources), format_func=sources.get, key="judge-audit-source")
project = source.removeprefix("project:") if source.startswith("project:") else None
data_set = data_sets.get(source.removeprefix("upload:")) if source.startswith("upload:") else None
if project is not None:
    items_param = judge_jobs.project_items_param(project)
    audit_source = {"project": project}
    progress = review.progress(project)
    st.caption(f"{progress.labels_done:,} labels on {progress.items - progress.gold_items:,} items so far "
               f"({progress.to_adjudicate} waiting for adjudication); gold items stay out of the audit.")
elif data_set is not None:
    items_param = data_set.items
    audit_source = {"items": data_set.items, **({"labels": data_set.labels} if data_set.labels else {}),
                    "verdicts": data_set.verdicts}
    st.caption(f"Imported {data_set.created_at[:16].replace('T', ' ')} UTC from {', '.join(data_set.source_files)}: "
               f"{data_set.n_items:,} items, " + _labels_text(data_set)
               + (f", {data_set.n_verdicts:,} uploaded verdicts (audited with the runs you pick below)"
                  if data_set.verdicts else "") + ".")
else:
    items_param = DEMO
    audit_source = {}
    st.caption("Synthetic demo: made-up behaviours whose harmful details are redaction markers, labels from "
               "simulated annotators. Its numbers show how the audit reads, not how real judges perform.")

# 2 · JUDGES: judge.run jobs over the chosen items

st.header("2 · Judges")
descriptions = describe_judges()
names = available_judges()
with st.form("judge-audit-run"):
    picked = st.multiselect("Judges to run", names, key="judge-audit-judges",
                            default=[n for n in names if n.endswith("-strings")][:3],
                            format_func=lambda n: f"{n} — {descriptions[n]}")
    backend = st.text_input("Backend of the prompt judges", key="judge-audit-backend",
                            placeholder="transformers:/path/to/model  or  openai:http://host:8000/v1#model",
                            help="String judges and minilm-logreg run offline and ignore it. An endpoint's key "
                                 "comes from HAI_API_KEY_JUDGE on the server.")
    run_clicked = st.form_submit_button("Run judges", type="primary")
if run_clicked:
    needing = [n for n in picked if JUDGES[n].needs_backend]
    if not picked:
        st.error("Pick at least one judge to run.")
    elif needing and not backend.strip():
        st.error(f"{', '.join(needing)} need{'s' if len(needing) == 1 else ''} a backend: a local model (transformers:PATH) or an OpenAI-compatible "
                 "endpoint (openai:URL#MODEL).")
    else:
        try:
            items = items_param if project is None else judge_jobs.project_items_file(project)
            queued = [jobqueue.submit_job(judge_jobs.RUN, {
                "items": items, "judge": name, "backend": backend.strip() if JUDGES[name].needs_backend else None},
                submitted_by=identity.user_id) for name in picked]
        except ValueError as exc:  # JobError, or a project that is gone
            st.error(str(exc))
        else:
            st.success(f"Queued judge run(s) {', '.join(f'#{i}' for i in queued)}; they appear below.")


def _succeeded() -> set[int]:
    runs = judge_jobs.verdict_jobs(items_param)
    return {j.id for j in runs + judge_jobs.audit_jobs() if j.status == "succeeded"}


def _jobs_frame(jobs, what: str, describe) -> pd.DataFrame:
    return pd.DataFrame([{"id": j.id, what: describe(j), "status": j.status, "progress": j.progress,
                          "message": j.message, "created": j.created_at}
                         for j in jobs], columns=["id", what, "status", "progress", "message", "created"])


def _run_text(job) -> str:
    return job.params.get("judge", "") + (f" via {job.params['backend']}" if job.params.get("backend") else "")


def _audit_text(job) -> str:
    if job.result:
        return f"{job.result.get('source', '')}: {', '.join(job.result.get('judges', [])) or 'no judges'}"
    return f"project {job.params['project']}" if job.params.get("project") else job.params.get("items") or "demo"


@st.fragment(run_every="2s")
def judge_runs() -> None:
    runs = judge_jobs.verdict_jobs(items_param)
    widgets.jobs_table(_jobs_frame(runs, "judge", _run_text), "No judge has run on this data yet: pick judges above and run them.")
    if not _succeeded() <= st.session_state.get(FINISHED_SEEN, set()):
        st.rerun()  # a job just finished: redraw the page so it can be picked without a reload


# Read before the tables, which compare against it: a job that finishes later reruns the page once.
st.session_state[FINISHED_SEEN] = _succeeded()
judge_runs()

# 3 · AUDIT: a judge.audit job over the chosen runs' verdicts

st.header("3 · Audit")
finished_runs = [j for j in judge_jobs.verdict_jobs(items_param) if j.status == "succeeded"]
latest: dict[str, int] = {}
for job in finished_runs:  # newest first: the newest run of each judge is the default
    latest.setdefault(job.result.get("judge", job.params.get("judge")), job.id)
run_names = {j.id: f"#{j.id} {j.result.get('judge', j.params.get('judge'))} ({j.result.get('n_items', '?')} items)"
             for j in finished_runs}
with st.form("judge-audit-start"):
    chosen = st.multiselect("Verdicts: finished judge runs", list(run_names), default=list(latest.values()),
                            format_func=run_names.get, key="judge-audit-verdicts",
                            help="With none, the audit reports annotator agreement only.")
    left, right = st.columns(2)
    rule = left.radio("Human label of an item", list(HUMAN_RULES), format_func=HUMAN_RULES.get,
                      key="judge-audit-rule")
    resamples = field_info(judge_jobs.JudgeAuditParams)["bootstrap"]  # the job's bounds (declared in AuditConfig)
    bootstrap = right.number_input("Bootstrap resamples of behaviours (0: no intervals)", int(resamples.ge),
                                   int(resamples.le), 200, step=100, key="judge-audit-bootstrap")
    subsets = right.checkbox("Build the ReliableBench-like and JudgeStressTest-like subsets",
                             key="judge-audit-subsets")
    audit_clicked = st.form_submit_button("Start the audit", type="primary")
if audit_clicked:
    try:
        job_id = jobqueue.submit_job(judge_jobs.AUDIT, {
            **audit_source, "verdict_jobs": [int(i) for i in chosen], "human_rule": rule,
            "bootstrap": int(bootstrap), "subsets": bool(subsets)}, submitted_by=identity.user_id)
    except jobqueue.JobError as exc:
        st.error(str(exc))
    else:
        st.success(f"Queued audit #{job_id}; it appears below.")


@st.fragment(run_every="2s")
def audit_runs() -> None:
    widgets.jobs_table(_jobs_frame(judge_jobs.audit_jobs(limit=20), "audit", _audit_text),
                  "No audit yet: choose the judge runs above and start one.")
    if not _succeeded() <= st.session_state.get(FINISHED_SEEN, set()):
        st.rerun()


audit_runs()


@st.cache_data(max_entries=8, show_spinner=False)
def finished_audit(job_id: int, database_url: str) -> dict:
    """A succeeded audit's audit.json (it never changes), read once per database and job."""
    return judge_jobs.read_audit(job_id)


finished = {j.id: j for j in judge_jobs.audit_jobs(limit=50) if j.status == "succeeded"}
if not finished:
    st.stop()
shown = st.selectbox("Audit to show", list(finished), key="judge-audit-shown",
                     format_func=lambda i: f"#{i} — {_audit_text(finished[i])}")
try:
    audit = finished_audit(int(shown), str(get_settings().database_url))
except (jobqueue.JobError, OSError, json.JSONDecodeError) as exc:
    st.error(f"Audit #{shown} cannot be read: {exc}")
    st.stop()

st.subheader(f"Audit #{shown}: {audit.get('source', '')}")
config = audit["config"]
c1, c2, c3, c4 = st.columns(4)
c1.metric("Items", f"{audit['n_items']:,}")
c2.metric("With a human label", f"{audit['n_human_labelled']:,}", help=f"human label: {HUMAN_RULES[config['human_rule']]}")
c3.metric("Labels", f"{audit['n_labels']:,}")
c4.metric("Bootstrap resamples", f"{config['bootstrap']:,}", help="clustered by behaviour; 0: no intervals")
st.caption("How items got their human label: " + ", ".join(f"{how} {n:,}" for how, n in audit["human_label_how"].items())
           + (f" · {audit['verdicts_left_out']:,} verdicts on items outside the audit (e.g. gold) left out"
              if audit.get("verdicts_left_out") else ""))

pooled = plots.pooled_table(audit)
dl_left, dl_right = st.columns(2)
dl_left.download_button("Download audit.json", functools.partial(json.dumps, audit, indent=1),
                        file_name=f"audit-{shown}.json", mime="application/json", key="judge-audit-dl-json")
dl_right.download_button("Download the pooled metrics (CSV)", functools.partial(frame_csv_bytes, pooled),
                         file_name=f"audit-{shown}-pooled.csv", mime="text/csv", key="judge-audit-dl-csv")

if not audit["judges"]:
    st.info("This audit has no judge verdicts: run judges above and audit their runs to see judge metrics.")
else:
    metric = st.selectbox("Metric", list(plots.METRICS), format_func=plots.METRICS.get, key="judge-audit-metric")

    st.markdown("#### Pooled metrics")
    st.caption("One row per judge over all human-labelled items; `_lo`/`_hi` are 95% bootstrap intervals "
               "(clustered by behaviour). Unparsed verdicts are left out and counted, never read as harmless.")
    st.dataframe(pooled, hide_index=True, width="stretch")
    st.plotly_chart(plots.metric_interval_figure(audit, metric, "pooled"), key="judge-audit-fig-pooled")

    st.markdown("#### Breakdowns")
    breakdown = st.selectbox("By", list(plots.BREAKDOWNS)[1:], format_func=plots.BREAKDOWNS.get,
                             key="judge-audit-breakdown")
    st.dataframe(plots.breakdown_table(audit, breakdown), hide_index=True, width="stretch")
    st.plotly_chart(plots.metric_interval_figure(audit, metric, breakdown), key="judge-audit-fig-breakdown")

    st.markdown("#### Judge × attack, per victim model")
    for model, fig in plots.metric_heatmaps(audit, metric).items():
        st.plotly_chart(fig, key=f"judge-audit-heatmap-{model}")

    st.markdown("#### ASR inflation")
    st.caption("Per model × attack cell: the judge's ASR (behaviours with some generation judged harmful), the "
               "precision-corrected ASR (ASR × the cell's PPV) and the ASR by the human labels. Inflation = judge "
               "ASR − corrected ASR.")
    judge = st.selectbox("Judge", list(audit["judges"]), key="judge-audit-asr-judge")
    st.plotly_chart(plots.asr_inflation_figure(audit, judge), key="judge-audit-fig-asr")
    asr = plots.asr_table(audit)
    st.dataframe(asr[asr["judge"] == judge], hide_index=True, width="stretch")

st.markdown("#### Annotators")
st.dataframe(plots.agreement_table(audit), hide_index=True, width="stretch")
st.plotly_chart(plots.agreement_figure(audit), key="judge-audit-fig-agreement")

concordance = audit["concordance"]
st.markdown("#### Judge concordance")
if concordance["mean"] is None:
    st.caption("Concordance needs items judged by at least two judges.")
else:
    st.caption(f"Mean concordance 1 − H(share of judges saying harmful) over {concordance['n_items']:,} items: "
               f"{concordance['mean']:.3f} (1: all judges agree). The paper finds it does not predict whether the "
               "judges are right.")
    st.dataframe(plots.concordance_table(audit), hide_index=True)

subsets_found = audit.get("subsets") or {}
st.markdown("#### Subsets")
if not subsets_found:
    st.caption("This audit built no subsets: tick the subsets box when starting an audit.")
if reliable := subsets_found.get("reliable_bench"):
    st.markdown(f"**ReliableBench-like**: {len(reliable['behaviours'])} behaviours, {len(reliable['item_keys']):,} "
                f"class-balanced items; mean judge accuracy {fmt(reliable['mean_accuracy_all'])} on all eligible "
                f"behaviours, {fmt(reliable['mean_accuracy_chosen'])} on the chosen ones; "
                f"{len(reliable['loo_pass'])} behaviours stay chosen whichever judge is held out.")
    st.dataframe(plots.reliable_bench_table(audit), hide_index=True)
    st.download_button("Download the ReliableBench-like item keys (CSV)",
                       functools.partial(csv_bytes, ["item_key"], [{"item_key": k} for k in reliable["item_keys"]]),
                       file_name=f"audit-{shown}-reliable-bench.csv", mime="text/csv", key="judge-audit-dl-rb")
if stress := subsets_found.get("stress_test"):
    st.markdown(f"**JudgeStressTest-like**: {len(stress['item_keys']):,} items ({stress['n_harmful']} harmful, "
                f"{stress['n_harmless']} harmless) that at most {stress['config']['max_correct']} judge(s) get right, "
                f"from {stress['n_balanced']:,} class-balanced items; held-out accuracies below.")
    st.dataframe(plots.stress_test_table(audit), hide_index=True)
    st.download_button("Download the JudgeStressTest-like item keys (CSV)",
                       functools.partial(csv_bytes, ["item_key"], [{"item_key": k} for k in stress["item_keys"]]),
                       file_name=f"audit-{shown}-stress-test.csv", mime="text/csv", key="judge-audit-dl-st")
