"""Research: HOI-Edit comparisons (HOI-Edit, ICML 2026).

Compares editing methods on the HOI-Edit benchmark of human–object-interaction edits: HOI-Eval's
leaderboard in the paper's layout, an item browser with every method's edit, its scores and the
judge's reasoning (an I2V method's frame strip and SCPE trace too), and the arena's ratings from
participants' votes. The shipped demo is synthetic; name a benchmark folder registered under the
data folder's datasets/hoi/ in the sidebar to use the page for real. Jobs started here read the
benchmark and write into their own result folders, which the page reads with it.
"""

from pathlib import Path

import streamlit as st

from engines.hoi import arena, backends, browse, plots
from engines.hoi import jobs as hoi_jobs
from engines.hoi.benchmark import BenchmarkFormatError
from engines.hoi.drawing import annotate
from engines.hoi.folders import FileRefused, benchmark_folder, shown
from engines.hoi.methods import MethodsFileError
from engines.hoi.ratings import rate, win_rate_matrix
from engines.hoi.votes import VoteFormatError, VoteLog, read_votes
from engines.platform import jobqueue
from engines.platform.files import area_folder
from pages import _ui as ui

PAGE = {"title": "HOI-Edit", "group": "Research", "roles": ["researcher"], "icon": ":material/compare:",
        "order": 80}
DEMO = "shipped/hoi/demo"


@st.cache_resource(max_entries=4, show_spinner=False)
def cached_workspace(root: str, layers: tuple[str, ...], stamp: float) -> browse.Workspace:
    return browse.open_workspace(root, layers)


def folder_stamp(roots: list[Path]) -> float:
    """Changes when a folder's records or method folders change, so the cache reads them again."""
    paths = [p for root in roots
             for p in (root, *root.glob("records/*.json"), *root.glob("*_frames"), *root.glob("data/*_frames"))]
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)


def thumbnail(path: Path | None, size: int = 320):
    return None if path is None else browse.THUMBNAILS.get(path, size)


identity = ui.require_role("researcher")
st.title("HOI-Edit comparisons")
st.caption("Edits of how a person interacts with an object, at three levels (L1 foundational, L2 spatial, L3 causal "
           "and physical), scored by HOI-Eval: interaction I (the judge's yes-confidence that the interaction "
           "happened), human and object consistency H and O, and I+Q&A for L2 and L3. After HOI-Edit (ICML 2026).")

with st.sidebar:
    st.subheader("Benchmark")
    root_text = st.text_input("Benchmark folder", DEMO, key="hoi-root",
                              help="datasets/hoi/<name>: a folder of the data folder with the two HOI-Edit annotation "
                                   "JSONs, images/L1L2 and images/L3, and each method's edits in "
                                   f"<method>_frames/<split>/<key> (upstream's layout); {DEMO}: the shipped demo.")
try:
    root = benchmark_folder(root_text)
except FileRefused as exc:
    st.error(f"{exc} A benchmark is the shipped demo ({DEMO}) or a folder registered under "
             f"datasets/hoi/ ({area_folder('datasets', 'hoi')}).")
    st.stop()
layers = hoi_jobs.result_layers(root)
try:
    workspace = cached_workspace(str(root), tuple(map(str, layers)), folder_stamp([root, *layers]))
except (BenchmarkFormatError, MethodsFileError) as exc:
    st.error(f"The benchmark does not read: {exc}")
    st.stop()
for problem in workspace.problems:
    st.warning(f"Records not read, so that method is shown unscored: {problem}")
if any(method.offline for method in workspace.methods.values()):
    st.info("Synthetic demo: drawn scenes, and edits, scores and votes made by the project's offline roles "
            "(`python -m engines.hoi demo`). They show how the page works, not how real models do.")

with st.sidebar:
    split = st.selectbox("Split", workspace.benchmark.splits, key="hoi-split",
                         format_func={"L1L2": "L1 and L2", "L3": "L3"}.get)
    filters = [None, *browse.level_filters(workspace, split)]
    level_or_tag = st.selectbox("Level or tag", filters, key="hoi-filter",
                                format_func=lambda f: "all items" if f is None else f)
    all_methods = list(workspace.methods)
    # keyed by the folder: another folder's methods start all chosen, not as the last folder's choice
    methods = st.multiselect("Methods", all_methods, default=all_methods, key=f"hoi-methods:{root}",
                             format_func=lambda m: workspace.methods[m].label or m)
    sort = st.selectbox("Sort items by", browse.SORTS, key="hoi-sort")
    overlays = st.toggle("Box overlays", value=True, key="hoi-boxes",
                         help="Blue: the person; red: the object; yellow: the tool, as the benchmark annotates them.")

if not methods:
    st.info("Choose at least one method in the sidebar.")
    st.stop()

board_tab, items_tab, arena_tab, run_tab = st.tabs(["Leaderboard", "Item browser", "Arena results", "Run"])

with board_tab:
    rows = browse.leaderboard_rows(workspace, methods)
    if not rows:
        st.info("No chosen method has evaluation records yet (records/<method>.json): run HOI-Eval on it with "
                "`python -m engines.hoi evaluate`.")
    else:
        st.dataframe(plots.leaderboard_frame(rows), width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.4f") for c in rows[0] if c != "method"})
        st.caption("The paper's table: L1 from the L1/L2 file, L3 from the L3 file. I, H and O count each item "
                   "once per level; I+Q&A counts every (item, tag) pair. Items whose record carries an error are "
                   "skipped, not scored zero, as upstream.")
        st.plotly_chart(plots.leaderboard_figure(rows), key="hoi-leaderboard-figure")
        tag_rows = [r for r in browse.tag_rows(workspace, methods) if r["split"] == split]
        with st.expander(f"Per tag ({split})"):
            st.dataframe(tag_rows, width="stretch", hide_index=True)
            st.plotly_chart(plots.tag_figure(tag_rows), key="hoi-tag-figure")

with items_tab:
    items = browse.list_items(workspace, split, level_or_tag=level_or_tag, methods=methods, sort=sort)
    if not items:
        st.info("No item of this split matches the filter.")
    else:
        position = st.number_input(f"Item (1 to {len(items)}, {sort})", 1, len(items), 1, key="hoi-item")
        item = items[int(position) - 1]
        view = browse.item_view(workspace, split, item.key, methods)
        left, right = st.columns([2, 3])
        with left:
            if item.image_path is None:
                st.warning(f"The source image images/{split}/{item.key} is missing.")
            else:
                source = thumbnail(item.image_path, 480)
                if overlays:
                    source = annotate(source, **browse.boxes_at(item, source.size))
                st.image(source, caption=f"Source: {item.key}", width="stretch")
        with right:
            st.markdown(f"**Instruction:** {item.instruction}")
            st.markdown(f"**Tags:** {', '.join(item.tags) or '—'}")
            if item.interaction_question:
                st.markdown(f"**Interaction question:** {item.interaction_question}")
            for tag, question in item.aux_questions.items():
                st.markdown(f"**{tag}:** {question}")
        st.subheader("Edits")
        for start in range(0, len(view.outputs), 3):
            for column, output in zip(st.columns(3), view.outputs[start:start + 3], strict=False):
                with column:
                    label = workspace.methods[output.method].label or output.method
                    if output.image_path is None:
                        st.markdown(f"**{label}**")
                        st.caption("No edit of this item.")
                        continue
                    st.image(thumbnail(output.image_path), caption=label, width="stretch")
                    record = output.record
                    if record is None:
                        st.caption("Not evaluated.")
                    elif record.failed:
                        st.caption("Skipped by the scorer: " + "; ".join(record.errors))
                    else:
                        st.caption(f"I {browse.format_score(record.I)} · H {browse.format_score(record.H)} · "
                                   f"O {browse.format_score(record.O)} · item score {browse.format_score(output.score)}")
                    if output.reasoning:
                        with st.expander("The judge's reasoning"):
                            st.write(output.reasoning)
        for output in view.outputs:
            if output.strip:
                st.subheader(f"{workspace.methods[output.method].label or output.method}: frames")
                captions = [f"frame {i}" + (" (chosen)" if i == output.selected_frame else "")
                            for i in range(len(output.strip))]
                st.image([thumbnail(p, 160) for p in output.strip], caption=captions, width=120)
                if output.trace:
                    with st.expander("SCPE trace"):
                        st.json(output.trace, expanded=False)

with arena_tab:
    st.caption("Participants see two anonymous, side-swapped edits of the same item and vote; the names are shown "
               "only after the vote, and votes cast with the names shown do not count. Ratings as GenAI-Arena: "
               "Bradley–Terry (or online Elo) with bootstrap 95% intervals.")
    FOLDER_VOTES = "the folder's votes.jsonl"
    source = st.selectbox("Votes of", [*arena.arena_studies(), FOLDER_VOTES], key="hoi-votes-source",
                          format_func=lambda s: s if s == FOLDER_VOTES else f"the arena study “{s}”")
    log = None
    if source == FOLDER_VOTES:
        if not workspace.votes_path.is_file():
            st.info(f"No votes in {shown(root)}/{browse.VOTES_FILE}.")
        else:
            try:
                log = read_votes(workspace.votes_path)
            except VoteFormatError as exc:
                st.error(f"The votes do not read: {exc}")
    else:
        log = VoteLog(tuple(arena.study_votes(source)))
        st.download_button("Download the votes (JSONL)", arena.votes_jsonl(list(log)), f"{source}-votes.jsonl",
                           key="hoi-votes-download")
    if log is not None and not len(log):
        st.info("No vote yet. Participants join through the study's link (Manage studies).")
    elif log is not None:
        kind = st.radio("Rating", ["bt", "elo"], horizontal=True, key="hoi-rating",
                        format_func={"bt": "Bradley–Terry", "elo": "Elo"}.get)
        board = rate(log, kind, rounds=1000)
        st.markdown(f"{board.n_votes} votes counted" + (f", {board.n_left_out} left out (names shown before the "
                                                         "vote)" if board.n_left_out else ""))
        left, right = st.columns(2)
        left.dataframe(plots.ratings_frame(board), hide_index=True, width="stretch")
        right.plotly_chart(plots.ratings_figure(board), key="hoi-ratings-figure")
        st.plotly_chart(plots.win_rate_figure(win_rate_matrix(log)), key="hoi-win-figure")
        st.plotly_chart(plots.votes_over_time_figure(list(log)), key="hoi-votes-figure")

with run_tab:
    st.caption(f"Both run as background jobs on {shown(root)}, which they only read: each writes into its own result "
               "folder HOI-Eval's records (records/<method>.json), and for SCPE the method's chosen frames, frame "
               "strips and traces. The tabs above show them with the benchmark when the job is done, also after a "
               "reload.")
    with st.form("hoi-evaluate"):
        st.markdown("**Evaluate a method with HOI-Eval**")
        left, middle, right = st.columns(3)
        method = left.selectbox("Method", all_methods, key="hoi-eval-method",
                                format_func=lambda m: workspace.methods[m].label or m)
        judge = middle.selectbox("VLM judge", backends.names("judge"), key="hoi-eval-judge",
                                 help="offline: the demo's pixel reader; openai: an OpenAI-compatible endpoint")
        grounder = right.selectbox("Grounder", backends.names("grounder"), key="hoi-eval-grounder")
        left, middle, right = st.columns(3)
        base_url = left.text_input("Endpoint (openai judge)", "", key="hoi-eval-url",
                                   placeholder="http://localhost:8000/v1")
        model = middle.text_input("Model (openai judge)", "", key="hoi-eval-model",
                                  placeholder="Qwen2.5-VL-7B-Instruct")
        key_variable = right.text_input("API key variable (openai judge)", "", key="hoi-eval-key",
                                        placeholder="HAI_API_KEY_OPENAI",
                                        help="The name of a server variable declared for API keys (HAI_API_KEY_*), "
                                             "never the key itself.")
        if st.form_submit_button("Start the evaluation"):
            options = {k: v for k, v in (("base_url", base_url.strip()), ("model", model.strip()),
                                         ("api_key_env", key_variable.strip())) if v}
            try:
                job_id = jobqueue.submit_job(hoi_jobs.EVALUATE, {
                    "benchmark": shown(root), "method": method, "judge": judge, "grounder": grounder,
                    "judge_options": options if judge != "offline" else {}}, submitted_by=identity.user_id)
            except jobqueue.JobError as exc:
                st.error(str(exc))
            else:
                st.success(f"Queued evaluation #{job_id}; its progress is below.")
    with st.form("hoi-scpe"):
        st.markdown("**SCPE with an image-to-video model**")
        left, middle, right = st.columns(3)
        i2v_roles = backends.names("i2v")
        i2v_role = left.selectbox("I2V model", i2v_roles, index=i2v_roles.index(hoi_jobs.DEFAULT_I2V),
                                  key="hoi-scpe-i2v",
                                  help="offline: the demo's drawn animation (runs anywhere); gradio: a `python -m "
                                       "engines.hoi serve` endpoint; diffusers: a local pipeline (a GPU machine)")
        url = middle.text_input("Gradio URL (gradio)", "", key="hoi-scpe-url", placeholder="http://gpu-box:7861")
        name = right.text_input("Save as method", "scpe", key="hoi-scpe-method")
        left, middle, right = st.columns(3)
        epochs = left.number_input("Learning epochs", 0, 5, 1, key="hoi-scpe-epochs")
        retries = middle.number_input("Tries per item", 1, 5, 1, key="hoi-scpe-retries",
                                      help="1 is upstream: no retry")
        limit = right.number_input("Only the first N items (0: all)", 0, 100_000, 0, key="hoi-scpe-limit")
        if st.form_submit_button("Start SCPE"):
            i2v = {"role": i2v_role, **({"url": url.strip()} if i2v_role == "gradio" and url.strip() else {})}
            try:
                job_id = jobqueue.submit_job(hoi_jobs.SCPE, {
                    "benchmark": shown(root), "i2v": i2v, "method": name.strip(), "epochs": int(epochs),
                    "retries": int(retries), "limit": int(limit) or None}, submitted_by=identity.user_id)
            except jobqueue.JobError as exc:
                st.error(str(exc))
            else:
                st.success(f"Queued SCPE #{job_id}; its progress is below.")

    @st.fragment(run_every="2s")
    def recent_jobs() -> None:
        ui.jobs_table(hoi_jobs.jobs_frame(hoi_jobs.hoi_jobs()), "No HOI-Edit job yet.")

    recent_jobs()
